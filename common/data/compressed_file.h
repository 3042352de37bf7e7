// Data files compressed whole, as pandas reads them by their ending (.gz,
// .bz2, .xz, .zst) and the tools write them: told here by their first
// bytes, whatever the name. Each holds one or more streams of its format
// back to back (as `cat a.gz b.gz`, pbzip2, `xz -T` and zstd's multi-frame
// writers make them), each checked as the format checks it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace accumulus::data {

enum class Compression { kNone, kGzip, kBzip2, kXz, kZstd };

// What `bytes` begin with.
Compression CompressionOf(std::string_view bytes);

// "gzip", "bzip2", "xz", "zstd".
const char* CompressionName(Compression compression);
// What decompresses a file on disk: "gunzip", "bunzip2", "unxz", "unzstd".
const char* DecompressionTool(Compression compression);

// What the file holds, every stream in turn; zero bytes after the last
// (tape padding, xz's stream padding) are ignored. INVALID_ARGUMENT "FIELD
// PATH: ..." where the data is corrupt or cut short (naming the byte of
// the file), where other bytes follow the last stream, or where it holds
// more than `max_size` bytes. Decoding takes up to `memory_limit` bytes
// besides (a zstd window, an xz dictionary): a file that needs more is
// refused before it is taken.
StatusOr<std::string> Decompress(Compression compression, const std::string& field,
                                 const std::string& path, std::string_view bytes, size_t max_size,
                                 uint64_t memory_limit);

}  // namespace accumulus::data
