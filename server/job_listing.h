// ListJobs' side of the job table: a request's filters and page, the order
// jobs are listed in, opaque page tokens, and the summary a list shows of a
// job (bounded, whatever the job holds).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "accumulus/v1/controller.pb.h"
#include "common/status.h"

namespace accumulus::server {

// Where a job stands in a list: by submission time, then id. Derived from
// the job alone, so a page token stays valid across controller restarts.
struct ListPosition {
  int64_t seconds = 0;
  int32_t nanos = 0;
  std::string job_id;

  static ListPosition Of(const v1::Job& job);
  bool operator<(const ListPosition& o) const {
    return std::tie(seconds, nanos, job_id) < std::tie(o.seconds, o.nanos, o.job_id);
  }
};

// A ListJobsRequest, checked.
struct ListQuery {
  int page_size = 0;
  // List the jobs after this position (none: from the first).
  bool has_after = false;
  ListPosition after;
  std::set<int> states;  // v1::JobState values; empty: all
  std::string owner;
  std::vector<std::pair<std::string, std::string>> labels;

  bool Matches(const v1::Job& job) const;
};

inline constexpr int kDefaultPageSize = 100;
inline constexpr int kMaxPageSize = 1000;
// How many jobs one page looks at, matching or not: a selective filter over
// many jobs returns a short (even empty) page with a token to go on, so a
// call holds the job table's lock for a bounded time.
inline constexpr int kMaxJobsScannedPerPage = 10000;
// JobSummary.reason is cut to this many bytes.
inline constexpr size_t kMaxSummaryReasonBytes = 256;

// INVALID_ARGUMENT with a field violation for each bad field: a negative
// page_size, a token this controller did not make, a state that is not one.
StatusOr<ListQuery> ParseListQuery(const v1::ListJobsRequest& request);

std::string PageToken(const ListPosition& last_listed);

v1::JobSummary Summarize(const v1::Job& job);

}  // namespace accumulus::server
