// DEFLATE streams (RFC 1951) decompressed with zlib: gzip files (RFC 1952:
// MNIST's .gz files, a .csv.gz as pandas and Python's gzip module write it)
// and the deflated members of zip archives (numpy.savez_compressed).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "common/status.h"

namespace accumulus::data {

// Whether `bytes` begin as a gzip file does.
bool IsGzip(std::string_view bytes);

// What a gzip file holds: each member in turn (as `cat a.gz b.gz` makes
// one), each checked against its CRC-32 and length; zeros after the last
// (tape padding) are ignored. INVALID_ARGUMENT "FIELD PATH: ..." where the
// data is corrupt or cut short (naming the byte of the file), where other
// bytes follow the last member, or where it holds more than `max_size`
// bytes.
StatusOr<std::string> Gunzip(const std::string& field, const std::string& path,
                             std::string_view bytes, size_t max_size);

// A raw DEFLATE stream (a zip member's, method 8) that holds `size` bytes:
// those bytes, or INVALID_ARGUMENT with a sentence saying what is wrong
// ("the deflated data is corrupt at its byte 812 (invalid distance too far
// back)"), for the caller to put after the member's name.
StatusOr<std::string> InflateRaw(std::string_view deflated, size_t size);

// The first `size` bytes (or fewer, where the stream holds fewer) of a raw
// DEFLATE stream, without reading the rest: a look at a member's header.
StatusOr<std::string> InflateRawPrefix(std::string_view deflated, size_t size);

}  // namespace accumulus::data
