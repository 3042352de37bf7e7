// The data file and checkpoint frame parsers on their own (the engine's
// tests read them through its datasets): the cases fuzzing is after, each
// refused in words, never by overflow.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/checkpoint_frame.h"
#include "common/data/csv_table.h"
#include "common/data/idx_array.h"
#include "common/data/token_samples.h"

namespace accumulus::data {
namespace {

std::string Idx(const std::vector<uint32_t>& dims, const std::string& data) {
  std::string out = {0, 0, 0x08, static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>((d >> shift) & 0xFF));
  }
  return out + data;
}

TEST(DataFormats, IdxDimensionsWhoseProductOverflowsAreRefusedAtTheirByte) {
  const auto parsed = ParseIdx("data.path", "x.idx", Idx({65536, 65536, 65536, 65536}, "ab"));
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().message(),
            "data.path x.idx: at byte 16: expected dimensions whose product fits a file");
}

TEST(DataFormats, IdxLabelsAreOnePerSampleAndBelowTheDeclaredClasses) {
  const std::string bytes = Idx({3}, std::string("\x01\x00\x02", 3));
  const auto labels = ParseIdx("data.labels_path", "l.idx", bytes);
  ASSERT_TRUE(labels.ok());
  EXPECT_EQ(*CheckIdxLabels(*labels, 3, "l.idx", "s.idx", 0), 3);
  EXPECT_EQ(*CheckIdxLabels(*labels, 3, "l.idx", "s.idx", 5), 5);
  EXPECT_EQ(CheckIdxLabels(*labels, 3, "l.idx", "s.idx", 2).status().message(),
            "data.labels_path l.idx: at byte 10: expected a class index from 0 to 1 "
            "(data.outputs 2)");
  EXPECT_NE(CheckIdxLabels(*labels, 4, "l.idx", "s.idx", 0)
                .status()
                .message()
                .find("expected 4 labels in one dimension"),
            std::string::npos);
}

TEST(DataFormats, CsvLabelColumnsOutsideTheTableAreNamedNotOverflowed) {
  CsvConfig config;
  config.path = "t.csv";
  for (const char* column : {"1e300", "-1e300", "7", "-4", "nan", "y"}) {
    config.label_column = column;
    const auto table = ParseCsv("1,2,0\n", config);
    ASSERT_FALSE(table.ok()) << column;
    EXPECT_EQ(table.status().message(), std::string("data.label_column \"") + column +
                                            "\" is not a column of t.csv (it has 3 columns and "
                                            "no header line)");
  }
  config.label_column = "-3";  // from the end: the first
  const auto table = ParseCsv("1,2,0\n0,5,6\n", config);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->targets, (std::vector<double>{1, 0}));
  EXPECT_EQ(table->inputs, (std::vector<float>{2, 0, 5, 6}));
}

TEST(DataFormats, CsvValuesBeyondAFloatAreRefused) {
  CsvConfig config;
  config.path = "t.csv";
  config.classification = false;
  EXPECT_EQ(ParseCsv("1,3e38,0\n1,4e38,0\n", config).status().message(),
            "t.csv:2: column 2: expected a finite number (not nan, inf or beyond the range of a "
            "float)");
}

TEST(DataFormats, TokensNeedAPositiveSequenceLength) {
  TokenConfig config;
  config.path = "t.bin";
  config.sequence_length = 0;
  EXPECT_EQ(SplitTokens("abc", config).status().message(),
            "data.sequence_length 0 must be positive");
  config.sequence_length = 2;
  config.blocks = true;
  const auto split = SplitTokens("abcde", config);
  ASSERT_TRUE(split.ok());
  ASSERT_EQ(split->samples.size(), 2u);  // "abc", "cde"
  EXPECT_EQ(split->samples[1], (std::vector<int64_t>{'c', 'd', 'e'}));
  EXPECT_EQ(split->max_token, 'e');
}

TEST(CheckpointFrame, APayloadReadsBackAndADamagedFileSaysHow) {
  const std::string framed = FrameCheckpoint("payload");
  EXPECT_EQ(*UnframeCheckpoint(framed), "payload");
  EXPECT_EQ(UnframeCheckpoint(framed.substr(0, framed.size() - 1)).status().message(),
            "truncated: 6 of 7 payload bytes");
  std::string garbled = framed;
  garbled.back() ^= 1;
  EXPECT_EQ(UnframeCheckpoint(garbled).status().message(), "checksum mismatch (garbled)");
  EXPECT_EQ(UnframeCheckpoint("short").status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace accumulus::data
