// Malformed input of every kind against a real controller and worker: specs
// (as YAML through the CLI, and as raw gRPC messages the CLI would never
// send), other requests, CLI arguments and data files. Each is refused with
// the right status and a message that names the field (or the file and its
// line or byte), never quoting what a file holds; the controller keeps
// serving; a refused spec leaves the store as it was.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "accumulus/v1/controller.grpc.pb.h"
#include "accumulus/v1/error_details.pb.h"
#include "common/spec_yaml.h"
#include "tests/support/compressed_bytes.h"
#include "tests/support/controller_stub.h"
#include "tests/support/proto_json.h"
#include "tests/support/safetensors_bytes.h"
#include "tests/support/test_cluster.h"

namespace accumulus::testing {
namespace {

// A valid spec's top-level fields; a case replaces or adds some.
using Fields = std::vector<std::pair<std::string, std::string>>;

const Fields& BaseFields() {
  static const Fields base = {
      {"model", "{kind: mlp, hidden: [4]}"},
      {"data", "{kind: synthetic, task: classification, samples: 64, features: 4, outputs: 2}"},
      {"micro_batch", "4"},
      {"accumulation_steps", "2"},
      {"optimizer", "{kind: sgd, lr: 0.1}"},
      {"max_steps", "2"},
      {"threads", "{intra_op: 1, blas: 1}"},
  };
  return base;
}

std::string Yaml(const Fields& overrides) {
  Fields fields = BaseFields();
  for (const auto& [key, value] : overrides) {
    bool replaced = false;
    for (auto& [k, v] : fields) {
      if (k == key) v = value, replaced = true;
    }
    if (!replaced) fields.emplace_back(key, value);
  }
  std::string yaml;
  for (const auto& [key, value] : fields) yaml += key + ": " + value + "\n";
  return yaml;
}

// One cluster for the cases of a test process: a controller and a job that
// waits for four slots (so the store is never empty and a refused request
// has something to leave unchanged); the cases that run jobs add a worker
// with one slot.
class BadInput : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cluster_ = new TestCluster();
    std::filesystem::create_directories(cluster_->dir() + "/data/out");
    data_dir_ = new std::string(std::filesystem::canonical(cluster_->dir() + "/data").string());
    waiting_ = new std::string(SubmitJob(*cluster_, "waits.yaml", Yaml({{"devices", "4"}})));
  }
  static void TearDownTestSuite() {
    delete cluster_;
    delete data_dir_;
    delete waiting_;
    delete worker_;
    worker_ = nullptr;
  }

  // The worker that runs jobs, started the first time a case asks.
  static void NeedWorker() {
    if (worker_ != nullptr) return;
    worker_ = new std::string(cluster_->StartWorker(
        1, {"--data-root", *data_dir_, "--output-root", *data_dir_ + "/out"}));
  }

  // The ids of the jobs the controller lists, in order.
  static std::vector<std::string> Listed() {
    const CliResult listed = cluster_->Cli({"-o", "json", "list"});
    EXPECT_EQ(listed.exit_code, 0) << listed.stderr_text;
    std::vector<std::string> ids;
    if (listed.lines.empty()) return ids;
    const auto page = FromJson<v1::ListJobsResponse>(listed.lines[0]);
    for (const v1::JobSummary& job : page.jobs()) ids.push_back(job.id());
    return ids;
  }

  static std::unique_ptr<v1::Controller::Stub> AdminStub() {
    return StubWith(*cluster_, TokenIn(TestTokenFiles().admin));
  }

  static TestCluster* cluster_;
  static std::string* data_dir_;
  static std::string* worker_;
  static std::string* waiting_;
};

TestCluster* BadInput::cluster_ = nullptr;
std::string* BadInput::data_dir_ = nullptr;
std::string* BadInput::worker_ = nullptr;
std::string* BadInput::waiting_ = nullptr;

// ---------------------------------------------------------------------------
// Specs as YAML, submitted with the CLI. Exit 2: the CLI refused the file
// itself (it is not a spec); exit 1: the controller refused the spec.

struct SpecCase {
  const char* name;
  std::string yaml;
  int exit_code;
  std::vector<std::string> expected;  // each in stderr
};

