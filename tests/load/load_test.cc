// The controller under load on loopback, bounded: 1,000 clients watch a
// running job while 5,000 jobs are submitted. Health answers throughout,
// the controller's memory stays bounded, every watcher sees every event of
// the job once, in order, and every job is listed. The figures are printed,
// and written as Markdown to $ACCUMULUS_LOAD_RESULTS when it is set
// (bench/run.sh keeps them in bench/results/).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "accumulus/v1/controller.grpc.pb.h"
#include "common/mutex.h"
#include "common/spec_yaml.h"
#include "tests/support/controller_stub.h"
#include "tests/support/read_file.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kWatchers = 1000;
constexpr int kSubmitted = 5000;
constexpr int kChannels = 10;  // watchers share connections, as many clients would
constexpr int kSubmitThreads = 8;

// Long enough that the watchers attach while it runs; small enough to end
// in seconds.
constexpr char kWatchedJob[] = R"(name: watched
model: {kind: mlp, hidden: [64]}
data: {kind: synthetic, task: classification, samples: 4096, features: 32, outputs: 4}
micro_batch: 8
accumulation_steps: 4
optimizer: {kind: sgd, lr: 0.05}
max_steps: 400
threads: {intra_op: 1, blas: 1}
)";

// Queued for good: more devices than the pool has.
constexpr char kQueuedJob[] = R"(model: {kind: mlp, hidden: [4]}
data: {kind: synthetic, task: classification, samples: 64, features: 4, outputs: 2}
micro_batch: 4
accumulation_steps: 2
devices: 2
optimizer: {kind: sgd, lr: 0.1}
max_steps: 2
)";

// The controller's resident memory, in bytes (0 when unknown).
int64_t ResidentBytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

std::string Describe(const grpc::Status& status) {
  return "code " + std::to_string(status.error_code()) + ": " + status.error_message();
}

// Counts failed calls, keeping the first one's status for the report.
class FirstError {
 public:
  void Count(const grpc::Status& status) {
    if (status.ok()) return;
    MutexLock lock(&mutex_);
    if (count_++ == 0) first_ = Describe(status);
  }
  int count() const {
    MutexLock lock(&mutex_);
    return count_;
  }
  std::string first() const {
    MutexLock lock(&mutex_);
    return first_;
  }

 private:
  mutable Mutex mutex_;
  int count_ GUARDED_BY(mutex_) = 0;
  std::string first_ GUARDED_BY(mutex_);
};

