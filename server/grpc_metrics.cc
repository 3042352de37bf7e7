#include "server/grpc_metrics.h"

#include <chrono>
#include <string>

namespace accumulus::server {
namespace {

using grpc::experimental::InterceptionHookPoints;

class CallMetrics final : public grpc::experimental::Interceptor {
 public:
  CallMetrics(ControllerMetrics* metrics, const grpc::experimental::ServerRpcInfo& info)
      : metrics_(metrics),
        method_(info.method() != nullptr ? info.method() : "unknown"),
        unary_(info.type() == grpc::experimental::ServerRpcInfo::Type::UNARY),
        start_(std::chrono::steady_clock::now()) {}

  // A call that ended without a status of ours (the client cancelled it, or
  // its deadline passed) counts as CANCELLED.
  ~CallMetrics() override {
    if (!counted_) Count(grpc::StatusCode::CANCELLED);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      Count(methods->GetSendStatus().error_code());
    }
    methods->Proceed();
  }

 private:
  void Count(grpc::StatusCode code) {
    counted_ = true;
    metrics_->grpc_requests->WithLabels({method_, GrpcCodeName(code)})->Increment();
    if (unary_) {
      metrics_->grpc_request_seconds->WithLabels({method_})->Observe(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    }
  }

  ControllerMetrics* const metrics_;
  const std::string method_;
  const bool unary_;
  const std::chrono::steady_clock::time_point start_;
  bool counted_ = false;
};

class CallMetricsFactory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit CallMetricsFactory(ControllerMetrics* metrics) : metrics_(metrics) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new CallMetrics(metrics_, *info);
  }

 private:
  ControllerMetrics* const metrics_;
};

}  // namespace

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> GrpcMetricsInterceptor(
    ControllerMetrics* metrics) {
  return std::make_unique<CallMetricsFactory>(metrics);
}

const char* GrpcCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

}  // namespace accumulus::server