std::vector<SpecCase> SpecCases() {
  // Anchors stand only where the spec takes a value: a growing expansion is
  // one of merge keys, each level merging the last ten times.
  std::string deep = "{kind: mlp}";
  for (int i = 0; i < 40; ++i) deep = "{<<: " + deep + "}";
  std::string bomb = "model:\n  <<:\n    - &a0 {kind: mlp}\n";
  for (int level = 1; level <= 7; ++level) {
    const std::string prev = "*a" + std::to_string(level - 1);
    bomb += "    - &a" + std::to_string(level) + " {<<: [" + prev;
    for (int k = 1; k < 10; ++k) bomb += ", " + prev;
    bomb += "]}\n";
  }
  return {
      // What the YAML reader refuses (file and line).
      {"DuplicateKey",
       Yaml({}) + "micro_batch: 8\n",
       2,
       {"line 8", "micro_batch is given twice (first on line 3)"}},
      {"UnknownField", Yaml({{"micro_batches", "4"}}), 2, {"micro_batches"}},
      {"ListForANumber", Yaml({{"micro_batch", "[1, 2]"}}), 2, {"micro_batch"}},
      {"NaN",
       Yaml({{"optimizer", "{kind: sgd, lr: .nan}"}}),
       2,
       {"line 5", "optimizer.lr .nan is not a finite number"}},
      {"Infinity", Yaml({{"max_grad_norm", "-.inf"}}), 2, {"max_grad_norm -.inf is not a finite"}},
      {"OutOfRangeNumber",
       Yaml({{"optimizer", "{kind: sgd, lr: 1e999}"}}),
       2,
       {"optimizer.lr 1e999 is out of range"}},
      {"AliasBomb", bomb, 2, {"more than 100000 values"}},
      {"TooDeep", "model: " + deep + "\n", 2, {"nested deeper than 32 levels"}},
      {"NotAMapping", "- micro_batch\n- 4\n", 2, {"a job spec must be a YAML mapping"}},
      {"Unclosed", "model: {kind: mlp\n", 2, {"line 2"}},
      {"MappingAsAKey", "{a: 1}: 2\n", 2, {"a key of the spec is a list or a mapping"}},
      {"HexNumber", Yaml({{"micro_batch", "0x10"}}), 2, {"micro_batch"}},
      {"FractionalBatch",
       Yaml({{"global_batch", "4.5"}}),
       2,
       {"global_batch 4.5 is not a whole number"}},
      {"MisspeltField",
       Yaml({{"optimizer", "{kind: sgd, lr: 0.1, momentun: 0.9}"}}),
       2,
       {"optimizer.momentun is not a field; did you mean momentum?"}},
      {"SecondDocument", Yaml({}) + "---\nname: other\n", 2, {"a second YAML document"}},
      {"BadDeviceRange", Yaml({{"devices", "{min: 1, most: 2}"}}), 2, {"devices.most"}},
      {"UnknownModel",
       Yaml({{"model", "{kind: resnet}"}}),
       2,
       {"line 1", "unknown model.kind \"resnet\"; one of mlp, cnn, charlm, torchscript"}},
      {"UnknownOptimizer",
       Yaml({{"optimizer", "{kind: lamb, lr: 0.1}"}}),
       2,
       {"unknown optimizer.kind \"lamb\"; one of sgd, adamw"}},
      {"UnknownDataKind",
       Yaml({{"data", "{kind: parquet, path: x}"}}),
       2,
       {"unknown data.kind \"parquet\"; one of synthetic, csv, idx, tokens"}},
      {"PrecisionByNumber", Yaml({{"precision", "2"}}), 2, {"unknown precision \"2\"; one of"}},
      // What the controller refuses (field and value).
      {"NegativeMicroBatch",
       Yaml({{"micro_batch", "-4"}}),
       1,
       {"micro_batch -4 must not be negative"}},
      {"HugeMicroBatch",
       Yaml({{"micro_batch", "2000000"}}),
       1,
       {"micro_batch 2000000 exceeds the limit 1048576"}},
      {"HugeAccumulation",
       Yaml({{"accumulation_steps", "100000"}}),
       1,
       {"accumulation_steps 100000 exceeds the limit 65536"}},
      {"TooManyDevices", Yaml({{"devices", "5000"}}), 1, {"devices 5000 exceeds the limit 1024"}},
      {"InvertedDeviceRange",
       Yaml({{"devices", "{min: 3, max: 2}"}}),
       1,
       {"devices.min 3 must be between 1 and devices.max 2"}},
      {"TooManyEpochs", Yaml({{"epochs", "2000000"}}), 1, {"epochs 2000000 exceeds the limit"}},
      {"TooManySteps",
       Yaml({{"max_steps", "2000000000"}}),
       1,
       {"max_steps 2000000000 exceeds the limit"}},
      {"NoEnd", Yaml({{"max_steps", "0"}}), 1, {"set max_steps or epochs"}},
      {"WideLayer",
       Yaml({{"model", "{kind: mlp, hidden: [100000]}"}}),
       1,
       {"model.hidden[0] 100000 exceeds the limit 65536"}},
      {"DeepModel",
       Yaml({{"model", "{kind: mlp, hidden: [" +
                           [] {
                             std::string h = "1";
                             for (int i = 0; i < 64; ++i) h += ", 1";
                             return h;
                           }() +
                           "]}"}}),
       1,
       {"model.hidden has 65 layers; at most 64"}},
      {"ZeroLr",
       Yaml({{"optimizer", "{kind: sgd, lr: 0}"}}),
       1,
       {"optimizer.lr is required: a positive number (got 0, or none)"}},
      {"MomentumOne",
       Yaml({{"optimizer", "{kind: sgd, lr: 0.1, momentum: 1}"}}),
       1,
       {"optimizer.momentum 1 must be in [0, 1)"}},
      {"CnnOnTabularData",
       Yaml({{"model", "{kind: cnn}"}}),
       1,
       {"model.kind \"cnn\" cannot train on data.task \"classification\""}},
      {"NoSamples",
       Yaml({{"data", "{kind: synthetic, task: classification, features: 4, outputs: 2}"}}),
       1,
       {"data.samples is required for synthetic data: a positive number (got 0, or none)"}},
      {"EscapeInName",
       Yaml({{"name", "\"run\\e]0;pwned\\a\""}}),
       1,
       {"name: character 4 (U+001B) is a control character"}},
      {"LongName", Yaml({{"name", std::string(200, 'n')}}), 1, {"name has 200 bytes; at most 128"}},
      {"BadLabelKey",
       Yaml({{"labels", "{\"-x\": y}"}}),
       1,
       {"labels: key \"-x\" is not a label key"}},
      {"TooManyThreads",
       Yaml({{"threads", "{intra_op: 5000}"}}),
       1,
       {"threads.intra_op 5000 exceeds the limit 1024"}},
      {"KeepTooMany",
       Yaml({{"checkpoint", "{dir: ckpt, keep: 5000}"}}),
       1,
       {"checkpoint.keep 5000 exceeds the limit 1000"}},
      {"TooManyRestarts",
       Yaml({{"max_restarts", "1000"}}),
       1,
       {"max_restarts 1000 exceeds the limit 100"}},
      {"BatchesDisagree",
       Yaml({{"global_batch", "100"}}),
       1,
       {"global_batch 100 does not equal micro_batch 4 × accumulation_steps 2 × devices 1 = 8"}},
      {"Fp16WithoutScaling",
       Yaml({{"precision", "fp16"}, {"loss_scaling", "none"}}),
       1,
       {"precision \"fp16\" needs loss_scaling \"dynamic\""}},
      {"EveryWindowDropped",
       Yaml({{"partial_window", "drop"}, {"accumulation_steps", "32"}}),
       1,
       {"partial_window \"drop\" with global_batch 128 larger than data.samples 64"}},
      {"LongWarmup",
       Yaml({{"lr_schedule", "{kind: cosine, warmup_steps: 2000000}"}}),
       1,
       {"lr_schedule.warmup_steps 2000000 exceeds the limit"}},
      {"NewlineInOutput",
       Yaml({{"output", "\"out\\nx.pt\""}}),
       1,
       {"output: character 4 (U+000A) is a control character; a path is printable text"}},
      {"LongCollectiveTimeout",
       Yaml({{"collective_timeout_seconds", "100000"}}),
       1,
       {"collective_timeout_seconds 100000 exceeds the limit 86400"}},
      {"NegativeMemoryLimit",
       Yaml({{"memory_limit_bytes", "-1"}}),
       1,
       {"memory_limit_bytes -1 must not be negative"}},
      {"SeveralAtOnce",
       Yaml({{"micro_batch", "-1"},
             {"optimizer", "{kind: adamw, lr: -2, momentum: 0.5}"},
             {"epochs", "-3"}}),
       1,
       {"error: 4 problems:\n", "  micro_batch -1 must not be negative\n",
        "  epochs -3 must not be negative\n", "  optimizer.lr -2 must be a positive number\n",
        "  optimizer.momentum and optimizer.nesterov apply to \"sgd\" only, not \"adamw\""}},
  };
}

