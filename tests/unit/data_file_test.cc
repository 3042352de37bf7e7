// Archived data files: zip archives (zip_archive.h), and the data file that
// reads a file compressed (compressed_file_test.cc), archived (zip, and tar:
// tar_archive_test.cc) or plain as its reader needs it (data_file.h). Damaged, cut and lying files
// are refused in words that name the file, the member and the byte, before any memory is taken on
// their word.
#include "common/data/data_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "common/data/npy_array.h"
#include "common/data/stream_decoder.h"
#include "common/data/zip_archive.h"
#include "tests/support/compressed_bytes.h"
#include "tests/support/npy_bytes.h"
#include "tests/support/temp_dir.h"

namespace accumulus::data {
namespace {

using testing::CompressibleText;
using testing::Gzip;
using testing::Npy;
using testing::Zip;
using testing::ZipEntry;

constexpr size_t kPlenty = size_t{1} << 30;

// The member's content, read as a reader would.
std::string ReadMember(const ZipArchive& archive, size_t i, std::string* storage) {
  StatusOr<std::string_view> content = archive.Read(archive.members()[i], kPlenty, storage);
  EXPECT_TRUE(content.ok()) << content.status().ToString();
  return content.ok() ? std::string(*content) : "";
}

TEST(ZipArchive, ReadsStoredAndDeflatedMembers) {
  const std::string a = CompressibleText(2000), b = CompressibleText(9000);
  for (bool zip64 : {false, true}) {
    const std::string bytes = Zip(
        {{"a.npy", a}, {"dir/b.csv", b, /*deflate=*/true, false, 0, zip64}}, zip64, "a comment");
    ASSERT_TRUE(ZipArchive::Is(bytes));
    const auto archive = ZipArchive::Parse("data.path", "d.zip", bytes);
    ASSERT_TRUE(archive.ok()) << archive.status().ToString();
    ASSERT_EQ(archive->members().size(), 2u);
    EXPECT_EQ(archive->members()[0].name, "a.npy");
    EXPECT_EQ(archive->members()[1].name, "dir/b.csv");
    EXPECT_EQ(archive->members()[1].size, b.size());
    std::string storage;
    EXPECT_EQ(ReadMember(*archive, 0, &storage), a);
    EXPECT_TRUE(storage.empty()) << "a stored member is read in place";
    EXPECT_EQ(ReadMember(*archive, 1, &storage), b);
    EXPECT_EQ(*archive->Peek(archive->members()[1], 10, kPlenty), b.substr(0, 10));
  }
  EXPECT_TRUE(ZipArchive::Is(Zip({})));
  EXPECT_TRUE(ZipArchive::Parse("data.path", "e.zip", Zip({}))->members().empty());
}

TEST(ZipArchive, ReadsEveryMethodPythonsZipfileWrites) {
  const std::string data = CompressibleText(30000);
  const std::vector<std::pair<uint16_t, std::string>> methods = {
      {12, "bzip2"}, {14, "LZMA"}, {93, "zstd"}, {95, "xz"}};
  for (const auto& [method, name] : methods) {
    ZipEntry entry{"a.csv", data};
    entry.compressed_with = method;
    const std::string bytes = Zip({entry});
    const auto archive = ZipArchive::Parse("data.path", "d.zip", bytes);
    ASSERT_TRUE(archive.ok()) << archive.status().ToString();
    EXPECT_EQ(archive->members()[0].MethodName(), name);
    std::string storage;
    EXPECT_EQ(ReadMember(*archive, 0, &storage), data) << name;
    EXPECT_EQ(*archive->Peek(archive->members()[0], 10, kPlenty), data.substr(0, 10)) << name;
    // Damaged: the decoder's check, or the CRC-32 behind it, refuses it.
    std::string damaged = bytes;
    damaged[30 + 5 + archive->members()[0].compressed_size / 2] ^= 0x10;
    const auto read = ZipArchive::Parse("data.path", "d.zip", damaged)
                          ->Read(archive->members()[0], kPlenty, &storage);
    ASSERT_FALSE(read.ok()) << name;
    EXPECT_EQ(read.status().message().rfind("data.path d.zip[a.csv]: ", 0), 0u)
        << read.status().message();
  }
}

TEST(ZipArchive, ReadsLzmaWithOrWithoutItsEndMarker) {
  const std::string data = CompressibleText(7000);
  for (bool end_marker : {true, false}) {
    std::string member = testing::ZipLzma(data, end_marker);
    std::string_view in = member;
    auto decoder = ZipLzmaDecoder(&in, data.size(), kPlenty);
    ASSERT_TRUE(decoder.ok()) << decoder.status().ToString();
    EXPECT_EQ(*DecodeExactly(decoder->get(), "LZMA", in, data.size()), data) << end_marker;
  }
  // A dictionary of nearly 4 GiB in the properties (found by fuzz_archive):
  // no larger than the data is long where that is known, and refused where
  // the directory's size would let it beyond the limit.
  std::string huge = testing::ZipLzma(data, true);
  huge.replace(5, 4, "\xFF\xFF\xFF\xF0");
  std::string_view huge_in = huge;
  auto clamped = ZipLzmaDecoder(&huge_in, data.size(), size_t{1} << 20);
  ASSERT_TRUE(clamped.ok()) << clamped.status().ToString();
  EXPECT_EQ(*DecodeExactly(clamped->get(), "LZMA", huge_in, data.size()), data);
  huge_in = huge;
  EXPECT_EQ(ZipLzmaDecoder(&huge_in, uint64_t{1} << 40, size_t{1} << 20).status().message(),
            "its LZMA dictionary of 4043309055 bytes needs more memory than this machine allows "
            "it");

  std::string member = testing::ZipLzma(data, true);
  member[2] = 4;  // four bytes of properties
  std::string_view in = member;
  EXPECT_EQ(ZipLzmaDecoder(&in, data.size(), kPlenty).status().message(),
            "its LZMA header records 4 bytes of properties, not 5");
  in = std::string_view(member).substr(0, 3);
  EXPECT_EQ(ZipLzmaDecoder(&in, data.size(), kPlenty).status().message(),
            "its LZMA header is cut short");
}

TEST(ZipArchive, RefusesEncryptedMembersOtherMethodsAndDamage) {
  const std::string data = CompressibleText(500);
  const std::string bytes = Zip({{"locked.npy", data, false, /*encrypted=*/true},
                                 {"b.npy", data, false, false, /*method=*/98},
                                 {"c.npy", data, false, false, 0, false, /*wrong_crc=*/true},
                                 {"d.npy", data, true, false, 0, false, true}});
  const auto archive = ZipArchive::Parse("data.path", "d.npz", bytes);
  ASSERT_TRUE(archive.ok()) << archive.status().ToString();
  std::string storage;
  const auto read = [&](size_t i) {
    return archive->Read(archive->members()[i], kPlenty, &storage).status().message();
  };
  EXPECT_EQ(read(0), "data.path d.npz[locked.npy]: the member is encrypted: store it unencrypted");
  EXPECT_EQ(read(1),
            "data.path d.npz[b.npy]: compressed with method 98 (PPMd), which is not read: store "
            "it, or deflate it (zip's default, numpy.savez_compressed's)");
  EXPECT_EQ(read(2),
            "data.path d.npz[c.npy]: its content does not match its CRC-32: the archive is "
            "damaged");
  EXPECT_EQ(read(3),
            "data.path d.npz[d.npy]: its content does not match its CRC-32: the archive is "
            "damaged");
  // A member larger than the budget is refused before a byte is inflated.
  const std::string big = Zip({{"big.npy", std::string(100000, 'x'), true}});
  const auto big_archive = ZipArchive::Parse("data.path", "big.npz", big);
  EXPECT_EQ(big_archive->Read(big_archive->members()[0], 4096, &storage).status().message(),
            "data.path big.npz[big.npy]: holds 100000 bytes, more than it may take of this "
            "machine's memory (4096): extract it, where it is read in place");
}

TEST(ZipArchive, RefusesCutArchivesAndDirectoriesThatLie) {
  const std::string bytes =
      Zip({{"a.npy", CompressibleText(300)}, {"b.npy", CompressibleText(300), true}});
  EXPECT_EQ(ZipArchive::Parse("data.path", "d.npz", bytes.substr(0, 400)).status().message(),
            "data.path d.npz: at byte 400: expected a zip archive's end record in its last 65557 "
            "bytes: the archive is cut short");
  // The directory claims more entries than it has room for: no memory is
  // reserved on its word.
  std::string lying = bytes;
  const size_t end = lying.size() - 22;
  lying[end + 10] = '\xFE';
  lying[end + 11] = '\xFF';
  EXPECT_EQ(ZipArchive::Parse("data.path", "d.npz", lying).status().message(),
            "data.path d.npz: at byte " + std::to_string(end + 10) +
                ": expected as many directory entries as the directory has room for");
  // A zip64 locator pointing past a file shorter than a zip64 end record
  // (found by fuzz_archive).
  std::string short_zip64("PK\x06\x07\0\0\0\0\x30\0\0\0\0\0\0\0\x01\0\0\0", 20);
  short_zip64 += std::string("PK\x05\x06\0\0\0\0\xFF\xFF\xFF\xFF", 12) + std::string(10, '\0');
  EXPECT_EQ(ZipArchive::Parse("data.path", "d.npz", short_zip64).status().message(),
            "data.path d.npz: at byte 8: expected the offset of the zip64 end record");
  // A member that records a size deflate cannot reach from its bytes.
  std::string inflated_lie =
      Zip({{"a.npy", CompressibleText(300), true, false, 0, /*zip64=*/true}});
  const auto archive = ZipArchive::Parse("data.path", "d.npz", inflated_lie);
  ASSERT_TRUE(archive.ok());
  ZipMember lie = archive->members()[0];
  lie.size = uint64_t{1} << 40;
  std::string storage;
  EXPECT_EQ(archive->Read(lie, uint64_t{1} << 50, &storage).status().message(),
            "data.path d.npz[a.npy]: its directory entry records 1099511627776 bytes, more than " +
                std::to_string(lie.compressed_size) + " deflated bytes can hold");
  // A local header where the directory says none is.
  lie = archive->members()[0];
  lie.header_offset = 7;
  EXPECT_EQ(archive->Read(lie, kPlenty, &storage).status().message(),
            "data.path d.npz[a.npy]: expected its local header at byte 7");
}

TEST(ZipArchive, NamesAreShownWithoutControlCharacters) {
  ZipMember m;
  m.name = std::string("a\x1b[2Jb\n.npy");
  EXPECT_EQ(m.ShownName(), "a?[2Jb?.npy");
  m.name = std::string(300, 'n');
  EXPECT_EQ(m.ShownName(), std::string(200, 'n') + "...");
  m.name = "__MACOSX/._a.csv";
  EXPECT_TRUE(m.IsAside());
  m.name = "data/";
  EXPECT_TRUE(m.IsAside());
  m.name = "data/a.csv";
  EXPECT_FALSE(m.IsAside());
}

class DataFileTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = temp_.path() + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  accumulus::testing::TempDir temp_;
};

TEST_F(DataFileTest, PlainFilesAreMappedAsTheyLie) {
  const std::string path = Write("t.csv", "a,b\n1,2\n");
  const auto file = DataFile::Open("data.path", path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->bytes(), "a,b\n1,2\n");
  EXPECT_EQ((*file)->name(), path);
  EXPECT_EQ((*file)->reading(), "");
}

TEST_F(DataFileTest, GzipFilesAreDecompressedAndSaySo) {
  const std::string text = CompressibleText(20000);
  const std::string path = Write("t.csv.gz", Gzip(text));
  const auto file = DataFile::Open("data.path", path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->bytes(), text);
  EXPECT_EQ((*file)->name(), path + " (decompressed)");
  EXPECT_EQ((*file)->reading(), "gzip-compressed, decompressed in memory: 20000 bytes");
}

TEST_F(DataFileTest, AZipOfOneFileIsThatFileWhateverMacOsAddsBesideIt) {
  const std::string text = CompressibleText(5000);
  const std::string path = Write("t.zip", Zip({{"data/", ""},
                                               {"data/t.csv", text, /*deflate=*/true},
                                               {"__MACOSX/data/._t.csv", "resource fork"}}));
  const auto file = DataFile::Open("data.path", path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->bytes(), text);
  EXPECT_EQ((*file)->name(), path + "[data/t.csv]");
  EXPECT_EQ((*file)->reading(),
            "member data/t.csv of a zip archive, deflated, decompressed in memory: 5000 bytes");
  const std::string stored = Write("s.zip", Zip({{"t.csv", text}}));
  EXPECT_EQ((*DataFile::Open("data.path", stored))->reading(),
            "member t.csv of a zip archive, stored: read in place");

  const std::string two = Write("two.zip", Zip({{"a.csv", text}, {"b.csv", text}}));
  EXPECT_EQ(DataFile::Open("data.path", two).status().message(),
            "data.path " + two +
                ": a zip archive of 2 files (a.csv, b.csv); a zip of one file is read: extract "
                "the one to use");
  const std::string empty = Write("empty.zip", Zip({}));
  EXPECT_EQ(DataFile::Open("data.path", empty).status().message(),
            "data.path " + empty + ": an empty zip archive");
}

TEST_F(DataFileTest, ASpreadsheetIsNamedForWhatItIsNotForItsZipMembers) {
  // As Excel (and openpyxl) lay out an .xlsx, and LibreOffice an .ods.
  const std::string xlsx = Write("t.xlsx", Zip({{"[Content_Types].xml", "<Types/>"},
                                                {"xl/workbook.xml", "<workbook/>"},
                                                {"xl/worksheets/sheet1.xml", "<worksheet/>"}}));
  const std::string ods = Write("t.ods", Zip({{"mimetype", "application/vnd.oasis.opendocument"},
                                              {"content.xml", "<office:document-content/>"}}));
  for (const std::string& path : {xlsx, ods}) {
    const auto file = DataFile::Open("data.path", path);
    EXPECT_EQ(file.status().message(),
              "data.path " + path +
                  ": a spreadsheet (an Excel .xlsx or OpenDocument .ods workbook), not a zip "
                  "archive of data: save the sheet as \"CSV UTF-8\" "
                  "(pandas.read_excel(path).to_csv(out, index=False))");
  }
  // A file of that name alone is data like any other.
  const std::string one = Write("c.zip", Zip({{"content.xml", "1,2\n"}}));
  EXPECT_TRUE(DataFile::Open("data.path", one).ok());
}

TEST_F(DataFileTest, ANpzArrayIsChosenByNumpysKeyAndTheArchiveListedWhenItIsNot) {
  const std::string x =
      Npy("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 3), }", "abcdef");
  const std::string y =
      Npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }", std::string(16, '\1'));
  const std::string path = Write("d.npz", Zip({{"x.npy", x, true}, {"y.npy", y}}));
  MemberChoice choice{"data.array", "x", ".npy", &DescribeNpy};
  const auto file = DataFile::Open("data.path", path, choice);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->bytes(), x);
  EXPECT_EQ((*file)->name(), path + "[x.npy]");
  choice.name = "y.npy";  // the member's own name is as good
  EXPECT_EQ((*DataFile::Open("data.path", path, choice))->bytes(), y);

  choice.name = "z";
  EXPECT_EQ(DataFile::Open("data.path", path, choice).status().message(),
            "data.array \"z\" is not in data.path " + path +
                ", a zip archive of x.npy (uint8 (2, 3)), y.npy (int64 (2,))");
  choice.name = "";
  EXPECT_EQ(DataFile::Open("data.path", path, choice).status().message(),
            "data.array is required: data.path " + path +
                " is a zip archive of 2 (x.npy (uint8 (2, 3)), y.npy (int64 (2,))): name the one "
                "to read");
  choice.name = "x";
  const std::string plain = Write("x.npy", x);
  EXPECT_EQ(DataFile::Open("data.path", plain, choice).status().message(),
            "data.array \"x\" names a member of a zip archive (.npz), and data.path " + plain +
                " is not one: leave data.array out");
}

