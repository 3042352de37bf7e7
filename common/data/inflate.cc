#include "common/data/inflate.h"

#include <zlib.h>

#include <algorithm>
#include <limits>

#include "common/data/little_endian.h"

namespace accumulus::data {
namespace {

// zlib counts a call's input and output in uInt: larger spans go by parts.
constexpr size_t kMostPerCall = std::numeric_limits<uInt>::max();

// The first buffer for output of unknown size; it doubles from there.
constexpr size_t kFirstBuffer = size_t{1} << 16;

// One zlib inflate stream over one input, its output appended to a string.
class Inflater {
 public:
  enum class Outcome {
    kEnd,        // the stream ended
    kFull,       // `limit` bytes came out and more would follow
    kTruncated,  // the input ended inside the stream
    kCorrupt,    // not valid DEFLATE data, or a gzip check failed (message())
    kNoMemory,
  };

  // window_bits as inflateInit2 takes them: -15 raw DEFLATE, 15 + 16 gzip.
  Inflater(std::string_view in, int window_bits) : in_(in) {
    ok_ = inflateInit2(&stream_, window_bits) == Z_OK;
  }
  ~Inflater() {
    if (ok_) inflateEnd(&stream_);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  // Inflates into `out` (appending, up to `limit` bytes in all) until the
  // stream ends or `limit` is reached.
  Outcome Run(std::string* out, size_t limit) {
    if (!ok_) return Outcome::kNoMemory;
    size_t filled = out->size();
    for (;;) {
      unsigned char probe;  // one byte past `limit`: whether more would come
      if (filled == out->size() && filled < limit) {
        out->resize(std::min(limit, std::max({kFirstBuffer, 2 * filled, out->capacity()})));
      }
      const bool probing = filled == limit;
      stream_.next_out = probing ? &probe : reinterpret_cast<Bytef*>(out->data() + filled);
      stream_.avail_out =
          probing ? 1 : static_cast<uInt>(std::min(out->size() - filled, kMostPerCall));
      const size_t out_before = stream_.avail_out;
      stream_.next_in = reinterpret_cast<const Bytef*>(in_.data() + consumed_);
      stream_.avail_in = static_cast<uInt>(std::min(in_.size() - consumed_, kMostPerCall));
      const size_t in_before = stream_.avail_in;
      const int rc = inflate(&stream_, Z_NO_FLUSH);
      consumed_ += in_before - stream_.avail_in;
      const size_t produced = out_before - stream_.avail_out;
      if (probing && produced > 0) {
        out->resize(filled);
        return Outcome::kFull;
      }
      filled += produced;
      switch (rc) {
        case Z_STREAM_END:
          out->resize(filled);
          return Outcome::kEnd;
        case Z_OK:
          break;
        case Z_BUF_ERROR:  // no progress possible: the input is used up
          out->resize(filled);
          return consumed_ == in_.size() ? Outcome::kTruncated : Outcome::kCorrupt;
        case Z_MEM_ERROR:
          out->resize(filled);
          return Outcome::kNoMemory;
        default:  // Z_DATA_ERROR, Z_NEED_DICT (no zip or gzip stream has one)
          out->resize(filled);
          return Outcome::kCorrupt;
      }
    }
  }

  // For the next gzip member, from consumed().
  void Reset() { inflateReset(&stream_); }

  // Input bytes read so far.
  size_t consumed() const { return consumed_; }
  // zlib's reason for kCorrupt.
  std::string message() const {
    return stream_.msg != nullptr ? stream_.msg : "invalid compressed data";
  }

 private:
  std::string_view in_;
  size_t consumed_ = 0;
  z_stream stream_{};
  bool ok_ = false;
};

// A gzip member's trailer holds its length modulo 2^32: the last member's
// is a good guess at the size of a file of one (nearly every .gz file).
size_t LastMemberSize(std::string_view bytes) {
  if (bytes.size() < 18) return 0;
  return LittleEndian(bytes, bytes.size() - 4, 4);
}

}  // namespace

bool IsGzip(std::string_view bytes) { return bytes.substr(0, 2) == "\x1F\x8B"; }

StatusOr<std::string> Gunzip(const std::string& field, const std::string& path,
                             std::string_view bytes, size_t max_size) {
  const std::string where = field + " " + path + ": ";
  std::string out;
  const size_t guess = LastMemberSize(bytes);
  if (guess >= bytes.size() && guess <= max_size) out.reserve(guess);
  Inflater inflater(bytes, 15 + 16);
  for (;;) {
    const size_t member_start = inflater.consumed();
    switch (inflater.Run(&out, max_size)) {
      case Inflater::Outcome::kEnd:
        break;
      case Inflater::Outcome::kFull:
        return Status::InvalidArgument(
            where + "gzip-compressed data of more than " + std::to_string(max_size) +
            " bytes, more than it may take of this machine's memory: decompress it on disk "
            "(gunzip), where it is read in place");
      case Inflater::Outcome::kTruncated:
        return Status::InvalidArgument(where + "the gzip data ends early (at byte " +
                                       std::to_string(bytes.size()) + "): the file is cut short");
      case Inflater::Outcome::kCorrupt:
        return Status::InvalidArgument(where + "the gzip data is corrupt in the member from byte " +
                                       std::to_string(member_start) + " (" + inflater.message() +
                                       ")");
      case Inflater::Outcome::kNoMemory:
        return Status(StatusCode::kResourceExhausted,
                      where + "out of memory decompressing gzip data");
    }
    size_t next = inflater.consumed();
    while (next < bytes.size() && bytes[next] == '\0') ++next;
    if (next == bytes.size()) return out;
    if (next != inflater.consumed() || !IsGzip(bytes.substr(next))) {
      return Status::InvalidArgument(where + "at byte " + std::to_string(inflater.consumed()) +
                                     ": expected the end of the file or another gzip member");
    }
    inflater.Reset();
  }
}

StatusOr<std::string> InflateRaw(std::string_view deflated, size_t size) {
  std::string out;
  out.reserve(size);
  Inflater inflater(deflated, -15);
  switch (inflater.Run(&out, size)) {
    case Inflater::Outcome::kEnd:
      if (out.size() != size) {
        return Status::InvalidArgument("the deflated data holds " + std::to_string(out.size()) +
                                       " bytes, not the " + std::to_string(size) +
                                       " its directory entry records");
      }
      return out;
    case Inflater::Outcome::kFull:
      return Status::InvalidArgument("the deflated data holds more than the " +
                                     std::to_string(size) + " bytes its directory entry records");
    case Inflater::Outcome::kTruncated:
      return Status::InvalidArgument("the deflated data ends early: the archive is cut short");
    case Inflater::Outcome::kCorrupt:
      return Status::InvalidArgument("the deflated data is corrupt at its byte " +
                                     std::to_string(inflater.consumed()) + " (" +
                                     inflater.message() + ")");
    case Inflater::Outcome::kNoMemory:
      break;
  }
  return Status(StatusCode::kResourceExhausted, "out of memory decompressing deflated data");
}

StatusOr<std::string> InflateRawPrefix(std::string_view deflated, size_t size) {
  std::string out;
  Inflater inflater(deflated, -15);
  switch (inflater.Run(&out, size)) {
    case Inflater::Outcome::kEnd:
    case Inflater::Outcome::kFull:
    case Inflater::Outcome::kTruncated:  // what there is of the prefix
      return out;
    case Inflater::Outcome::kCorrupt:
      return Status::InvalidArgument("the deflated data is corrupt (" + inflater.message() + ")");
    case Inflater::Outcome::kNoMemory:
      break;
  }
  return Status(StatusCode::kResourceExhausted, "out of memory decompressing deflated data");
}

}  // namespace accumulus::data
