// A binary that links LibTorch still gets the system's libstdc++: the torch
// wheel exports its own copy of std::filesystem (pytorch/pytorch#133437),
// whose throwing remove_all(path) crashes (cmake/AccumulusTorch.cmake).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>

namespace accumulus::engine {
namespace {

TEST(TorchLink, StdFilesystemIsTheSystemsNotTorchs) {
  // Something of torch's runs, so its libraries are really loaded.
  EXPECT_EQ(torch::ones({2}).sum().item<float>(), 2.0f);

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("accumulus-torch-link-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "a" / "b");
  std::ofstream(dir / "a" / "b" / "file") << "x";
  EXPECT_EQ(std::filesystem::remove_all(dir), 4u);
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_EQ(std::filesystem::remove_all(dir), 0u);
  // The throwing overloads really throw.
  EXPECT_THROW(static_cast<void>(std::filesystem::file_size(dir)),
               std::filesystem::filesystem_error);
}

}  // namespace
}  // namespace accumulus::engine
