#include "worker/engine/file_datasets.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "tests/support/engine_test_support.h"
#include "worker/engine/tracking_allocator.h"
#include "worker/engine/trainer.h"

namespace accumulus::engine {
namespace {

class FileDatasetTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  static std::string Idx(std::vector<uint32_t> dims, const std::vector<uint8_t>& data,
                         uint8_t type = 0x08) {
    std::string out = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
    for (uint32_t d : dims) {
      for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<char>((d >> shift) & 0xFF));
    }
    out.append(data.begin(), data.end());
    return out;
  }

  const testing::TempDir temp_;
  const std::string dir_ = temp_.path();
};

TEST_F(FileDatasetTest, CsvWithHeaderReadsFeaturesAndTheNamedLabel) {
  DataConfig c;
  c.kind = DataKind::kCsv;
  c.path = Write("t.csv", "label,a,b\r\n1,0.5,2\n0,-1,3.25\n\n2,4,5\n");
  c.label_column = "label";
  auto data = LoadCsvDataset(c);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ((*data)->size(), 3);
  EXPECT_EQ((*data)->shape().features, 2);
  EXPECT_EQ((*data)->shape().outputs, 3);
  const Batch b = (*data)->Gather(torch::tensor({1, 0}));
  EXPECT_TRUE(torch::equal(b.inputs, torch::tensor({{-1.0f, 3.25f}, {0.5f, 2.0f}})));
  EXPECT_TRUE(torch::equal(b.targets, torch::tensor({0, 1}, torch::kInt64)));
}

TEST_F(FileDatasetTest, CsvRegressionTakesTheLastColumnByDefault) {
  DataConfig c;
  c.kind = DataKind::kCsv;
  c.task = DataTask::kRegression;
  c.path = Write("r.csv", "1,2,0.25\n3,4,0.5\n");
  auto data = LoadCsvDataset(c);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_TRUE(torch::equal((*data)->Gather(torch::tensor({1})).targets, torch::tensor({{0.5f}})));
}

TEST_F(FileDatasetTest, MalformedCsvNamesFileLineAndExpectation) {
  DataConfig c;
  c.kind = DataKind::kCsv;
  c.path = Write("bad.csv", "1,2,0\n3,4\n");
  EXPECT_EQ(LoadCsvDataset(c).status().message(),
            c.path + ":2: expected 3 comma-separated columns, found 2");
  c.path = Write("text.csv", "x,y,label\n1,2,0\n3,abc,1\n");
  EXPECT_EQ(LoadCsvDataset(c).status().message(), c.path + ":3: column 2: expected a number");
  c.path = Write("frac.csv", "1,2,0.5\n");
  EXPECT_EQ(LoadCsvDataset(c).status().message(),
            c.path +
                ":1: column 3 (the label): expected a class index from 0 to 1048575 (or declare "
                "data.outputs)");
  c.path = dir_ + "/missing.csv";
  EXPECT_EQ(LoadCsvDataset(c).status().code(), StatusCode::kNotFound);
}

TEST_F(FileDatasetTest, NonFiniteValuesAreRefusedWithLineAndColumn) {
  DataConfig c;
  c.kind = DataKind::kCsv;
  for (const char* value : {"nan", "-inf", "INF", "1e999", "NaN", "1e300", "-4e38"}) {
    c.path = Write("nonfinite.csv", std::string("a,b,label\n1,2,0\n\n3,") + value + ",1\n");
    EXPECT_EQ(LoadCsvDataset(c).status().message(),
              c.path +
                  ":4: column 2: expected a finite number (not nan, inf or beyond the range of a "
                  "float)")
        << value;
  }
}

