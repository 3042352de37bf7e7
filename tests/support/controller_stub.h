// A raw gRPC stub of a TestCluster's controller, for tests that send what
// the CLI never would.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "accumulus/v1/controller.grpc.pb.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {

// A stub over TLS with the test CA that sends `token` ("": none).
std::unique_ptr<v1::Controller::Stub> StubWith(const TestCluster& cluster,
                                               const std::string& token);

// The token in a TestTokens file, without its newline.
std::string TokenIn(const std::string& file);

// A 20 s deadline: a test call never hangs.
void SetTestDeadline(grpc::ClientContext* context);

}  // namespace accumulus::testing
