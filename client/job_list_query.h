// `accumulus list`'s flags as a ListJobsRequest, and the pages it reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "accumulus/v1/controller.pb.h"
#include "client/controller_client.h"
#include "common/status.h"

namespace accumulus::client {

struct ListFlags {
  std::vector<std::string> states;  // --state running (state names as `list` shows them)
  std::string owner;                // --owner alice
  std::vector<std::string> labels;  // --label team=vision
  int64_t limit = 0;                // --limit: at most this many jobs (0: all)
};

// INVALID_ARGUMENT naming the flag and its value for an unknown state or a
// label that is not key=value.
StatusOr<v1::ListJobsRequest> ListRequestOf(const ListFlags& flags);

// Every page of the request's jobs (up to `limit`) in one response; its
// next_page_token is set when `limit` cut the list short.
StatusOr<v1::ListJobsResponse> ListAllPages(ControllerClient& client, v1::ListJobsRequest request,
                                            int64_t limit);

}  // namespace accumulus::client
