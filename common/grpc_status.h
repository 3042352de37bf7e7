// The one place an accumulus Status becomes a grpc::Status and back.
#pragma once

#include <grpcpp/support/status.h>

#include "common/status.h"

namespace accumulus {

// An error carries its details (google.rpc.Status: code and message, and a
// BadRequest with the field violations where there are any) in every case,
// so that a client can tell the controller's own answer from one gRPC made
// up (UNAVAILABLE: the controller is down; its own: it cannot record now).
grpc::Status ToGrpcStatus(const Status& status);
Status FromGrpcStatus(const grpc::Status& status);
// Whether `status` came from the controller (ToGrpcStatus), not from gRPC.
bool IsControllersAnswer(const grpc::Status& status);

}  // namespace accumulus
