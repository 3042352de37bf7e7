#include "common/data/stream_decoder.h"

#include <algorithm>

namespace accumulus::data {
namespace {

// The first buffer for output of unknown size; it doubles from there.
constexpr size_t kFirstBuffer = size_t{1} << 16;

// Why a stream could not be read: corrupt (`where`: " at its byte 812",
// or ""), beyond what is read here, or out of memory.
Status StreamError(StreamEnd end, const std::string& format, const StreamDecoder& decoder,
                   const std::string& where) {
  switch (end) {
    case StreamEnd::kCorrupt:
      return Status::InvalidArgument("the " + format + " data is corrupt" + where + " (" +
                                     decoder.message() + ")");
    case StreamEnd::kUnsupported:
      return Status::InvalidArgument("the " + format + " data cannot be read here (" +
                                     decoder.message() + ")");
    default:
      return Status(StatusCode::kResourceExhausted,
                    "out of memory decompressing " + format + " data");
  }
}

// How a stream ended, by the decoder's last step (not kProgress).
StreamEnd EndOf(StreamDecoder::Step step) {
  switch (step) {
    case StreamDecoder::Step::kEnd:
      return StreamEnd::kEnd;
    case StreamDecoder::Step::kUnsupported:
      return StreamEnd::kUnsupported;
    case StreamDecoder::Step::kNoMemory:
      return StreamEnd::kNoMemory;
    case StreamDecoder::Step::kCorrupt:
    case StreamDecoder::Step::kProgress:
      break;
  }
  return StreamEnd::kCorrupt;
}

}  // namespace

StreamEnd DecodeStream(StreamDecoder* decoder, std::string_view* in, std::string* out,
                       size_t limit) {
  size_t filled = out->size();
  for (;;) {
    char probe;  // one byte past `limit`: whether more would come
    if (filled == out->size() && filled < limit) {
      out->resize(std::min(limit, std::max({kFirstBuffer, 2 * filled, out->capacity()})));
    }
    const bool probing = filled == limit;
    char* next = probing ? &probe : out->data() + filled;
    size_t room = probing ? 1 : out->size() - filled;
    const size_t room_before = room;
    const size_t in_before = in->size();
    const StreamDecoder::Step step = decoder->Decode(in, &next, &room);
    const size_t produced = room_before - room;
    if (probing && produced > 0) {
      out->resize(filled);
      return StreamEnd::kFull;
    }
    filled += produced;
    if (step == StreamDecoder::Step::kProgress) {
      if (produced > 0 || in->size() != in_before) continue;
      // No progress with room to write: it waits for input there is not.
      out->resize(filled);
      return in->empty() ? StreamEnd::kTruncated : StreamEnd::kCorrupt;
    }
    out->resize(filled);
    return EndOf(step);
  }
}

StatusOr<std::string> DecodeExactly(StreamDecoder* decoder, const std::string& format,
                                    std::string_view data, size_t size) {
  std::string out;
  out.reserve(size);
  std::string_view in = data;
  const StreamEnd end = DecodeStream(decoder, &in, &out, size);
  switch (end) {
    case StreamEnd::kEnd:
      if (out.size() != size) {
        return Status::InvalidArgument("the " + format + " data holds " +
                                       std::to_string(out.size()) + " bytes, not the " +
                                       std::to_string(size) + " its directory entry records");
      }
      return out;
    case StreamEnd::kFull:
      return Status::InvalidArgument("the " + format + " data holds more than the " +
                                     std::to_string(size) + " bytes its directory entry records");
    case StreamEnd::kTruncated:
      return Status::InvalidArgument("the " + format +
                                     " data ends early: the archive is cut short");
    case StreamEnd::kCorrupt:
    case StreamEnd::kUnsupported:
    case StreamEnd::kNoMemory:
      break;
  }
  return StreamError(end, format, *decoder,
                     " at its byte " + std::to_string(data.size() - in.size()));
}

StatusOr<std::string> DecodePrefix(StreamDecoder* decoder, const std::string& format,
                                   std::string_view data, size_t size) {
  std::string out;
  const StreamEnd end = DecodeStream(decoder, &data, &out, size);
  switch (end) {
    case StreamEnd::kEnd:
    case StreamEnd::kFull:
    case StreamEnd::kTruncated:  // what there is of the prefix
      return out;
    case StreamEnd::kCorrupt:
    case StreamEnd::kUnsupported:
    case StreamEnd::kNoMemory:
      break;
  }
  return StreamError(end, format, *decoder, "");
}

}  // namespace accumulus::data
