// The CLI's view of the controller API: one call per RPC, errors as Status.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "accumulus/v1/controller.grpc.pb.h"
#include "common/status.h"
#include "common/tls.h"

namespace accumulus::client {

class ControllerClient {
 public:
  // `connect_timeout`: how long a call waits for the controller to become
  // reachable (calls wait for it, so a CLI started alongside a controller
  // needs no retry loop). `token`: the bearer token sent with every call
  // ("": none); only over TLS. INVALID_ARGUMENT for TLS files that cannot be
  // used, naming the flag and the file, and for a token without TLS.
  static StatusOr<ControllerClient> Connect(const std::string& address, const ClientTls& tls,
                                            const std::string& token,
                                            std::chrono::milliseconds connect_timeout);

  // `request_id` ("": none) makes a retry safe: the controller returns the
  // job the first attempt made. A call that failed in transit (UNAVAILABLE)
  // is retried with it, up to three times in all.
  StatusOr<v1::Job> Submit(const v1::JobSpec& spec, const std::string& request_id);
  StatusOr<v1::Job> Get(const std::string& job_id);
  // One page (job_list_query.h reads them all).
  StatusOr<v1::ListJobsResponse> List(const v1::ListJobsRequest& request);
  StatusOr<v1::Job> Cancel(const std::string& job_id, const std::string& reason);
  StatusOr<v1::Job> Resume(const std::string& job_id);
  StatusOr<v1::ListWorkersResponse> Workers();
  // Streams the job's events after `after_sequence` to `on_event` until the
  // job ends (OK), `on_event` returns false (OK: the stream is cancelled), or
  // the stream fails.
  Status Watch(const std::string& job_id, int64_t after_sequence,
               const std::function<bool(const v1::JobEvent&)>& on_event);

 private:
  ControllerClient(std::string address, std::chrono::milliseconds connect_timeout,
                   std::shared_ptr<grpc::Channel> channel);
  void Prepare(grpc::ClientContext* context) const;
  // `response`, or the error of a call that ended with `status`, in words
  // that say whether the controller was reached.
  template <typename Response>
  StatusOr<Response> Result(const grpc::Status& status, Response response) const;

  std::string address_;
  std::chrono::milliseconds connect_timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Controller::Stub> stub_;
};

}  // namespace accumulus::client
