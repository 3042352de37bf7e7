#include "tests/support/controller_stub.h"

#include <grpcpp/grpcpp.h>

#include "tests/support/read_file.h"

namespace accumulus::testing {

std::unique_ptr<v1::Controller::Stub> StubWith(const TestCluster& cluster,
                                               const std::string& token) {
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = ReadFile(TestCertificates() + "/ca.pem");
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::SslCredentials(tls);
  if (!token.empty()) {
    credentials =
        grpc::CompositeChannelCredentials(credentials, grpc::AccessTokenCredentials(token));
  }
  return v1::Controller::NewStub(grpc::CreateChannel(cluster.controller_address(), credentials));
}

std::string TokenIn(const std::string& file) {
  std::string text = ReadFile(file);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

void SetTestDeadline(grpc::ClientContext* context) {
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
}

}  // namespace accumulus::testing
