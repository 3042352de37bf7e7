#include "client/controller_client.h"

#include "common/grpc_status.h"

namespace accumulus::client {

StatusOr<ControllerClient> ControllerClient::Connect(const std::string& address,
                                                     const ClientTls& tls, const std::string& token,
                                                     std::chrono::milliseconds connect_timeout) {
  StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials = MakeChannelCredentials(tls);
  if (!credentials.ok()) return credentials.status();
  if (!token.empty()) {
    if (tls.insecure) {
      return Status::InvalidArgument(
          "a bearer token is sent only over TLS, and --insecure asks for plaintext (unset "
          "ACCUMULUS_TOKEN and ACCUMULUS_TOKEN_FILE, or drop --insecure)");
    }
    // gRPC sends it as "authorization: Bearer <token>", and only over a
    // channel that is secure.
    *credentials =
        grpc::CompositeChannelCredentials(*credentials, grpc::AccessTokenCredentials(token));
  }
  grpc::ChannelArguments args = TlsChannelArguments(tls);
  // A controller that stops answering (a partition, a frozen host) ends a
  // watch within ~30 s — a ping every 20 s, 10 s for its answer — even while
  // no event flows; the watch then reconnects. The controller allows pings
  // this often (controller.cc), so it never answers too_many_pings.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 20000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  return ControllerClient(address, connect_timeout,
                          grpc::CreateCustomChannel(address, *credentials, args));
}

ControllerClient::ControllerClient(std::string address, std::chrono::milliseconds connect_timeout,
                                   std::shared_ptr<grpc::Channel> channel)
    : address_(std::move(address)),
      connect_timeout_(connect_timeout),
      channel_(std::move(channel)),
      stub_(v1::Controller::NewStub(channel_)) {}

void ControllerClient::Prepare(grpc::ClientContext* context) const {
  context->set_wait_for_ready(true);
  context->set_deadline(std::chrono::system_clock::now() + connect_timeout_);
}

template <typename Response>
StatusOr<Response> ControllerClient::Result(const grpc::Status& status, Response response) const {
  if (status.ok()) return response;
  if (IsControllersAnswer(status)) return FromGrpcStatus(status);
  const bool connected = channel_->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_READY;
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && connected) {
    // Reached, but no answer in time (a change waits until the controller
    // has recorded it): what was asked may still take effect.
    return Status(
        StatusCode::kDeadlineExceeded,
        "controller " + address_ + " did not answer within " +
            std::to_string(connect_timeout_.count()) +
            " ms; what was asked may still take effect (`accumulus list` shows what it holds), "
            "and its log or /metrics (accumulus_store_writable) may say why");
  }
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
      status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return Status::Unavailable(
        "controller " + address_ + " is not reachable (" + status.error_message() +
        "): is it running (accumulus up), and does --ca-file hold the CA of its certificate "
        "(--insecure for a controller that serves plaintext)?");
  }
  return FromGrpcStatus(status);
}

StatusOr<v1::Job> ControllerClient::Submit(const v1::JobSpec& spec, const std::string& request_id) {
  v1::SubmitJobRequest request;
  *request.mutable_spec() = spec;
  request.set_request_id(request_id);
  const int tries = request_id.empty() ? 1 : 3;
  grpc::Status status;
  v1::Job job;
  for (int i = 0; i < tries; ++i) {
    grpc::ClientContext context;
    Prepare(&context);
    status = stub_->SubmitJob(&context, request, &job);
    // Again only when the call may not have reached the controller.
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE || IsControllersAnswer(status)) break;
  }
  return Result(status, job);
}

StatusOr<v1::Job> ControllerClient::Get(const std::string& job_id) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::GetJobRequest request;
  request.set_job_id(job_id);
  v1::Job job;
  const grpc::Status status = stub_->GetJob(&context, request, &job);
  return Result(status, job);
}

StatusOr<v1::ListJobsResponse> ControllerClient::List(const v1::ListJobsRequest& request) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::ListJobsResponse response;
  const grpc::Status status = stub_->ListJobs(&context, request, &response);
  return Result(status, response);
}

StatusOr<v1::Job> ControllerClient::Cancel(const std::string& job_id, const std::string& reason) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::CancelJobRequest request;
  request.set_job_id(job_id);
  request.set_reason(reason);
  v1::Job job;
  const grpc::Status status = stub_->CancelJob(&context, request, &job);
  return Result(status, job);
}

StatusOr<v1::Job> ControllerClient::Resume(const std::string& job_id) {
  grpc::ClientContext context;
  Prepare(&context);
  v1::ResumeJobRequest request;
  request.set_job_id(job_id);
  v1::Job job;
  const grpc::Status status = stub_->ResumeJob(&context, request, &job);
  return Result(status, job);
}

StatusOr<v1::ListWorkersResponse> ControllerClient::Workers() {
  grpc::ClientContext context;
  Prepare(&context);
  v1::ListWorkersResponse response;
  const grpc::Status status = stub_->ListWorkers(&context, v1::ListWorkersRequest(), &response);
  return Result(status, response);
}

Status ControllerClient::Watch(const std::string& job_id, int64_t after_sequence,
                               const std::function<bool(const v1::JobEvent&)>& on_event) {
  grpc::ClientContext context;
  // No deadline: a job may train for days. Waiting for the first connection
  // is bounded by the connect timeout through the first Get instead.
  context.set_wait_for_ready(true);
  v1::WatchJobRequest request;
  request.set_job_id(job_id);
  request.set_after_sequence(after_sequence);
  auto reader = stub_->WatchJob(&context, request);
  v1::JobEvent event;
  while (reader->Read(&event)) {
    if (!on_event(event)) {
      context.TryCancel();
      while (reader->Read(&event)) {
      }
      reader->Finish();
      return Status::Ok();
    }
  }
  auto result = Result(reader->Finish(), 0);
  return result.status();
}

}  // namespace accumulus::client