TEST_F(FileDatasetTest, LabelsOutsideTheDeclaredClassesAreRefusedWithTheirLine) {
  DataConfig c;
  c.kind = DataKind::kCsv;
  c.outputs = 3;
  c.path = Write("classes.csv", "1,2,0\n1,2,2\n\n1,2,3\n");
  EXPECT_EQ(
      LoadCsvDataset(c).status().message(),
      c.path + ":4: column 3 (the label): expected a class index from 0 to 2 (data.outputs 3)");
  c.path = Write("negative.csv", "1,2,-1\n");
  EXPECT_NE(LoadCsvDataset(c).status().message().find(":1: column 3 (the label)"),
            std::string::npos);
  c.outputs = 0;  // undeclared: the labels' own classes
  c.path = Write("classes.csv", "1,2,0\n1,2,2\n\n1,2,3\n");
  auto data = LoadCsvDataset(c);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ((*data)->shape().outputs, 4);

  DataConfig idx;
  idx.kind = DataKind::kIdx;
  idx.outputs = 5;
  idx.path = Write("images.idx3", Idx({3, 2, 2}, std::vector<uint8_t>(12)));
  idx.labels_path = Write("labels.idx1", Idx({3}, {4, 0, 9}));
  EXPECT_EQ(LoadIdxDataset(idx).status().message(),
            "data.labels_path " + idx.labels_path +
                ": at byte 10: expected a class index from 0 to 4 (data.outputs 5)");
}

TEST_F(FileDatasetTest, AnErrorNeverQuotesTheFile) {
  DataConfig c;
  c.kind = DataKind::kCsv;
  c.outputs = 2;
  const std::string secret = "hunter2-the-admin-password";
  for (const std::string& body :
       {"1,2,0\n1," + secret + ",1\n", "1,2,0\n" + secret + "\n",
        "a,b,c\n1,2,0\n" + secret + ",2,5\n", "x," + secret + "\n1,2\n1,2,3\n"}) {
    c.path = Write("secret.csv", body);
    const Status status = LoadCsvDataset(c).status();
    ASSERT_FALSE(status.ok()) << body;
    EXPECT_EQ(status.message().find("hunter2"), std::string::npos) << status.message();
  }
}

TEST_F(FileDatasetTest, IdxImagesAndLabelsRoundTrip) {
  DataConfig c;
  c.kind = DataKind::kIdx;
  std::vector<uint8_t> pixels(2 * 4 * 4);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7);
  c.path = Write("images.idx3", Idx({2, 4, 4}, pixels));
  c.labels_path = Write("labels.idx1", Idx({2}, {7, 3}));
  auto data = LoadIdxDataset(c);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ((*data)->shape().channels, 1);
  EXPECT_EQ((*data)->shape().image_size, 4);
  EXPECT_EQ((*data)->shape().outputs, 8);
  const Batch b = (*data)->Gather(torch::tensor({1}));
  EXPECT_EQ(b.inputs.sizes(), (std::vector<int64_t>{1, 1, 4, 4}));
  EXPECT_FLOAT_EQ(b.inputs[0][0][0][1].item<float>(), 17 * 7 / 255.0f);
  EXPECT_EQ(b.targets.item<int64_t>(), 3);
}

// A CSV table of `n` rows of `values` pixel columns (pixel j of row i is
// i + j / 100) and a label column of i % 3 first, as Kaggle's MNIST CSV.
std::string FlatImageCsv(int64_t n, int64_t values) {
  std::string csv = "label";
  for (int64_t j = 0; j < values; ++j) csv += ",p" + std::to_string(j);
  csv += "\n";
  for (int64_t i = 0; i < n; ++i) {
    csv += std::to_string(i % 3);
    for (int64_t j = 0; j < values; ++j) csv += "," + std::to_string(i + j / 100.0);
    csv += "\n";
  }
  return csv;
}

