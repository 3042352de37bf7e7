#include "server/controller_service.h"

#include <cctype>

#include "common/grpc_status.h"
#include "common/user_text.h"
#include "server/watch_reactor.h"

namespace accumulus::server {
namespace {

// The longest job id a request may name (ours have 16 bytes) and cancel
// reason it may give.
constexpr size_t kMaxJobIdBytes = 64;
constexpr size_t kMaxReasonBytes = 1024;

// A job id as the controller makes them: [A-Za-z0-9._-], bounded. What is
// not one is refused before it is looked up, so that an error never quotes
// a huge or unprintable id.
Status CheckJobId(const std::string& id) {
  if (id.empty()) return Status::InvalidFields({{"job_id", "job_id is required"}});
  bool valid = id.size() <= kMaxJobIdBytes;
  for (size_t i = 0; valid && i < id.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(id[i]);
    valid = std::isalnum(c) || c == '-' || c == '_' || c == '.';
  }
  if (valid) return Status::Ok();
  return Status::InvalidFields({{"job_id", "job_id " + QuotedForError(id) +
                                               " is not a job id (letters, digits, '-', '_' and "
                                               "'.', at most " +
                                               std::to_string(kMaxJobIdBytes) + ")"}});
}

// Finishes a unary RPC with `result` copied into `response`, or its error.
template <typename T>
grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* context, const StatusOr<T>& result,
                                T* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (result.ok()) *response = *result;
  reactor->Finish(ToGrpcStatus(result.status()));
  return reactor;
}

// Finishes a unary RPC that changed the state once the change is durable:
// a client told a job is submitted (cancelled, resumed) finds it so after a
// controller restart.
template <typename T>
grpc::ServerUnaryReactor* ReplyWhenDurable(grpc::CallbackServerContext* context,
                                           const StatusOr<T>& result, T* response,
                                           JobManager* jobs) {
  if (!result.ok()) return Reply(context, result, response);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  *response = *result;
  jobs->WhenDurable([reactor](const Status& durable) { reactor->Finish(ToGrpcStatus(durable)); });
  return reactor;
}

// A write reactor that fails at once (e.g. WatchJob of an unknown job).
class FailedWatch final : public grpc::ServerWriteReactor<v1::JobEvent> {
 public:
  explicit FailedWatch(const Status& status) { Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

Status ControllerService::AllowOnJob(const Principal& caller, const std::string& job_id,
                                     std::string_view verb) const {
  StatusOr<v1::Job> job = jobs_->Get(job_id);
  if (!job.ok()) return job.status();
  return access_->AllowOnJob(caller, *job, verb);
}

grpc::ServerUnaryReactor* ControllerService::SubmitJob(grpc::CallbackServerContext* context,
                                                       const v1::SubmitJobRequest* request,
                                                       v1::Job* response) {
  StatusOr<Principal> caller = access_->Authorize(*context, Action::kSubmit, "SubmitJob");
  if (!caller.ok()) return Reply(context, StatusOr<v1::Job>(caller.status()), response);
  return ReplyWhenDurable(context,
                          jobs_->Submit(request->spec(), caller->name, request->request_id()),
                          response, jobs_);
}

grpc::ServerUnaryReactor* ControllerService::GetJob(grpc::CallbackServerContext* context,
                                                    const v1::GetJobRequest* request,
                                                    v1::Job* response) {
  StatusOr<Principal> caller = access_->Authorize(*context, Action::kView, "GetJob");
  Status allowed = caller.ok() ? CheckJobId(request->job_id()) : caller.status();
  if (!allowed.ok()) return Reply(context, StatusOr<v1::Job>(allowed), response);
  return Reply(context, jobs_->Get(request->job_id()), response);
}

grpc::ServerUnaryReactor* ControllerService::ListJobs(grpc::CallbackServerContext* context,
                                                      const v1::ListJobsRequest* request,
                                                      v1::ListJobsResponse* response) {
  StatusOr<Principal> caller = access_->Authorize(*context, Action::kView, "ListJobs");
  if (!caller.ok()) {
    return Reply(context, StatusOr<v1::ListJobsResponse>(caller.status()), response);
  }
  return Reply(context, jobs_->ListPage(*request), response);
}

grpc::ServerUnaryReactor* ControllerService::CancelJob(grpc::CallbackServerContext* context,
                                                       const v1::CancelJobRequest* request,
                                                       v1::Job* response) {
  StatusOr<Principal> caller = access_->Authorize(*context, Action::kManage, "CancelJob");
  Status allowed = caller.ok() ? CheckJobId(request->job_id()) : caller.status();
  if (allowed.ok()) {
    if (Status s = CheckPrintableText("reason", request->reason(), kMaxReasonBytes, "a reason");
        !s.ok()) {
      allowed = Status::InvalidFields({{"reason", s.message()}});
    }
  }
  if (allowed.ok()) allowed = AllowOnJob(*caller, request->job_id(), "cancel");
  if (!allowed.ok()) return Reply(context, StatusOr<v1::Job>(allowed), response);
  return ReplyWhenDurable(context, jobs_->Cancel(request->job_id(), request->reason()), response,
                          jobs_);
}

grpc::ServerUnaryReactor* ControllerService::ResumeJob(grpc::CallbackServerContext* context,
                                                       const v1::ResumeJobRequest* request,
                                                       v1::Job* response) {
  StatusOr<Principal> caller = access_->Authorize(*context, Action::kManage, "ResumeJob");
  Status allowed = caller.ok() ? CheckJobId(request->job_id()) : caller.status();
  if (allowed.ok()) allowed = AllowOnJob(*caller, request->job_id(), "resume");
  if (!allowed.ok()) return Reply(context, StatusOr<v1::Job>(allowed), response);
  return ReplyWhenDurable(context, jobs_->Resume(request->job_id()), response, jobs_);
}

grpc::ServerWriteReactor<v1::JobEvent>* ControllerService::WatchJob(
    grpc::CallbackServerContext* context, const v1::WatchJobRequest* request) {
  StatusOr<Principal> caller = access_->Authorize(*context, Action::kView, "WatchJob");
  if (!caller.ok()) return new FailedWatch(caller.status());
  if (Status s = CheckJobId(request->job_id()); !s.ok()) return new FailedWatch(s);
  StatusOr<std::shared_ptr<EventLog>> log = jobs_->Events(request->job_id());
  if (!log.ok()) return new FailedWatch(log.status());
  if (request->after_sequence() < 0) {
    return new FailedWatch(Status::InvalidArgument(
        "after_sequence " + std::to_string(request->after_sequence()) + " must not be negative"));
  }
  StatusOr<std::unique_ptr<WatchQuota::Ticket>> place = watch_quota_->Take(caller->name);
  if (!place.ok()) return new FailedWatch(place.status());
  return new WatchReactor(*log, request->after_sequence(), metrics_, std::move(*place));
}

grpc::ServerUnaryReactor* ControllerService::ListWorkers(grpc::CallbackServerContext* context,
                                                         const v1::ListWorkersRequest*,
                                                         v1::ListWorkersResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  StatusOr<Principal> caller = access_->Authorize(*context, Action::kView, "ListWorkers");
  if (caller.ok()) {
    for (v1::WorkerInfo& w : jobs_->Workers()) *response->add_workers() = std::move(w);
  }
  reactor->Finish(ToGrpcStatus(caller.status()));
  return reactor;
}

}  // namespace accumulus::server