class BadSpec : public BadInput, public ::testing::WithParamInterface<SpecCase> {};

TEST_P(BadSpec, IsRefusedNamingTheFieldAndTheStoreIsUnchanged) {
  const SpecCase& c = GetParam();
  const std::vector<std::string> before = Listed();
  const std::string path = cluster_->WriteSpec(std::string(c.name) + ".yaml", c.yaml);
  const CliResult result = cluster_->Cli({"submit", path});
  EXPECT_EQ(result.exit_code, c.exit_code) << result.stderr_text;
  EXPECT_TRUE(result.lines.empty()) << "no job id printed";
  for (const std::string& expected : c.expected) {
    EXPECT_NE(result.stderr_text.find(expected), std::string::npos)
        << "expected \"" << expected << "\" in: " << result.stderr_text;
  }
  if (c.exit_code == 2) {
    EXPECT_EQ(result.stderr_text.find("error: " + path), 0u)
        << "names the file: " << result.stderr_text;
  }
  EXPECT_EQ(result.stderr_text.find('\x1B'), std::string::npos) << "escaped";
  EXPECT_EQ(Listed(), before) << "the store is unchanged and the controller serves";
}

INSTANTIATE_TEST_SUITE_P(Table, BadSpec, ::testing::ValuesIn(SpecCases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST_F(BadInput, ASpecPathThatIsNoSpecFileIsNamedWithWhatItIs) {
  const std::vector<std::string> before = Listed();
  const std::string missing = cluster_->dir() + "/no-such.yaml";
  CliResult result = cluster_->Cli({"submit", missing});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.stderr_text,
            "error: " + missing + ": cannot be read (No such file or directory)\n");

  // std::ifstream opens a directory and reads it as empty.
  result = cluster_->Cli({"submit", cluster_->dir()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.stderr_text, "error: " + cluster_->dir() + ": is a directory, not a file\n");

  const std::string empty = cluster_->WriteSpec("empty.yaml", "");
  result = cluster_->Cli({"submit", empty});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.stderr_text,
            "error: " + empty + ": holds no fields; a job spec is a YAML mapping of fields\n");

  const std::string binary = cluster_->WriteSpec("model.pt", std::string("PK\x03\x04\0\0", 6));
  result = cluster_->Cli({"submit", binary});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.stderr_text, "error: " + binary +
                                    ": byte 5 is a NUL; a job spec is YAML text, not a binary "
                                    "file\n");
  EXPECT_EQ(Listed(), before) << "nothing reached the controller";
}

