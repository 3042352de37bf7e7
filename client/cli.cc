#include "client/cli.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <random>

#include "client/bearer_token.h"
#include "client/controller_client.h"
#include "client/job_list_query.h"
#include "client/live_view.h"
#include "client/local_cluster.h"
#include "client/render.h"
#include "client/split_sweep.h"
#include "client/terminal_text.h"
#include "common/job_spec.h"
#include "common/signals.h"
#include "common/spec_yaml.h"

namespace accumulus::client {
namespace {

struct GlobalFlags {
  std::string controller;
  ClientTls tls;
  std::string token;       // --token
  std::string token_file;  // --token-file
  std::string output = "text";
  double timeout_seconds = 15;
};

int Fail(const Status& status) {
  std::cerr << ErrorText(status);
  return 1;
}

StatusOr<ControllerClient> Connect(const GlobalFlags& flags) {
  StatusOr<std::string> token = ResolveToken(flags.token, flags.token_file);
  if (!token.ok()) return token.status();
  return ControllerClient::Connect(
      flags.controller, flags.tls, *token,
      std::chrono::milliseconds(static_cast<int64_t>(flags.timeout_seconds * 1000)));
}

// `accumulus tokens add`: the token goes to stdout, or to `out` (a file a
// client's --token-file can name); the hash to the tokens file.
int AddToken(const std::string& tokens_file, const std::string& name, const std::string& role,
             const std::string& out) {
  const std::optional<Role> parsed = ParseRole(role);
  if (!parsed) {
    std::cerr << "error: unknown role \"" << role << "\"; one of " << RoleNames() << "\n";
    return 2;
  }
  StatusOr<std::string> token = IssueToken(tokens_file, name, *parsed);
  if (!token.ok()) return Fail(token.status());
  if (!out.empty()) {
    if (Status s = WriteTokenFile(out, *token); !s.ok()) return Fail(s);
  } else {
    std::cout << *token << "\n" << std::flush;
  }
  std::cerr << "added " << name << " (" << role << ") to " << tokens_file
            << (out.empty() ? "; the token above is shown once" : "; the token is in " + out)
            << "\n";
  return 0;
}

bool Json(const GlobalFlags& flags) { return flags.output == "json"; }

// Columns of the terminal on stdout, read at each redraw (it may be
// resized); $COLUMNS, else 80, where it cannot be asked.
int TerminalWidth() {
  winsize size{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  const char* columns = std::getenv("COLUMNS");
  const int parsed = columns != nullptr ? std::atoi(columns) : 0;
  return parsed > 0 ? parsed : 80;
}

// Follows a job's events from its first, reconnecting after a dropped
// connection or a controller restart from the last event seen, so nothing
// is shown twice or missed (the controller keeps every event). The call
// waits until the controller is reachable again. CANCELLED too: this client
// cancels its stream only by returning false, so otherwise the controller
// did (a call that reached it while it was stopping). `say` tells the user
// of each reconnection.
Status Follow(ControllerClient& client, const std::string& job_id,
              const std::function<bool(const v1::JobEvent&)>& on_event,
              const std::function<void(const std::string&)>& say) {
  int64_t last_sequence = 0;
  auto tracked = [&](const v1::JobEvent& event) {
    last_sequence = event.sequence();
    return on_event(event);
  };
  Status status = client.Watch(job_id, last_sequence, tracked);
  while (status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kCancelled) {
    say("lost the controller (" + status.message() + "); reconnecting after event " +
        std::to_string(last_sequence) + "...");
    status = client.Watch(job_id, last_sequence, tracked);
  }
  return status;
}

void SayOnStderr(const std::string& line) { std::cerr << line << "\n"; }

// Prints a job's events until it ends; the exit code says how it ended.
// On a terminal, a status area under step lines every `every` steps.
int Watch(ControllerClient& client, const GlobalFlags& flags, const std::string& job_id,
          int64_t every) {
  // Fails fast (within the connect timeout) for an unknown job or an
  // unreachable controller; the stream itself has no deadline.
  StatusOr<v1::Job> job = client.Get(job_id);
  if (!job.ok()) return Fail(job.status());
  const bool live = !Json(flags) && isatty(STDOUT_FILENO);
  v1::JobState final_state = job->state();
  std::string final_reason = job->reason();
  LiveView view(every, job->steps_total());
  auto on_event = [&](const v1::JobEvent& event) {
    if (event.has_state()) {
      final_state = event.state().state();
      final_reason = event.state().reason();
    }
    if (Json(flags)) {
      std::cout << ToJsonLine(event) << "\n";
    } else if (live) {
      std::cout << view.OnEvent(event, TerminalWidth());
    } else {
      std::cout << EventLine(event) << "\n";
    }
    std::cout << std::flush;
    return true;
  };
  // On a terminal, the CLI's own lines go above the status area too.
  auto say = [&](const std::string& line) {
    if (!live) return SayOnStderr(line);
    std::cout << view.OnNote(line, TerminalWidth()) << std::flush;
  };
  Status status = Follow(client, job_id, on_event, say);
  if (live) std::cout << view.Finish(TerminalWidth()) << std::flush;
  if (!status.ok()) return Fail(status);
  if (final_state == v1::JOB_STATE_SUCCEEDED) return 0;
  std::cerr << "job " << job_id << " " << StateName(final_state)
            << (final_reason.empty() ? "" : ": " + final_reason) << "\n";
  return 1;
}

// A job's log lines: those recorded so far, or with `follow` also the new
// ones until the job ends.
int Logs(ControllerClient& client, const GlobalFlags& flags, const std::string& job_id,
         bool follow) {
  StatusOr<v1::Job> job = client.Get(job_id);
  if (!job.ok()) return Fail(job.status());
  // Without --follow, up to the newest event the controller had when asked.
  const int64_t last = job->last_event_sequence();
  if (!follow && last == 0) return 0;
  auto on_event = [&](const v1::JobEvent& event) {
    // A checkpoint that was not written is a warning, among the log's own.
    if (event.has_log() || event.has_checkpoint_failed()) {
      std::cout << (Json(flags) ? ToJsonLine(event) : LogLine(event)) << "\n" << std::flush;
    }
    return follow || event.sequence() < last;
  };
  Status status = Follow(client, job_id, on_event, SayOnStderr);
  return status.ok() ? 0 : Fail(status);
}

// A request id for a submit that names none: 64 random bits.
std::string NewRequestId() {
  std::random_device entropy;
  char id[32];
  std::snprintf(id, sizeof(id), "cli-%08x%08x", entropy(), entropy());
  return id;
}

int Submit(const GlobalFlags& flags, const std::string& path, const std::string& request_id,
           bool watch, int64_t every) {
  StatusOr<v1::JobSpec> spec = LoadJobSpecFile(path);
  if (!spec.ok()) {
    std::cerr << ErrorText(spec.status());
    return 2;
  }
  StatusOr<ControllerClient> connected = Connect(flags);
  if (!connected.ok()) return Fail(connected.status());
  ControllerClient& client = *connected;
  StatusOr<v1::Job> job = client.Submit(*spec, request_id.empty() ? NewRequestId() : request_id);
  if (!job.ok()) return Fail(job.status());
  if (Json(flags)) {
    std::cout << ToJsonLine(*job) << "\n";
  } else {
    std::cout << "submitted " << job->id() << ": global batch " << BatchSplit(job->batch()) << ", "
              << job->steps_total() << " steps\n";
  }
  std::cout << std::flush;
  return watch ? Watch(client, flags, job->id(), every) : 0;
}

// The plan of a spec, checked here as the controller would, and with
// --sweep the measured cost of each split on this machine.
int Plan(const std::string& path, bool sweep) {
  StatusOr<v1::JobSpec> loaded = LoadJobSpecFile(path);
  StatusOr<v1::JobSpec> spec = loaded.ok() ? NormalizeJobSpec(*loaded) : loaded.status();
  StatusOr<v1::BatchPlan> batch = spec.ok() ? ResolveBatchPlan(*spec) : spec.status();
  if (!batch.ok()) {
    std::cerr << ErrorText(batch.status());
    return 2;
  }
  std::cout << "global batch " << BatchSplit(*batch);
  const int64_t steps = TotalSteps(*spec, *batch);
  if (steps > 0) std::cout << ", " << steps << " optimizer step" << (steps == 1 ? "" : "s");
  std::cout << "\n";
  if (!sweep) return 0;
  std::cout << "measuring 2 windows per split on this machine...\n" << std::flush;
  StatusOr<std::vector<SweepRow>> rows = RunSweep(*spec, *batch);
  if (!rows.ok()) return Fail(rows.status());
  std::cout << SweepTable(*rows);
  return 0;
}

int Up(const LocalClusterOptions& options) {
  BlockTerminationSignals();
  auto cluster = LocalCluster::Start(options);
  if (!cluster.ok()) return Fail(cluster.status());
  std::cout << "accumulus up: controller " << (*cluster)->controller_address()
            << ", metrics http://" << options.listen_host << ":" << (*cluster)->metrics_port()
            << "/metrics"
            << (options.worker_metrics_port > 0
                    ? " and http://" + options.listen_host + ":" +
                          std::to_string(options.worker_metrics_port) + "/metrics (worker)"
                    : "")
            << "\n"
            << "  logs: " << (*cluster)->controller_log() << ", " << (*cluster)->worker_log()
            << (options.insecure
                    ? "\n  plaintext, no tokens (--insecure)"
                    : "\n  TLS and tokens: export ACCUMULUS_CA_FILE=" + (*cluster)->ca_file() +
                          " ACCUMULUS_TOKEN_FILE=" + (*cluster)->token_file())
            << "\n  submit a job: accumulus submit examples/jobs/mlp-accumulate.yaml --watch"
            << "\n  Ctrl-C stops the controller, the worker and its jobs.\n"
            << std::flush;
  WaitForTerminationSignal();
  std::cout << "stopping...\n" << std::flush;
  (*cluster)->Stop();
  return 0;
}

}  // namespace

int RunCli(int argc, char** argv) {
  GlobalFlags flags;
  flags.tls.ca_flag = "--ca-file";
  const char* env_controller = std::getenv("ACCUMULUS_CONTROLLER");
  flags.controller = env_controller ? env_controller : "127.0.0.1:7600";

  CLI::App app{"accumulus: gradient-accumulation training jobs as a service"};
  app.set_version_flag("--version", std::string("accumulus ") + ACCUMULUS_VERSION);
  app.require_subcommand(1);
  app.add_option("--controller", flags.controller,
                 "controller address (default: $ACCUMULUS_CONTROLLER or 127.0.0.1:7600)");
  app.add_option("--ca-file", flags.tls.ca,
                 "the CA of the controller's certificate (default: the system's roots)")
      ->envname("ACCUMULUS_CA_FILE");
  app.add_option("--tls-server-name", flags.tls.server_name,
                 "the name to check the controller's certificate against (default: the host of "
                 "--controller)");
  app.add_flag("--insecure", flags.tls.insecure,
               "plaintext, no TLS (for a controller started with --insecure)")
      ->envname("ACCUMULUS_INSECURE");
  // Read from the environment in ResolveToken, so that a flag beats either
  // variable. A token on the command line is visible to everyone on the
  // machine (ps): prefer the file or the variable.
  app.add_option("--token", flags.token,
                 "the bearer token to send (default: $ACCUMULUS_TOKEN; prefer --token-file)");
  app.add_option("--token-file", flags.token_file,
                 "a file holding the bearer token (default: $ACCUMULUS_TOKEN_FILE)");
  app.add_option("-o,--output", flags.output, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--timeout", flags.timeout_seconds,
                 "seconds to wait for the controller to be reachable")
      ->capture_default_str();

  std::string path, job_id, reason, request_id;
  bool watch = false;
  int64_t every = 10;
  const std::string every_help =
      "on a terminal, a step line every this many steps (and the first, the last, and the one "
      "before any other event) above the live status";
  auto* submit = app.add_subcommand("submit", "submit a job spec (YAML)");
  submit->add_option("spec", path, "job spec file")->required();
  submit->add_option("--request-id", request_id,
                     "this submission's id: submitting again with it returns the same job "
                     "(default: a new one, reused when the call is retried)");
  submit->add_flag("-w,--watch", watch, "follow the job until it ends");
  submit->add_option("--every", every, every_help)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  auto* watch_cmd = app.add_subcommand("watch", "follow a job's events until it ends");
  watch_cmd->add_option("job", job_id)->required();
  watch_cmd->add_option("--every", every, every_help)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  bool follow = false;
  auto* logs = app.add_subcommand("logs", "show a job's log lines (its trainers' and workers')");
  logs->add_option("job", job_id)->required();
  logs->add_flag("-f,--follow", follow, "go on printing new lines until the job ends");
  auto* get = app.add_subcommand("get", "show one job");
  get->add_option("job", job_id)->required();
  ListFlags list_flags;
  auto* list = app.add_subcommand("list", "list jobs, oldest first");
  list->add_option("--state", list_flags.states, "only jobs in this state (repeatable)");
  list->add_option("--owner", list_flags.owner, "only this owner's jobs");
  list->add_option("--label", list_flags.labels,
                   "only jobs with this label, key=value (repeatable: all must match)");
  list->add_option("--limit", list_flags.limit, "at most this many jobs (default: all)");
  auto* cancel = app.add_subcommand("cancel", "cancel a job");
  cancel->add_option("job", job_id)->required();
  cancel->add_option("--reason", reason, "recorded with the job");
  auto* resume = app.add_subcommand(
      "resume", "run a cancelled or failed job again from its newest checkpoint");
  resume->add_option("job", job_id)->required();
  resume->add_flag("-w,--watch", watch, "follow the job until it ends");
  resume->add_option("--every", every, every_help)
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  auto* workers = app.add_subcommand("workers", "list workers, their devices and jobs");

  bool sweep = false;
  auto* plan = app.add_subcommand("plan", "check a job spec and show its batch plan");
  plan->add_option("spec", path, "job spec file")->required();
  plan->add_flag("--sweep", sweep,
                 "measure samples/s and peak memory of the usual splits on this machine");

  std::string tokens_file, token_name, token_role, token_out;
  auto* tokens = app.add_subcommand("tokens", "manage a controller's bearer tokens");
  tokens->require_subcommand(1);
  auto* tokens_add = tokens->add_subcommand(
      "add", "issue a token: its hash is appended to the tokens file, the token printed once");
  tokens_add->add_option("name", token_name, "who the token identifies (owns its jobs)")
      ->required();
  tokens_add->add_option("role", token_role, "viewer, submitter or admin")->required();
  tokens_add->add_option("--file", tokens_file, "the controller's --tokens-file")->required();
  tokens_add->add_option("--out", token_out,
                         "write the token to this file (mode 0600) instead of stdout");

  LocalClusterOptions up_options;
  auto* up = app.add_subcommand("up", "run a local controller and worker until Ctrl-C");
  up->add_option("--data-dir", up_options.data_dir, "state and logs")->capture_default_str();
  up->add_option("--port", up_options.grpc_port, "controller gRPC port")->capture_default_str();
  up->add_option("--metrics-port", up_options.metrics_port, "the controller's /metrics port")
      ->capture_default_str();
  up->add_option("--worker-metrics-port", up_options.worker_metrics_port,
                 "the worker's /metrics port (-1: none)")
      ->capture_default_str();
  up->add_option("--cpu-slots", up_options.cpu_slots, "CPU ranks the worker runs at once")
      ->capture_default_str();
  up->add_flag("--insecure", up_options.insecure,
               "plaintext instead of TLS with development certificates (DATA_DIR/tls)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A mistyped command reads to CLI11 as "a subcommand is required": say
    // which word is not one, and what the commands are.
    if (app.get_subcommands().empty() && !app.remaining().empty()) {
      std::string commands;
      for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
        commands += (commands.empty() ? "" : ", ") + command->get_name();
      }
      std::cerr << "error: \"" << TerminalSafe(app.remaining().front())
                << "\" is not a command (one of " << commands << ")\n";
      return 2;
    }
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }

