// Controller streaming: step events from a worker link relayed by a real
// controller to 1, 10 and 100 watchers (each its own channel, as separate
// clients are), against a bare gRPC server-streaming echo of the same
// messages on the same machine (the framework's ceiling). Reports events/s
// relayed, deliveries/s and the latency from the worker sending an event to
// a watcher receiving it (p50/p99).
//
// Usage: accumulus_streaming_bench OUT.json
#include <google/protobuf/util/time_util.h>
#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "accumulus/v1/controller.grpc.pb.h"
#include "accumulus/v1/worker.grpc.pb.h"
#include "common/clock.h"
#include "server/controller.h"

namespace accumulus {
namespace {

using Clock = std::chrono::system_clock;
using google::protobuf::util::TimeUtil;

struct Result {
  std::string path;  // "controller" or "bare grpc"
  int watchers = 0;
  int64_t events = 0;
  double seconds = 0;
  double p50_ms = 0;
  double p99_ms = 0;
};

double Percentile(std::vector<double>* v, double q) {
  if (v->empty()) return 0;
  const size_t i = static_cast<size_t>(q * static_cast<double>(v->size() - 1));
  std::nth_element(v->begin(), v->begin() + static_cast<std::ptrdiff_t>(i), v->end());
  return (*v)[i];
}

// Watchers that read `events` events of `job` each and record latencies.
class Watchers {
 public:
  Watchers(const std::string& address, int n, const std::string& job, int64_t events) {
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back([this, address, job, events] {
        auto stub = v1::Controller::NewStub(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
        grpc::ClientContext context;
        context.set_wait_for_ready(true);
        v1::WatchJobRequest request;
        request.set_job_id(job);
        auto reader = stub->WatchJob(&context, request);
        ready_.fetch_add(1);
        std::vector<double> latencies;
        latencies.reserve(static_cast<size_t>(events));
        v1::JobEvent e;
        int64_t seen = 0;
        while (seen < events && reader->Read(&e)) {
          if (!e.has_step()) continue;
          ++seen;
          const auto sent = TimeUtil::TimestampToNanoseconds(e.time());
          const auto now =
              std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
                  .count();
          latencies.push_back(static_cast<double>(now - sent) / 1e6);
        }
        context.TryCancel();
        std::lock_guard<std::mutex> lock(mutex_);
        all_.insert(all_.end(), latencies.begin(), latencies.end());
      });
    }
  }
  int ready() const { return ready_.load(); }
  std::vector<double> Join() {
    for (auto& t : threads_) t.join();
    return all_;
  }

 private:
  std::vector<std::thread> threads_;
  std::atomic<int> ready_{0};
  std::mutex mutex_;
  std::vector<double> all_;
};

v1::JobEvent StepEvent(int64_t step) {
  v1::JobEvent e;
  e.mutable_step()->set_step(step);
  e.mutable_step()->set_loss(1.0 / static_cast<double>(step));
  e.mutable_step()->set_samples_per_second(1000);
  *e.mutable_time() = Now();  // when the worker sends it
  return e;
}

// Through a real controller: a job submitted by a client, its events sent
// by a worker over the worker link, read by `watchers` WatchJob streams.
// `rate` > 0 paces the worker (events per second, as trainers emit them) so
// the latency measured is the relay's, not a queue's; 0: as fast as it can.
Result ThroughController(int watchers, int64_t events, double rate = 0) {
  server::ControllerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.tls.insecure = true;  // the relay's cost, not TLS's, against a plaintext bare gRPC
  options.metrics_port = -1;
  // As deployed: every event recorded in the SQLite state before it is relayed.
  char dir[] = "/tmp/accumulus-streaming-XXXXXX";
  if (mkdtemp(dir) == nullptr) std::abort();
  options.state_db = std::string(dir) + "/state.db";
  auto controller = *server::Controller::Start(options);
  const std::string address = "127.0.0.1:" + std::to_string(controller->grpc_port());
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());

  // The worker: registers one slot and takes the job.
  auto link = v1::WorkerLink::NewStub(channel);
  grpc::ClientContext link_context;
  auto stream = link->Connect(&link_context);
  v1::WorkerMessage hello;
  hello.mutable_register_()->set_worker_id("bench-worker");
  hello.mutable_register_()->add_devices()->set_kind(v1::DEVICE_KIND_CPU);
  stream->Write(hello);
  v1::ControllerMessage reply;
  stream->Read(&reply);  // registered

  v1::SubmitJobRequest submit;
  v1::JobSpec* spec = submit.mutable_spec();
  spec->mutable_model()->set_kind(v1::MODEL_KIND_MLP);
  spec->mutable_data()->set_samples(1000000);
  spec->mutable_data()->set_features(4);
  spec->set_micro_batch(1);
  spec->set_accumulation_steps(1);
  spec->mutable_optimizer()->set_lr(0.1);
  spec->set_epochs(1);
  v1::Job job;
  grpc::ClientContext submit_context;
  v1::Controller::NewStub(channel)->SubmitJob(&submit_context, submit, &job);
  stream->Read(&reply);  // the assignment
  // Numbered as a worker's link numbers them: the controller acknowledges
  // each once it is durable.
  uint64_t sequence = 0;
  v1::WorkerMessage running;
  running.set_sequence(++sequence);
  running.mutable_status()->set_job_id(job.id());
  running.mutable_status()->set_state(v1::JOB_STATE_RUNNING);
  stream->Write(running);

