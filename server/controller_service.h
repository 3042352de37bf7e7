// The client-facing gRPC API (accumulus.v1.Controller), on the callback API:
// no RPC holds a thread while it waits, so thousands of watchers cost no
// threads. Every call is authorized first (AccessPolicy: the caller's role,
// and for cancel and resume the job's owner).
#pragma once

#include "accumulus/v1/controller.grpc.pb.h"
#include "server/access_policy.h"
#include "server/controller_metrics.h"
#include "server/job_manager.h"
#include "server/watch_quota.h"

namespace accumulus::server {

class ControllerService final : public v1::Controller::CallbackService {
 public:
  ControllerService(JobManager* jobs, const AccessPolicy* access, ControllerMetrics* metrics,
                    WatchQuota* watch_quota)
      : jobs_(jobs), access_(access), metrics_(metrics), watch_quota_(watch_quota) {}

  grpc::ServerUnaryReactor* SubmitJob(grpc::CallbackServerContext* context,
                                      const v1::SubmitJobRequest* request,
                                      v1::Job* response) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context,
                                   const v1::GetJobRequest* request, v1::Job* response) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context,
                                     const v1::ListJobsRequest* request,
                                     v1::ListJobsResponse* response) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* context,
                                      const v1::CancelJobRequest* request,
                                      v1::Job* response) override;
  grpc::ServerUnaryReactor* ResumeJob(grpc::CallbackServerContext* context,
                                      const v1::ResumeJobRequest* request,
                                      v1::Job* response) override;
  grpc::ServerWriteReactor<v1::JobEvent>* WatchJob(grpc::CallbackServerContext* context,
                                                   const v1::WatchJobRequest* request) override;
  grpc::ServerUnaryReactor* ListWorkers(grpc::CallbackServerContext* context,
                                        const v1::ListWorkersRequest* request,
                                        v1::ListWorkersResponse* response) override;

 private:
  // The job `job_id` if `caller` may `verb` it (NOT_FOUND, PERMISSION_DENIED).
  Status AllowOnJob(const Principal& caller, const std::string& job_id,
                    std::string_view verb) const;

  JobManager* const jobs_;
  const AccessPolicy* const access_;
  ControllerMetrics* const metrics_;
  WatchQuota* const watch_quota_;
};

}  // namespace accumulus::server
