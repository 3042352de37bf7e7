// A torchscript job's model file, told apart from what else PyTorch saves
// (common/model_file.h). Files written by torch itself: the crosscheck's
// ModelFiles test.
#include "common/model_file.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/compressed_bytes.h"

namespace accumulus {
namespace {

using testing::ZipEntry;

// The archive of `names` under one top folder, as torch names it.
std::string ArchiveOf(const std::vector<std::string>& names) {
  std::vector<ZipEntry> entries;
  for (const std::string& name : names) entries.push_back({"net/" + name, "x"});
  return testing::Zip(entries);
}

Status Check(const std::string& bytes) {
  return CheckTorchScriptBytes("model.path", "/models/net.pt", bytes);
}

void ExpectRefused(const std::string& bytes, const std::string& what) {
  const Status status = Check(bytes);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status.ToString();
  EXPECT_EQ(status.message().rfind("model.path /models/net.pt: ", 0), 0) << status.message();
  EXPECT_NE(status.message().find(what), std::string::npos) << status.message();
}

TEST(ModelFile, ATorchScriptArchiveIsTakenWhateverItsTopFolder) {
  EXPECT_TRUE(
      Check(ArchiveOf({"data.pkl", "constants.pkl", "code/__torch__/m.py", "version", "data/0"}))
          .ok());
  EXPECT_TRUE(Check(testing::Zip({{"archive/data.pkl", ""},
                                  {"archive/constants.pkl", ""},
                                  {"archive/code/__torch__.py", "", /*deflate=*/true}}))
                  .ok());
}

TEST(ModelFile, WhatTorchSaveWritesIsNamedWithHowToSaveTorchScript) {
  // torch.save(net.state_dict(), path) and torch.save(net, path) alike.
  const std::string saved = ArchiveOf(
      {"data.pkl", ".format_version", "byteorder", "data/0", "version", ".data/serialization_id"});
  ExpectRefused(saved, "a file torch.save wrote");
  ExpectRefused(saved, "torch.jit.save(torch.jit.script(net), path)");
}

TEST(ModelFile, ATorchExportProgramIsNamedOfEveryVersion) {
  // torch 2.6 on; 2.1 to 2.5; an AOTInductor package.
  for (const std::vector<std::string>& names :
       {std::vector<std::string>{"archive_format", "models/model.json", "data/weights/w0",
                                 "byteorder"},
        std::vector<std::string>{"serialized_exported_program.json", "serialized_state_dict.pt",
                                 "version"},
        std::vector<std::string>{"archive_format", "data/aotinductor/model/m.so"}}) {
    SCOPED_TRACE(names.front());
    ExpectRefused(ArchiveOf(names), "a torch.export program");
  }
}

TEST(ModelFile, TorchScriptNeedsItsCodeAndConstantsBesideItsData) {
  ExpectRefused(ArchiveOf({"data.pkl", "constants.pkl"}), "a file torch.save wrote");
  ExpectRefused(ArchiveOf({"model.onnx"}), "a zip archive that holds no TorchScript module");
  // Names at the top, under no folder, are no torch archive's.
  ExpectRefused(testing::Zip({{"data.pkl", ""}, {"constants.pkl", ""}, {"code/m.py", ""}}),
                "holds no TorchScript module");
}

TEST(ModelFile, AFileThatIsNoArchiveIsNamedByItsFirstBytes) {
  ExpectRefused("", "the file is empty");
  ExpectRefused(testing::Gzip(ArchiveOf({"data.pkl", "constants.pkl", "code/m.py"})),
                "gzip-compressed: decompress it first (gunzip)");
  ExpectRefused(testing::Zstd("weights"), "zstd-compressed");
  // torch.save(..., _use_new_zipfile_serialization=False): a pickle of the
  // magic number first.
  ExpectRefused(std::string("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 14),
                "a Python pickle (torch.save's legacy format");
  const std::string header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  std::string safetensors(8, '\0');
  safetensors[0] = static_cast<char>(header.size());
  ExpectRefused(safetensors + header + std::string(4, '\0'), "a safetensors file");
  ExpectRefused(std::string("\x89HDF\r\n\x1a\n", 8) + "rest", "an HDF5 file");
  ExpectRefused("def forward(self, x):\n", "torch.jit.save writes a zip archive");
}

TEST(ModelFile, ADamagedArchiveIsNamedWithItsByte) {
  std::string archive = ArchiveOf({"data.pkl", "constants.pkl", "code/m.py"});
  archive.resize(archive.size() - 10);  // into the end record
  const Status status = Check(archive);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message().rfind("model.path /models/net.pt: at byte ", 0), 0)
      << status.message();
}

TEST(ModelFile, AFileThatCannotBeOpenedIsNamed) {
  const Status missing = CheckTorchScriptFile("model.path", "/nonexistent/net.pt");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_NE(missing.message().find("model.path /nonexistent/net.pt"), std::string::npos);
  const Status directory = CheckTorchScriptFile("model.path", "/");
  EXPECT_EQ(directory.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(directory.message().find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace accumulus
