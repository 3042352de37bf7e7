#include "server/grpc_metrics.h"

#include <chrono>
#include <string>

#include "common/status.h"

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
    // StatusCode numbers its codes as gRPC does.
    metrics_->grpc_requests->WithLabels({method_, StatusCodeName(static_cast<StatusCode>(code))})
        ->Increment();
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

}  // namespace accumulus::server
