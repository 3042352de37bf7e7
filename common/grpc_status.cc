#include "common/grpc_status.h"

namespace accumulus {

grpc::Status ToGrpcStatus(const Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), status.message());
}

Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return Status::Ok();
  return Status(static_cast<StatusCode>(status.error_code()), status.error_message());
}

}  // namespace accumulus
