// The one place an accumulus Status becomes a grpc::Status and back.
#pragma once

#include <grpcpp/support/status.h>

#include "common/status.h"

namespace accumulus {

grpc::Status ToGrpcStatus(const Status& status);
Status FromGrpcStatus(const grpc::Status& status);

}  // namespace accumulus
