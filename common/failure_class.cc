#include "common/failure_class.h"

namespace accumulus {

v1::FailureClass FailureClassOf(const Status& status) {
  switch (status.fault()) {
    case Fault::kSpec:
      return v1::FAILURE_CLASS_BAD_SPEC;
    case Fault::kData:
      return v1::FAILURE_CLASS_BAD_DATA;
    case Fault::kMemory:
      return v1::FAILURE_CLASS_OUT_OF_MEMORY;
    case Fault::kStorage:
      return v1::FAILURE_CLASS_STORAGE;
    case Fault::kPeers:
      return v1::FAILURE_CLASS_COLLECTIVE;
    case Fault::kUnclassified:
      break;
  }
  switch (status.code()) {
    case StatusCode::kOk:
      return v1::FAILURE_CLASS_UNSPECIFIED;
    case StatusCode::kCancelled:
      return v1::FAILURE_CLASS_CANCELLED;
    // What the trainer was given cannot run: the spec's fault, wherever
    // the engine found it out.
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kUnimplemented:
      return v1::FAILURE_CLASS_BAD_SPEC;
    case StatusCode::kResourceExhausted:
      return v1::FAILURE_CLASS_OUT_OF_MEMORY;
    case StatusCode::kDataLoss:  // a checkpoint that does not read back
      return v1::FAILURE_CLASS_STORAGE;
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
      return v1::FAILURE_CLASS_COLLECTIVE;
    default:
      return v1::FAILURE_CLASS_INTERNAL;
  }
}

}  // namespace accumulus
