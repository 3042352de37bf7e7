// The frame around a checkpoint's LibTorch archive: an 8-byte magic, the
// payload's length and FNV-1a 64 checksum (host byte order: a checkpoint
// is read where it was written, or on a machine like it), then the payload.
// A truncated or garbled file is told from a whole one without LibTorch.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace accumulus {

std::string FrameCheckpoint(const std::string& payload);

// The payload of a framed file, or DATA_LOSS saying what is wrong with it
// (no header, truncated, checksum mismatch).
StatusOr<std::string> UnframeCheckpoint(const std::string& file);

uint64_t Fnv1a64(const std::string& data);

}  // namespace accumulus
