// Small files read whole, with errors that say what the path really is.
#include "common/small_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <string>
#include <thread>

#include "tests/support/temp_dir.h"

namespace accumulus {
namespace {

TEST(ReadSmallFile, ReadsAFileWhole) {
  testing::TempDir temp;
  const std::string path = temp.path() + "/spec.yaml";
  std::ofstream(path, std::ios::binary) << std::string("a: 1\n\0b", 7);
  StatusOr<std::string> text = ReadSmallFile(path, 100, path);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, std::string("a: 1\n\0b", 7));
}

TEST(ReadSmallFile, NamesAMissingFileAndADirectoryAsSuch) {
  testing::TempDir temp;
  StatusOr<std::string> missing = ReadSmallFile(temp.path() + "/absent", 100, "--flag x");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "--flag x: cannot be read (No such file or directory)");
  StatusOr<std::string> directory = ReadSmallFile(temp.path(), 100, temp.path());
  EXPECT_EQ(directory.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(directory.status().message(), temp.path() + ": is a directory, not a file");
  EXPECT_EQ(ReadSmallFile("", 100, "spec").status().message(), "spec: cannot be read (no path)");
}

TEST(ReadSmallFile, StopsAtTheLimit) {
  testing::TempDir temp;
  const std::string path = temp.path() + "/big";
  std::ofstream(path) << std::string(101, 'x');
  EXPECT_TRUE(ReadSmallFile(path, 101, path).ok());
  EXPECT_EQ(ReadSmallFile(path, 100, path).status().message(),
            path + ": larger than 100 bytes; is it the right file?");
}

TEST(ReadSmallFile, ReadsAPipe) {
  // `accumulus submit <(make-spec)` names a pipe, which has no size.
  testing::TempDir temp;
  const std::string path = temp.path() + "/fifo";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(path) << "model: {kind: mlp}\n"; });
  StatusOr<std::string> text = ReadSmallFile(path, 100, path);
  writer.join();
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "model: {kind: mlp}\n");
}

}  // namespace
}  // namespace accumulus
