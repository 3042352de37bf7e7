#include "common/data/compressed_file.h"

#include <zstd.h>

#include <memory>

#include "common/data/little_endian.h"
#include "common/data/stream_decoder.h"

namespace accumulus::data {
namespace {

using namespace std::string_view_literals;

// How a format is named in messages, and what decompresses it on disk.
struct Format {
  const char* name;
  const char* stream;  // what its files hold one or more of
  const char* tool;
};

Format FormatOf(Compression compression) {
  switch (compression) {
    case Compression::kGzip:
      return {"gzip", "member", "gunzip"};
    case Compression::kBzip2:
      return {"bzip2", "stream", "bunzip2"};
    case Compression::kXz:
      return {"xz", "stream", "unxz"};
    case Compression::kZstd:
      return {"zstd", "frame", "unzstd"};
    case Compression::kNone:
      break;
  }
  return {"uncompressed", "file", "cat"};
}

bool IsBzip2(std::string_view bytes) {
  // "BZh", the block size's digit, then a block's magic (π) or, for an
  // empty stream, the end's (√π): text may begin "BZh".
  return bytes.size() >= 10 && bytes.substr(0, 3) == "BZh" && bytes[3] >= '1' && bytes[3] <= '9' &&
         (bytes.substr(4, 6) == "1AY&SY" || bytes.substr(4, 6) == "\x17\x72\x45\x38\x50\x90"sv);
}

// An xz stream's header begins so.
constexpr char kXzMagic[] = {'\xFD', '7', 'z', 'X', 'Z', '\0'};

bool IsZstdFrame(std::string_view bytes) {
  if (bytes.size() < 4) return false;
  const uint64_t magic = LittleEndian(bytes, 0, 4);
  // A frame, or a skippable frame (0x184D2A50 to 0x184D2A5F).
  return magic == 0xFD2FB528 || (magic & 0xFFFFFFF0) == 0x184D2A50;
}

std::unique_ptr<StreamDecoder> DecoderOf(Compression compression, uint64_t memory_limit) {
  switch (compression) {
    case Compression::kGzip:
      return GzipDecoder();
    case Compression::kBzip2:
      return Bzip2Decoder();
    case Compression::kXz:
      return XzDecoder(memory_limit);
    case Compression::kZstd:
      return ZstdDecoder(memory_limit);
    case Compression::kNone:
      break;
  }
  return nullptr;
}

// What the file will hold, where it says so cheaply: a gzip file of one
// member (nearly every .gz file) by its trailer's length modulo 2^32, a
// zstd file of one frame by the frame's header. 0: unknown.
size_t SizeHint(Compression compression, std::string_view bytes) {
  if (compression == Compression::kGzip && bytes.size() >= 18) {
    return LittleEndian(bytes, bytes.size() - 4, 4);
  }
  if (compression == Compression::kZstd) {
    const unsigned long long size = ZSTD_getFrameContentSize(bytes.data(), bytes.size());
    if (size != ZSTD_CONTENTSIZE_UNKNOWN && size != ZSTD_CONTENTSIZE_ERROR) return size;
  }
  return 0;
}

}  // namespace

Compression CompressionOf(std::string_view bytes) {
  if (bytes.substr(0, 2) == "\x1F\x8B") return Compression::kGzip;
  if (IsBzip2(bytes)) return Compression::kBzip2;
  if (bytes.substr(0, sizeof(kXzMagic)) == std::string_view(kXzMagic, sizeof(kXzMagic))) {
    return Compression::kXz;
  }
  if (IsZstdFrame(bytes)) return Compression::kZstd;
  return Compression::kNone;
}

const char* CompressionName(Compression compression) { return FormatOf(compression).name; }

const char* DecompressionTool(Compression compression) { return FormatOf(compression).tool; }

StatusOr<std::string> Decompress(Compression compression, const std::string& field,
                                 const std::string& path, std::string_view bytes, size_t max_size,
                                 uint64_t memory_limit) {
  const Format format = FormatOf(compression);
  const std::string where = field + " " + path + ": ";
  const std::string data = std::string("the ") + format.name + " data";
  std::unique_ptr<StreamDecoder> decoder = DecoderOf(compression, memory_limit);
  if (decoder == nullptr) return Status::InvalidArgument(where + "not a compressed file");
  std::string out;
  const size_t guess = SizeHint(compression, bytes);
  if (guess >= bytes.size() && guess <= max_size) out.reserve(guess);
  std::string_view in = bytes;
  for (;;) {
    const size_t stream_start = bytes.size() - in.size();
    switch (DecodeStream(decoder.get(), &in, &out, max_size)) {
      case StreamEnd::kEnd:
        break;
      case StreamEnd::kFull:
        return Status::InvalidArgument(
            where + format.name + "-compressed data of more than " + std::to_string(max_size) +
            " bytes, more than it may take of this machine's memory: decompress it on disk (" +
            format.tool + "), where it is read in place");
      case StreamEnd::kTruncated:
        return Status::InvalidArgument(where + data + " ends early (at byte " +
                                       std::to_string(bytes.size()) + "): the file is cut short");
      case StreamEnd::kCorrupt:
        return Status::InvalidArgument(where + data + " is corrupt in the " + format.stream +
                                       " from byte " + std::to_string(stream_start) + " (" +
                                       decoder->message() + ")");
      case StreamEnd::kUnsupported:
        return Status::InvalidArgument(where + data + " cannot be read in the " + format.stream +
                                       " from byte " + std::to_string(stream_start) + " (" +
                                       decoder->message() + "): decompress it on disk (" +
                                       format.tool + ")");
      case StreamEnd::kNoMemory:
        return Status(StatusCode::kResourceExhausted,
                      where + "out of memory decompressing " + format.name + " data");
    }
    const size_t end = bytes.size() - in.size();
    const size_t next = in.find_first_not_of('\0');
    if (next == std::string_view::npos) return out;
    // xz allows padding between its streams too; the others only at the end.
    if ((next != 0 && compression != Compression::kXz) ||
        CompressionOf(in.substr(next)) != compression) {
      return Status::InvalidArgument(where + "at byte " + std::to_string(end) +
                                     ": expected the end of the file or another " + format.name +
                                     " " + format.stream);
    }
    in.remove_prefix(next);
    if (!decoder->Reset()) {
      return Status(StatusCode::kResourceExhausted,
                    where + "out of memory decompressing " + format.name + " data");
    }
  }
}

}  // namespace accumulus::data
