// Who may call what: the roles of the client API, and job ownership.
//
//   viewer     GetJob, ListJobs, WatchJob, ListWorkers
//   submitter  + SubmitJob; CancelJob and ResumeJob of the jobs it owns
//   admin      everything, on every job
//
// The caller is the principal its call's bearer token names (the call's own
// `authorization` header, which the TokenAuthenticator has already checked).
// A controller without a tokens file has no principals: every
// caller is "anonymous" with the admin role (it warns at start). A refusal
// is counted and logged with the caller's name, never its token.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <string_view>

#include "accumulus/v1/job.pb.h"
#include "common/access_token.h"
#include "common/metrics/registry.h"
#include "common/status.h"
#include "server/token_table.h"

namespace accumulus::server {

struct Principal {
  std::string name;
  Role role = Role::kViewer;
};

// What a call needs: the role it starts at.
enum class Action {
  kView,    // viewer
  kSubmit,  // submitter
  kManage,  // submitter on its own jobs (AllowOnJob), admin on any
};

class AccessPolicy {
 public:
  inline static constexpr char kAnonymous[] = "anonymous";

  // `tokens`: the controller's tokens file (null: none, every caller is the
  // anonymous admin). `refused` counts refusals (label code:
  // unauthenticated, permission_denied).
  AccessPolicy(std::shared_ptr<const TokenTable> tokens,
               metrics::Family<metrics::Counter>* refused);

  // The caller of `context` if its role allows `action`: UNAUTHENTICATED
  // without a token, PERMISSION_DENIED for a role below the action's.
  // `method` (e.g. "CancelJob") is for the message and the log.
  StatusOr<Principal> Authorize(const grpc::ServerContextBase& context, Action action,
                                std::string_view method) const;
  // Whether `caller` (already allowed kManage) may `verb` ("cancel") `job`:
  // its owner or an admin; PERMISSION_DENIED otherwise.
  Status AllowOnJob(const Principal& caller, const v1::Job& job, std::string_view verb) const;

 private:
  Status Refuse(Status status, std::string_view method, std::string_view who) const;

  const std::shared_ptr<const TokenTable> tokens_;
  metrics::Counter* const unauthenticated_;
  metrics::Counter* const permission_denied_;
};

}  // namespace accumulus::server