// Health checks and the controller's memory, sampled on a thread of its own
// from construction until Stop (or destruction: an assertion that returns
// early still stops it).
class HealthSampler {
 public:
  HealthSampler(const TestCluster& cluster, const std::string& token, pid_t controller,
                int64_t rss_before)
      : rss_peak_(rss_before) {
    thread_ = std::thread([this, channel = ChannelWith(cluster, token), controller] {
      while (!stop_) {
        const auto start = Clock::now();
        std::string response;
        grpc::Status s = CallRaw(channel, "/grpc.health.v1.Health/Check", "", &response);
        const int64_t us =
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
        ++calls_;
        if (s.ok() && response != std::string("\x08\x01", 2)) {
          s = grpc::Status(grpc::StatusCode::UNKNOWN, "not SERVING");
        }
        errors_.Count(s);
        worst_us_ = std::max<int64_t>(worst_us_, us);
        rss_peak_ = std::max(rss_peak_.load(), ResidentBytes(controller));
        // The sampling rate, not a synchronization.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  ~HealthSampler() { Stop(); }

  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

  int calls() const { return calls_; }
  int failures() const { return errors_.count(); }
  std::string first_error() const { return errors_.first(); }
  int64_t worst_us() const { return worst_us_; }
  int64_t rss_peak() const { return rss_peak_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> calls_{0};
  std::atomic<int64_t> worst_us_{0};
  std::atomic<int64_t> rss_peak_;
  FirstError errors_;
  std::thread thread_;
};

// One client following the job: every event after sequence 0, checked as it
// comes.
class Watcher final : public grpc::ClientReadReactor<v1::JobEvent> {
 public:
  Watcher(v1::Controller::Stub* stub, const std::string& job_id) {
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
    request_.set_job_id(job_id);
    stub->async()->WatchJob(&context_, &request_, this);
    StartRead(&event_);
    StartCall();
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    if (event_.sequence() != last_ + 1) gaps_ = true;
    last_ = event_.sequence();
    if (event_.has_state()) terminal_ = event_.state().state() == v1::JOB_STATE_SUCCEEDED;
    ++events_;
    StartRead(&event_);
  }

  void OnDone(const grpc::Status& status) override {
    MutexLock lock(&mutex_);
    status_ = status;
    done_ = true;
    changed_.NotifyAll();
  }

  // Waits for the end of the stream (bounded by its deadline).
  grpc::Status Wait() {
    MutexLock lock(&mutex_);
    while (!done_) changed_.Wait(&mutex_);
    return status_;
  }

  // Ends the stream early (a test that stops before the job's end).
  void Cancel() { context_.TryCancel(); }

  bool gapless() const { return !gaps_; }
  bool saw_success() const { return terminal_; }
  int64_t last_sequence() const { return last_; }
  int64_t events() const { return events_; }

 private:
  grpc::ClientContext context_;
  v1::WatchJobRequest request_;
  v1::JobEvent event_;
  // Read by OnReadDone only, one read at a time, then by the test after Wait.
  int64_t last_ = 0;
  int64_t events_ = 0;
  bool gaps_ = false;
  bool terminal_ = false;
  Mutex mutex_;
  CondVar changed_;
  bool done_ GUARDED_BY(mutex_) = false;
  grpc::Status status_ GUARDED_BY(mutex_);
};

// The watchers of the test. On destruction, streams still open (an
// assertion returned early) are cancelled and awaited: a reactor must
// outlive its call.
class WatcherGroup {
 public:
  ~WatcherGroup() {
    for (auto& w : watchers_) w->Cancel();
    for (auto& w : watchers_) w->Wait();
  }
  void Add(std::unique_ptr<Watcher> w) { watchers_.push_back(std::move(w)); }
  const std::vector<std::unique_ptr<Watcher>>& all() const { return watchers_; }

 private:
  std::vector<std::unique_ptr<Watcher>> watchers_;
};

TEST(Load, AThousandWatchersAndFiveThousandSubmittedJobs) {
  TestCluster cluster;
  const std::string worker = cluster.StartWorker(1);
  ASSERT_TRUE(cluster.WaitForWorkers({worker}, Clock::now() + std::chrono::seconds(60)));
  const std::string token = TokenIn(TestTokenFiles().admin);
  const pid_t controller = cluster.controller_pid();
  const int64_t rss_before = ResidentBytes(controller);

  HealthSampler sampler(cluster, token, controller, rss_before);

  StatusOr<v1::JobSpec> watched_spec = ParseJobSpecYaml(kWatchedJob, "watched.yaml");
  StatusOr<v1::JobSpec> queued_spec = ParseJobSpecYaml(kQueuedJob, "queued.yaml");
  ASSERT_TRUE(watched_spec.ok() && queued_spec.ok());
  auto admin = StubWith(cluster, token);
  v1::Job watched;
  {
    grpc::ClientContext context;
    SetTestDeadline(&context);
    v1::SubmitJobRequest request;
    *request.mutable_spec() = *watched_spec;
    const grpc::Status submitted = admin->SubmitJob(&context, request, &watched);
    ASSERT_TRUE(submitted.ok()) << Describe(submitted);
  }

  const auto start = Clock::now();
  std::vector<std::unique_ptr<v1::Controller::Stub>> stubs;
  for (int c = 0; c < kChannels; ++c) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
    args.SetInt("accumulus.test.channel", c);
    stubs.push_back(v1::Controller::NewStub(ChannelWith(cluster, token, args)));
  }
  WatcherGroup watchers;
  for (int i = 0; i < kWatchers; ++i) {
    watchers.Add(std::make_unique<Watcher>(stubs[i % kChannels].get(), watched.id()));
  }
  const double attach_s = std::chrono::duration<double>(Clock::now() - start).count();

  // 5,000 submits from 8 clients at once.
  FirstError submit_errors;
  std::vector<std::thread> submitters;
  const auto submit_start = Clock::now();
  for (int t = 0; t < kSubmitThreads; ++t) {
    submitters.emplace_back([&, t] {
      auto stub = StubWith(cluster, token);
      for (int i = t; i < kSubmitted; i += kSubmitThreads) {
        grpc::ClientContext context;
        SetTestDeadline(&context);
        v1::SubmitJobRequest request;
        *request.mutable_spec() = *queued_spec;
        request.set_request_id("load-" + std::to_string(i));
        v1::Job job;
        submit_errors.Count(stub->SubmitJob(&context, request, &job));
      }
    });
  }
  for (std::thread& t : submitters) t.join();
  const double submit_s = std::chrono::duration<double>(Clock::now() - submit_start).count();

  int gapped = 0, unfinished = 0;
  int64_t last_sequence = -1, events = 0;
  bool same_end = true;
  FirstError watch_errors;
  for (const auto& w : watchers.all()) {
    watch_errors.Count(w->Wait());
    gapped += w->gapless() ? 0 : 1;
    unfinished += w->saw_success() ? 0 : 1;
    if (last_sequence >= 0 && w->last_sequence() != last_sequence) same_end = false;
    last_sequence = w->last_sequence();
    events += w->events();
  }
  const int failed = watch_errors.count();
  const double watch_s = std::chrono::duration<double>(Clock::now() - start).count();

  // Every job is listed, a page at a time.
  int listed = 0, pages = 0;
  v1::ListJobsRequest list;
  list.set_page_size(1000);
  do {
    grpc::ClientContext context;
    SetTestDeadline(&context);
    v1::ListJobsResponse page;
    const grpc::Status listed_page = admin->ListJobs(&context, list, &page);
    ASSERT_TRUE(listed_page.ok()) << "page " << pages + 1 << ": " << Describe(listed_page);
    listed += page.jobs_size();
    ++pages;
    list.set_page_token(page.next_page_token());
  } while (!list.page_token().empty());
  sampler.Stop();

  const double rss_before_mib = static_cast<double>(rss_before) / (1 << 20);
  const double rss_peak_mib = static_cast<double>(sampler.rss_peak()) / (1 << 20);
  char figures[2048];
  std::snprintf(figures, sizeof figures,
                "| figure | value |\n| --- | --- |\n"
                "| watchers | %d on %d connections, attached in %.2f s |\n"
                "| events per watcher | %lld (last sequence %lld), %lld delivered in all |\n"
                "| watchers with a gap / failed / not at the end | %d / %d / %d |\n"
                "| submits | %d from %d clients in %.2f s (%.0f/s), %d failed |\n"
                "| jobs listed | %d in %d pages |\n"
                "| health checks | %d, %d failed, slowest %.1f ms |\n"
                "| controller RSS | %.1f MiB before, %.1f MiB peak |\n"
                "| wall time | %.2f s from the first watch to the last stream's end |\n",
                kWatchers, kChannels, attach_s, static_cast<long long>(last_sequence),
                static_cast<long long>(last_sequence), static_cast<long long>(events), gapped,
                failed, unfinished, kSubmitted, kSubmitThreads, submit_s, kSubmitted / submit_s,
                submit_errors.count(), listed, pages, sampler.calls(), sampler.failures(),
                sampler.worst_us() / 1000.0, rss_before_mib, rss_peak_mib, watch_s);
  std::printf("%s", figures);
  if (const char* out = std::getenv("ACCUMULUS_LOAD_RESULTS")) {
    std::ofstream(out) << "# Load: 1,000 watchers, 5,000 jobs (loopback)\n\n"
                       << "tests/load/load_test.cc, one controller (SQLite state, TLS, tokens) "
                          "and one worker on this machine.\n\n"
                       << figures;
  }

  EXPECT_EQ(gapped, 0) << "every watcher sees every event once, in order";
  EXPECT_EQ(failed, 0) << "the first failed stream: " << watch_errors.first();
  EXPECT_EQ(unfinished, 0) << "every stream ends after the job's last event";
  EXPECT_TRUE(same_end) << "every watcher ends at the same last event";
  EXPECT_EQ(submit_errors.count(), 0) << "the first failed submit: " << submit_errors.first();
  EXPECT_EQ(listed, kSubmitted + 1);
  EXPECT_EQ(sampler.failures(), 0)
      << "health answers throughout; the first failure: " << sampler.first_error();
  // Bounded, not a speed target: a controller that kept every message it
  // sent, or a copy per watcher, would pass a gigabyte.
  EXPECT_LT(rss_peak_mib - rss_before_mib, 512.0);
}

}  // namespace
}  // namespace accumulus::testing
