#include "server/access_policy.h"

#include <spdlog/spdlog.h>

namespace accumulus::server {
namespace {

Role RoleFor(Action action) {
  switch (action) {
    case Action::kView:
      return Role::kViewer;
    case Action::kSubmit:
    case Action::kManage:
      return Role::kSubmitter;
  }
  return Role::kAdmin;
}

std::string What(Action action) {
  switch (action) {
    case Action::kView:
      return "reading jobs and workers";
    case Action::kSubmit:
      return "submitting jobs";
    case Action::kManage:
      return "cancelling and resuming jobs";
  }
  return "this call";
}

}  // namespace

AccessPolicy::AccessPolicy(std::shared_ptr<const TokenTable> tokens,
                           metrics::Family<metrics::Counter>* refused)
    : tokens_(std::move(tokens)),
      unauthenticated_(refused->WithLabels({"unauthenticated"})),
      permission_denied_(refused->WithLabels({"permission_denied"})) {}

StatusOr<Principal> AccessPolicy::Authorize(const grpc::ServerContextBase& context, Action action,
                                            std::string_view method) const {
  if (tokens_ == nullptr) return Principal{kAnonymous, Role::kAdmin};
  // More than one header was refused before the service already.
  const TokenTable::Headers headers = TokenTable::FindHeaders(context.client_metadata());
  if (headers.count != 1) {
    unauthenticated_->Increment();
    spdlog::info("refused {} from {}: no bearer token", method, context.peer());
    return Status::Unauthenticated(
        "this controller requires a bearer token (the CLI: --token-file, ACCUMULUS_TOKEN_FILE "
        "or ACCUMULUS_TOKEN)");
  }
  const StatusOr<TokenEntry> token = tokens_->Lookup(headers.first);
  if (!token.ok()) {
    // Refused before the service already, unless it came another way (a
    // plaintext port): counted once either way.
    unauthenticated_->Increment();
    return token.status();
  }
  Principal caller{token->name, token->role};
  const Role needed = RoleFor(action);
  if (caller.role < needed) {
    return Refuse(Status::PermissionDenied(
                      caller.name + " has the " + std::string(RoleName(caller.role)) + " role; " +
                      What(action) + " needs " + std::string(RoleName(needed)) +
                      (needed == Role::kAdmin ? "" : " or admin")),
                  method, caller.name);
  }
  return caller;
}

Status AccessPolicy::AllowOnJob(const Principal& caller, const v1::Job& job,
                                std::string_view verb) const {
  if (caller.role == Role::kAdmin || caller.name == job.owner()) return Status::Ok();
  return Refuse(
      Status::PermissionDenied(job.id() + " belongs to " + job.owner() + "; " + caller.name + " (" +
                               std::string(RoleName(caller.role)) + ") may " + std::string(verb) +
                               " only its own jobs (an admin may " + std::string(verb) + " any)"),
      verb, caller.name);
}

Status AccessPolicy::Refuse(Status status, std::string_view method, std::string_view who) const {
  permission_denied_->Increment();
  spdlog::info("refused {} for {}: {}", method, who, status.message());
  return status;
}

}  // namespace accumulus::server
