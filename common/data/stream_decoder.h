// The decompressors data files come compressed with, behind one face: zlib
// (gzip, and raw DEFLATE for zip members), libbz2 (bzip2), liblzma (xz, and
// the LZMA of zip members) and libzstd (zstd). A decoder reads one stream
// of its format — a gzip member, a bzip2 or xz stream, a zstd frame —
// checking what the format checks (CRCs, lengths); Reset() readies it for
// the next. The drivers below run one over an input held in memory, never
// producing more than the caller allows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace accumulus::data {

class StreamDecoder {
 public:
  enum class Step {
    kProgress,     // read input or wrote output (or neither: it needs more input)
    kEnd,          // the stream ended, its checks passed
    kCorrupt,      // not valid data of the format, or a check failed: message()
    kUnsupported,  // valid, but beyond what is read here (a window too large): message()
    kNoMemory,
  };
  virtual ~StreamDecoder() = default;

  // Decodes from `*in` into the `*room` bytes at `*out`, advancing all
  // three past what it read and wrote.
  virtual Step Decode(std::string_view* in, char** out, size_t* room) = 0;
  // For the next stream of the same format; false when out of memory.
  virtual bool Reset() = 0;
  // Why kCorrupt or kUnsupported, in the library's words.
  virtual std::string message() const = 0;

 protected:
  // For Decode: moves the spans past what a library call read and wrote.
  static void Advance(std::string_view* in, size_t read, char** out, size_t* room, size_t written) {
    in->remove_prefix(read);
    *out += written;
    *room -= written;
  }
};

// One gzip member (RFC 1952), its CRC-32 and length checked.
std::unique_ptr<StreamDecoder> GzipDecoder();
// A raw DEFLATE stream (RFC 1951): a zip member's, method 8.
std::unique_ptr<StreamDecoder> RawDeflateDecoder();
// One bzip2 stream, its blocks' and its own CRCs checked.
std::unique_ptr<StreamDecoder> Bzip2Decoder();
// One xz stream, its check (CRC-32, CRC-64 or SHA-256) verified, using at
// most `memory_limit` bytes for its dictionary.
std::unique_ptr<StreamDecoder> XzDecoder(uint64_t memory_limit);
// One zstd frame (or skippable frame), its checksum verified where it has
// one; frames whose window exceeds `memory_limit` are refused (kUnsupported).
std::unique_ptr<StreamDecoder> ZstdDecoder(uint64_t memory_limit);
// A zip member's LZMA data (method 14: its own small header, then raw LZMA1,
// with or without an end marker) of `size` bytes, its header read from
// `*data` (advanced past it); its dictionary, at most `size` bytes of it,
// must fit `memory_limit`. INVALID_ARGUMENT with a sentence naming what is
// wrong with its header.
StatusOr<std::unique_ptr<StreamDecoder>> ZipLzmaDecoder(std::string_view* data, uint64_t size,
                                                        uint64_t memory_limit);

// How one stream's decoding ended.
enum class StreamEnd {
  kEnd,        // the stream ended
  kFull,       // `limit` bytes came out and more would follow
  kTruncated,  // the input ended inside the stream
  kCorrupt,    // the decoder's message() says why
  kUnsupported,
  kNoMemory,
};

// Decodes one stream from `*in` (advanced past what it read), appending to
// `*out` up to `limit` bytes in all.
StreamEnd DecodeStream(StreamDecoder* decoder, std::string_view* in, std::string* out,
                       size_t limit);

// A zip member's data, a single stream that holds `size` bytes: those
// bytes, or INVALID_ARGUMENT with a sentence saying what is wrong ("the
// bzip2 data is corrupt at its byte 812 (...)") for the caller to put after
// the member's name. `format` names the data: "deflated", "bzip2".
StatusOr<std::string> DecodeExactly(StreamDecoder* decoder, const std::string& format,
                                    std::string_view data, size_t size);

// The first `size` bytes (or fewer, where the stream holds fewer), without
// reading the rest: a look at a member's header.
StatusOr<std::string> DecodePrefix(StreamDecoder* decoder, const std::string& format,
                                   std::string_view data, size_t size);

}  // namespace accumulus::data