// ---------------------------------------------------------------------------
// Raw gRPC: specs and requests the CLI would never send.

v1::JobSpec ValidSpec() {
  StatusOr<v1::JobSpec> spec = ParseJobSpecYaml(Yaml({}), "base.yaml");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return *spec;
}

// The field violations of a status's google.rpc.BadRequest detail.
std::vector<std::string> ViolatedFields(const grpc::Status& status) {
  v1::RpcStatus details;
  std::vector<std::string> fields;
  if (!details.ParseFromString(status.error_details())) return fields;
  for (const auto& any : details.details()) {
    v1::BadRequest bad_request;
    if (any.type_url() == "type.googleapis.com/google.rpc.BadRequest" &&
        bad_request.ParseFromString(any.value())) {
      for (const auto& v : bad_request.field_violations()) fields.push_back(v.field());
    }
  }
  return fields;
}

struct RawCase {
  const char* name;
  std::function<grpc::Status(v1::Controller::Stub*, const std::string& waiting_job)> call;
  grpc::StatusCode code;
  std::vector<std::string> expected;  // each in the message
  std::vector<std::string> fields;    // the violations, in order ({}: not checked)
};

grpc::Status SubmitRaw(v1::Controller::Stub* stub, const v1::JobSpec& spec,
                       const std::string& request_id = "") {
  grpc::ClientContext context;
  SetTestDeadline(&context);
  v1::SubmitJobRequest request;
  *request.mutable_spec() = spec;
  request.set_request_id(request_id);
  v1::Job job;
  return stub->SubmitJob(&context, request, &job);
}

template <typename Request, typename Response>
grpc::Status Unary(grpc::Status (v1::Controller::Stub::*rpc)(grpc::ClientContext*, const Request&,
                                                             Response*),
                   v1::Controller::Stub* stub, const Request& request) {
  grpc::ClientContext context;
  SetTestDeadline(&context);
  Response response;
  return (stub->*rpc)(&context, request, &response);
}

v1::JobSpec With(const std::function<void(v1::JobSpec*)>& change) {
  v1::JobSpec spec = ValidSpec();
  change(&spec);
  return spec;
}

