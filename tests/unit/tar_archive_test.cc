// Tar archives (tar_archive.h): POSIX, pax and GNU names and sizes; damaged
// and cut archives refused naming the byte. The data file that reads the
// one file of one: data_file_test.cc.
#include "common/data/tar_archive.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/support/compressed_bytes.h"

namespace accumulus::data {
namespace {

using testing::CompressibleText;
using testing::Tar;

// A pax record: "LENGTH KEY=VALUE\n", LENGTH counting itself.
std::string PaxRecord(const std::string& key, const std::string& value) {
  const std::string rest = " " + key + "=" + value + "\n";
  std::string length = std::to_string(rest.size());
  length = std::to_string(rest.size() + length.size());
  return length + rest;
}

// The header at `at` with its checksum made right again.
void Rechecksum(std::string* archive, size_t at) {
  archive->replace(at + 148, 8, std::string(8, ' '));
  unsigned sum = 0;
  for (size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>((*archive)[at + i]);
  char field[8];
  std::snprintf(field, sizeof(field), "%06o", sum);
  archive->replace(at + 148, 6, field);
}

StatusOr<TarArchive> Parse(const std::string& bytes) {
  return TarArchive::Parse("data.path", "t.tar", bytes);
}

TEST(TarArchive, ListsRegularFilesWithTheirNamesAndData) {
  const std::string a = CompressibleText(700), b = CompressibleText(1024);
  const std::string bytes = Tar({{"data/", "", '5'}, {"data/a.csv", a}, {"data/b.csv", b}});
  ASSERT_TRUE(TarArchive::Is(bytes));
  const auto archive = Parse(bytes);
  ASSERT_TRUE(archive.ok()) << archive.status().ToString();
  ASSERT_EQ(archive->members().size(), 2u);
  EXPECT_EQ(archive->members()[0].name, "data/a.csv");
  EXPECT_EQ(archive->Read(archive->members()[0]), a);
  EXPECT_EQ(archive->members()[1].name, "data/b.csv");
  EXPECT_EQ(archive->Read(archive->members()[1]), b);
  EXPECT_FALSE(TarArchive::Is("a,b\n1,2\n"));
  EXPECT_FALSE(TarArchive::Is(std::string(1024, '\0')));
}

TEST(TarArchive, TakesLongNamesFromPaxAndGnuHeaders) {
  const std::string long_name = std::string(120, 'd') + "/t.csv";
  const auto pax =
      Parse(Tar({{"PaxHeader/t.csv", PaxRecord("path", long_name), 'x'}, {"t.csv", "1,2\n"}}));
  ASSERT_TRUE(pax.ok()) << pax.status().ToString();
  ASSERT_EQ(pax->members().size(), 1u);
  EXPECT_EQ(pax->members()[0].name, long_name);
  const auto gnu =
      Parse(Tar({{"././@LongLink", long_name + std::string(1, '\0'), 'L'}, {"t.csv", "1,2\n"}}));
  ASSERT_TRUE(gnu.ok()) << gnu.status().ToString();
  EXPECT_EQ(gnu->members()[0].name, long_name);
  // A size beyond the octal field's 8 GiB, in GNU's base-256.
  std::string big = Tar({{"t.csv", "1,2\n"}});
  big.replace(124, 12, std::string("\x80\0\0\0\0\0\0\0\0\0\0\x04", 12));
  Rechecksum(&big, 0);
  EXPECT_EQ(Parse(big)->members()[0].size, 4u);
}

TEST(TarArchive, RefusesDamagedCutAndMalformedArchivesNamingTheByte) {
  std::string bytes = Tar({{"a.csv", "1,2\n"}, {"b.csv", CompressibleText(1000)}});
  std::string damaged = bytes;
  damaged[1024] ^= 0x01;  // the second header's name
  EXPECT_EQ(Parse(damaged).status().message(),
            "data.path t.tar: at byte 1024: a tar header whose checksum does not match: the "
            "archive is damaged");
  EXPECT_EQ(Parse(bytes.substr(0, 1800)).status().message(),
            "data.path t.tar: at byte 1024: a member of 1000 bytes runs past the end of the "
            "archive: it is cut short");
  EXPECT_EQ(Parse(bytes.substr(0, 1100)).status().message(),
            "data.path t.tar: at byte 1024: expected a tar header of 512 bytes: the archive is "
            "cut short");
  EXPECT_EQ(Parse(Tar({{"x", "12 path=a\n", 'x'}, {"a.csv", "1\n"}})).status().message(),
            "data.path t.tar: at byte 512: a pax extended header that is malformed");
  std::string bad_size = bytes;
  bad_size.replace(124, 11, "0000000009x");
  Rechecksum(&bad_size, 0);
  EXPECT_EQ(Parse(bad_size).status().message(),
            "data.path t.tar: at byte 124: expected the member's size in octal");
}

}  // namespace
}  // namespace accumulus::data