TEST_F(FileDatasetTest, CsvRowsOfASquareCountOfPixelsAreImagesOfOneOrThreeChannels) {
  DataConfig c;
  c.kind = DataKind::kCsv;
  c.task = DataTask::kImageClassification;
  c.label_column = "label";
  c.path = Write("gray.csv", FlatImageCsv(4, 16));
  auto gray = LoadCsvDataset(c);
  ASSERT_TRUE(gray.ok()) << gray.status().ToString();
  EXPECT_EQ((*gray)->shape().channels, 1);
  EXPECT_EQ((*gray)->shape().image_size, 4);
  EXPECT_EQ((*gray)->shape().outputs, 3);
  Batch b = (*gray)->Gather(torch::tensor({2}));
  EXPECT_EQ(b.inputs.sizes(), (std::vector<int64_t>{1, 1, 4, 4}));
  EXPECT_FLOAT_EQ(b.inputs[0][0][1][2].item<float>(), 2 + 6 / 100.0f);  // pixel 6
  EXPECT_EQ(b.targets.item<int64_t>(), 2);
  EXPECT_NE((*gray)->reading().find("each sample's 16 values are a 1 × 4 × 4 image"),
            std::string::npos)
      << (*gray)->reading();

  // 48 = 3 × 4 × 4, channel by channel as CIFAR-10's rows hold them.
  c.path = Write("color.csv", FlatImageCsv(4, 48));
  auto color = LoadCsvDataset(c);
  ASSERT_TRUE(color.ok()) << color.status().ToString();
  EXPECT_EQ((*color)->shape().channels, 3);
  EXPECT_EQ((*color)->shape().image_size, 4);
  b = (*color)->Gather(torch::tensor({1}));
  EXPECT_EQ(b.inputs.sizes(), (std::vector<int64_t>{1, 3, 4, 4}));
  EXPECT_FLOAT_EQ(b.inputs[0][1][0][0].item<float>(), 1 + 16 / 100.0f);  // pixel 16

  c.path = Write("oblong.csv", FlatImageCsv(4, 10));
  const auto oblong = LoadCsvDataset(c);
  ASSERT_FALSE(oblong.ok());
  EXPECT_EQ(oblong.status().message(),
            "data.path " + c.path +
                ": 10 values per sample are no square image of 1 or 3 channels (784 = 28 × 28, "
                "3072 = 3 × 32 × 32), which data.task \"image_classification\" takes");
}

// Final parameters of a small cnn trained on the IDX images at `images`,
// labelled 0, 1, 2, 0, ... (24 of them).
std::vector<torch::Tensor> TrainSmallCnn(const std::string& images, const std::string& labels) {
  TrainConfig c;
  c.model.kind = ModelKind::kCnn;
  c.model.hidden = {4};
  c.model.batch_norm = false;
  c.data.kind = DataKind::kIdx;
  c.data.task = DataTask::kImageClassification;
  c.data.path = images;
  c.data.labels_path = labels;
  c.optimizer.lr = 0.1;
  c.micro_batch = 4;
  c.accumulation_steps = 2;
  c.epochs = 2;
  c.seed = 5;
  testing::RecordingSink sink;
  std::vector<torch::Tensor> parameters;
  TrainOptions options;
  options.final_parameters = &parameters;
  const Status status = Train(c, &sink, options);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(sink.steps.size(), 6u);
  return parameters;
}

void ExpectEqualParameters(const std::vector<torch::Tensor>& a,
                           const std::vector<torch::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
}

std::vector<uint8_t> Pixels(size_t count) {
  std::vector<uint8_t> pixels(count);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 37 % 251);
  return pixels;
}

TEST_F(FileDatasetTest, FlatImagesTrainTheCnnExactlyAsTheSameImagesInTheirShape) {
  // The same pixels as flat IDX rows [N, 16] and as IDX images [N, 4, 4].
  const std::vector<uint8_t> pixels = Pixels(24 * 16);
  std::vector<uint8_t> labels(24);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<uint8_t>(i % 3);
  const std::string labels_path = Write("labels.idx1", Idx({24}, labels));
  ExpectEqualParameters(TrainSmallCnn(Write("flat.idx2", Idx({24, 16}, pixels)), labels_path),
                        TrainSmallCnn(Write("square.idx3", Idx({24, 4, 4}, pixels)), labels_path));
}

TEST_F(FileDatasetTest, ChannelLastImagesTrainTheCnnExactlyAsTheSameImagesChannelFirst) {
  // [N, H, W, C] as Keras' CIFAR-10 holds it, and the same transposed.
  const std::vector<uint8_t> last = Pixels(24 * 4 * 4 * 3);
  std::vector<uint8_t> first(last.size());
  for (size_t n = 0; n < 24; ++n) {
    for (size_t y = 0; y < 4; ++y) {
      for (size_t x = 0; x < 4; ++x) {
        for (size_t c = 0; c < 3; ++c) {
          first[((n * 3 + c) * 4 + y) * 4 + x] = last[((n * 4 + y) * 4 + x) * 3 + c];
        }
      }
    }
  }
  std::vector<uint8_t> labels(24);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<uint8_t>(i % 3);
  const std::string labels_path = Write("labels.idx1", Idx({24}, labels));
  DataConfig c;
  c.kind = DataKind::kIdx;
  c.task = DataTask::kImageClassification;
  c.path = Write("last.idx4", Idx({24, 4, 4, 3}, last));
  c.labels_path = labels_path;
  auto data = LoadIdxDataset(c);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ((*data)->shape().channels, 3);
  EXPECT_EQ((*data)->shape().image_size, 4);
  EXPECT_NE((*data)->reading().find("channel-last [N, H, W, C], taken channel-first"),
            std::string::npos)
      << (*data)->reading();
  ExpectEqualParameters(TrainSmallCnn(c.path, labels_path),
                        TrainSmallCnn(Write("first.idx4", Idx({24, 3, 4, 4}, first)), labels_path));
}

