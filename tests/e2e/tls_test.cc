// Transport security against a real controller: TLS for clients, mutual TLS
// on the worker link, with certificates the deploy script makes. A plaintext
// client, one that does not trust the controller's CA, a worker without a
// client certificate or with one of another CA are all refused; the right
// ones are served.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "accumulus/v1/worker.grpc.pb.h"
#include "tests/support/controller_stub.h"
#include "tests/support/read_file.h"
#include "tests/support/temp_dir.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

// Another CA's certificates, in `dir`.
std::string OtherCertificates(const std::string& dir) {
  SpawnOptions options;
  options.argv = {BinaryDir() + "/accumulus-make-dev-certs", dir};
  options.log_path = dir + ".log";
  auto script = Subprocess::Spawn(options);
  EXPECT_TRUE(script.ok());
  EXPECT_TRUE((*script)->Wait().success) << ReadFile(options.log_path);
  return dir;
}

// Runs `accumulus list` with `tls` instead of the cluster's CA.
CliResult ListWith(const TestCluster& cluster, const std::vector<std::string>& tls) {
  SpawnOptions options;
  options.argv = {BinaryDir() + "/accumulus", "--controller", cluster.controller_address(),
                  "--timeout", "2"};
  options.argv.insert(options.argv.end(), tls.begin(), tls.end());
  options.argv.push_back("list");
  options.log_path = cluster.dir() + "/list-" + std::to_string(tls.size()) + ".stderr";
  auto cli = Subprocess::Spawn(options);
  EXPECT_TRUE(cli.ok());
  CliResult result;
  result.exit_code = (*cli)->Wait().exit_code;
  result.stderr_text = ReadFile(options.log_path);
  return result;
}

// Opens the worker link as a worker would with `credentials` and returns
// how the controller ended it (or UNAVAILABLE when it never connected).
grpc::Status OpenWorkerLink(const TestCluster& cluster,
                            const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
  auto stub =
      v1::WorkerLink::NewStub(grpc::CreateChannel(cluster.controller_address(), credentials));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto stream = stub->Connect(&context);
  v1::WorkerMessage hello;
  hello.mutable_register_()->set_worker_id("intruder");
  stream->Write(hello);
  v1::ControllerMessage reply;
  while (stream->Read(&reply)) {
    if (reply.has_registered()) {
      context.TryCancel();  // registered: not refused
      return grpc::Status::OK;
    }
  }
  return stream->Finish();
}

std::string Pem(const std::string& path) { return ReadFile(path); }