  if (*submit) return Submit(flags, path, request_id, watch, every);
  if (*plan) return Plan(path, sweep);
  if (*up) return Up(up_options);
  if (*tokens_add) return AddToken(tokens_file, token_name, token_role, token_out);
  StatusOr<ControllerClient> connected = Connect(flags);
  if (!connected.ok()) return Fail(connected.status());
  ControllerClient& client = *connected;
  if (*watch_cmd) return Watch(client, flags, job_id, every);
  if (*logs) return Logs(client, flags, job_id, follow);
  if (*get) {
    StatusOr<v1::Job> job = client.Get(job_id);
    if (!job.ok()) return Fail(job.status());
    std::cout << (Json(flags) ? ToJsonLine(*job) + "\n" : JobDetails(*job));
    return 0;
  }
  if (*list) {
    StatusOr<v1::ListJobsRequest> request = ListRequestOf(list_flags);
    if (!request.ok()) return Fail(request.status());
    StatusOr<v1::ListJobsResponse> jobs = ListAllPages(client, *request, list_flags.limit);
    if (!jobs.ok()) return Fail(jobs.status());
    std::cout << (Json(flags) ? ToJsonLine(*jobs) + "\n" : JobTable(*jobs));
    return 0;
  }
  if (*cancel) {
    StatusOr<v1::Job> job = client.Cancel(job_id, reason);
    if (!job.ok()) return Fail(job.status());
    std::cout << (Json(flags) ? ToJsonLine(*job) + "\n"
                              : job->id() + " " + StateName(job->state()) + "\n");
    return 0;
  }
  if (*resume) {
    StatusOr<v1::Job> job = client.Resume(job_id);
    if (!job.ok()) return Fail(job.status());
    // The job may already be placed when the answer comes: its state is
    // then "starting", with no reason to show.
    std::cout << (Json(flags)
                      ? ToJsonLine(*job) + "\n"
                      : job->id() + " " + StateName(job->state()) + " (attempt " +
                            std::to_string(job->attempt()) + ")" +
                            (job->reason().empty() ? "" : ": " + TerminalSafe(job->reason())) +
                            "\n");
    return watch ? Watch(client, flags, job_id, every) : 0;
  }
  if (*workers) {
    auto response = client.Workers();
    if (!response.ok()) return Fail(response.status());
    std::cout << (Json(flags) ? ToJsonLine(*response) + "\n" : WorkerTable(*response));
    return 0;
  }
  return 2;
}

}  // namespace accumulus::client
