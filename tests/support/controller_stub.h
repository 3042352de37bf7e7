// A raw gRPC stub of a TestCluster's controller, for tests that send what
// the CLI never would.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "accumulus/v1/controller.grpc.pb.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {

// A channel to the cluster's controller over TLS with the test CA that
// sends `token` ("": none); `args` for channels that must not share a
// connection.
std::shared_ptr<grpc::Channel> ChannelWith(const TestCluster& cluster, const std::string& token,
                                           const grpc::ChannelArguments& args = {});

// A stub on ChannelWith(cluster, token).
std::unique_ptr<v1::Controller::Stub> StubWith(const TestCluster& cluster,
                                               const std::string& token);

// A unary call of `method` with the serialized `request`, over `channel`
// (for services we have no stub of, e.g. grpc.health.v1), with a 10 s
// deadline.
grpc::Status CallRaw(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                     const std::string& request, std::string* response);

// The token in a TestTokens file, without its newline.
std::string TokenIn(const std::string& file);

// A 20 s deadline: a test call never hangs.
void SetTestDeadline(grpc::ClientContext* context);

}  // namespace accumulus::testing
