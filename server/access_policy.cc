#include "server/access_policy.h"

#include <spdlog/spdlog.h>

#include <optional>

#include "server/token_authenticator.h"

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

std::optional<std::string> Property(const grpc::AuthContext& auth, const char* name) {
  const std::vector<grpc::string_ref> values = auth.FindPropertyValues(name);
  if (values.empty()) return std::nullopt;
  return std::string(values.front().data(), values.front().size());
}

}  // namespace

AccessPolicy::AccessPolicy(bool tokens_required, metrics::Family<metrics::Counter>* refused)
    : tokens_required_(tokens_required),
      unauthenticated_(refused->WithLabels({"unauthenticated"})),
      permission_denied_(refused->WithLabels({"permission_denied"})) {}

StatusOr<Principal> AccessPolicy::Authorize(const grpc::ServerContextBase& context, Action action,
                                            std::string_view method) const {
  if (!tokens_required_) return Principal{kAnonymous, Role::kAdmin};
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  const std::optional<std::string> name = auth ? Property(*auth, kPrincipalProperty) : std::nullopt;
  const std::optional<std::string> role_name = auth ? Property(*auth, kRoleProperty) : std::nullopt;
  const std::optional<Role> role = role_name ? ParseRole(*role_name) : std::nullopt;
  if (!name || !role) {
    unauthenticated_->Increment();
    spdlog::info("refused {} from {}: no bearer token", method, context.peer());
    return Status::Unauthenticated(
        "this controller requires a bearer token (the CLI: --token-file, ACCUMULUS_TOKEN_FILE "
        "or ACCUMULUS_TOKEN)");
  }
  Principal caller{*name, *role};
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