// Big-endian bytes of each value, as IDX stores them.
template <typename T>
std::vector<uint8_t> BigEndianBytes(const std::vector<T>& values) {
  std::vector<uint8_t> out;
  for (T v : values) {
    uint8_t bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    for (size_t i = sizeof(T); i-- > 0;) out.push_back(bytes[i]);
  }
  return out;
}

TEST_F(FileDatasetTest, IdxOfEveryTypeIsReadAsTheNumbersItHolds) {
  DataConfig c;
  c.kind = DataKind::kIdx;
  // int16 samples are the numbers they are, not pixels; int32 labels.
  c.path = Write("s.idx2", Idx({2, 3}, BigEndianBytes<int16_t>({-300, 0, 7, 1, 2, 32767}), 0x0B));
  c.labels_path = Write("l.idx1", Idx({2}, BigEndianBytes<int32_t>({2, 0}), 0x0C));
  auto data = LoadIdxDataset(c);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ((*data)->shape().features, 3);
  EXPECT_EQ((*data)->shape().outputs, 3);
  Batch b = (*data)->Gather(torch::tensor({0, 1}));
  EXPECT_TRUE(torch::equal(b.inputs, torch::tensor({{-300.f, 0.f, 7.f}, {1.f, 2.f, 32767.f}})));
  EXPECT_TRUE(torch::equal(b.targets, torch::tensor({2, 0}, torch::kInt64)));

  // float64 samples and float32 targets of two values a sample: regression.
  c.task = DataTask::kRegression;
  c.path = Write("s.idx1", Idx({2}, BigEndianBytes<double>({0.25, -1.5}), 0x0E));
  c.labels_path = Write("t.idx2", Idx({2, 2}, BigEndianBytes<float>({1, 2, 3, 4.5}), 0x0D));
  data = LoadIdxDataset(c);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ((*data)->shape().features, 1);
  EXPECT_EQ((*data)->shape().outputs, 2);
  b = (*data)->Gather(torch::tensor({1, 0}));
  EXPECT_TRUE(torch::equal(b.inputs, torch::tensor({{-1.5f}, {0.25f}})));
  EXPECT_TRUE(torch::equal(b.targets, torch::tensor({{3.f, 4.5f}, {1.f, 2.f}})));
  c.outputs = 3;
  EXPECT_EQ(
      LoadIdxDataset(c).status().message(),
      "data.outputs 3 is not the 2 target(s) per sample of data.labels_path " + c.labels_path);
  c.outputs = 0;
  c.labels_path = Write("t.idx2", Idx({3, 1}, BigEndianBytes<float>({1, 2, 3}), 0x0D));
  EXPECT_EQ(LoadIdxDataset(c).status().message(),
            "data.labels_path " + c.labels_path +
                ": expected 2 targets in the first dimension (one per sample of " + c.path + ")");

  // Signed and fractional labels are no classes; NaN and values beyond a
  // float are no data, each named at its byte.
  c.task = DataTask::kClassification;
  c.labels_path = Write("l.idx1", Idx({2}, {0, 0xFF}, 0x09));  // -1
  EXPECT_EQ(LoadIdxDataset(c).status().message(),
            "data.labels_path " + c.labels_path +
                ": at byte 9: expected a class index from 0 to 1048575 (or declare data.outputs)");
  c.labels_path = Write("l.idx1", Idx({2}, BigEndianBytes<float>({1, 0.5}), 0x0D));
  EXPECT_EQ(LoadIdxDataset(c).status().message(),
            "data.labels_path " + c.labels_path +
                ": at byte 12: expected a class index from 0 to 1048575 (or declare data.outputs)");
  c.labels_path = Write("l.idx1", Idx({2}, BigEndianBytes<float>({1, 0}), 0x0D));
  ASSERT_TRUE(LoadIdxDataset(c).ok());
  for (const double bad : {std::nan(""), 1e39}) {
    c.path = Write("s.idx1", Idx({2}, BigEndianBytes<double>({0.25, bad}), 0x0E));
    EXPECT_EQ(LoadIdxDataset(c).status().message(),
              "data.path " + c.path +
                  ": at byte 16: expected a finite number (not nan, inf or beyond the range of a "
                  "float)");
  }
}

