#include "common/grpc_status.h"

#include "accumulus/v1/error_details.pb.h"

namespace accumulus {
namespace {

// The type URL of google.rpc.BadRequest, whose wire format ours shares.
constexpr char kBadRequestTypeUrl[] = "type.googleapis.com/google.rpc.BadRequest";

}  // namespace

grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const auto code = static_cast<grpc::StatusCode>(status.code());
  v1::RpcStatus details;
  details.set_code(static_cast<int32_t>(code));
  details.set_message(status.message());
  if (!status.field_violations().empty()) {
    v1::BadRequest bad_request;
    for (const FieldViolation& v : status.field_violations()) {
      v1::BadRequest::FieldViolation* out = bad_request.add_field_violations();
      out->set_field(v.field);
      out->set_description(v.description);
    }
    google::protobuf::Any* any = details.add_details();
    any->set_type_url(kBadRequestTypeUrl);
    any->set_value(bad_request.SerializeAsString());
  }
  return grpc::Status(code, status.message(), details.SerializeAsString());
}

bool IsControllersAnswer(const grpc::Status& status) {
  v1::RpcStatus details;
  return !status.error_details().empty() && details.ParseFromString(status.error_details()) &&
         details.code() == static_cast<int32_t>(status.error_code());
}

Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return Status::Ok();
  const auto code = static_cast<StatusCode>(status.error_code());
  v1::RpcStatus details;
  std::vector<FieldViolation> violations;
  if (code == StatusCode::kInvalidArgument && !status.error_details().empty() &&
      details.ParseFromString(status.error_details())) {
    for (const google::protobuf::Any& any : details.details()) {
      v1::BadRequest bad_request;
      if (any.type_url() != kBadRequestTypeUrl || !bad_request.ParseFromString(any.value())) {
        continue;
      }
      for (const v1::BadRequest::FieldViolation& v : bad_request.field_violations()) {
        violations.push_back({v.field(), v.description()});
      }
    }
  }
  return Status(code, status.error_message(), std::move(violations));
}

}  // namespace accumulus
