// xz streams, and the LZMA of zip members, with liblzma
// (common/data/stream_decoder.h).
#include <lzma.h>

#include <algorithm>
#include <cstdlib>

#include "common/data/little_endian.h"
#include "common/data/stream_decoder.h"

namespace accumulus::data {
namespace {

std::string LzmaMessage(lzma_ret rc) {
  switch (rc) {
    case LZMA_FORMAT_ERROR:
      return "no xz stream begins there";
    case LZMA_OPTIONS_ERROR:
      return "it uses options (a filter) this liblzma does not know";
    case LZMA_DATA_ERROR:
      return "the compressed data is damaged, or fails its check";
    case LZMA_MEMLIMIT_ERROR:
      return "its dictionary needs more memory than this machine allows it";
    default:
      return "liblzma error " + std::to_string(static_cast<int>(rc));
  }
}

// One liblzma decoder; what kind, Start() says. Started on the first
// Decode, and again after Reset().
class LzmaDecoder : public StreamDecoder {
 public:
  LzmaDecoder() = default;
  ~LzmaDecoder() override { lzma_end(&stream_); }
  LzmaDecoder(const LzmaDecoder&) = delete;
  LzmaDecoder& operator=(const LzmaDecoder&) = delete;

  Step Decode(std::string_view* in, char** out, size_t* room) override {
    if (!started_) {
      started_ = true;
      rc_ = Start(&stream_);  // a started lzma_stream is reused
    }
    if (rc_ != LZMA_OK) return Failed(rc_);
    stream_.next_in = reinterpret_cast<const uint8_t*>(in->data());
    stream_.avail_in = in->size();
    stream_.next_out = reinterpret_cast<uint8_t*>(*out);
    stream_.avail_out = *room;
    const lzma_ret rc = lzma_code(&stream_, LZMA_RUN);
    Advance(in, in->size() - stream_.avail_in, out, room, *room - stream_.avail_out);
    switch (rc) {
      case LZMA_OK:
      case LZMA_BUF_ERROR:  // no progress possible: DecodeStream tells why
        return Step::kProgress;
      case LZMA_STREAM_END:
        return Step::kEnd;
      default:
        rc_ = rc;
        return Failed(rc);
    }
  }

  bool Reset() override {
    started_ = false;
    rc_ = LZMA_OK;
    return true;
  }

  std::string message() const override { return LzmaMessage(rc_); }

 protected:
  virtual lzma_ret Start(lzma_stream* stream) const = 0;

 private:
  static Step Failed(lzma_ret rc) {
    switch (rc) {
      case LZMA_MEM_ERROR:
        return Step::kNoMemory;
      case LZMA_MEMLIMIT_ERROR:
        return Step::kUnsupported;
      default:
        return Step::kCorrupt;
    }
  }

  lzma_stream stream_ = LZMA_STREAM_INIT;
  bool started_ = false;
  lzma_ret rc_ = LZMA_OK;
};

class XzStreamDecoder final : public LzmaDecoder {
 public:
  explicit XzStreamDecoder(uint64_t memory_limit) : memory_limit_(memory_limit) {}

 private:
  // Flags 0: one stream (the caller reads what follows it), its check
  // verified.
  lzma_ret Start(lzma_stream* stream) const override {
    return lzma_stream_decoder(stream, memory_limit_, 0);
  }

  const uint64_t memory_limit_;
};

class ZipLzmaStreamDecoder final : public LzmaDecoder {
 public:
  // `options`: liblzma's, from lzma_properties_decode; owned from here.
  explicit ZipLzmaStreamDecoder(lzma_options_lzma* options) : options_(options) {}
  ~ZipLzmaStreamDecoder() override { std::free(options_); }

 private:
  lzma_ret Start(lzma_stream* stream) const override {
    const lzma_filter filters[2] = {{LZMA_FILTER_LZMA1EXT, options_}, {LZMA_VLI_UNKNOWN, nullptr}};
    return lzma_raw_decoder(stream, filters);
  }

  lzma_options_lzma* const options_;
};

}  // namespace

std::unique_ptr<StreamDecoder> XzDecoder(uint64_t memory_limit) {
  return std::make_unique<XzStreamDecoder>(memory_limit);
}

StatusOr<std::unique_ptr<StreamDecoder>> ZipLzmaDecoder(std::string_view* data, uint64_t size,
                                                        uint64_t memory_limit) {
  // APPNOTE 5.8.8: the LZMA SDK's version (2 bytes), the properties' size
  // (2 bytes, little-endian: 5), the properties, then the LZMA1 data.
  if (data->size() < 4) return Status::InvalidArgument("its LZMA header is cut short");
  const uint64_t properties = LittleEndian(*data, 2, 2);
  if (properties != 5 || data->size() < 4 + properties) {
    return Status::InvalidArgument("its LZMA header records " + std::to_string(properties) +
                                   " bytes of properties, not 5");
  }
  lzma_filter filter = {LZMA_FILTER_LZMA1, nullptr};
  if (lzma_properties_decode(&filter, nullptr, reinterpret_cast<const uint8_t*>(data->data()) + 4,
                             properties) != LZMA_OK) {
    return Status::InvalidArgument("its LZMA properties are invalid");
  }
  // The size is the directory's: the end marker may follow it or not, as
  // the writer chose (zip's flag bit 1 says which; both are read).
  auto* options = static_cast<lzma_options_lzma*>(filter.options);
  // No match reaches back further than the data is long, so a dictionary
  // beyond that is never used: it is not taken (as liblzma does for .lzma
  // files of known size). What is left must fit the limit: the raw decoder
  // takes no limit of its own.
  options->dict_size = static_cast<uint32_t>(
      std::min<uint64_t>(options->dict_size, std::max<uint64_t>(size, LZMA_DICT_SIZE_MIN)));
  if (options->dict_size > memory_limit) {
    const uint32_t dictionary = options->dict_size;
    std::free(options);
    return Status::InvalidArgument("its LZMA dictionary of " + std::to_string(dictionary) +
                                   " bytes needs more memory than this machine allows it");
  }
  options->ext_flags = LZMA_LZMA1EXT_ALLOW_EOPM;
  lzma_set_ext_size(*options, size);
  data->remove_prefix(4 + properties);
  return std::unique_ptr<StreamDecoder>(std::make_unique<ZipLzmaStreamDecoder>(options));
}

}  // namespace accumulus::data