TEST_F(FileDatasetTest, GarbledIdxNamesTheByteOffset) {
  DataConfig c;
  c.kind = DataKind::kIdx;
  c.labels_path = Write("labels.idx1", Idx({2}, {0, 1}));
  std::string wrong_type = Idx({2, 2, 2}, std::vector<uint8_t>(8));
  wrong_type[2] = 0x0A;  // no type of the format
  c.path = Write("typeless.idx3", wrong_type);
  EXPECT_EQ(LoadIdxDataset(c).status().message(),
            "data.path " + c.path +
                ": at byte 2: expected an IDX type: 0x08 (unsigned byte), 0x09 (signed byte), 0x0b "
                "(int16), 0x0c (int32), 0x0d (float32) or 0x0e (float64); found 0x0a");
  c.path = Write("empty.idx3", Idx({0, 2, 2}, {}));
  EXPECT_EQ(LoadIdxDataset(c).status().message(),
            "data.path " + c.path + ": no samples (the first dimension is 0)");
  c.path = Write("hollow.idx3", Idx({2, 0, 2}, {}));
  EXPECT_EQ(LoadIdxDataset(c).status().message(),
            "data.path " + c.path + ": samples of no values (a dimension is 0)");
  c.path = Write("short.idx3", Idx({2, 2, 2}, std::vector<uint8_t>(5)));
  EXPECT_EQ(LoadIdxDataset(c).status().message(),
            "data.path " + c.path +
                ": at byte 16: expected 8 data bytes for dimensions of the header, found 5");
  c.path = Write("ok.idx3", Idx({3, 2, 2}, std::vector<uint8_t>(12)));
  EXPECT_NE(LoadIdxDataset(c).status().message().find("expected 3 class labels"),
            std::string::npos);
}

TEST_F(FileDatasetTest, TokenDocumentsArePaddedAndTargetsSkipPadding) {
  DataConfig c;
  c.kind = DataKind::kTokens;
  c.sequence_length = 4;
  c.separator = 0;
  // Documents "ab", "cdefgh" (longer than 4+1: continues), "x" (too short).
  c.path = Write("t.bin", std::string("ab\0cdefgh\0x", 11));
  auto data = LoadTokenDataset(c);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ((*data)->size(), 3);  // "ab", "cdefg", "gh"
  EXPECT_EQ((*data)->shape().pad_token, 256);
  const Batch b = (*data)->Gather(torch::tensor({0, 1, 2}));
  EXPECT_TRUE(torch::equal(
      b.inputs, torch::tensor({{'a', 256, 256, 256}, {'c', 'd', 'e', 'f'}, {'g', 256, 256, 256}},
                              torch::kInt64)));
  EXPECT_TRUE(torch::equal(
      b.targets,
      torch::tensor({{'b', -100, -100, -100}, {'d', 'e', 'f', 'g'}, {'h', -100, -100, -100}},
                    torch::kInt64)));
}

TEST_F(FileDatasetTest, Uint16TokensNeedAnEvenByteCount) {
  DataConfig c;
  c.kind = DataKind::kTokens;
  c.token_dtype = TokenDtype::kUint16;
  c.path = Write("odd.bin", std::string("abc"));
  EXPECT_NE(LoadTokenDataset(c).status().message().find("not a whole number of uint16 tokens"),
            std::string::npos);
}

