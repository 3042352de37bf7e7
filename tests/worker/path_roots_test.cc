// A spec's paths are confined to the worker's roots after every symlink and
// `..` is resolved: what leaves them is refused naming the field and the
// path; what stays is handed to the trainer as the absolute path checked.
#include "worker/path_roots.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace accumulus::worker {
namespace {

namespace fs = std::filesystem;

class PathRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::canonical(temp_.path()).string();
    for (const char* d : {"data", "data/sub", "out", "database", "elsewhere"}) {
      fs::create_directories(base_ + "/" + d);
    }
    for (const char* f :
         {"data/train.csv", "data/sub/labels.idx", "database/x.csv", "elsewhere/secret.csv"}) {
      std::ofstream(base_ + "/" + f) << "1,2\n";
    }
    fs::create_symlink(base_ + "/elsewhere/secret.csv", base_ + "/data/leak.csv");
    fs::create_symlink(base_ + "/data/train.csv", base_ + "/data/alias.csv");
    fs::create_symlink(base_ + "/elsewhere", base_ + "/out/escape");
    PathRoots given{{base_ + "/data"}, {base_ + "/out"}};
    StatusOr<PathRoots> resolved = ResolveRoots(given);
    ASSERT_TRUE(resolved.ok()) << resolved.status().message();
    roots_ = *resolved;
  }

  // The error of confining a spec whose `field` is `value`, "" if accepted
  // (then *out is the spec as confined).
  std::string Refusal(void (*set)(v1::JobSpec*, const std::string&), const std::string& value,
                      v1::JobSpec* out = nullptr) {
    v1::JobSpec spec;
    set(&spec, value);
    StatusOr<v1::JobSpec> confined = ConfinePaths(spec, roots_);
    if (confined.ok() && out != nullptr) *out = *confined;
    return confined.ok() ? "" : confined.status().message();
  }

  // What the refusal is about (its Fault), or kUnclassified when accepted.
  Fault FaultOf(void (*set)(v1::JobSpec*, const std::string&), const std::string& value) {
    v1::JobSpec spec;
    set(&spec, value);
    StatusOr<v1::JobSpec> confined = ConfinePaths(spec, roots_);
    return confined.ok() ? Fault::kUnclassified : confined.status().fault();
  }

  static void Data(v1::JobSpec* s, const std::string& v) { s->mutable_data()->set_path(v); }
  static void Labels(v1::JobSpec* s, const std::string& v) {
    s->mutable_data()->set_labels_path(v);
  }
  static void Model(v1::JobSpec* s, const std::string& v) { s->mutable_model()->set_path(v); }
  static void Output(v1::JobSpec* s, const std::string& v) { s->set_output(v); }
  static void Checkpoints(v1::JobSpec* s, const std::string& v) {
    s->mutable_checkpoint()->set_dir(v);
  }

  const testing::TempDir temp_;
  std::string base_;
  PathRoots roots_;
};

TEST_F(PathRootsTest, PathsInsideTheRootsAreResolvedToWhereTheyLead) {
  v1::JobSpec spec;
  EXPECT_EQ(Refusal(Data, "train.csv", &spec), "");
  EXPECT_EQ(spec.data().path(), base_ + "/data/train.csv") << "relative: from the first root";
  EXPECT_EQ(Refusal(Labels, base_ + "/data/sub/../sub/labels.idx", &spec), "");
  EXPECT_EQ(spec.data().labels_path(), base_ + "/data/sub/labels.idx");
  EXPECT_EQ(Refusal(Data, "alias.csv", &spec), "");
  EXPECT_EQ(spec.data().path(), base_ + "/data/train.csv") << "a symlink within the root";
  EXPECT_EQ(Refusal(Output, "runs/1/model.pt", &spec), "") << "need not exist yet";
  EXPECT_EQ(spec.output(), base_ + "/out/runs/1/model.pt");
  EXPECT_EQ(Refusal(Checkpoints, base_ + "/out/ckpt", &spec), "");
  EXPECT_EQ(spec.checkpoint().dir(), base_ + "/out/ckpt");
}

TEST_F(PathRootsTest, WhatLeavesTheRootsIsRefusedNamingTheFieldAndThePath) {
  const std::string dotdot = Refusal(Data, "../elsewhere/secret.csv");
  EXPECT_EQ(dotdot, "data.path \"../elsewhere/secret.csv\" resolves to " + base_ +
                        "/elsewhere/secret.csv, outside this worker's --data-root (" + base_ +
                        "/data)");
  EXPECT_NE(
      Refusal(Model, "/etc/passwd").find("model.path \"/etc/passwd\" resolves to /etc/passwd"),
      std::string::npos);
  EXPECT_NE(Refusal(Data, "leak.csv")
                .find("data.path \"leak.csv\" resolves to " + base_ + "/elsewhere/secret.csv"),
            std::string::npos)
      << "a symlink out of the root";
  EXPECT_NE(Refusal(Data, base_ + "/database/x.csv").find("outside"), std::string::npos)
      << "a sibling that shares the root's name as a prefix";
  EXPECT_NE(Refusal(Output, "../model.pt").find("output \"../model.pt\" resolves to"),
            std::string::npos);
  EXPECT_NE(Refusal(Checkpoints, "escape/ckpt")
                .find("checkpoint.dir \"escape/ckpt\" resolves to " + base_ + "/elsewhere/ckpt"),
            std::string::npos)
      << "a directory symlink out of the output root";
  EXPECT_NE(Refusal(Output, base_ + "/data/model.pt").find("--output-root"), std::string::npos)
      << "a data root is not an output root";
}

TEST_F(PathRootsTest, AMissingFileIsNamedWithWhereItWasLookedFor) {
  EXPECT_EQ(Refusal(Labels, "sub/absent.idx"),
            "data.labels_path \"sub/absent.idx\": no such file (looked for " + base_ +
                "/data/sub/absent.idx; --data-root " + base_ + "/data)");
  EXPECT_EQ(FaultOf(Labels, "sub/absent.idx"), Fault::kData) << "a missing data file is the data's";
  EXPECT_EQ(FaultOf(Model, "absent.pt"), Fault::kSpec) << "a missing model is the spec's";
  EXPECT_EQ(FaultOf(Data, "../elsewhere/secret.csv"), Fault::kSpec) << "leaving the roots";
}

TEST(PathRoots, WithoutRootsPathsAreLeftAsGivenAndBadRootsAreNamed) {
  v1::JobSpec spec;
  spec.mutable_data()->set_path("../anything.csv");
  StatusOr<v1::JobSpec> same = ConfinePaths(spec, PathRoots{});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->data().path(), "../anything.csv");
  const StatusOr<PathRoots> bad = ResolveRoots(PathRoots{{}, {"/nonexistent/out"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--output-root /nonexistent/out"), std::string::npos);
}

}  // namespace
}  // namespace accumulus::worker
