#include "client/job_list_query.h"

#include <google/protobuf/descriptor.h>

#include <algorithm>
#include <cctype>

namespace accumulus::client {
namespace {

constexpr char kStatePrefix[] = "JOB_STATE_";

// "queued, starting, running, ...": the states a flag may name, from the
// enum itself.
std::string StateNames() {
  std::string names;
  const google::protobuf::EnumDescriptor* states = v1::JobState_descriptor();
  for (int i = 0; i < states->value_count(); ++i) {
    if (states->value(i)->number() == v1::JOB_STATE_UNSPECIFIED) continue;
    std::string name = states->value(i)->name().substr(sizeof kStatePrefix - 1);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    names += (names.empty() ? "" : ", ") + name;
  }
  return names;
}

}  // namespace

StatusOr<v1::ListJobsRequest> ListRequestOf(const ListFlags& flags) {
  v1::ListJobsRequest request;
  std::vector<FieldViolation> bad;
  for (const std::string& name : flags.states) {
    std::string enum_name = kStatePrefix;
    for (char c : name) enum_name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    v1::JobState state = v1::JOB_STATE_UNSPECIFIED;
    if (!v1::JobState_Parse(enum_name, &state) || state == v1::JOB_STATE_UNSPECIFIED) {
      bad.push_back(
          {"--state", "--state \"" + name + "\" is not a job state (one of " + StateNames() + ")"});
      continue;
    }
    request.add_states(state);
  }
  request.set_owner(flags.owner);
  for (const std::string& label : flags.labels) {
    const size_t equals = label.find('=');
    if (equals == std::string::npos || equals == 0) {
      bad.push_back({"--label", "--label \"" + label + "\" is not key=value"});
      continue;
    }
    (*request.mutable_labels())[label.substr(0, equals)] = label.substr(equals + 1);
  }
  if (flags.limit < 0) {
    bad.push_back({"--limit", "--limit " + std::to_string(flags.limit) + " must not be negative"});
  }
  if (!bad.empty()) return Status::InvalidFields(std::move(bad));
  return request;
}

StatusOr<v1::ListJobsResponse> ListAllPages(ControllerClient& client, v1::ListJobsRequest request,
                                            int64_t limit) {
  v1::ListJobsResponse all;
  do {
    // Never more than the limit leaves, so the server's token is where the
    // list goes on.
    if (limit > 0) {
      request.set_page_size(static_cast<int32_t>(std::min<int64_t>(limit - all.jobs_size(), 1000)));
    }
    StatusOr<v1::ListJobsResponse> page = client.List(request);
    if (!page.ok()) return page.status();
    for (v1::JobSummary& job : *page->mutable_jobs()) *all.add_jobs() = std::move(job);
    all.set_next_page_token(page->next_page_token());
    request.set_page_token(page->next_page_token());
  } while (!request.page_token().empty() && (limit == 0 || all.jobs_size() < limit));
  return all;
}

}  // namespace accumulus::client
