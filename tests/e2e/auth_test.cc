// Bearer tokens and roles against a real controller over TLS: every role ×
// every client RPC, someone else's job, the owner shown by get and list,
// refusals counted on /metrics — and no token anywhere in what the
// processes wrote (logs, the state database) or in /metrics.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "accumulus/v1/controller.grpc.pb.h"
#include "common/spec_yaml.h"
#include "tests/support/controller_stub.h"
#include "tests/support/read_file.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

using grpc::StatusCode;

// Without a worker in the cluster it stays queued.
constexpr char kQueuedJob[] = R"(name: waits
model: {kind: mlp, hidden: [4]}
data: {kind: synthetic, task: classification, samples: 64, features: 4, outputs: 2}
micro_batch: 4
accumulation_steps: 2
optimizer: {kind: sgd, lr: 0.1}
max_steps: 2
)";

// One client's view: each RPC's status code.
class Caller {
 public:
  Caller(const TestCluster& cluster, const std::string& token) : stub_(StubWith(cluster, token)) {}

  StatusCode Submit(const v1::JobSpec& spec, std::string* id = nullptr) {
    grpc::ClientContext context;
    SetTestDeadline(&context);
    v1::SubmitJobRequest request;
    *request.mutable_spec() = spec;
    v1::Job job;
    const grpc::Status status = stub_->SubmitJob(&context, request, &job);
    if (id != nullptr) *id = job.id();
    return status.error_code();
  }
  StatusCode Get(const std::string& id, v1::Job* job = nullptr) {
    grpc::ClientContext context;
    SetTestDeadline(&context);
    v1::GetJobRequest request;
    request.set_job_id(id);
    v1::Job response;
    const grpc::Status status = stub_->GetJob(&context, request, &response);
    if (job != nullptr) *job = response;
    return status.error_code();
  }
  StatusCode List() {
    grpc::ClientContext context;
    SetTestDeadline(&context);
    v1::ListJobsResponse response;
    return stub_->ListJobs(&context, v1::ListJobsRequest(), &response).error_code();
  }
  StatusCode Workers() {
    grpc::ClientContext context;
    SetTestDeadline(&context);
    v1::ListWorkersResponse response;
    return stub_->ListWorkers(&context, v1::ListWorkersRequest(), &response).error_code();
  }
  // OK once the first event arrives (the stream is then cancelled).
  StatusCode Watch(const std::string& id) {
    grpc::ClientContext context;
    SetTestDeadline(&context);
    v1::WatchJobRequest request;
    request.set_job_id(id);
    auto reader = stub_->WatchJob(&context, request);
    v1::JobEvent event;
    if (reader->Read(&event)) {
      context.TryCancel();
      reader->Finish().IgnoreError();
      return StatusCode::OK;
    }
    return reader->Finish().error_code();
  }
  StatusCode Cancel(const std::string& id) {
    grpc::ClientContext context;
    SetTestDeadline(&context);
    v1::CancelJobRequest request;
    request.set_job_id(id);
    v1::Job job;
    return stub_->CancelJob(&context, request, &job).error_code();
  }
  StatusCode Resume(const std::string& id) {
    grpc::ClientContext context;
    SetTestDeadline(&context);
    v1::ResumeJobRequest request;
    request.set_job_id(id);
    v1::Job job;
    return stub_->ResumeJob(&context, request, &job).error_code();
  }

 private:
  std::unique_ptr<v1::Controller::Stub> stub_;
};

v1::JobSpec Spec() {
  StatusOr<v1::JobSpec> spec = ParseJobSpecYaml(kQueuedJob, "kQueuedJob");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return *spec;
}

