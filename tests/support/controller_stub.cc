#include "tests/support/controller_stub.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <vector>

#include "tests/support/read_file.h"

namespace accumulus::testing {

std::shared_ptr<grpc::Channel> ChannelWith(const TestCluster& cluster, const std::string& token,
                                           const grpc::ChannelArguments& args) {
  grpc::SslCredentialsOptions tls;
  tls.pem_root_certs = ReadFile(TestCertificates() + "/ca.pem");
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::SslCredentials(tls);
  if (!token.empty()) {
    credentials =
        grpc::CompositeChannelCredentials(credentials, grpc::AccessTokenCredentials(token));
  }
  return grpc::CreateCustomChannel(cluster.controller_address(), credentials, args);
}

std::unique_ptr<v1::Controller::Stub> StubWith(const TestCluster& cluster,
                                               const std::string& token) {
  return v1::Controller::NewStub(ChannelWith(cluster, token));
}

grpc::Status CallRaw(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                     const std::string& request, std::string* response) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::CompletionQueue queue;
  grpc::Slice slice(request);
  grpc::ByteBuffer sent(&slice, 1), received;
  auto call = stub.PrepareUnaryCall(&context, method, sent, &queue);
  call->StartCall();
  grpc::Status status;
  call->Finish(&received, &status, reinterpret_cast<void*>(1));
  void* tag = nullptr;
  bool ok = false;
  if (!queue.Next(&tag, &ok)) return grpc::Status(grpc::StatusCode::INTERNAL, "queue shut down");
  std::vector<grpc::Slice> slices;
  if (status.ok() && received.Dump(&slices).ok()) {
    for (const grpc::Slice& s : slices) {
      response->append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  return status;
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
