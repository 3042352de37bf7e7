// Counts every gRPC call the controller serves by method and status code,
// and times the unary ones: a server interceptor, so that no service has to
// remember to (the callback API's reactors included).
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <memory>

#include "server/controller_metrics.h"

namespace accumulus::server {

// The interceptor factory for ServerBuilder::experimental()
// .SetInterceptorCreators. `metrics` must outlive the server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> GrpcMetricsInterceptor(
    ControllerMetrics* metrics);

}  // namespace accumulus::server
