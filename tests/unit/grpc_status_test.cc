// A status's field violations travel as google.rpc.Status details.
#include "common/grpc_status.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "accumulus/v1/error_details.pb.h"

namespace accumulus {
namespace {

// Every gRPC code keeps its number and has its name, as gRPC's docs spell it
// (the label of accumulus_grpc_requests_total).
TEST(GrpcStatus, EveryCodeConvertsByNumberWithItsName) {
  const std::vector<std::pair<grpc::StatusCode, std::string>> codes = {
      {grpc::StatusCode::OK, "OK"},
      {grpc::StatusCode::CANCELLED, "CANCELLED"},
      {grpc::StatusCode::UNKNOWN, "UNKNOWN"},
      {grpc::StatusCode::INVALID_ARGUMENT, "INVALID_ARGUMENT"},
      {grpc::StatusCode::DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED"},
      {grpc::StatusCode::NOT_FOUND, "NOT_FOUND"},
      {grpc::StatusCode::ALREADY_EXISTS, "ALREADY_EXISTS"},
      {grpc::StatusCode::PERMISSION_DENIED, "PERMISSION_DENIED"},
      {grpc::StatusCode::RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"},
      {grpc::StatusCode::FAILED_PRECONDITION, "FAILED_PRECONDITION"},
      {grpc::StatusCode::ABORTED, "ABORTED"},
      {grpc::StatusCode::OUT_OF_RANGE, "OUT_OF_RANGE"},
      {grpc::StatusCode::UNIMPLEMENTED, "UNIMPLEMENTED"},
      {grpc::StatusCode::INTERNAL, "INTERNAL"},
      {grpc::StatusCode::UNAVAILABLE, "UNAVAILABLE"},
      {grpc::StatusCode::DATA_LOSS, "DATA_LOSS"},
      {grpc::StatusCode::UNAUTHENTICATED, "UNAUTHENTICATED"}};
  for (const auto& [code, name] : codes) {
    EXPECT_EQ(StatusCodeName(static_cast<StatusCode>(code)), name);
    const Status status = FromGrpcStatus(grpc::Status(code, "why"));
    EXPECT_EQ(static_cast<int>(status.code()), static_cast<int>(code)) << name;
    if (code != grpc::StatusCode::OK) {
      EXPECT_EQ(ToGrpcStatus(status).error_code(), code) << name;
    }
  }
}

TEST(GrpcStatus, FieldViolationsTravelAsABadRequestDetail) {
  const Status status =
      Status::InvalidFields({{"micro_batch", "micro_batch -1 must not be negative"},
                             {"optimizer.lr", "optimizer.lr 0 must be a positive number"}});
  EXPECT_EQ(status.message(),
            "micro_batch -1 must not be negative; optimizer.lr 0 must be a positive number");

  const grpc::Status wire = ToGrpcStatus(status);
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(wire.error_message(), status.message());
  // What a client with googleapis' protos reads: google.rpc.Status holding
  // a google.rpc.BadRequest (the same wire format as ours).
  v1::RpcStatus details;
  ASSERT_TRUE(details.ParseFromString(wire.error_details()));
  EXPECT_EQ(details.code(), 3);
  EXPECT_EQ(details.message(), status.message());
  ASSERT_EQ(details.details_size(), 1);
  EXPECT_EQ(details.details(0).type_url(), "type.googleapis.com/google.rpc.BadRequest");
  v1::BadRequest bad_request;
  ASSERT_TRUE(bad_request.ParseFromString(details.details(0).value()));
  ASSERT_EQ(bad_request.field_violations_size(), 2);
  EXPECT_EQ(bad_request.field_violations(1).field(), "optimizer.lr");

  const Status back = FromGrpcStatus(wire);
  EXPECT_EQ(back.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(back.message(), status.message());
  EXPECT_EQ(back.field_violations(), status.field_violations());
}

TEST(GrpcStatus, AStatusWithoutViolationsCarriesItsCodeAndMessageAlone) {
  const grpc::Status wire = ToGrpcStatus(Status::NotFound("no job \"job-x\""));
  EXPECT_EQ(wire.error_code(), grpc::StatusCode::NOT_FOUND);
  v1::RpcStatus details;
  ASSERT_TRUE(details.ParseFromString(wire.error_details()));
  EXPECT_EQ(details.code(), 5);
  EXPECT_EQ(details.message(), "no job \"job-x\"");
  EXPECT_EQ(details.details_size(), 0);
  EXPECT_TRUE(FromGrpcStatus(wire).field_violations().empty());
}

// The controller's UNAVAILABLE (it cannot record now) is its answer; gRPC's
// own (no connection) carries no details.
TEST(GrpcStatus, TheControllersAnswerIsToldFromGrpcsOwn) {
  EXPECT_TRUE(IsControllersAnswer(ToGrpcStatus(Status::Unavailable("cannot record changes"))));
  EXPECT_FALSE(IsControllersAnswer(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, "failed to connect to all addresses")));
  EXPECT_FALSE(IsControllersAnswer(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, "bad", "\xff\xff not a proto")));
}

TEST(GrpcStatus, DetailsThatAreNotOursAreIgnored) {
  const grpc::Status garbage(grpc::StatusCode::INVALID_ARGUMENT, "bad", "\xff\xff not a proto");
  const Status back = FromGrpcStatus(garbage);
  EXPECT_EQ(back.message(), "bad");
  EXPECT_TRUE(back.field_violations().empty());
}

}  // namespace
}  // namespace accumulus
