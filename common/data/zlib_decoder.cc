// gzip and raw DEFLATE streams with zlib (common/data/stream_decoder.h).
#include <zlib.h>

#include <algorithm>
#include <limits>

#include "common/data/stream_decoder.h"

namespace accumulus::data {
namespace {

// zlib counts a call's input and output in uInt: larger spans go by parts.
constexpr size_t kMostPerCall = std::numeric_limits<uInt>::max();

class ZlibDecoder final : public StreamDecoder {
 public:
  // window_bits as inflateInit2 takes them: -15 raw DEFLATE, 15 + 16 gzip.
  explicit ZlibDecoder(int window_bits) { ok_ = inflateInit2(&stream_, window_bits) == Z_OK; }
  ~ZlibDecoder() override {
    if (ok_) inflateEnd(&stream_);
  }
  ZlibDecoder(const ZlibDecoder&) = delete;
  ZlibDecoder& operator=(const ZlibDecoder&) = delete;

  Step Decode(std::string_view* in, char** out, size_t* room) override {
    if (!ok_) return Step::kNoMemory;
    stream_.next_in = reinterpret_cast<const Bytef*>(in->data());
    stream_.avail_in = static_cast<uInt>(std::min(in->size(), kMostPerCall));
    stream_.next_out = reinterpret_cast<Bytef*>(*out);
    stream_.avail_out = static_cast<uInt>(std::min(*room, kMostPerCall));
    const size_t in_before = stream_.avail_in;
    const size_t out_before = stream_.avail_out;
    const int rc = inflate(&stream_, Z_NO_FLUSH);
    Advance(in, in_before - stream_.avail_in, out, room, out_before - stream_.avail_out);
    switch (rc) {
      case Z_OK:
      case Z_BUF_ERROR:  // no progress possible: DecodeStream tells why
        return Step::kProgress;
      case Z_STREAM_END:
        return Step::kEnd;
      case Z_MEM_ERROR:
        return Step::kNoMemory;
      default:  // Z_DATA_ERROR, Z_NEED_DICT (no zip or gzip stream has one)
        return Step::kCorrupt;
    }
  }

  bool Reset() override { return ok_ && inflateReset(&stream_) == Z_OK; }

  std::string message() const override {
    return stream_.msg != nullptr ? stream_.msg : "invalid compressed data";
  }

 private:
  z_stream stream_{};
  bool ok_ = false;
};

}  // namespace

std::unique_ptr<StreamDecoder> GzipDecoder() { return std::make_unique<ZlibDecoder>(15 + 16); }

std::unique_ptr<StreamDecoder> RawDeflateDecoder() { return std::make_unique<ZlibDecoder>(-15); }

}  // namespace accumulus::data