  Watchers readers(address, watchers, job.id(), events);
  while (readers.ready() < watchers) std::this_thread::yield();
  const auto start = std::chrono::steady_clock::now();
  // Saturated, events queue up on the worker and its link sends them in
  // batches (as ControllerLink does, up to 256); paced, one at a time.
  const int64_t per_message = rate > 0 ? 1 : 64;
  for (int64_t s = 1; s <= events; s += per_message) {
    if (rate > 0) {
      std::this_thread::sleep_until(
          start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(static_cast<double>(s - 1) / rate)));
    }
    v1::WorkerMessage m;
    m.set_sequence(++sequence);
    m.mutable_events()->set_job_id(job.id());
    for (int64_t i = s; i < std::min(events + 1, s + per_message); ++i) {
      *m.mutable_events()->add_events() = StepEvent(i);
    }
    stream->Write(m);
  }
  std::vector<double> latencies = readers.Join();
  Result r{rate > 0 ? "controller paced" : "controller", watchers, events,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  r.p50_ms = Percentile(&latencies, 0.5);
  r.p99_ms = Percentile(&latencies, 0.99);
  stream->WritesDone();
  link_context.TryCancel();
  controller->Shutdown(std::chrono::milliseconds(100));
  std::filesystem::remove_all(dir);
  return r;
}

// The ceiling: a server that writes the events to each stream as fast as
// the callback API lets it, with nothing in between: one frame per event, or
// (coalesced) with gRPC's buffer hint on every write but the last, as the
// controller does for a watcher that is behind.
class EchoService final : public v1::Controller::CallbackService {
 public:
  EchoService(int64_t events, bool coalesce) : events_(events), coalesce_(coalesce) {}
  grpc::ServerWriteReactor<v1::JobEvent>* WatchJob(grpc::CallbackServerContext*,
                                                   const v1::WatchJobRequest*) override {
    class Writer final : public grpc::ServerWriteReactor<v1::JobEvent> {
     public:
      Writer(int64_t events, bool coalesce) : left_(events), coalesce_(coalesce) { Next(); }
      void OnWriteDone(bool ok) override {
        if (!ok) return Finish(grpc::Status::CANCELLED);
        Next();
      }
      void OnDone() override { delete this; }

     private:
      void Next() {
        if (left_ == 0) return Finish(grpc::Status::OK);
        event_ = StepEvent(left_--);
        grpc::WriteOptions options;
        // Not the first write, which carries the initial metadata (a hinted
        // batch with it never completes: grpc/grpc#12975).
        if (coalesce_ && wrote_any_ && left_ > 0) options.set_buffer_hint();
        wrote_any_ = true;
        StartWrite(&event_, options);
      }
      int64_t left_;
      bool wrote_any_ = false;
      const bool coalesce_;
      v1::JobEvent event_;
    };
    return new Writer(events_, coalesce_);
  }

 private:
  const int64_t events_;
  const bool coalesce_;
};

Result BareGrpc(int watchers, int64_t events, bool coalesce) {
  EchoService service(events, coalesce);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  auto server = builder.BuildAndStart();
  const auto start = std::chrono::steady_clock::now();
  Watchers readers("127.0.0.1:" + std::to_string(port), watchers, "echo", events);
  std::vector<double> latencies = readers.Join();
  Result r{coalesce ? "bare grpc coalesced" : "bare grpc", watchers, events,
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  r.p50_ms = Percentile(&latencies, 0.5);
  r.p99_ms = Percentile(&latencies, 0.99);
  server->Shutdown();
  return r;
}

}  // namespace
}  // namespace accumulus

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: accumulus_streaming_bench OUT.json\n");
    return 2;
  }
  std::vector<accumulus::Result> results;
  for (int watchers : {1, 10, 100}) {
    const int64_t events = watchers == 100 ? 5000 : 20000;
    results.push_back(accumulus::ThroughController(watchers, events));
    results.push_back(accumulus::BareGrpc(watchers, events, /*coalesce=*/false));
    results.push_back(accumulus::BareGrpc(watchers, events, /*coalesce=*/true));
    // Latency at a trainer-like rate: 200 steps per second.
    results.push_back(accumulus::ThroughController(watchers, 1000, /*rate=*/200));
  }
  std::ofstream out(argv[1]);
  out << "[\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    char line[512];
    std::snprintf(line, sizeof line,
                  "  {\"path\": \"%s\", \"watchers\": %d, \"events\": %lld, \"seconds\": %.4f, "
                  "\"events_per_second\": %.0f, \"deliveries_per_second\": %.0f, "
                  "\"p50_ms\": %.3f, \"p99_ms\": %.3f}%s\n",
                  r.path.c_str(), r.watchers, static_cast<long long>(r.events), r.seconds,
                  static_cast<double>(r.events) / r.seconds,
                  static_cast<double>(r.events * r.watchers) / r.seconds, r.p50_ms, r.p99_ms,
                  i + 1 < results.size() ? "," : "");
    out << line;
    std::fputs(line, stdout);
  }
  out << "]\n";
  return 0;
}