TEST(Tls, ClientsAreServedOnlyOverTlsWithTheControllersCa) {
  TestCluster cluster;
  const TempDir other;
  const std::string wrong = OtherCertificates(other.path() + "/other");

  EXPECT_EQ(ListWith(cluster, {"--ca-file", TestCertificates() + "/ca.pem", "--token-file",
                               TestTokenFiles().viewer})
                .exit_code,
            0);
  const CliResult plaintext = ListWith(cluster, {"--insecure"});
  EXPECT_EQ(plaintext.exit_code, 1);
  EXPECT_NE(plaintext.stderr_text.find("not reachable"), std::string::npos)
      << plaintext.stderr_text;
  EXPECT_EQ(ListWith(cluster, {"--ca-file", wrong + "/ca.pem"}).exit_code, 1)
      << "a controller certificate this CA did not sign is not trusted";
  EXPECT_EQ(ListWith(cluster, {}).exit_code, 1) << "nor by the system's roots";

  const CliResult missing = ListWith(cluster, {"--ca-file", other.path() + "/absent.pem"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.stderr_text.find("--ca-file " + other.path() + "/absent.pem: cannot be read"),
            std::string::npos)
      << missing.stderr_text;
}

TEST(Tls, TheWorkerLinkTakesOnlyWorkersWithAClientCertificateOfTheWorkerCa) {
  TestCluster cluster;
  const TempDir other;
  const std::string wrong = OtherCertificates(other.path() + "/other");
  const std::string& certs = TestCertificates();

  grpc::SslCredentialsOptions no_certificate;
  no_certificate.pem_root_certs = Pem(certs + "/ca.pem");
  const grpc::Status anonymous = OpenWorkerLink(cluster, grpc::SslCredentials(no_certificate));
  EXPECT_EQ(anonymous.error_code(), grpc::StatusCode::UNAUTHENTICATED) << anonymous.error_message();
  EXPECT_NE(anonymous.error_message().find("client certificate"), std::string::npos);

  grpc::SslCredentialsOptions other_ca = no_certificate;
  other_ca.pem_cert_chain = Pem(wrong + "/worker.pem");
  other_ca.pem_private_key = Pem(wrong + "/worker-key.pem");
  EXPECT_EQ(OpenWorkerLink(cluster, grpc::SslCredentials(other_ca)).error_code(),
            grpc::StatusCode::UNAVAILABLE)
      << "the handshake fails";
  EXPECT_EQ(OpenWorkerLink(cluster, grpc::InsecureChannelCredentials()).error_code(),
            grpc::StatusCode::UNAVAILABLE);

  grpc::SslCredentialsOptions worker = no_certificate;
  worker.pem_cert_chain = Pem(certs + "/worker.pem");
  worker.pem_private_key = Pem(certs + "/worker-key.pem");
  EXPECT_TRUE(OpenWorkerLink(cluster, grpc::SslCredentials(worker)).ok());

  // A real worker registers, and one without a certificate does not start.
  const std::string id = cluster.StartWorker(1);
  EXPECT_TRUE(
      cluster.WaitForWorkers({id}, std::chrono::steady_clock::now() + std::chrono::seconds(30)));
  SpawnOptions options;
  options.argv = {BinaryDir() + "/accumulus-worker",
                  "--controller",
                  cluster.controller_address(),
                  "--tls-ca",
                  certs + "/ca.pem",
                  "--cpu-slots",
                  "1",
                  "--work-dir",
                  cluster.dir() + "/no-cert"};
  options.log_path = cluster.dir() + "/no-cert.log";
  auto uncertified = Subprocess::Spawn(options);
  ASSERT_TRUE(uncertified.ok());
  EXPECT_EQ((*uncertified)->Wait().exit_code, 1);
  EXPECT_NE(ReadFile(options.log_path).find("--tls-cert and --tls-key are required"),
            std::string::npos)
      << ReadFile(options.log_path);
}

// A standalone controller with `args`, in `dir`, once it is ready; *address
// is the loopback address of its port `port` ("grpc_port", "health_port")
// as its ready line says. Null if it did not start (a test failure).
std::unique_ptr<Subprocess> StartController(const std::string& dir,
                                            const std::vector<std::string>& args,
                                            const std::string& port, std::string* address) {
  SpawnOptions options = StandaloneController(dir, dir + "/controller.log", args);
  options.capture_stdout = true;
  auto controller = Subprocess::Spawn(options);
  std::string ready;
  if (!controller.ok() || !(*controller)->ReadLine(&ready)) {
    ADD_FAILURE() << "the controller did not start: " << ReadFile(options.log_path);
    return nullptr;
  }
  const size_t at = ready.find(port + "=");
  EXPECT_NE(at, std::string::npos) << ready;
  const std::string value = ready.substr(at + port.size() + 1);
  *address = "127.0.0.1:" + value.substr(0, value.find(' '));
  return std::move(*controller);
}

// Kubernetes' gRPC probes speak no TLS: a separate plaintext port serves the
// health service and nothing else.
TEST(Tls, TheHealthPortIsPlaintextAndServesOnlyHealth) {
  const TempDir temp;
  std::vector<std::string> args = ControllerSecurityArgs();
  args.insert(args.end(), {"--health-listen", "127.0.0.1:0"});
  std::string health_address;
  const auto controller = StartController(temp.path(), args, "health_port", &health_address);
  ASSERT_NE(controller, nullptr);
  const auto channel = grpc::CreateChannel(health_address, grpc::InsecureChannelCredentials());
  std::string response;
  // HealthCheckRequest{} → HealthCheckResponse{status: SERVING (1)}.
  const grpc::Status health = CallRaw(channel, "/grpc.health.v1.Health/Check", "", &response);
  ASSERT_TRUE(health.ok()) << health.error_message();
  EXPECT_EQ(response, std::string("\x08\x01", 2));
  // HealthCheckRequest{service: "liveness"}: the liveness probe's service.
  response.clear();
  ASSERT_TRUE(CallRaw(channel, "/grpc.health.v1.Health/Check", "\x0a\x08liveness", &response).ok());
  EXPECT_EQ(response, std::string("\x08\x01", 2));
  response.clear();
  EXPECT_EQ(
      CallRaw(channel, "/grpc.health.v1.Health/Check", "\x0a\x04none", &response).error_code(),
      grpc::StatusCode::NOT_FOUND);
  response.clear();
  EXPECT_EQ(CallRaw(channel, "/accumulus.v1.Controller/ListJobs", "", &response).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  controller->Signal(SIGTERM);
  EXPECT_TRUE(controller->Wait().success);
}

TEST(Tls, PlaintextOnlyWhenAskedForAndSaidSoAtStart) {
  const TempDir temp;
  std::string address;
  const auto controller = StartController(temp.path(), {"--insecure"}, "grpc_port", &address);
  ASSERT_NE(controller, nullptr);

  for (const auto& [tls, expected] : std::vector<std::pair<std::string, int>>{
           {"--insecure", 0}, {"--ca-file=" + TestCertificates() + "/ca.pem", 1}}) {
    SpawnOptions list;
    list.argv = {
        BinaryDir() + "/accumulus", "--controller", address, "--timeout", "2", tls, "list"};
    list.log_path = temp.path() + "/list.stderr";
    auto cli = Subprocess::Spawn(list);
    ASSERT_TRUE(cli.ok());
    EXPECT_EQ((*cli)->Wait().exit_code, expected) << tls << ": " << ReadFile(list.log_path);
  }
  controller->Signal(SIGTERM);
  EXPECT_TRUE(controller->Wait().success);
  EXPECT_NE(ReadFile(temp.path() + "/controller.log").find("--insecure: serving plaintext gRPC"),
            std::string::npos);

  // Without --insecure, a controller needs its certificate.
  const SpawnOptions bare = StandaloneController(temp.path(), temp.path() + "/bare.log", {});
  auto refused = Subprocess::Spawn(bare);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ((*refused)->Wait().exit_code, 1);
  EXPECT_NE(ReadFile(bare.log_path).find("--tls-cert is required"), std::string::npos)
      << ReadFile(bare.log_path);
}

}  // namespace
}  // namespace accumulus::testing
