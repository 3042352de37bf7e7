// Status and StatusOr: the error type at accumulus module boundaries.
//
// Standard library only, so the training engine can use it on a machine that
// has nothing but LibTorch. Codes mirror the gRPC canonical codes so that
// ToGrpcStatus (common/grpc_status.h) is a one-to-one mapping.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace accumulus {

// gRPC's codes, by gRPC's numbers: a grpc::StatusCode converts by value
// (common/grpc_status.h, the controller's call metrics).
enum class StatusCode {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

// One thing wrong with one field of a request: the field's path
// ("optimizer.lr", "model.hidden[2]") and a sentence for a human that names
// the field, the value and what was expected.
struct FieldViolation {
  std::string field;
  std::string description;

  bool operator==(const FieldViolation& other) const {
    return field == other.field && description == other.description;
  }
};

// What a failure was about, where its code alone does not say (an
// INVALID_ARGUMENT may be the spec's or a data file's): set where the error
// arises, read where a job's failure is classed for programs
// (v1::FailureClass, worker/trainer/trainer_exit.h).
enum class Fault {
  kUnclassified,
  kSpec,     // the spec asks for what cannot run (a model that does not load)
  kData,     // a data file is missing, malformed or disagrees with the spec
  kMemory,   // out of memory at micro_batch 1
  kStorage,  // a checkpoint or the output cannot be written or read
  kPeers,    // another rank or a collective failed
};

// The outcome of an operation: OK, or a code and a message for a human that
// names what was wrong (the field, the value, the file). An invalid request
// may carry every one of its field violations (the message then lists all
// of their descriptions), so that a user fixes a spec in one round.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  Status(StatusCode code, std::string message, std::vector<FieldViolation> violations)
      : code_(code), message_(std::move(message)), field_violations_(std::move(violations)) {}

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  // INVALID_ARGUMENT with `violations` (at least one), whose descriptions,
  // joined by "; ", are the message.
  static Status InvalidFields(std::vector<FieldViolation> violations);
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {StatusCode::kFailedPrecondition, std::move(m)};
  }
  static Status ResourceExhausted(std::string m) {
    return {StatusCode::kResourceExhausted, std::move(m)};
  }
  static Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status PermissionDenied(std::string m) {
    return {StatusCode::kPermissionDenied, std::move(m)};
  }
  static Status Unauthenticated(std::string m) {
    return {StatusCode::kUnauthenticated, std::move(m)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::vector<FieldViolation>& field_violations() const { return field_violations_; }
  Fault fault() const { return fault_; }

  // "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is prefixed with `context: `.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    Status out = *this;
    out.message_ = context + ": " + message_;
    return out;
  }

  // Returns a copy that says what the failure was about.
  Status WithFault(Fault fault) const {
    Status out = *this;
    if (!ok()) out.fault_ = fault;
    return out;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::vector<FieldViolation> field_violations_;
  Fault fault_ = Fault::kUnclassified;
};

const char* StatusCodeName(StatusCode code);

inline std::string Status::ToString() const {
  return ok() ? "OK" : std::string(StatusCodeName(code_)) + ": " + message_;
}

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok() && "StatusOr needs a value or an error");
  }

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  T&& operator*() && { return std::move(*value_); }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace accumulus