TEST_F(DataFileTest, ATarOfOneFileIsThatFilePlainOrCompressed) {
  const std::string text = CompressibleText(3000);
  const std::string tar = testing::Tar({{"data/", "", '5'},
                                        {"old/", "", '0'},
                                        {"data/t.csv", text},
                                        {"data/._t.csv", "AppleDouble"}});
  const std::string plain = Write("t.tar", tar);
  const auto file = DataFile::Open("data.path", plain);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->bytes(), text);
  EXPECT_EQ((*file)->name(), plain + "[data/t.csv]");
  EXPECT_EQ((*file)->reading(), "member data/t.csv of a tar archive: read in place");

  const std::string gz = Write("t.tar.gz", testing::Gzip(tar));
  const auto unpacked = DataFile::Open("data.path", gz);
  ASSERT_TRUE(unpacked.ok()) << unpacked.status().ToString();
  EXPECT_EQ((*unpacked)->bytes(), text);
  EXPECT_EQ((*unpacked)->name(), gz + "[data/t.csv]");
  EXPECT_EQ((*unpacked)->reading(),
            "gzip-compressed, decompressed in memory: " + std::to_string(tar.size()) +
                " bytes; member data/t.csv of a tar archive");
}

TEST_F(DataFileTest, ATarOfSeveralFilesOrNoneSaysWhatItHolds) {
  const std::string two =
      Write("two.tar.xz", testing::Xz(testing::Tar({{"a.csv", "1\n"}, {"b.csv", "2\n"}})));
  EXPECT_EQ(DataFile::Open("data.path", two).status().message(),
            "data.path " + two +
                " (decompressed): a tar archive of 2 files (a.csv, b.csv); a tar of one file is "
                "read: extract the one to use");
  const std::string none = Write("none.tar", testing::Tar({{"d/", "", '5'}}));
  EXPECT_EQ(DataFile::Open("data.path", none).status().message(),
            "data.path " + none + ": a tar archive of no file");
}

TEST(DescribeNpy, SaysTheDtypeAndShapeAsNumpyDoes) {
  EXPECT_EQ(DescribeNpy(Npy("{'descr': '>f4', 'fortran_order': True, 'shape': (5, 1, 2), }", "")),
            "float32 (5, 1, 2)");
  EXPECT_EQ(DescribeNpy(Npy("{'descr': '|b1', 'fortran_order': False, 'shape': (7,), }", "")),
            "bool (7,)");
  EXPECT_EQ(DescribeNpy("not an array"), "");
}

}  // namespace
}  // namespace accumulus::data
