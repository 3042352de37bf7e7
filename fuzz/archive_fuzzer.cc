// The compressed-file, tar and zip readers (common/data/compressed_file.h,
// tar_archive.h, zip_archive.h; gzip, bzip2, xz, zstd, and zip's methods),
// and the model file's check that reads a zip directory (model_file.h):
// whatever the bytes, each refuses in words or gives exactly what the file
// records, within the budget it is given — never more memory than that on
// a directory's word.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/data/compressed_file.h"
#include "common/data/npy_array.h"
#include "common/data/tar_archive.h"
#include "common/data/zip_archive.h"
#include "common/model_file.h"
#include "fuzz/fuzz_check.h"

namespace {

constexpr size_t kBudget = size_t{1} << 20;
constexpr size_t kMostMembersRead = 16;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace accumulus::data;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (const Compression compression = CompressionOf(bytes); compression != Compression::kNone) {
    const auto content = Decompress(compression, "data.path", "f", bytes, kBudget, kBudget);
    if (content.ok()) FUZZ_CHECK(content->size() <= kBudget);
  }
  if (TarArchive::Is(bytes)) {
    const auto tar = TarArchive::Parse("data.path", "f.tar", bytes);
    if (tar.ok()) {
      for (const TarMember& member : tar->members()) {
        const std::string_view content = tar->Read(member);
        FUZZ_CHECK(content.size() == member.size);
        FUZZ_CHECK(content.data() >= bytes.data() &&
                   content.data() + content.size() <= bytes.data() + bytes.size());
        (void)member.IsAside();
      }
    }
  }
  (void)DescribeNpy(bytes);
  const accumulus::Status model = accumulus::CheckTorchScriptBytes("model.path", "m.pt", bytes);
  FUZZ_CHECK(model.ok() || model.code() == accumulus::StatusCode::kInvalidArgument);
  const auto archive = ZipArchive::Parse("data.path", "f.zip", bytes);
  if (!archive.ok()) return 0;
  FUZZ_CHECK(archive->members().size() <= size / 46);
  for (size_t i = 0; i < archive->members().size() && i < kMostMembersRead; ++i) {
    const ZipMember& member = archive->members()[i];
    (void)member.ShownName();
    std::string decompressed;
    const auto content = archive->Read(member, kBudget, &decompressed);
    if (content.ok()) {
      FUZZ_CHECK(content->size() == member.size);
      FUZZ_CHECK(member.MethodName().find("method") == std::string::npos);  // one it reads
      if (member.method == ZipMember::kStored) {
        FUZZ_CHECK(content->data() >= bytes.data() &&
                   content->data() + content->size() <= bytes.data() + bytes.size());
      }
    }
    const auto head = archive->Peek(member, 64, kBudget);
    if (head.ok()) FUZZ_CHECK(head->size() <= 64);
  }
  return 0;
}
