// bzip2 streams with libbz2 (common/data/stream_decoder.h).
#include <bzlib.h>

#include <algorithm>
#include <limits>

#include "common/data/stream_decoder.h"

namespace accumulus::data {
namespace {

// libbz2 counts a call's input and output in unsigned int.
constexpr size_t kMostPerCall = std::numeric_limits<unsigned int>::max();

class Bzip2StreamDecoder final : public StreamDecoder {
 public:
  Bzip2StreamDecoder() { Start(); }
  ~Bzip2StreamDecoder() override {
    if (ok_) BZ2_bzDecompressEnd(&stream_);
  }
  Bzip2StreamDecoder(const Bzip2StreamDecoder&) = delete;
  Bzip2StreamDecoder& operator=(const Bzip2StreamDecoder&) = delete;

  Step Decode(std::string_view* in, char** out, size_t* room) override {
    if (!ok_) return Step::kNoMemory;
    // libbz2 never writes through next_in; its type just predates const.
    stream_.next_in = const_cast<char*>(in->data());
    stream_.avail_in = static_cast<unsigned int>(std::min(in->size(), kMostPerCall));
    stream_.next_out = *out;
    stream_.avail_out = static_cast<unsigned int>(std::min(*room, kMostPerCall));
    const size_t in_before = stream_.avail_in;
    const size_t out_before = stream_.avail_out;
    const int rc = BZ2_bzDecompress(&stream_);
    Advance(in, in_before - stream_.avail_in, out, room, out_before - stream_.avail_out);
    switch (rc) {
      case BZ_OK:
        return Step::kProgress;
      case BZ_STREAM_END:
        return Step::kEnd;
      case BZ_MEM_ERROR:
        return Step::kNoMemory;
      case BZ_DATA_ERROR_MAGIC:
        message_ = "no bzip2 stream begins there";
        return Step::kCorrupt;
      default:  // BZ_DATA_ERROR: a block's or the stream's CRC, or bad data
        message_ = "a block is damaged or fails its CRC check";
        return Step::kCorrupt;
    }
  }

  // A finished libbz2 stream takes no more input: a new one.
  bool Reset() override {
    if (ok_) BZ2_bzDecompressEnd(&stream_);
    Start();
    return ok_;
  }

  std::string message() const override { return message_; }

 private:
  void Start() {
    stream_ = bz_stream{};
    message_.clear();
    ok_ = BZ2_bzDecompressInit(&stream_, /*verbosity=*/0, /*small=*/0) == BZ_OK;
  }

  bz_stream stream_{};
  bool ok_ = false;
  std::string message_;
};

}  // namespace

std::unique_ptr<StreamDecoder> Bzip2Decoder() { return std::make_unique<Bzip2StreamDecoder>(); }

}  // namespace accumulus::data