// The value of the sample `series` (name and labels) in the exposition
// `text`; -1 when absent.
double Sample(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

TEST(Auth, EachRoleMayCallWhatItsRoleAllowsAndOnlyOwnersManageTheirJobs) {
  TestCluster cluster;  // no worker: jobs stay queued
  const TestTokens& tokens = TestTokenFiles();
  Caller nobody(cluster, "");
  Caller stranger(cluster, "acc_" + std::string(64, '0'));
  Caller viewer(cluster, TokenIn(tokens.viewer));
  Caller alice(cluster, TokenIn(tokens.alice));
  Caller bob(cluster, TokenIn(tokens.bob));
  Caller admin(cluster, TokenIn(tokens.admin));

  std::string alices, bobs;
  ASSERT_EQ(alice.Submit(Spec(), &alices), StatusCode::OK);
  ASSERT_EQ(bob.Submit(Spec(), &bobs), StatusCode::OK);
  v1::Job job;
  ASSERT_EQ(viewer.Get(alices, &job), StatusCode::OK);
  EXPECT_EQ(job.owner(), "alice");
  ASSERT_EQ(viewer.Get(bobs, &job), StatusCode::OK);
  EXPECT_EQ(job.owner(), "bob");

  // No token, or one the controller does not know: nothing at all (7 calls
  // each).
  for (Caller* unknown : {&nobody, &stranger}) {
    EXPECT_EQ(unknown->Submit(Spec()), StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(unknown->Get(alices), StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(unknown->List(), StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(unknown->Watch(alices), StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(unknown->Workers(), StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(unknown->Cancel(alices), StatusCode::UNAUTHENTICATED);
    EXPECT_EQ(unknown->Resume(alices), StatusCode::UNAUTHENTICATED);
  }

  // A viewer reads everything and changes nothing (3 refusals).
  EXPECT_EQ(viewer.List(), StatusCode::OK);
  EXPECT_EQ(viewer.Watch(bobs), StatusCode::OK);
  EXPECT_EQ(viewer.Workers(), StatusCode::OK);
  EXPECT_EQ(viewer.Submit(Spec()), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(viewer.Cancel(alices), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(viewer.Resume(alices), StatusCode::PERMISSION_DENIED);

  // A submitter reads everything and manages its own jobs only (2).
  EXPECT_EQ(alice.List(), StatusCode::OK);
  EXPECT_EQ(alice.Watch(bobs), StatusCode::OK);
  EXPECT_EQ(alice.Workers(), StatusCode::OK);
  EXPECT_EQ(alice.Cancel(bobs), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(alice.Cancel(alices), StatusCode::OK);
  EXPECT_EQ(alice.Resume(alices), StatusCode::OK);
  ASSERT_EQ(bob.Get(bobs, &job), StatusCode::OK);
  EXPECT_EQ(job.state(), v1::JOB_STATE_QUEUED) << "alice's refused cancel changed nothing";
  EXPECT_EQ(bob.Cancel(bobs), StatusCode::OK);
  EXPECT_EQ(alice.Resume(bobs), StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(alice.Get("job-404"), StatusCode::NOT_FOUND);
  EXPECT_EQ(alice.Cancel("job-404"), StatusCode::NOT_FOUND);

  // An admin manages every job, and a job keeps its owner.
  EXPECT_EQ(admin.Resume(bobs), StatusCode::OK);
  EXPECT_EQ(admin.Cancel(alices), StatusCode::OK);
  std::string admins;
  EXPECT_EQ(admin.Submit(Spec(), &admins), StatusCode::OK);
  ASSERT_EQ(admin.Get(bobs, &job), StatusCode::OK);
  EXPECT_EQ(job.owner(), "bob");
  ASSERT_EQ(admin.Get(admins, &job), StatusCode::OK);
  EXPECT_EQ(job.owner(), "admin");

  // The CLI shows the owner.
  const CliResult listed = cluster.CliAs(tokens.viewer, {"list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.stderr_text;
  ASSERT_GE(listed.lines.size(), 4u);
  EXPECT_NE(listed.lines[0].find("OWNER"), std::string::npos);
  EXPECT_NE(listed.lines[1].find(" alice "), std::string::npos) << listed.lines[1];
  EXPECT_NE(listed.lines[2].find(" bob "), std::string::npos) << listed.lines[2];
  const CliResult got = cluster.CliAs(tokens.viewer, {"get", bobs});
  ASSERT_EQ(got.exit_code, 0) << got.stderr_text;
  EXPECT_NE(std::find(got.lines.begin(), got.lines.end(), "owner:        bob"), got.lines.end());

  // What the CLI says to the refused.
  const CliResult anonymous = cluster.CliAs("", {"list"});
  EXPECT_EQ(anonymous.exit_code, 1);
  EXPECT_NE(anonymous.stderr_text.find("requires a bearer token"), std::string::npos)
      << anonymous.stderr_text;
  const CliResult others = cluster.CliAs(tokens.alice, {"cancel", bobs});
  EXPECT_EQ(others.exit_code, 1);
  EXPECT_NE(others.stderr_text.find(bobs + " belongs to bob; alice (submitter) may cancel only "
                                           "its own jobs"),
            std::string::npos)
      << others.stderr_text;
  const CliResult looker =
      cluster.CliAs(tokens.viewer, {"submit", cluster.WriteSpec("q.yaml", kQueuedJob)});
  EXPECT_EQ(looker.exit_code, 1);
  EXPECT_NE(looker.stderr_text.find("victor has the viewer role; submitting jobs needs "
                                    "submitter or admin"),
            std::string::npos)
      << looker.stderr_text;

  // Counted: 14 + 1 unauthenticated, 3 + 2 + 1 + 1 permission denied.
  httplib::Client http("127.0.0.1", cluster.metrics_port());
  const auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(Sample(metrics->body, "accumulus_requests_refused_total{code=\"unauthenticated\"}"), 15)
      << metrics->body;
  EXPECT_EQ(Sample(metrics->body, "accumulus_requests_refused_total{code=\"permission_denied\"}"),
            7)
      << metrics->body;

  // No token in /metrics, nor in any file the cluster wrote: logs, CLI
  // output, the state database (durable before each reply: ReplyWhenDurable).
  std::vector<std::string> secrets;
  for (const std::string* file : {&tokens.admin, &tokens.alice, &tokens.bob, &tokens.viewer}) {
    secrets.push_back(TokenIn(*file));
  }
  secrets.push_back("acc_" + std::string(64, '0'));
  for (const std::string& secret : secrets) {
    EXPECT_EQ(metrics->body.find(secret), std::string::npos);
  }
  int scanned = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(cluster.dir())) {
    if (!entry.is_regular_file()) continue;
    const std::string text = ReadFile(entry.path().string());
    ++scanned;
    for (const std::string& secret : secrets) {
      EXPECT_EQ(text.find(secret), std::string::npos) << entry.path();
    }
  }
  EXPECT_GE(scanned, 3) << "the controller log, the state database, CLI output";
}

// One connection, several callers (a proxy, a notebook switching tokens):
// each call is its own token's. gRPC hands the token check the connection's
// AuthContext, shared by the connection's calls; an identity kept there
// would make the second caller the first.
TEST(Auth, CallsWithDifferentTokensOnOneConnectionAreEachTheirOwnCaller) {
  TestCluster cluster;
  StatusOr<v1::JobSpec> spec = ParseJobSpecYaml(kQueuedJob, "waits.yaml");
  ASSERT_TRUE(spec.ok());
  auto stub = v1::Controller::NewStub(ChannelWith(cluster, ""));  // no token of its own
  const auto submit_as = [&](const std::string& token_file, grpc::Status* status) {
    grpc::ClientContext context;
    SetTestDeadline(&context);
    context.AddMetadata("authorization", "Bearer " + TokenIn(token_file));
    v1::SubmitJobRequest request;
    *request.mutable_spec() = *spec;
    v1::Job job;
    *status = stub->SubmitJob(&context, request, &job);
    return job;
  };
  const TestTokens& tokens = TestTokenFiles();
  for (const auto& [token_file, name] :
       {std::pair{tokens.alice, "alice"}, {tokens.bob, "bob"}, {tokens.alice, "alice"}}) {
    grpc::Status status;
    EXPECT_EQ(submit_as(token_file, &status).owner(), name);
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
  // The viewer, after two submitters on the same connection, still may not submit.
  grpc::Status viewer;
  submit_as(tokens.viewer, &viewer);
  EXPECT_EQ(viewer.error_code(), StatusCode::PERMISSION_DENIED);
  {
    // And a call without a token is refused, whatever came before it.
    grpc::ClientContext context;
    SetTestDeadline(&context);
    v1::ListJobsRequest request;
    v1::ListJobsResponse response;
    EXPECT_EQ(stub->ListJobs(&context, request, &response).error_code(),
              StatusCode::UNAUTHENTICATED);
  }
}

// Start-up refusals: tokens over plaintext, a malformed or empty tokens
// file (named with its line, its content never quoted).
TEST(Auth, TheControllerRefusesTokensItCannotUseSafely) {
  const TempDir temp;
  const std::string secret = "acc_" + std::string(64, '7');
  const std::string malformed = temp.path() + "/malformed";
  std::ofstream(malformed) << "# ok\nalice submitter " << secret << "\n";
  const std::string empty = temp.path() + "/empty";
  std::ofstream(empty) << "# nobody yet\n";
  const std::vector<std::string> tls = {"--tls-cert",  TestCertificates() + "/controller.pem",
                                        "--tls-key",   TestCertificates() + "/controller-key.pem",
                                        "--worker-ca", TestCertificates() + "/ca.pem"};
  struct Case {
    std::vector<std::string> args;
    std::string expected;
  } cases[] = {
      {{"--insecure", "--tokens-file", TestTokenFiles().tokens_file}, "--tokens-file needs TLS"},
      {{"--tokens-file", malformed},
       "tokens file " + malformed + " line 2: field 3 is not sha256:"},
      {{"--tokens-file", empty}, "tokens file " + empty + " lists no token"},
      {{"--tokens-file", temp.path() + "/absent"}, "tokens file " + temp.path() + "/absent"},
  };
  int n = 0;
  for (Case& c : cases) {
    if (c.args.front() != "--insecure") c.args.insert(c.args.end(), tls.begin(), tls.end());
    const std::string log = temp.path() + "/controller-" + std::to_string(++n) + ".log";
    auto controller = Subprocess::Spawn(StandaloneController(temp.path(), log, c.args));
    ASSERT_TRUE(controller.ok());
    EXPECT_EQ((*controller)->Wait().exit_code, 1) << ReadFile(log);
    EXPECT_NE(ReadFile(log).find(c.expected), std::string::npos) << ReadFile(log);
    EXPECT_EQ(ReadFile(log).find(secret), std::string::npos) << ReadFile(log);
  }
}

}  // namespace
}  // namespace accumulus::testing
