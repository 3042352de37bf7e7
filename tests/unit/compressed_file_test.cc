// Data files compressed whole (compressed_file.h) in each format pandas reads
// by its ending — gzip, bzip2, xz, zstd — and the stream decoders behind
// them (stream_decoder.h): every stream read in turn, damage and cuts
// refused naming the byte, never more than the budget held.
#include "common/data/compressed_file.h"

#include <gtest/gtest.h>

#include <string>

#include "common/data/stream_decoder.h"
#include "tests/support/compressed_bytes.h"

namespace accumulus::data {
namespace {

using testing::CompressibleText;

constexpr size_t kPlenty = size_t{1} << 30;

struct Format {
  const char* name;
  Compression compression;
  std::string (*compress)(const std::string&);
  const char* stream;  // what the format's files hold one or more of
  const char* tool;
};

std::string GzipOf(const std::string& data) { return testing::Gzip(data); }
std::string Bzip2Of(const std::string& data) { return testing::Bzip2(data); }
std::string XzOf(const std::string& data) { return testing::Xz(data); }
std::string ZstdOf(const std::string& data) { return testing::Zstd(data); }

class DecompressTest : public ::testing::TestWithParam<Format> {
 protected:
  StatusOr<std::string> Read(const std::string& bytes, size_t max_size = kPlenty) const {
    return Decompress(GetParam().compression, "data.path", "t", bytes, max_size, kPlenty);
  }
  std::string Compress(const std::string& data) const { return GetParam().compress(data); }
  std::string Name() const { return GetParam().name; }
};

TEST_P(DecompressTest, ReadsEveryStreamAndIgnoresZerosAfterTheLast) {
  const std::string a = CompressibleText(100000), b = CompressibleText(777);
  EXPECT_EQ(CompressionOf(Compress(a)), GetParam().compression);
  EXPECT_EQ(CompressionName(GetParam().compression), Name());
  EXPECT_EQ(*Read(Compress(a)), a);
  EXPECT_EQ(*Read(Compress(a) + Compress(b)), a + b);
  EXPECT_EQ(*Read(Compress(b) + std::string(512, '\0')), b);
  EXPECT_EQ(*Read(Compress("")), "");
}

TEST_P(DecompressTest, RefusesWhatFollowsTheLastStreamAndCutData) {
  const std::string compressed = Compress(CompressibleText(5000));
  EXPECT_EQ(Read(compressed + "junk").status().message(),
            "data.path t: at byte " + std::to_string(compressed.size()) +
                ": expected the end of the file or another " + Name() + " " + GetParam().stream);
  EXPECT_EQ(Read(compressed.substr(0, compressed.size() - 10)).status().message(),
            "data.path t: the " + Name() + " data ends early (at byte " +
                std::to_string(compressed.size() - 10) + "): the file is cut short");
}

TEST_P(DecompressTest, RefusesADamagedStreamNamingWhereItBegins) {
  const std::string first = Compress("ab");
  std::string bytes = first + Compress(CompressibleText(20000));
  bytes[first.size() + (bytes.size() - first.size()) / 2] ^= 0x10;
  const std::string message = Read(bytes).status().message();
  const std::string expected = "data.path t: the " + Name() + " data is corrupt in the " +
                               GetParam().stream + " from byte " + std::to_string(first.size()) +
                               " (";
  EXPECT_EQ(message.substr(0, expected.size()), expected) << message;
}

TEST_P(DecompressTest, HoldsNoMoreThanItsBudgetAndAllOfIt) {
  const std::string data = CompressibleText(70000);
  EXPECT_EQ(*Read(Compress(data), data.size()), data);
  EXPECT_EQ(Read(Compress(data), data.size() - 1).status().message(),
            "data.path t: " + Name() +
                "-compressed data of more than 69999 bytes, more than it may take of this "
                "machine's memory: decompress it on disk (" +
                GetParam().tool + "), where it is read in place");
  // A bomb: 16 MiB of zeros, stopped at the budget's megabyte.
  const std::string bomb = Compress(std::string(size_t{1} << 24, '\0'));
  EXPECT_LT(bomb.size(), size_t{1} << 16);
  EXPECT_FALSE(Read(bomb, size_t{1} << 20).ok());
}

INSTANTIATE_TEST_SUITE_P(
    Formats, DecompressTest,
    ::testing::Values(Format{"gzip", Compression::kGzip, &GzipOf, "member", "gunzip"},
                      Format{"bzip2", Compression::kBzip2, &Bzip2Of, "stream", "bunzip2"},
                      Format{"xz", Compression::kXz, &XzOf, "stream", "unxz"},
                      Format{"zstd", Compression::kZstd, &ZstdOf, "frame", "unzstd"}),
    [](const ::testing::TestParamInfo<Format>& info) { return std::string(info.param.name); });

TEST(Decompress, GzipChecksEachMembersCrcAndLength) {
  const std::string gz = testing::Gzip(CompressibleText(5000));
  std::string bad_crc = gz;
  bad_crc[gz.size() - 6] ^= 0x55;  // the trailer's CRC-32
  EXPECT_EQ(Decompress(Compression::kGzip, "data.path", "t.gz", bad_crc, kPlenty, kPlenty)
                .status()
                .message(),
            "data.path t.gz: the gzip data is corrupt in the member from byte 0 (incorrect data "
            "check)");
  const std::string second = testing::Gzip("ab") + gz;
  std::string bad_second = second;
  bad_second[second.size() - 2] ^= 0x01;  // the second member's length
  EXPECT_EQ(Decompress(Compression::kGzip, "data.path", "t.gz", bad_second, kPlenty, kPlenty)
                .status()
                .message(),
            "data.path t.gz: the gzip data is corrupt in the member from byte " +
                std::to_string(testing::Gzip("ab").size()) + " (incorrect length check)");
  // Zeros only at the end: between members they are not gzip's.
  const std::string padded = testing::Gzip("ab") + std::string(4, '\0') + gz;
  EXPECT_FALSE(Decompress(Compression::kGzip, "data.path", "t.gz", padded, kPlenty, kPlenty).ok());
}

TEST(Decompress, XzReadsStreamPaddingBetweenStreams) {
  const std::string a = CompressibleText(3000), b = CompressibleText(100);
  const std::string bytes = testing::Xz(a) + std::string(4, '\0') + testing::Xz(b);
  EXPECT_EQ(*Decompress(Compression::kXz, "data.path", "t.xz", bytes, kPlenty, kPlenty), a + b);
}

TEST(Decompress, ZstdSkipsSkippableFramesAndChecksTheChecksum) {
  const std::string data = CompressibleText(9000);
  // A skippable frame: its magic, its length, then what a tool put there.
  const std::string skippable = std::string("\x50\x2A\x4D\x18\x03\0\0\0", 8) + "xyz";
  EXPECT_EQ(CompressionOf(skippable + testing::Zstd(data)), Compression::kZstd);
  EXPECT_EQ(*Decompress(Compression::kZstd, "data.path", "t.zst",
                        skippable + testing::Zstd(data) + skippable, kPlenty, kPlenty),
            data);
  std::string bad = testing::Zstd(data);
  bad.back() ^= 0x01;  // the frame's checksum
  EXPECT_EQ(Decompress(Compression::kZstd, "data.path", "t.zst", bad, kPlenty, kPlenty)
                .status()
                .message(),
            "data.path t.zst: the zstd data is corrupt in the frame from byte 0 (Restored data "
            "doesn't match checksum)");
}

TEST(Decompress, AWindowOrDictionaryLargerThanTheBudgetIsRefusedBeforeItIsTaken) {
  const std::string data = CompressibleText(3 << 20);
  EXPECT_EQ(Decompress(Compression::kZstd, "data.path", "t.zst", testing::Zstd(data, 22), kPlenty,
                       size_t{1} << 20)
                .status()
                .message(),
            "data.path t.zst: the zstd data cannot be read in the frame from byte 0 (its window "
            "needs more memory than this machine allows it): decompress it on disk (unzstd)");
  EXPECT_EQ(Decompress(Compression::kXz, "data.path", "t.xz", testing::Xz("abc"), kPlenty,
                       size_t{1} << 20)
                .status()
                .message(),
            "data.path t.xz: the xz data cannot be read in the stream from byte 0 (its dictionary "
            "needs more memory than this machine allows it): decompress it on disk (unxz)");
}

TEST(CompressionOf, TellsFormatsByTheirFirstBytesNotTextThatLooksLikeThem) {
  EXPECT_EQ(CompressionOf(testing::Bzip2("abc")), Compression::kBzip2);
  EXPECT_EQ(CompressionOf(testing::Bzip2("")), Compression::kBzip2);
  EXPECT_EQ(CompressionOf("BZh9 is a column name,1\n"), Compression::kNone);
  EXPECT_EQ(CompressionOf(testing::Xz("abc")), Compression::kXz);
  EXPECT_EQ(CompressionOf("a,b\n1,2\n"), Compression::kNone);
  EXPECT_EQ(CompressionOf(""), Compression::kNone);
}

TEST(DecodeExactly, GivesExactlyTheRecordedSize) {
  const std::string data = CompressibleText(3000);
  const std::string deflated = testing::Deflate(data);
  const auto decode = [](std::string_view in, size_t size) {
    return DecodeExactly(RawDeflateDecoder().get(), "deflated", in, size);
  };
  EXPECT_EQ(*decode(deflated, data.size()), data);
  EXPECT_EQ(decode(deflated, data.size() + 1).status().message(),
            "the deflated data holds 3000 bytes, not the 3001 its directory entry records");
  EXPECT_EQ(decode(deflated, data.size() - 1).status().message(),
            "the deflated data holds more than the 2999 bytes its directory entry records");
  EXPECT_EQ(decode(deflated.substr(0, 40), data.size()).status().message(),
            "the deflated data ends early: the archive is cut short");
  EXPECT_EQ(decode("\xFF\xFF\xFF", 10).status().message(),
            "the deflated data is corrupt at its byte 1 (invalid block type)");
  EXPECT_EQ(*DecodePrefix(RawDeflateDecoder().get(), "deflated", deflated, 100),
            data.substr(0, 100));
  EXPECT_EQ(*DecodePrefix(RawDeflateDecoder().get(), "deflated", testing::Deflate("abc"), 100),
            "abc");
}

}  // namespace
}  // namespace accumulus::data
