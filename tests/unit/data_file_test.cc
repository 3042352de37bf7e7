// Compressed and archived data files: gzip (inflate.h), zip archives
// (zip_archive.h) and the data file that reads either as its reader needs
// it (data_file.h). Damaged, cut and lying files are refused in words that
// name the file, the member and the byte, before any memory is taken on
// their word.
#include "common/data/data_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "common/data/inflate.h"
#include "common/data/npy_array.h"
#include "common/data/zip_archive.h"
#include "tests/support/compressed_bytes.h"
#include "tests/support/npy_bytes.h"
#include "tests/support/temp_dir.h"

namespace accumulus::data {
namespace {

using testing::Deflate;
using testing::Gzip;
using testing::Npy;
using testing::Zip;
using testing::ZipEntry;

// Text that compresses but is not all one byte.
std::string Text(size_t size) {
  std::string text;
  for (size_t i = 0; text.size() < size; ++i) text += std::to_string(i * i % 977) + ",";
  text.resize(size);
  return text;
}

constexpr size_t kPlenty = size_t{1} << 30;

TEST(Gunzip, ReadsEveryMemberAndIgnoresZerosAfterTheLast) {
  const std::string a = Text(100000), b = Text(777);
  EXPECT_EQ(*Gunzip("data.path", "t.gz", Gzip(a), kPlenty), a);
  EXPECT_EQ(*Gunzip("data.path", "t.gz", Gzip(a) + Gzip(b), kPlenty), a + b);
  EXPECT_EQ(*Gunzip("data.path", "t.gz", Gzip(b) + std::string(512, '\0'), kPlenty), b);
  EXPECT_EQ(*Gunzip("data.path", "t.gz", Gzip(""), kPlenty), "");
}

TEST(Gunzip, RefusesWhatFollowsTheLastMemberCutAndCorruptData) {
  const std::string gz = Gzip(Text(5000));
  const auto trailing = Gunzip("data.path", "t.gz", gz + "junk", kPlenty);
  EXPECT_EQ(trailing.status().message(),
            "data.path t.gz: at byte " + std::to_string(gz.size()) +
                ": expected the end of the file or another gzip member");
  const auto cut = Gunzip("data.path", "t.gz", gz.substr(0, gz.size() - 10), kPlenty);
  EXPECT_EQ(cut.status().message(), "data.path t.gz: the gzip data ends early (at byte " +
                                        std::to_string(gz.size() - 10) +
                                        "): the file is cut short");
  std::string bad_crc = gz;
  bad_crc[gz.size() - 6] ^= 0x55;  // the trailer's CRC-32
  EXPECT_EQ(Gunzip("data.path", "t.gz", bad_crc, kPlenty).status().message(),
            "data.path t.gz: the gzip data is corrupt in the member from byte 0 (incorrect data "
            "check)");
  const std::string second = Gzip("ab") + gz;
  std::string bad_second = second;
  bad_second[second.size() - 2] ^= 0x01;  // the second member's length
  EXPECT_EQ(Gunzip("data.path", "t.gz", bad_second, kPlenty).status().message(),
            "data.path t.gz: the gzip data is corrupt in the member from byte " +
                std::to_string(Gzip("ab").size()) + " (incorrect length check)");
}

TEST(Gunzip, HoldsNoMoreThanItsBudgetAndAllOfIt) {
  const std::string data = Text(70000);
  EXPECT_EQ(*Gunzip("data.path", "t.gz", Gzip(data), data.size()), data);
  const auto over = Gunzip("data.path", "t.gz", Gzip(data), data.size() - 1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().message(),
            "data.path t.gz: gzip-compressed data of more than 69999 bytes, more than it may "
            "take of this machine's memory: decompress it on disk (gunzip), where it is read in "
            "place");
  // A bomb: 16 MiB of zeros in 16 KiB, stopped at the budget's megabyte.
  const std::string bomb = Gzip(std::string(size_t{1} << 24, '\0'));
  EXPECT_FALSE(Gunzip("data.path", "z.gz", bomb, size_t{1} << 20).ok());
}

TEST(InflateRaw, GivesExactlyTheRecordedSize) {
  const std::string data = Text(3000);
  EXPECT_EQ(*InflateRaw(Deflate(data), data.size()), data);
  EXPECT_EQ(InflateRaw(Deflate(data), data.size() + 1).status().message(),
            "the deflated data holds 3000 bytes, not the 3001 its directory entry records");
  EXPECT_EQ(InflateRaw(Deflate(data), data.size() - 1).status().message(),
            "the deflated data holds more than the 2999 bytes its directory entry records");
  EXPECT_EQ(InflateRaw(Deflate(data).substr(0, 40), data.size()).status().message(),
            "the deflated data ends early: the archive is cut short");
  EXPECT_EQ(InflateRaw("\xFF\xFF\xFF", 10).status().message(),
            "the deflated data is corrupt at its byte 1 (invalid block type)");
  EXPECT_EQ(*InflateRawPrefix(Deflate(data), 100), data.substr(0, 100));
  EXPECT_EQ(*InflateRawPrefix(Deflate("abc"), 100), "abc");
}

// The member's content, read as a reader would.
std::string ReadMember(const ZipArchive& archive, size_t i, std::string* storage) {
  StatusOr<std::string_view> content = archive.Read(archive.members()[i], kPlenty, storage);
  EXPECT_TRUE(content.ok()) << content.status().ToString();
  return content.ok() ? std::string(*content) : "";
}

TEST(ZipArchive, ReadsStoredAndDeflatedMembers) {
  const std::string a = Text(2000), b = Text(9000);
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
    EXPECT_EQ(*archive->Peek(archive->members()[1], 10), b.substr(0, 10));
  }
  EXPECT_TRUE(ZipArchive::Is(Zip({})));
  EXPECT_TRUE(ZipArchive::Parse("data.path", "e.zip", Zip({}))->members().empty());
}

TEST(ZipArchive, RefusesEncryptedMembersOtherMethodsAndDamage) {
  const std::string data = Text(500);
  const std::string bytes = Zip({{"locked.npy", data, false, /*encrypted=*/true},
                                 {"b.npy", data, false, false, /*method=*/12},
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
            "data.path d.npz[b.npy]: compressed with bzip2, which is not read: store it, or "
            "deflate it (zip's default, numpy.savez_compressed's)");
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
  const std::string bytes = Zip({{"a.npy", Text(300)}, {"b.npy", Text(300), true}});
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
  std::string inflated_lie = Zip({{"a.npy", Text(300), true, false, 0, /*zip64=*/true}});
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
  const std::string text = Text(20000);
  const std::string path = Write("t.csv.gz", Gzip(text));
  const auto file = DataFile::Open("data.path", path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->bytes(), text);
  EXPECT_EQ((*file)->name(), path + " (decompressed)");
  EXPECT_EQ((*file)->reading(), "gzip-compressed, decompressed in memory: 20000 bytes");
}

TEST_F(DataFileTest, AZipOfOneFileIsThatFileWhateverMacOsAddsBesideIt) {
  const std::string text = Text(5000);
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

TEST(DescribeNpy, SaysTheDtypeAndShapeAsNumpyDoes) {
  EXPECT_EQ(DescribeNpy(Npy("{'descr': '>f4', 'fortran_order': True, 'shape': (5, 1, 2), }", "")),
            "float32 (5, 1, 2)");
  EXPECT_EQ(DescribeNpy(Npy("{'descr': '|b1', 'fortran_order': False, 'shape': (7,), }", "")),
            "bool (7,)");
  EXPECT_EQ(DescribeNpy("not an array"), "");
}

}  // namespace
}  // namespace accumulus::data
