#include "server/job_listing.h"

#include <algorithm>
#include <charconv>

#include "common/utf8.h"

namespace accumulus::server {
namespace {

// Tokens are "p1.<seconds>.<nanos>.<job id>" in hex: opaque to clients (they
// must not build them) without being a secret (they say what a list shows).
constexpr char kTokenVersion[] = "p1";

std::string Hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

bool Unhex(const std::string& hex, std::string* bytes) {
  if (hex.size() % 2 != 0) return false;
  bytes->clear();
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned value = 0;
    const auto [end, error] = std::from_chars(hex.data() + i, hex.data() + i + 2, value, 16);
    if (error != std::errc() || end != hex.data() + i + 2) return false;
    bytes->push_back(static_cast<char>(value));
  }
  return true;
}

template <typename Int>
bool ParseInt(const std::string& text, Int* value) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

bool ParseToken(const std::string& token, ListPosition* position) {
  std::string text;
  if (token.size() > 1024 || !Unhex(token, &text)) return false;
  // version . seconds . nanos . id (the id has no dots: job-<base32>)
  std::vector<std::string> parts;
  for (size_t begin = 0;;) {
    const size_t dot = text.find('.', begin);
    parts.push_back(text.substr(begin, dot - begin));
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  return parts.size() == 4 && parts[0] == kTokenVersion && ParseInt(parts[1], &position->seconds) &&
         ParseInt(parts[2], &position->nanos) && !parts[3].empty() &&
         (position->job_id = parts[3], true);
}

// At most `max_bytes` of `text`, cut at a character boundary.
std::string CutUtf8(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = 0;
  for (size_t i = 0; i < text.size();) {
    uint32_t code_point = 0;
    const size_t length = std::max<size_t>(1, DecodeUtf8(text, i, &code_point));
    if (i + length > max_bytes - 3) break;  // room for "..."
    i += length;
    end = i;
  }
  return text.substr(0, end) + "...";
}

}  // namespace

ListPosition ListPosition::Of(const v1::Job& job) {
  return {job.submitted_at().seconds(), job.submitted_at().nanos(), job.id()};
}

bool ListQuery::Matches(const v1::Job& job) const {
  if (!states.empty() && states.count(job.state()) == 0) return false;
  if (!owner.empty() && job.owner() != owner) return false;
  for (const auto& [key, value] : labels) {
    auto it = job.spec().labels().find(key);
    if (it == job.spec().labels().end() || it->second != value) return false;
  }
  return true;
}

StatusOr<ListQuery> ParseListQuery(const v1::ListJobsRequest& request) {
  ListQuery query;
  std::vector<FieldViolation> bad;
  if (request.page_size() < 0) {
    bad.push_back({"page_size",
                   "page_size " + std::to_string(request.page_size()) + " must not be negative"});
  }
  query.page_size =
      request.page_size() == 0 ? kDefaultPageSize : std::min(request.page_size(), kMaxPageSize);
  if (!request.page_token().empty()) {
    query.has_after = ParseToken(request.page_token(), &query.after);
    if (!query.has_after) {
      bad.push_back({"page_token",
                     "page_token is not one this controller gave (pass a response's "
                     "next_page_token as it is)"});
    }
  }
  for (int i = 0; i < request.states_size(); ++i) {
    const int state = request.states(i);
    if (!v1::JobState_IsValid(state) || state == v1::JOB_STATE_UNSPECIFIED) {
      bad.push_back(
          {"states[" + std::to_string(i) + "]",
           "states[" + std::to_string(i) + "] " + std::to_string(state) + " is not a job state"});
      continue;
    }
    query.states.insert(state);
  }
  query.owner = request.owner();
  query.labels.assign(request.labels().begin(), request.labels().end());
  if (!bad.empty()) return Status::InvalidFields(std::move(bad));
  return query;
}

std::string PageToken(const ListPosition& last_listed) {
  return Hex(std::string(kTokenVersion) + "." + std::to_string(last_listed.seconds) + "." +
             std::to_string(last_listed.nanos) + "." + last_listed.job_id);
}

v1::JobSummary Summarize(const v1::Job& job) {
  v1::JobSummary s;
  s.set_id(job.id());
  s.set_name(job.spec().name());
  s.set_owner(job.owner());
  s.set_state(job.state());
  s.set_reason(CutUtf8(job.reason(), kMaxSummaryReasonBytes));
  *s.mutable_batch() = job.batch();
  s.set_steps_done(job.steps_done());
  s.set_steps_total(job.steps_total());
  if (job.has_last_step()) s.set_loss(job.last_step().loss());
  s.set_worker_id(job.worker_id());
  *s.mutable_submitted_at() = job.submitted_at();
  *s.mutable_labels() = job.spec().labels();
  s.set_attempt(job.attempt());
  s.set_failure_class(job.failure_class());
  return s;
}

}  // namespace accumulus::server
