// zstd frames with libzstd (common/data/stream_decoder.h).
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>

#include "common/data/stream_decoder.h"

namespace accumulus::data {
namespace {

// The largest window zstd defines on 64-bit machines (ZSTD_WINDOWLOG_MAX_64,
// in zstd.h's static-linking-only part): 2 GiB, what `zstd --long=31`
// writes.
constexpr int kLargestWindowLog = 31;
// The smallest (ZSTD_WINDOWLOG_ABSOLUTEMIN).
constexpr int kSmallestWindowLog = 10;

// The largest window that fits `memory_limit`, as a power of two.
int WindowLogMax(uint64_t memory_limit) {
  int log = kSmallestWindowLog;
  while (log < kLargestWindowLog && (uint64_t{1} << (log + 1)) <= memory_limit) ++log;
  return log;
}

class ZstdFrameDecoder final : public StreamDecoder {
 public:
  explicit ZstdFrameDecoder(uint64_t memory_limit) : context_(ZSTD_createDCtx()) {
    if (context_ != nullptr) {
      ZSTD_DCtx_setParameter(context_, ZSTD_d_windowLogMax, WindowLogMax(memory_limit));
    }
  }
  ~ZstdFrameDecoder() override { ZSTD_freeDCtx(context_); }
  ZstdFrameDecoder(const ZstdFrameDecoder&) = delete;
  ZstdFrameDecoder& operator=(const ZstdFrameDecoder&) = delete;

  Step Decode(std::string_view* in, char** out, size_t* room) override {
    if (context_ == nullptr) return Step::kNoMemory;
    ZSTD_inBuffer input = {in->data(), in->size(), 0};
    ZSTD_outBuffer output = {*out, *room, 0};
    const size_t rc = ZSTD_decompressStream(context_, &output, &input);
    Advance(in, input.pos, out, room, output.pos);
    if (ZSTD_isError(rc)) {
      error_ = ZSTD_getErrorCode(rc);
      switch (error_) {
        case ZSTD_error_memory_allocation:
          return Step::kNoMemory;
        case ZSTD_error_frameParameter_windowTooLarge:
          return Step::kUnsupported;
        default:
          return Step::kCorrupt;
      }
    }
    // 0: a frame is decoded and all of it written out.
    return rc == 0 ? Step::kEnd : Step::kProgress;
  }

  bool Reset() override {
    error_ = ZSTD_error_no_error;
    return context_ != nullptr && !ZSTD_isError(ZSTD_DCtx_reset(context_, ZSTD_reset_session_only));
  }

  std::string message() const override {
    if (error_ == ZSTD_error_frameParameter_windowTooLarge) {
      return "its window needs more memory than this machine allows it";
    }
    return ZSTD_getErrorString(error_);
  }

 private:
  ZSTD_DCtx* const context_;
  ZSTD_ErrorCode error_ = ZSTD_error_no_error;
};

}  // namespace

std::unique_ptr<StreamDecoder> ZstdDecoder(uint64_t memory_limit) {
  return std::make_unique<ZstdFrameDecoder>(memory_limit);
}

}  // namespace accumulus::data