TEST_F(FileDatasetTest, Uint16BlocksAreGatheredInTheOrderAsked) {
  DataConfig c;
  c.kind = DataKind::kTokens;
  c.token_dtype = TokenDtype::kUint16;
  c.token_layout = TokenLayout::kBlocks;
  c.sequence_length = 3;
  // Ids 1000..1007, little-endian: blocks 1000-1003, 1003-1006, 1006-1007.
  std::string bytes;
  for (int id = 1000; id < 1008; ++id) {
    bytes.push_back(static_cast<char>(id & 0xFF));
    bytes.push_back(static_cast<char>(id >> 8));
  }
  c.path = Write("blocks.u16", bytes);
  auto data = LoadTokenDataset(c);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  ASSERT_EQ((*data)->size(), 3);
  EXPECT_EQ((*data)->shape().pad_token, 65536);
  EXPECT_EQ((*data)->shape().vocabulary, 65537);
  const Batch b = (*data)->Gather(torch::tensor({2, 0}));
  EXPECT_TRUE(torch::equal(
      b.inputs, torch::tensor({{1006, 65536, 65536}, {1000, 1001, 1002}}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(b.targets,
                           torch::tensor({{1007, -100, -100}, {1001, 1002, 1003}}, torch::kInt64)));
  EXPECT_THROW((*data)->Gather(torch::tensor({3})), c10::Error);
}

TEST_F(FileDatasetTest, Uint32DocumentsTakeTheLargestIdInTheFileForTheirVocabulary) {
  DataConfig c;
  c.kind = DataKind::kTokens;
  c.token_dtype = TokenDtype::kUint32;
  c.separator = 128001;  // Llama 3's <|end_of_text|>
  c.sequence_length = 4;
  std::string bytes;
  for (const uint32_t id : {70000u, 5u, 128255u, 128001u, 9u, 128001u, 100000u, 7u}) {
    for (int shift : {0, 8, 16, 24}) bytes.push_back(static_cast<char>(id >> shift & 0xFF));
  }
  c.path = Write("documents.u32", bytes);
  auto data = LoadTokenDataset(c);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  ASSERT_EQ((*data)->size(), 2);  // [70000 5 128255], [100000 7]; [9] is too short
  EXPECT_EQ((*data)->shape().pad_token, 128256);
  EXPECT_EQ((*data)->shape().vocabulary, 128257);
  const Batch b = (*data)->Gather(torch::tensor({1, 0}));
  EXPECT_TRUE(torch::equal(
      b.inputs, torch::tensor({{100000, 128256, 128256, 128256}, {70000, 5, 128256, 128256}},
                              torch::kInt64)));
  EXPECT_TRUE(torch::equal(
      b.targets, torch::tensor({{7, -100, -100, -100}, {5, 128255, -100, -100}}, torch::kInt64)));
  bytes += std::string("\0\0\0\x01", 4);  // 2^24: no vocabulary takes it
  c.path = Write("large.u32", bytes);
  EXPECT_EQ(LoadTokenDataset(c).status().message(),
            "data.path " + c.path +
                ": at byte 32: expected a token id of at most 16777214 (the vocabulary is the "
                "largest id + 1)");
}

// The corpus stays in the mapped file: loading it allocates no tensor, and
// a micro-batch allocates its own two.
TEST_F(FileDatasetTest, ATokenFileIsNotCopiedIntoTensors) {
  DataConfig c;
  c.kind = DataKind::kTokens;
  c.sequence_length = 64;
  c.separator = 0;
  std::string corpus(8 << 20, 'a');  // 8 MiB: documents of 99 tokens
  for (size_t i = 99; i < corpus.size(); i += 100) corpus[i] = '\0';
  c.path = Write("corpus.bin", corpus);
  TrackingCpuAllocator* allocator = TrackingCpuAllocator::Install();
  const int64_t before = allocator->current_bytes();
  auto data = LoadTokenDataset(c);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ((*data)->size(), 2 * static_cast<int64_t>(corpus.size() / 100) + 1);
  EXPECT_EQ(allocator->current_bytes(), before);
  const Batch b = (*data)->Gather(torch::arange(0, 16));
  EXPECT_EQ(allocator->current_bytes() - before, 2 * 16 * 64 * 8);
  EXPECT_EQ(b.targets.ne(kIgnoreIndex).sum().item<int64_t>(), 8 * (64 + 34));
}

using Quiet = testing::RecordingSink;

TEST_F(FileDatasetTest, TrainsAnMlpOnACsvFile) {
  std::string csv = "f1,f2,label\n";
  for (int i = 0; i < 40; ++i) {
    const double x = (i % 10) / 10.0;
    csv += std::to_string(x) + "," + std::to_string(1 - x) + "," + (x > 0.45 ? "1" : "0") + "\n";
  }
  TrainConfig c;
  c.data.kind = DataKind::kCsv;
  c.data.path = Write("train.csv", csv);
  c.model.hidden = {8};
  c.optimizer.lr = 0.5;
  c.micro_batch = 4;
  c.accumulation_steps = 2;
  c.epochs = 5;
  Quiet sink;
  const Status status = Train(c, &sink);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(sink.run.samples_per_epoch, 40);
  EXPECT_EQ(sink.steps.size(), 25u);
  EXPECT_LT(sink.steps.back().loss, sink.steps.front().loss);
}

TEST_F(FileDatasetTest, TrainsAnMlpRegressionOnFloatIdxFiles) {
  // Two features, two targets each: their sum and their difference.
  std::vector<float> features, targets;
  for (int i = 0; i < 32; ++i) {
    const float a = static_cast<float>(i % 8) / 8, b = static_cast<float>(i % 5) / 5;
    features.insert(features.end(), {a, b});
    targets.insert(targets.end(), {a + b, a - b});
  }
  TrainConfig c;
  c.data.kind = DataKind::kIdx;
  c.data.task = DataTask::kRegression;
  c.data.path = Write("x.idx2", Idx({32, 2}, BigEndianBytes(features), 0x0D));
  c.data.labels_path = Write("y.idx2", Idx({32, 2}, BigEndianBytes(targets), 0x0D));
  c.model.hidden = {8};
  c.optimizer.lr = 0.1;
  c.micro_batch = 4;
  c.accumulation_steps = 2;
  c.epochs = 10;
  Quiet sink;
  const Status status = Train(c, &sink);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(sink.run.samples_per_epoch, 32);
  EXPECT_EQ(sink.steps.size(), 40u);
  EXPECT_LT(sink.steps.back().loss, sink.steps.front().loss / 2);
}

// A small MLP job: micro-batches of 4, two a step.
TrainConfig SmallMlpJob(double lr, int64_t epochs) {
  TrainConfig c;
  c.model.hidden = {8};
  c.optimizer.lr = lr;
  c.micro_batch = 4;
  c.accumulation_steps = 2;
  c.epochs = epochs;
  return c;
}

// Trains both jobs: `steps` steps each, of equal losses one by one, falling.
void ExpectTheSameSteps(const TrainConfig& a, const TrainConfig& b, size_t steps) {
  Quiet a_sink, b_sink;
  const Status a_status = Train(a, &a_sink);
  ASSERT_TRUE(a_status.ok()) << a_status.ToString();
  const Status b_status = Train(b, &b_sink);
  ASSERT_TRUE(b_status.ok()) << b_status.ToString();
  ASSERT_EQ(a_sink.steps.size(), steps);
  ASSERT_EQ(b_sink.steps.size(), steps);
  for (size_t i = 0; i < steps; ++i) {
    EXPECT_EQ(a_sink.steps[i].loss, b_sink.steps[i].loss) << "step " << i + 1;
  }
  EXPECT_LT(a_sink.steps.back().loss, a_sink.steps.front().loss);
}

// Classes given by name train as the same classes given by index: the
// names' byte order, whatever order the rows come in.
TEST_F(FileDatasetTest, CsvClassNamesTrainAsTheirIndices) {
  const char* names[] = {"bird", "cat", "dog"};
  std::string by_name = "x1,x2,animal\n", by_index = "x1,x2,animal\n";
  for (int i = 0; i < 24; ++i) {
    const int label = (i * 7 + 2) % 3;
    const std::string features =
        std::to_string(label + (i % 4) / 8.0) + "," + std::to_string(1 - label / 2.0) + ",";
    by_name += features + names[label] + "\n";
    by_index += features + std::to_string(label) + "\n";
  }
  TrainConfig named = SmallMlpJob(0.5, 3), indexed = named;
  named.data.kind = indexed.data.kind = DataKind::kCsv;
  named.data.path = Write("named.csv", by_name);
  indexed.data.path = Write("indexed.csv", by_index);
  ExpectTheSameSteps(named, indexed, 9);
  auto data = LoadCsvDataset(named.data);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ((*data)->shape().outputs, 3);
}

// The same numbers as a CSV file of two label columns, between and after
// the features, and as IDX arrays: the same job, step for step.
TEST_F(FileDatasetTest, CsvTargetColumnsTrainAsTheSameTargetsInArrays) {
  std::vector<float> features, targets;
  std::string csv = "sum,a,diff,b\n";  // exact in decimal and in float
  for (int i = 0; i < 32; ++i) {
    const float a = static_cast<float>(i % 8) / 8, b = static_cast<float>(i % 4) / 4;
    features.insert(features.end(), {a, b});
    targets.insert(targets.end(), {a - b, a + b});
    csv += std::to_string(a + b) + "," + std::to_string(a) + "," + std::to_string(a - b) + "," +
           std::to_string(b) + "\n";
  }
  TrainConfig from_arrays = SmallMlpJob(0.1, 3);
  from_arrays.data.task = DataTask::kRegression;
  TrainConfig from_csv = from_arrays;
  from_arrays.data.kind = DataKind::kIdx;
  from_arrays.data.path = Write("x.idx2", Idx({32, 2}, BigEndianBytes(features), 0x0D));
  from_arrays.data.labels_path = Write("y.idx2", Idx({32, 2}, BigEndianBytes(targets), 0x0D));
  from_csv.data.kind = DataKind::kCsv;
  from_csv.data.path = Write("t.csv", csv);
  from_csv.data.label_columns = {"diff", "0"};
  ExpectTheSameSteps(from_csv, from_arrays, 12);

  from_csv.data.outputs = 3;
  EXPECT_EQ(LoadCsvDataset(from_csv.data).status().message(),
            "data.outputs 3 is not the 2 target(s) per row of data.path " + from_csv.data.path +
                " (one per label column)");
}

// Class labels as indices, as a column vector and as one-hot rows: the
// same job, step for step.
TEST_F(FileDatasetTest, OneHotAndColumnLabelsTrainAsTheirIndices) {
  std::vector<uint8_t> features, indices, one_hot;
  for (int i = 0; i < 24; ++i) {
    const int label = (i * 5 + 1) % 3;
    features.insert(features.end(), {static_cast<uint8_t>(label * 80 + i % 4),
                                     static_cast<uint8_t>(255 - label * 100)});
    indices.push_back(static_cast<uint8_t>(label));
    for (int c = 0; c < 3; ++c) one_hot.push_back(c == label ? 1 : 0);
  }
  TrainConfig by_index = SmallMlpJob(0.5, 3);
  by_index.data.kind = DataKind::kIdx;
  by_index.data.path = Write("x.idx", Idx({24, 2}, features));
  by_index.data.labels_path = Write("y.idx", Idx({24}, indices));
  TrainConfig by_column = by_index, by_row = by_index;
  by_column.data.labels_path = Write("column.idx", Idx({24, 1}, indices));
  by_row.data.labels_path = Write("one_hot.idx", Idx({24, 3}, one_hot));
  ExpectTheSameSteps(by_column, by_index, 9);
  ExpectTheSameSteps(by_row, by_index, 9);
  auto data = LoadIdxDataset(by_row.data);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ((*data)->shape().outputs, 3);
}

TEST_F(FileDatasetTest, TrainsACharLmOnATokenFileCountingItsTargetTokens) {
  // Documents of 5..20 bytes from a repeating text, split at '\n'.
  std::string text;
  for (int d = 0; d < 48; ++d)
    text += std::string(5 + d % 16, static_cast<char>('a' + d % 7)) + "\n";
  TrainConfig c;
  c.model.kind = ModelKind::kCharLm;
  c.model.d_model = 16;
  c.model.heads = 2;
  c.model.layers = 1;
  c.data.kind = DataKind::kTokens;
  c.data.task = DataTask::kLanguageModeling;
  c.data.separator = '\n';
  c.data.sequence_length = 16;
  c.data.path = Write("docs.txt", text);
  c.optimizer.kind = OptimizerKind::kAdamW;
  c.optimizer.lr = 0.01;
  c.micro_batch = 4;
  c.accumulation_steps = 4;
  c.epochs = 1;
  Quiet sink;
  const Status status = Train(c, &sink);
  ASSERT_TRUE(status.ok()) << status.ToString();
  // Documents longer than 17 bytes continue in a second sample.
  int64_t samples = 0;
  int64_t targets = 0;
  for (int d = 0; d < 48; ++d) {
    const int64_t length = 5 + d % 16;
    samples += length > 17 ? 2 : 1;
    targets += length - 1;  // every token but the first is a target once
  }
  EXPECT_EQ(sink.run.samples_per_epoch, samples);
  int64_t counted = 0;
  for (const auto& step : sink.steps) counted += step.tokens;
  EXPECT_EQ(counted, targets);
}

}  // namespace
}  // namespace accumulus::engine