std::vector<RawCase> RawCases() {
  using grpc::StatusCode;
  using Stub = v1::Controller::Stub;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  return {
      {"NaNLearningRate",
       [=](Stub* s, const std::string&) {
         return SubmitRaw(s, With([&](v1::JobSpec* p) { p->mutable_optimizer()->set_lr(nan); }));
       },
       StatusCode::INVALID_ARGUMENT,
       {"optimizer.lr nan is not a number"},
       {"optimizer.lr"}},
      {"InfiniteClipNorm",
       [=](Stub* s, const std::string&) {
         return SubmitRaw(s, With([&](v1::JobSpec* p) { p->set_max_grad_norm(inf); }));
       },
       StatusCode::INVALID_ARGUMENT,
       {"max_grad_norm inf exceeds the limit"},
       {"max_grad_norm"}},
      {"EmptySpec",
       [](Stub* s, const std::string&) { return SubmitRaw(s, v1::JobSpec()); },
       StatusCode::INVALID_ARGUMENT,
       {"model.kind is required", "optimizer.lr is required: a positive number"},
       {}},
      {"HugeSpec",
       [](Stub* s, const std::string&) {
         return SubmitRaw(s, With([](v1::JobSpec* p) { p->set_name(std::string(100000, 'a')); }));
       },
       StatusCode::INVALID_ARGUMENT,
       {"the spec has 1000", "bytes serialized; at most 65536"},
       {"spec"}},
      {"UnknownKindNumber",
       [](Stub* s, const std::string&) {
         return SubmitRaw(s, With([](v1::JobSpec* p) {
                            p->mutable_model()->set_kind(static_cast<v1::ModelKind>(77));
                          }));
       },
       StatusCode::INVALID_ARGUMENT,
       {"model.kind 77 is not one of mlp, cnn, charlm, torchscript"},
       {"model.kind"}},
      {"LongLabelValue",
       [](Stub* s, const std::string&) {
         return SubmitRaw(s, With([](v1::JobSpec* p) {
                            (*p->mutable_labels())["team"] = std::string(1000, 'v');
                          }));
       },
       StatusCode::INVALID_ARGUMENT,
       {"labels.team has 1000 bytes; at most 256"},
       {"labels.team"}},
      {"BadRequestIdAndSpec",
       [](Stub* s, const std::string&) {
         return SubmitRaw(s, With([](v1::JobSpec* p) { p->set_micro_batch(-1); }), "a b");
       },
       StatusCode::INVALID_ARGUMENT,
       {"micro_batch -1", "request_id: character 2"},
       {"micro_batch", "request_id"}},
      {"GetUnknownJob",
       [](Stub* s, const std::string&) {
         v1::GetJobRequest r;
         r.set_job_id("job-aaaaaaaaaaaa");
         return Unary(&Stub::GetJob, s, r);
       },
       StatusCode::NOT_FOUND,
       {"no job \"job-aaaaaaaaaaaa\""},
       {}},
      {"GetAHugeId",
       [](Stub* s, const std::string&) {
         v1::GetJobRequest r;
         r.set_job_id(std::string(10000, 'j'));
         return Unary(&Stub::GetJob, s, r);
       },
       StatusCode::INVALID_ARGUMENT,
       {"job_id (a 10000-byte string) is not a job id"},
       {"job_id"}},
      {"GetWithoutAnId",
       [](Stub* s, const std::string&) { return Unary(&Stub::GetJob, s, v1::GetJobRequest()); },
       StatusCode::INVALID_ARGUMENT,
       {"job_id is required"},
       {"job_id"}},
      {"CancelUnknownJob",
       [](Stub* s, const std::string&) {
         v1::CancelJobRequest r;
         r.set_job_id("job-bbbbbbbbbbbb");
         return Unary(&Stub::CancelJob, s, r);
       },
       StatusCode::NOT_FOUND,
       {"job-bbbbbbbbbbbb"},
       {}},
      {"CancelWithAnEscapeInTheReason",
       [](Stub* s, const std::string& waiting) {
         v1::CancelJobRequest r;
         r.set_job_id(waiting);
         r.set_reason("done\x1b[2J");
         return Unary(&Stub::CancelJob, s, r);
       },
       StatusCode::INVALID_ARGUMENT,
       {"reason: character 5 (U+001B) is a control character"},
       {"reason"}},
      {"CancelWithAHugeReason",
       [](Stub* s, const std::string& waiting) {
         v1::CancelJobRequest r;
         r.set_job_id(waiting);
         r.set_reason(std::string(5000, 'r'));
         return Unary(&Stub::CancelJob, s, r);
       },
       StatusCode::INVALID_ARGUMENT,
       {"reason has 5000 bytes; at most 1024"},
       {"reason"}},
      {"ResumeAQueuedJob",
       [](Stub* s, const std::string& waiting) {
         v1::ResumeJobRequest r;
         r.set_job_id(waiting);
         return Unary(&Stub::ResumeJob, s, r);
       },
       StatusCode::FAILED_PRECONDITION,
       {"queued"},
       {}},
      {"ListWithAForgedToken",
       [](Stub* s, const std::string&) {
         v1::ListJobsRequest r;
         r.set_page_token("deadbeef");
         return Unary(&Stub::ListJobs, s, r);
       },
       StatusCode::INVALID_ARGUMENT,
       {"page_token is not one this controller gave"},
       {"page_token"}},
      {"ListWithANegativePageSize",
       [](Stub* s, const std::string&) {
         v1::ListJobsRequest r;
         r.set_page_size(-5);
         r.add_states(static_cast<v1::JobState>(42));
         return Unary(&Stub::ListJobs, s, r);
       },
       StatusCode::INVALID_ARGUMENT,
       {"page_size -5 must not be negative", "states[0] 42"},
       {"page_size", "states[0]"}},
      {"WatchUnknownJob",
       [](Stub* s, const std::string&) {
         grpc::ClientContext context;
         SetTestDeadline(&context);
         v1::WatchJobRequest r;
         r.set_job_id("job-cccccccccccc");
         auto reader = s->WatchJob(&context, r);
         v1::JobEvent event;
         while (reader->Read(&event)) {
         }
         return reader->Finish();
       },
       StatusCode::NOT_FOUND,
       {"job-cccccccccccc"},
       {}},
      {"WatchFromANegativeSequence",
       [](Stub* s, const std::string& waiting) {
         grpc::ClientContext context;
         SetTestDeadline(&context);
         v1::WatchJobRequest r;
         r.set_job_id(waiting);
         r.set_after_sequence(-1);
         auto reader = s->WatchJob(&context, r);
         v1::JobEvent event;
         while (reader->Read(&event)) {
         }
         return reader->Finish();
       },
       StatusCode::INVALID_ARGUMENT,
       {"after_sequence -1 must not be negative"},
       {}},
  };
}

