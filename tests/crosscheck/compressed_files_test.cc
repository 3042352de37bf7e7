// Data files compressed and archived as Python's gzip, bz2, lzma, tarfile
// and zipfile modules, zstandard (pandas' .zst) and numpy.savez write them
// (tests/crosscheck/compressed_files.py, with the Python of
// ACCUMULUS_PYTHON): each loads as exactly the data of the plain file it
// holds, and the job's log says how it was read.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <sstream>
#include <string>

#include "tests/support/read_file.h"
#include "tests/support/temp_dir.h"
#include "worker/engine/dataset.h"

namespace accumulus::engine {
namespace {

using testing::ReadFile;

// What the job's log says of a file, by its name as the script writes it.
std::string ExpectedReading(const std::string& file) {
  const auto ends = [&](const std::string& ending) {
    return file.size() > ending.size() &&
           file.compare(file.size() - ending.size(), ending.size(), ending) == 0;
  };
  if (file.find(".tar") != std::string::npos) return " of a tar archive";
  if (file.find("-bzip2.") != std::string::npos) return "compressed with bzip2, decompressed";
  if (file.find("-lzma.") != std::string::npos) return "compressed with LZMA, decompressed";
  if (ends(".gz")) return "gzip-compressed, decompressed in memory";
  if (ends(".bz2")) return "bzip2-compressed, decompressed in memory";
  if (ends(".xz")) return "xz-compressed, decompressed in memory";
  if (ends(".zst")) return "zstd-compressed, decompressed in memory";
  return " of a zip archive, ";
}

TEST(CompressedFiles, EachHoldsExactlyThePlainFilesData) {
  const testing::TempDir temp;
  const std::string dir = temp.path();
  const std::string command = std::string(ACCUMULUS_PYTHON) + " " + ACCUMULUS_SOURCE_DIR +
                              "/tests/crosscheck/compressed_files.py " + dir + " > " + dir +
                              "/log 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << ReadFile(dir + "/log");
  std::istringstream cases(ReadFile(dir + "/cases"));
  std::string kind, plain, plain_labels, file, labels, array, labels_array;
  int count = 0;
  while (cases >> kind >> plain >> plain_labels >> file >> labels >> array >> labels_array) {
    ++count;
    const auto field = [&](const std::string& value) { return value == "-" ? "" : value; };
    const auto in_dir = [&](const std::string& name) {
      return name == "-" ? "" : dir + "/" + name;
    };
    DataConfig reference;
    reference.kind = kind == "csv"   ? DataKind::kCsv
                     : kind == "idx" ? DataKind::kIdx
                     : kind == "npy" ? DataKind::kNpy
                                     : DataKind::kTokens;
    reference.task = reference.kind == DataKind::kTokens ? DataTask::kLanguageModeling
                                                         : DataTask::kClassification;
    reference.sequence_length = 16;  // tokens: documents split at id 0
    reference.path = in_dir(plain);
    reference.labels_path = in_dir(plain_labels);
    DataConfig packed = reference;
    packed.path = in_dir(file);
    // Labels from the samples' archive, as the spec's defaults set them.
    packed.labels_path = labels == "-" && !field(labels_array).empty() ? packed.path
                         : labels == "-"                               ? reference.labels_path
                                                                       : in_dir(labels);
    packed.array = field(array);
    packed.labels_array = field(labels_array);
    const std::string name = kind + " " + file;

    auto expected = MakeDataset(reference);
    ASSERT_TRUE(expected.ok()) << name << ": " << expected.status().ToString();
    auto got = MakeDataset(packed);
    ASSERT_TRUE(got.ok()) << name << ": " << got.status().ToString();
    ASSERT_EQ((*got)->size(), (*expected)->size()) << name;
    EXPECT_EQ((*got)->shape().features, (*expected)->shape().features) << name;
    EXPECT_EQ((*got)->shape().outputs, (*expected)->shape().outputs) << name;
    const torch::Tensor all = torch::arange((*got)->size());
    const Batch a = (*got)->Gather(all), b = (*expected)->Gather(all);
    EXPECT_TRUE(torch::equal(a.inputs, b.inputs)) << name;
    EXPECT_TRUE(torch::equal(a.targets, b.targets)) << name;
    EXPECT_NE((*got)->reading().find(ExpectedReading(file)), std::string::npos)
        << name << ": " << (*got)->reading();
  }
  EXPECT_EQ(count, 32);
}

}  // namespace
}  // namespace accumulus::engine