class BadRequest : public BadInput, public ::testing::WithParamInterface<RawCase> {};

TEST_P(BadRequest, GetsItsStatusAndAMessageNamingTheField) {
  const RawCase& c = GetParam();
  const std::vector<std::string> before = Listed();
  auto stub = AdminStub();
  const grpc::Status status = c.call(stub.get(), *waiting_);
  EXPECT_EQ(status.error_code(), c.code) << status.error_message();
  for (const std::string& expected : c.expected) {
    EXPECT_NE(status.error_message().find(expected), std::string::npos)
        << "expected \"" << expected << "\" in: " << status.error_message();
  }
  EXPECT_LE(status.error_message().size(), 4096u) << "bounded whatever the request held";
  if (!c.fields.empty()) {
    EXPECT_EQ(ViolatedFields(status), c.fields);
  }
  EXPECT_EQ(Listed(), before) << "the store is unchanged and the controller serves";
}

INSTANTIATE_TEST_SUITE_P(Table, BadRequest, ::testing::ValuesIn(RawCases()),
                         [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------
// CLI arguments.

struct ArgsCase {
  const char* name;
  std::vector<std::string> args;
  std::vector<std::string> expected;  // each in stderr
};

class BadArguments : public BadInput, public ::testing::WithParamInterface<ArgsCase> {};

TEST_P(BadArguments, AreRefusedNamingTheFlag) {
  const ArgsCase& c = GetParam();
  const CliResult result = cluster_->Cli(c.args);
  EXPECT_NE(result.exit_code, 0);
  for (const std::string& expected : c.expected) {
    EXPECT_NE(result.stderr_text.find(expected), std::string::npos)
        << "expected \"" << expected << "\" in: " << result.stderr_text;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadArguments,
    ::testing::Values(
        ArgsCase{"UnknownCommand",
                 {"sumbit", "x.yaml"},
                 {"error: \"sumbit\" is not a command (one of submit, watch, logs, get, list"}},
        ArgsCase{"UnknownState",
                 {"list", "--state", "runing"},
                 {"--state \"runing\" is not a job state (one of queued, starting, running"}},
        ArgsCase{"LabelWithoutValue",
                 {"list", "--label", "team"},
                 {"--label \"team\" is not key=value"}},
        ArgsCase{"NegativeLimit", {"list", "--limit", "-3"}, {"--limit -3 must not be negative"}},
        ArgsCase{"UnknownOutput", {"-o", "xml", "list"}, {"--output", "xml"}},
        ArgsCase{"GetWithoutAJob", {"get"}, {"job"}},
        ArgsCase{"TimeoutNotANumber", {"--timeout", "soon", "list"}, {"--timeout", "soon"}},
        ArgsCase{"HugeJobId",
                 {"get", std::string(300, 'x')},
                 {"job_id (a 300-byte string) is not a job id"}}),
    [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------
// Data files and outputs only the worker can check: the job fails at once
// and for good, before a step, naming the file and the line or byte — and
// never what the file holds.

struct DataCase {
  const char* name;
  const char* file;
  std::string bytes;
  std::string data;  // the spec's data field, with FILE for the path
  std::string model;
  std::vector<std::string> expected;  // each in the reason, FILE for the path
};

std::string Idx(std::vector<uint32_t> dims, const std::vector<uint8_t>& values) {
  std::string out = {0, 0, 0x08, static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>((d >> shift) & 0xFF));
  }
  out.append(values.begin(), values.end());
  return out;
}

// An .npy file of numpy.save's version 1 (unpadded: readers do not need it).
std::string Npy(const std::string& header, const std::string& data) {
  return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header +
         data;
}

// A zstd frame's last byte is its checksum's.
std::string FlipLastByte(std::string bytes) {
  bytes.back() ^= 0x01;
  return bytes;
}

std::string Replace(std::string text, const std::string& path) {
  for (size_t at; (at = text.find("FILE")) != std::string::npos;) text.replace(at, 4, path);
  return text;
}

constexpr char kMlp[] = "{kind: mlp, hidden: [4]}";

class BadData : public BadInput, public ::testing::WithParamInterface<DataCase> {};

TEST_P(BadData, FailsTheJobBeforeItsFirstStepNamingTheFileAndLine) {
  NeedWorker();
  const DataCase& c = GetParam();
  const std::string path = *data_dir_ + "/" + c.file;
  std::ofstream(path, std::ios::binary) << c.bytes;
  const std::string id = SubmitJob(*cluster_, std::string(c.name) + ".yaml",
                                   Yaml({{"data", Replace(c.data, path)}, {"model", c.model}}));
  ASSERT_FALSE(id.empty());
  cluster_->Cli({"watch", id});  // returns when the job has ended
  const v1::Job job = GetJob(*cluster_, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED) << job.reason();
  EXPECT_EQ(job.failure_class(), v1::FAILURE_CLASS_BAD_DATA) << job.reason();
  EXPECT_EQ(job.attempt(), 1) << "refused for good: no restart";
  EXPECT_EQ(job.steps_done(), 0) << "found before the first step";
  for (const std::string& expected : c.expected) {
    EXPECT_NE(job.reason().find(Replace(expected, path)), std::string::npos)
        << "expected \"" << Replace(expected, path) << "\" in: " << job.reason();
  }
  EXPECT_EQ(job.reason().find("hunter2"), std::string::npos) << "quotes the file: " << job.reason();
  // The trainer's own account, once: not again from its log's last lines
  // (the reason names the log instead).
  const std::string first = Replace(c.expected.front(), path);
  EXPECT_EQ(job.reason().find(first), job.reason().rfind(first)) << job.reason();
  EXPECT_EQ(job.reason().find(" ends: "), std::string::npos) << job.reason();
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadData,
    ::testing::Values(
        DataCase{"TextInACsv",
                 "text.csv",
                 "a,b,label\n1,2,0\n3,hunter2,1\n",
                 "{kind: csv, path: FILE}",
                 kMlp,
                 {"FILE:3: column 2: expected a number"}},
        DataCase{"NaNInACsv",
                 "nan.csv",
                 "1,2,0\n\n1,nan,1\n",
                 "{kind: csv, path: FILE}",
                 kMlp,
                 {"FILE:3: column 2: expected a finite number"}},
        DataCase{"LabelOutsideTheClasses",
                 "classes.csv",
                 "1,2,0\n1,2,1\n1,2,7\n",
                 "{kind: csv, path: FILE, outputs: 3}",
                 kMlp,
                 {"FILE:3: column 3 (the label): expected a class index from 0 to 2 "
                  "(data.outputs 3)"}},
        DataCase{"RaggedCsv",
                 "ragged.csv",
                 "1,2,0\n1,hunter2\n",
                 "{kind: csv, path: FILE}",
                 kMlp,
                 {"FILE:2: expected 3 comma-separated columns, found 2"}},
        DataCase{"TruncatedIdx",
                 "short.idx",
                 Idx({4, 2, 2}, std::vector<uint8_t>(9)),
                 "{kind: idx, path: FILE, labels_path: FILE}",
                 kMlp,
                 {"data.path FILE: at byte 16: expected 16 data bytes"}},
        DataCase{
            "ObjectArrayNpy",
            "objects.npy",
            Npy("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", "hunter2hunter2.."),
            "{kind: npy, path: FILE, labels_path: FILE}",
            kMlp,
            {"data.path FILE: at byte 20: expected a numeric dtype: b1 (bool), i1, i2, i4, "
             "i8, u1, u2, u4, u8, f2, f4 or f8; found '|O'"}},
        DataCase{"CutGzip",
                 "train-images-idx3-ubyte.gz",
                 std::string("\x1F\x8B\x08\x08hunter2", 11),
                 "{kind: idx, path: FILE, labels_path: FILE}",
                 kMlp,
                 {"data.path FILE: the gzip data ends early (at byte 11): the file is cut "
                  "short"}},
        DataCase{"ZstdFailingItsChecksum",
                 "t.csv.zst",
                 FlipLastByte(Zstd("a,b,label\n1,2,0\nhunter2,3,1\n")),
                 "{kind: csv, path: FILE}",
                 kMlp,
                 {"data.path FILE: the zstd data is corrupt in the frame from byte 0 (Restored "
                  "data doesn't match checksum)"}},
        DataCase{
            "NpzWithoutTheArrayNamed",
            "mnist.npz",
            Zip({{"x_train.npy",
                  Npy("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 4), }", "hunter2!"),
                  /*deflate=*/true},
                 {"y_train.npy",
                  Npy("{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", "\x01\x02")}}),
            "{kind: npy, path: FILE, labels_array: y_train}",
            kMlp,
            {"data.array is required: data.path FILE is a zip archive of 2 (x_train.npy "
             "(uint8 (2, 4)), y_train.npy (uint8 (2,))): name the one to read"}},
        DataCase{"Fp8Safetensors",
                 "fp8.safetensors",
                 Safetensors(R"({"x": {"dtype": "F8_E4M3", "shape": [7], "data_offsets": [0, 7]}})",
                             "hunter2"),
                 "{kind: safetensors, path: FILE, array: x, labels_array: x}",
                 kMlp,
                 {"data.path FILE: at byte 24: expected a dtype of numbers: BOOL, U8, I8, U16, "
                  "I16, U32, I32, U64, I64, F16, BF16, F32 or F64; found \"F8_E4M3\""}},
        DataCase{
            "SoftLabelsNpy",
            "soft.npy",
            Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
                std::string("\0\0\x80\x3f\0\0\0\0\0\0\0\x3f\0\0\0\x3f", 16)),
            "{kind: npy, path: FILE, labels_path: FILE}",
            kMlp,
            {"data.labels_path FILE: at byte 77: expected 0 or 1 in sample 1's one-hot row: soft "
             "labels are no class labels"}},
        DataCase{"OddUint16Tokens",
                 "odd.bin",
                 "hunter2",
                 "{kind: tokens, path: FILE, token_dtype: uint16}",
                 "{kind: charlm}",
                 {"data.path FILE: 7 bytes is not a whole number of uint16 tokens (at byte 6)"}},
        DataCase{"MissingFile",
                 "present.csv",
                 "1,2,0\n",
                 "{kind: csv, path: FILE-missing}",
                 kMlp,
                 {"data.path", "FILE-missing"}}),
    [](const auto& info) { return std::string(info.param.name); });

// A token file truncated while the job reads it (mapped, not copied): the
// trainer dies by SIGBUS, as any reader of a mapped file would, and the
// job's failure reason says what most likely happened and how to avoid it.
TEST_F(BadInput, ADataFileThatShrinksUnderARunningJobFailsItSayingSo) {
  NeedWorker();
  const std::string path = *data_dir_ + "/shrinks.bin";
  {
    std::string tokens(1 << 18, '\0');
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<char>('a' + i * 7 % 26);
    std::ofstream(path, std::ios::binary) << tokens;
  }
  const std::string id =
      SubmitJob(*cluster_, "shrinks.yaml",
                Yaml({{"model", "{kind: charlm, d_model: 16, heads: 2, layers: 1}"},
                      {"data", "{kind: tokens, path: " + path +
                                   ", token_layout: blocks, sequence_length: 16}"},
                      {"max_steps", "1000000"}}));
  ASSERT_FALSE(id.empty());
  std::unique_ptr<Subprocess> watch = cluster_->StartCli({"-o", "json", "watch", id});
  std::string line;
  while (watch->ReadLine(&line) && !FromJson<v1::JobEvent>(line).has_step()) {
  }
  std::filesystem::resize_file(path, 0);
  while (watch->ReadLine(&line)) {
  }
  watch->Wait();
  const v1::Job job = GetJob(*cluster_, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED) << job.reason();
  EXPECT_EQ(job.failure_class(), v1::FAILURE_CLASS_TRAINER_CRASHED) << job.reason();
  EXPECT_GT(job.steps_done(), 0);
  EXPECT_NE(job.reason().find("killed by signal 7"), std::string::npos) << job.reason();
  EXPECT_NE(job.reason().find("SIGBUS: a read of a memory-mapped file failed; most likely a data "
                              "file (data.path, data.labels_path) shrank while the job read it"),
            std::string::npos)
      << job.reason();
}

TEST_F(BadInput, AnOutputThatCannotBeWrittenFailsTheJobBeforeItsFirstStep) {
  NeedWorker();
  const std::string id = SubmitJob(*cluster_, "no-dir.yaml",
                                   Yaml({{"output", "missing-dir/model.pt"}, {"max_steps", "50"}}));
  cluster_->Cli({"watch", id});
  const v1::Job job = GetJob(*cluster_, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(job.failure_class(), v1::FAILURE_CLASS_STORAGE) << job.reason();
  EXPECT_EQ(job.attempt(), 1);
  EXPECT_EQ(job.steps_done(), 0) << "no training lost to the typo";
  EXPECT_NE(job.reason().find("output: cannot create "), std::string::npos) << job.reason();
  EXPECT_NE(job.reason().find("missing-dir/model.pt"), std::string::npos) << job.reason();
}

// A model file that is no TorchScript (here what torch.save writes: a
// pickled state dict in a zip) fails its job as the spec's fault, named for
// what it is, and restarts cannot help it.
TEST_F(BadInput, AModelFileThatIsNoTorchScriptFailsTheJobOnceAsTheSpecsFault) {
  NeedWorker();
  const std::string path = *data_dir_ + "/state_dict.pt";
  std::ofstream(path, std::ios::binary) << Zip({{"state_dict/data.pkl", "\x80\x02}q\x00."},
                                                {"state_dict/byteorder", "little"},
                                                {"state_dict/data/0", std::string(16, '\0')},
                                                {"state_dict/version", "3\n"}});
  const std::string id = SubmitJob(
      *cluster_, "state-dict.yaml",
      Yaml({{"model", "{kind: torchscript, path: " + path + "}"}, {"max_restarts", "2"}}));
  ASSERT_FALSE(id.empty());
  cluster_->Cli({"watch", id});
  const v1::Job job = GetJob(*cluster_, id);
  EXPECT_EQ(job.state(), v1::JOB_STATE_FAILED) << job.reason();
  EXPECT_EQ(job.failure_class(), v1::FAILURE_CLASS_BAD_SPEC) << job.reason();
  EXPECT_EQ(job.attempt(), 1) << "no restart for a spec's fault";
  EXPECT_EQ(job.steps_done(), 0);
  EXPECT_NE(job.reason().find("model.path " + path + ": a file torch.save wrote"),
            std::string::npos)
      << job.reason();
}

}  // namespace
}  // namespace accumulus::testing
