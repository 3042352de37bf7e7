// The data file and checkpoint frame parsers on their own (the engine's
// tests read them through its datasets): the cases fuzzing is after, each
// refused in words, never by overflow.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/checkpoint_frame.h"
#include "common/data/csv_table.h"
#include "common/data/file_signature.h"
#include "common/data/idx_array.h"
#include "common/data/mapped_file.h"
#include "common/data/npy_array.h"
#include "common/data/token_samples.h"
#include "tests/support/npy_bytes.h"
#include "tests/support/temp_dir.h"

namespace accumulus::data {
namespace {

std::string Idx(const std::vector<uint32_t>& dims, const std::string& data, char type = 0x08) {
  std::string out = {0, 0, type, static_cast<char>(dims.size())};
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

TEST(DataFormats, IdxElementsAreBigEndianValuesOfTheirType) {
  struct Case {
    char type;
    std::string bytes;  // two elements
    double first, second;
  };
  for (const Case& c : std::vector<Case>{
           {0x08, "\xFF\x01", 255, 1},
           {0x09, "\xFF\x7F", -1, 127},
           {0x0B, std::string("\x80\x00\x01\x02", 4), -32768, 258},
           {0x0C, std::string("\xFF\xFF\xFF\xFE\x00\x01\x00\x00", 8), -2, 65536},
           {0x0D, std::string("\x3F\xC0\x00\x00\xC1\x20\x00\x00", 8), 1.5, -10},
           {0x0E, std::string("\x3F\xD0\0\0\0\0\0\0\x40\x59\0\0\0\0\0\0", 16), 0.25, 100},
       }) {
    const std::string file = Idx({2}, c.bytes, c.type);
    const auto array = ParseIdx("data.path", "x.idx", file);
    ASSERT_TRUE(array.ok()) << int{c.type} << ": " << array.status().ToString();
    EXPECT_EQ((*array)[0], c.first) << int{c.type};
    EXPECT_EQ((*array)[1], c.second) << int{c.type};
    EXPECT_EQ(array->OffsetOf(1), 8 + c.bytes.size() / 2);
    // One byte short of the type's two elements.
    EXPECT_EQ(ParseIdx("data.path", "x.idx", file.substr(0, file.size() - 1)).status().message(),
              "data.path x.idx: at byte 8: expected " + std::to_string(c.bytes.size()) +
                  " data bytes for dimensions of the header, found " +
                  std::to_string(c.bytes.size() - 1));
  }
  // Elements whose bytes overflow though their count does not.
  EXPECT_EQ(ParseIdx("data.path", "x.idx", Idx({1u << 31, 1u << 31}, "", 0x0E)).status().message(),
            "data.path x.idx: at byte 8: expected dimensions whose product fits a file");
}

TEST(DataFormats, IdxLabelsAreOnePerSampleAndBelowTheDeclaredClasses) {
  const std::string bytes = Idx({3}, std::string("\x01\x00\x02", 3));
  const auto labels = ParseIdx("data.labels_path", "l.idx", bytes);
  ASSERT_TRUE(labels.ok());
  EXPECT_EQ(CheckClassLabels(*labels, 3, "l.idx", "s.idx", 0)->classes, 3);
  EXPECT_EQ(CheckClassLabels(*labels, 3, "l.idx", "s.idx", 5)->classes, 5);
  EXPECT_FALSE(CheckClassLabels(*labels, 3, "l.idx", "s.idx", 5)->one_hot);
  EXPECT_EQ(CheckClassLabels(*labels, 3, "l.idx", "s.idx", 2).status().message(),
            "data.labels_path l.idx: at byte 10: expected a class index from 0 to 1 "
            "(data.outputs 2)");
  EXPECT_EQ(CheckClassLabels(*labels, 4, "l.idx", "s.idx", 0).status().message(),
            "data.labels_path l.idx: expected 4 class labels (one per sample of s.idx): indices, "
            "[4] or [4, 1], or one-hot rows, [4, classes]");
}

// An .npy file as numpy.save writes it: the header padded with spaces and a
// newline so that the data starts at a multiple of 64.
using testing::Npy;

TEST(DataFormats, NpyReadsNumericDtypesOfEitherByteOrderAndBothLayouts) {
  struct Case {
    std::string descr;
    std::string bytes;  // two elements
    double first, second;
  };
  for (const Case& c : std::vector<Case>{
           {"<f4", std::string("\0\0\xC0\x3F\0\0\x20\xC1", 8), 1.5, -10},
           {">i8", std::string("\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFE\0\0\0\0\0\x01\0\0", 16), -2,
            65536},
           {"|u1", "\xFF\x01", 255, 1},
           {"|b1", std::string("\x01\0", 2), 1, 0},
           {"<f2", std::string("\0\x3C\0\xC0", 4), 1, -2},
           {"<f2", std::string("\x01\0\xFF\x7B", 4), std::ldexp(1, -24), 65504},
           {"<u8", std::string("\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x07\0\0\0\0\0\0\0", 16),
            18446744073709551615.0, 7},
           {">u2", std::string("\x01\x00\xFF\xFF", 4), 256, 65535},
       }) {
    for (const char version : {1, 2, 3}) {
      const std::string file =
          Npy("{'descr': '" + c.descr + "', 'fortran_order': False, 'shape': (2,), }", c.bytes,
              version);
      const auto array = ParseNpy("data.path", "x.npy", file);
      ASSERT_TRUE(array.ok()) << c.descr << ": " << array.status().ToString();
      EXPECT_EQ(array->dims, (std::vector<int64_t>{2}));
      EXPECT_EQ((*array)[0], c.first) << c.descr;
      EXPECT_EQ((*array)[1], c.second) << c.descr;
      EXPECT_EQ(array->OffsetOf(0) % 64, 0u);
    }
  }
  const auto fortran =
      ParseNpy("data.path", "x.npy",
               Npy("{'shape': (2, 3), 'fortran_order': True, 'descr': '|i1'}", "abcdef"));
  ASSERT_TRUE(fortran.ok()) << fortran.status().ToString();
  EXPECT_TRUE(fortran->column_major);
  EXPECT_EQ(fortran->dims, (std::vector<int64_t>{2, 3}));
}

TEST(DataFormats, NpyErrorsNameTheByteAndWhatWasExpected) {
  const auto error = [](const std::string& file) {
    return ParseNpy("data.path", "x.npy", file).status().message();
  };
  const std::string ok_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }";
  EXPECT_EQ(error("\x93NUMPZ"),
            "data.path x.npy: at byte 0: expected the .npy magic string \\x93NUMPY");
  EXPECT_EQ(error(Npy(ok_dict, "abcd", 4)),
            "data.path x.npy: at byte 6: expected format version 1, 2 or 3");
  EXPECT_EQ(error(Npy(ok_dict, "abcd").substr(0, 40)),
            "data.path x.npy: at byte 8: expected a header of 118 bytes, found 30");
  EXPECT_EQ(error(Npy("{'descr': '<U5', 'fortran_order': False, 'shape': (1,), }", "abcd")),
            "data.path x.npy: at byte 20: expected a numeric dtype: b1 (bool), i1, i2, i4, i8, u1, "
            "u2, u4, u8, f2, f4 or f8; found '<U5'");
  EXPECT_EQ(error(Npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", "abcdefgh")),
            "data.path x.npy: at byte 20: expected a numeric dtype: b1 (bool), i1, i2, i4, i8, u1, "
            "u2, u4, u8, f2, f4 or f8; found '|O'");
  EXPECT_EQ(
      error(Npy("{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (1,), }", "abcd")),
      "data.path x.npy: at byte 20: expected a dtype string for 'descr' (not a structured dtype)");
  EXPECT_EQ(error(Npy("{'descr': '<f4', 'fortran_order': False}", "abcd")),
            "data.path x.npy: at byte 49: expected the key 'shape' in the header's dict");
  EXPECT_EQ(error(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': ()}", "abcd")),
            "data.path x.npy: at byte 60: expected at least one dimension in 'shape'");
  EXPECT_EQ(error(Npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", "abcd")),
            "data.path x.npy: at byte 44: expected True or False for 'fortran_order'");
  EXPECT_EQ(error(Npy("{'descr': '<f4', 'descr': '<f4', 'shape': (1,)}", "abcd")),
            "data.path x.npy: at byte 27: expected each of the keys 'descr', 'fortran_order' and "
            "'shape' once");
  EXPECT_EQ(
      error(Npy(ok_dict, "abc")),
      "data.path x.npy: at byte 128: expected 4 data bytes for dimensions of the header, found 3");
  EXPECT_EQ(error(Npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2,)}",
                      std::string(8, '\0') + std::string("\0\0\0\0\0\0\xF8\x7F", 8))),
            "data.path x.npy: at byte 136: expected a finite number (not nan, inf or beyond the "
            "range of a float)");
  EXPECT_EQ(
      error(Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4)}", "")),
      "data.path x.npy: at byte 60: expected dimensions whose product fits a file");
}

// Labels as a column vector ([N, 1]: scikit-learn's and pandas' y), or
// one-hot rows (Keras' to_categorical) in either layout.
TEST(DataFormats, ClassLabelsMayBeAColumnOrOneHotRows) {
  // The files outlive their arrays, which point into them.
  const std::string column_file = Npy("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 1), }",
                                      std::string("\x02\0\0\0\0\0\0\0\x00\0\0\0\0\0\0\0", 16));
  const auto column = ParseNpy("data.labels_path", "y.npy", column_file);
  ASSERT_TRUE(column.ok()) << column.status().ToString();
  const auto indices = CheckClassLabels(*column, 2, "y.npy", "x.npy", 0);
  ASSERT_TRUE(indices.ok()) << indices.status().ToString();
  EXPECT_EQ(indices->classes, 3);
  EXPECT_FALSE(indices->one_hot);

  // Rows [0, 1, 0] and [1, 0, 0], stored by rows and by columns.
  for (const auto& [order, bytes] : std::vector<std::pair<std::string, std::string>>{
           {"False", std::string("\0\x01\0\x01\0\0", 6)},
           {"True", std::string("\0\x01\x01\0\0\0", 6)}}) {
    const std::string file =
        Npy("{'descr': '|u1', 'fortran_order': " + order + ", 'shape': (2, 3), }", bytes);
    const auto rows = ParseNpy("data.labels_path", "y.npy", file);
    ASSERT_TRUE(rows.ok()) << rows.status().ToString();
    const auto one_hot = CheckClassLabels(*rows, 2, "y.npy", "x.npy", 0);
    ASSERT_TRUE(one_hot.ok()) << order << ": " << one_hot.status().ToString();
    EXPECT_EQ(one_hot->classes, 3);
    EXPECT_TRUE(one_hot->one_hot);
    EXPECT_EQ(CheckClassLabels(*rows, 2, "y.npy", "x.npy", 4).status().message(),
              "data.labels_path y.npy: one-hot labels of 3 classes; data.outputs declares 4");
  }
  const std::string soft_file = Npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }",
                                    std::string("\0\0\0\x3f\0\0\0\x3f", 8));  // 0.5, 0.5
  const auto soft = ParseNpy("data.labels_path", "y.npy", soft_file);
  ASSERT_TRUE(soft.ok()) << soft.status().ToString();
  EXPECT_EQ(CheckClassLabels(*soft, 1, "y.npy", "x.npy", 0).status().message(),
            "data.labels_path y.npy: at byte 128: expected 0 or 1 in sample 0's one-hot row: soft "
            "labels are no class labels");
  const std::string two_file = Npy("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2), }",
                                   std::string("\x01\0\x01\x01", 4));
  const auto two = ParseNpy("data.labels_path", "y.npy", two_file);
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(CheckClassLabels(*two, 2, "y.npy", "x.npy", 0).status().message(),
            "data.labels_path y.npy: at byte 130: expected a single 1 in sample 1's one-hot row; "
            "found 2");
  const std::string cube_file =
      Npy("{'descr': '|u1', 'fortran_order': False, 'shape': (1, 2, 2), }",
          std::string("\x01\0\0\0", 4));
  const auto cube = ParseNpy("data.labels_path", "y.npy", cube_file);
  ASSERT_TRUE(cube.ok()) << cube.status().ToString();
  EXPECT_FALSE(CheckClassLabels(*cube, 1, "y.npy", "x.npy", 0).ok());
}

// Data compressed by a tool whose format is not read, or compressed once
// more inside a gzip file or zip archive (which DataFile opens): each reader
// says which it got, not only "bad magic".
TEST(DataFormats, ACompressedOrArchivedFileIsNamedAsSuch) {
  const std::string gzip("\x1F\x8B\x08\x00\x00\x00\x00\x00", 8);
  EXPECT_EQ(ParseIdx("data.path", "train-images-idx3-ubyte.gz", gzip).status().message(),
            "data.path train-images-idx3-ubyte.gz: at byte 0: expected two zero bytes (the IDX "
            "magic number); the data is gzip-compressed inside the file's own compression: "
            "decompress it first (gunzip)");
  EXPECT_EQ(ParseNpy("data.path", "x.npz", std::string("PK\x03\x04\x14\x00", 6)).status().message(),
            "data.path x.npz: at byte 0: expected the .npy magic string \\x93NUMPY; the data is "
            "a zip archive inside the file's own compression or archive: extract it first");
  CsvConfig config;
  config.path = "t.csv.gz";
  EXPECT_EQ(ParseCsv(gzip, config).status().message(),
            "t.csv.gz: expected CSV text; the data is gzip-compressed inside the file's own "
            "compression: decompress it first (gunzip)");
  config.path = "t.txt";
  EXPECT_EQ(ParseCsv(std::string("\xFF\xFEx\0\t\0y\0", 8), config).status().message(),
            "t.txt: expected CSV text; the file is UTF-16 text (as Excel saves \"Unicode Text\"): "
            "save it as UTF-8 (\"CSV UTF-8\")");
  for (const std::string& packed :
       {std::string("BZh91AY&SY\x01"),
        std::string("\xFD"
                    "7zXZ\0\0",
                    8),
        std::string("\x28\xB5\x2F\xFD\0", 5), std::string("7z\xBC\xAF\x27\x1C"),
        std::string("\x80\x04\x95\x00", 4), std::string("PK\x05\x06", 4)}) {
    EXPECT_NE(FileSignatureHint(packed), "") << packed;
    const std::string message = ParseNpy("data.path", "x.npy", packed).status().message();
    EXPECT_TRUE(message.find("; the file is ") != std::string::npos ||
                message.find("; the data is ") != std::string::npos)
        << message;
  }
  // The other kinds' files, given as this one: named, with the kind.
  const std::string npy("\x93NUMPY\x01\x00v\x00{", 11);
  EXPECT_EQ(ParseIdx("data.path", "x.npy", npy).status().message(),
            "data.path x.npy: at byte 0: expected two zero bytes (the IDX magic number); the file "
            "is a NumPy .npy file: data.kind \"npy\" reads it");
  const std::string tensors = std::string("\x02\0\0\0\0\0\0\0", 8) + "{\"";
  EXPECT_EQ(ParseNpy("data.path", "d.safetensors", tensors).status().message(),
            "data.path d.safetensors: at byte 0: expected the .npy magic string \\x93NUMPY; the "
            "file is a safetensors file: data.kind \"safetensors\" reads it");
  EXPECT_EQ(FileSignatureHint(std::string("\xFF\0\0\0\0\0\0\0{\"", 10)), "")
      << "a header longer than the file is no safetensors file's";
  // Text, and IDX's magic, are no such thing.
  for (const std::string& plain :
       {std::string("1,2,0\n"), std::string("\0\0\x08\x01", 4), std::string("\x80\x01"),
        std::string("B"), std::string("BZh9 count,y\n1,0\n"), std::string()}) {
    EXPECT_EQ(FileSignatureHint(plain), "") << plain;
  }
}

TEST(DataFormats, TablesInFormatsThatAreNotReadAreNamedWithHowToConvertThem) {
  CsvConfig config;
  config.path = "t.parquet";
  EXPECT_EQ(ParseCsv(std::string("PAR1\x15\x04\x15", 7), config).status().message(),
            "t.parquet: expected CSV text; the file is a Parquet file, which is not read: write "
            "the table as CSV (pandas.read_parquet(path).to_csv(out, index=False)), or its arrays "
            "with numpy.save");
  for (const auto& [bytes, named] : std::vector<std::pair<std::string, std::string>>{
           {std::string("ARROW1\0\0", 8), "an Arrow IPC (Feather) file"},
           {std::string("\x89HDF\r\n\x1A\n\0", 9), "an HDF5 file"},
           {std::string("\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1", 8), "Excel 97-2003 .xls"},
           {std::string("SQLite format 3\0", 16), "an SQLite database"}}) {
    EXPECT_NE(FileSignatureHint(bytes).find(named), std::string::npos) << named;
    EXPECT_NE(ParseNpy("data.path", "x.npy", bytes).status().message().find(named),
              std::string::npos)
        << named;
  }
  // A CSV whose first field happens to begin so is still CSV.
  EXPECT_EQ(FileSignatureHint("PARIS,1\n"), "");
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

TEST(DataFormats, CsvTakesQuotedFieldsAsSpreadsheetsAndRWriteThem) {
  CsvConfig config;
  config.path = "t.csv";
  config.label_column = "the label";
  // R's write.csv: a quoted header (a name with a comma and a quote too),
  // quoted numbers; a byte order mark before it all.
  const auto table = ParseCsv(
      "\xEF\xBB\xBF\"w\",\"x, \"\"mm\"\"\",\"the label\"\r\n\"1\", 0.5 ,\"1\"\r\n\"2\",-2,0\r\n",
      config);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->rows, 2);
  EXPECT_EQ(table->inputs, (std::vector<float>{1, 0.5, 2, -2}));
  EXPECT_EQ(table->targets, (std::vector<double>{1, 0}));
  // Without a header, a byte order mark leaves the first row a row.
  config.label_column = "";
  const auto marked = ParseCsv(
      "\xEF\xBB\xBF"
      "1,2,0\n3,4,1\n",
      config);
  ASSERT_TRUE(marked.ok()) << marked.status().ToString();
  EXPECT_EQ(marked->rows, 2);
  EXPECT_EQ(ParseCsv("a,b,c\n1,\"2,0\n", config).status().message(),
            "t.csv:2: column 2: a quoted field does not end on its line");
  EXPECT_EQ(ParseCsv("a,b,c\n1,\"2\"x,0\n", config).status().message(),
            "t.csv:2: column 2: text after a quoted field's closing quote");
  EXPECT_EQ(ParseCsv("1,2,0\n1,2,\n", config).status().message(),
            "t.csv:2: column 3 (the label): expected a class index or name, found an empty field")
      << "a trailing comma is an empty last field";
  EXPECT_EQ(ParseCsv("1,2,0\n1,,0\n", config).status().message(),
            "t.csv:2: column 2: expected a number");
}

TEST(DataFormats, CsvRowNamesAreNeitherFeaturesNorColumns) {
  CsvConfig config;
  config.path = "t.csv";
  // pandas' to_csv writes the index under an empty name, R's write.csv its
  // row names under "": names, not always numbers, never data.
  for (const std::string file :
       {",a,b,y\n0,1,2,0\n1,3,4,1\n", "\"\",\"a\",\"b\",\"y\"\n\"r1\",1,2,0\n\"r2\",3,4,1\n"}) {
    for (const char* label : {"y", "2", "-1", ""}) {
      config.label_column = label;
      const auto table = ParseCsv(file, config);
      ASSERT_TRUE(table.ok()) << table.status().ToString();
      EXPECT_EQ(table->features, 2);
      EXPECT_EQ(table->inputs, (std::vector<float>{1, 2, 3, 4}));
      EXPECT_EQ(table->targets, (std::vector<double>{0, 1}));
    }
    // Positions in errors are the file's own, the row names' column too.
    config.label_column = "3";
    EXPECT_EQ(ParseCsv(file, config).status().message(),
              "data.label_column \"3\" is not a column of t.csv (it has 3 columns besides its "
              "row names)");
  }
  config.label_column = "";
  // pandas' header of a frame of numbered columns, with its index.
  const auto numbered = ParseCsv(",0,1,2\n0,0.5,2,a\n1,1.5,3,b\n", config);
  ASSERT_TRUE(numbered.ok()) << numbered.status().ToString();
  EXPECT_EQ(numbered->inputs, (std::vector<float>{0.5, 2, 1.5, 3}));
  EXPECT_EQ(numbered->class_names, (std::vector<std::string>{"a", "b"}));
  // A first sample with a missing value is no header: refused as a sample.
  for (const char* file : {",2,0\n1,2,0\n", "1,,0\n1,2,0\n", ",1,0\n"}) {
    EXPECT_EQ(ParseCsv(file, config).status().message().substr(0, 9), "t.csv:1: ") << file;
  }
  EXPECT_EQ(ParseCsv(",1,0\n", config).status().message(), "t.csv:1: column 1: expected a number");
  EXPECT_EQ(ParseCsv(",a,y\n0,1,0\n1,x,1\n", config).status().message(),
            "t.csv:3: column 2: expected a number");
  config.declared_classes = 2;
  EXPECT_EQ(ParseCsv(",a,y\n0,1,7\n", config).status().message(),
            "t.csv:2: column 3 (the label): expected a class index from 0 to 1 (data.outputs 2)");
  EXPECT_EQ(ParseCsv(",y\n0,1\n", config).status().message(),
            "t.csv: needs at least 2 columns besides the row names (features and a label)");
  // A column of no name anywhere else is refused, not guessed at.
  EXPECT_EQ(ParseCsv("a,,y\n1,2,0\n", config).status().message(),
            "t.csv:1: column 2: expected a column name in the header line");
  EXPECT_EQ(ParseCsv(",a,\"\"\n0,2,0\n", config).status().message(),
            "t.csv:1: column 3: expected a column name in the header line");
}

// pandas names the columns of a frame made from an array 0, 1, 2, ...:
// written without the index that header is all numbers. data.header
// settles a file the line cannot.
TEST(DataFormats, CsvHeaderOfNumberedColumnsAndWhatDataHeaderSettles) {
  CsvConfig config;
  config.path = "t.csv";
  const std::string numbered = "0,1,2\n0.5,2,1\n1.5,3,0\n";
  const auto auto_read = ParseCsv(numbered, config);
  ASSERT_TRUE(auto_read.ok()) << auto_read.status().ToString();
  EXPECT_EQ(auto_read->header_line, 1);
  EXPECT_FALSE(auto_read->row_names);
  EXPECT_EQ(auto_read->inputs, (std::vector<float>{0.5, 2, 1.5, 3}));
  EXPECT_EQ(auto_read->targets, (std::vector<double>{1, 0}));
  // Two columns "0,1" are as likely a sample: read as one.
  const auto pair = ParseCsv("0,1\n2,0\n", config);
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  EXPECT_EQ(pair->header_line, 0);
  EXPECT_EQ(pair->rows, 2);
  // Numbers out of order are a sample, unless the label is named by one
  // that is no column's index.
  EXPECT_EQ(ParseCsv("0,2,1\n0.5,2,1\n", config)->rows, 2);
  config.label_column = "2000";
  const auto years = ParseCsv("1990,2000,2010\n1,2,1\n3,4,0\n", config);
  ASSERT_TRUE(years.ok()) << years.status().ToString();
  EXPECT_EQ(years->header_line, 1);
  EXPECT_EQ(years->targets, (std::vector<double>{2, 4}));
  config.label_column = "";

  config.header = CsvHeader::kNone;
  const auto none = ParseCsv(numbered, config);
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->header_line, 0);
  EXPECT_EQ(none->inputs, (std::vector<float>{0, 1, 0.5, 2, 1.5, 3}));
  EXPECT_EQ(none->targets, (std::vector<double>{2, 1, 0}));
  EXPECT_EQ(ParseCsv("a,b,y\n1,2,0\n", config).status().message(),
            "t.csv:1: column 1: expected a number");
  config.label_column = "y";
  EXPECT_EQ(ParseCsv("1,2,0\n", config).status().message(),
            "data.label_column \"y\" is not a column of t.csv (it has 3 columns and no header "
            "line)");

  config.label_column = "";
  config.header = CsvHeader::kFirstLine;
  // After blank lines, a header of numbers (years, say), and row names.
  const auto first = ParseCsv("\n\n,1990,2000,2010\nr1,1,2,1\nr2,3,4,0\n", config);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->header_line, 3);
  EXPECT_TRUE(first->row_names);
  EXPECT_EQ(first->inputs, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(first->targets, (std::vector<double>{1, 0}));
  // A header's number names its column; one that indexes another is
  // refused.
  config.label_column = "2000";
  const auto year = ParseCsv(",1990,2000,2010\nr1,1,2,1\nr2,3,4,0\n", config);
  ASSERT_TRUE(year.ok()) << year.status().ToString();
  EXPECT_EQ(year->inputs, (std::vector<float>{1, 1, 3, 0}));
  EXPECT_EQ(year->targets, (std::vector<double>{2, 4}));
  config.label_column = "1";
  EXPECT_EQ(ParseCsv("b,a,1\n1,2,0\n", config).status().message(),
            "data.label_column \"1\" names column 3 of t.csv by its header and column 2 by its "
            "0-based index: give the one meant as an index from the end (\"-1\" for column 3, "
            "\"-2\" for column 2)");
  config.label_column = "-2";
  EXPECT_EQ(ParseCsv("b,a,1\n1,2,0\n", config)->targets, (std::vector<double>{2}));
  config.label_column = "";
  EXPECT_EQ(ParseCsv("a,,y\n1,2,0\n", config).status().message(),
            "t.csv:1: column 2: expected a column name in the header line");
  EXPECT_EQ(ParseCsv("a,b,y\n", config).status().message(), "t.csv: no data rows");
}

// Iris as UCI ships it (no header) and as seaborn does (a header): classes
// by name, numbered in the names' byte order whatever the rows' order.
TEST(DataFormats, CsvClassLabelsMayBeNames) {
  CsvConfig config;
  config.path = "t.csv";
  const std::string rows =
      "5.1,3.5,Iris-virginica\n4.9,3.0,Iris-setosa\n6.2,2.9,Iris-versicolor\n"
      "5.0,3.6,Iris-setosa\n";
  for (const std::string& file : {rows, "sepal_length,sepal_width,species\n" + rows}) {
    const auto table = ParseCsv(file, config);
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    EXPECT_EQ(table->rows, 4);
    EXPECT_EQ(table->inputs, (std::vector<float>{5.1f, 3.5f, 4.9f, 3.0f, 6.2f, 2.9f, 5.0f, 3.6f}));
    EXPECT_EQ(table->targets, (std::vector<double>{2, 0, 1, 0}));
    EXPECT_EQ(table->classes, 3);
    EXPECT_EQ(table->class_names,
              (std::vector<std::string>{"Iris-setosa", "Iris-versicolor", "Iris-virginica"}));
  }
  // Named by its header name, the label makes the first line a header even
  // where every other field is a number (pandas' default column names).
  config.label_column = "species";
  const auto numbered = ParseCsv("0,1,species\n1,2,b\n3,4,a\n", config);
  ASSERT_TRUE(numbered.ok()) << numbered.status().ToString();
  EXPECT_EQ(numbered->rows, 2);
  EXPECT_EQ(numbered->targets, (std::vector<double>{1, 0}));
  config.label_column = "";
  // Indices and names in one column are refused: a typo either way.
  EXPECT_EQ(ParseCsv("1,2,0\n1,2,1\n3,4,cat\n", config).status().message(),
            "t.csv:3: column 3 (the label): expected a class index as from line 1 on: the labels "
            "are class indices or class names, not both");
  EXPECT_EQ(ParseCsv("0,1,label\n1,2,0\n", config).status().message(),
            "t.csv:2: column 3 (the label): expected a class name as from line 1 on: the labels "
            "are class indices or class names, not both (if line 1 names the columns, give "
            "data.label_column by its name)");
  config.declared_classes = 2;
  EXPECT_EQ(ParseCsv("1,a\n2,b\n3,a\n4,c\n", config).status().message(),
            "t.csv:4: column 2 (the label): one class name more than data.outputs 2 declares");
  const auto declared = ParseCsv("1,b\n2,b\n", config);
  ASSERT_TRUE(declared.ok()) << declared.status().ToString();
  EXPECT_EQ(declared->classes, 2) << "the declared classes, though one name is seen";
  EXPECT_EQ(declared->targets, (std::vector<double>{0, 0}));
  // A regression's targets are numbers.
  config.declared_classes = 0;
  config.classification = false;
  EXPECT_EQ(ParseCsv("1,2,0.5\n1,2,cat\n", config).status().message(),
            "t.csv:2: column 3: expected a number");
}

// pandas writes bool columns (get_dummies' too) as True/False, R as
// TRUE/FALSE: 1 and 0, as the features and as a class label.
TEST(DataFormats, CsvBooleansAreOneAndZero) {
  CsvConfig config;
  config.path = "t.csv";
  const auto table = ParseCsv(
      "x,red,blue,y\n0.5,True,False,False\n1.5,FALSE,TRUE,True\n2,false,true,True\n", config);
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(table->inputs, (std::vector<float>{0.5f, 1, 0, 1.5f, 0, 1, 2, 0, 1}));
  EXPECT_EQ(table->targets, (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(table->classes, 2);
  const auto headless = ParseCsv("1,True,0\n2,False,1\n", config);
  ASSERT_TRUE(headless.ok()) << headless.status().ToString();
  EXPECT_EQ(headless->rows, 2) << "a line of numbers and booleans is a sample";
  EXPECT_EQ(ParseCsv("x,y\n1,0\nyes,1\n", config).status().message(),
            "t.csv:3: column 1: expected a number")
      << "only the three spellings";
}

TEST(DataFormats, CsvRegressionTakesSeveralTargetColumnsInTheirOrder) {
  CsvConfig config;
  config.path = "t.csv";
  config.classification = false;
  // By name and by index (from the end too): the targets in the order given,
  // the features in the file's.
  for (const std::vector<std::string>& columns :
       std::vector<std::vector<std::string>>{{"y2", "y1"}, {"3", "1"}, {"-1", "y1"}}) {
    config.label_columns = columns;
    const auto table = ParseCsv("a,y1,b,y2\n1,10,2,20\n3,30,4,40\n5,50,6,60\n", config);
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    EXPECT_EQ(table->rows, 3);
    EXPECT_EQ(table->features, 2);
    EXPECT_EQ(table->targets_per_row, 2);
    EXPECT_EQ(table->inputs, (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(table->targets, (std::vector<double>{20, 10, 40, 30, 60, 50}));
  }
  const auto error = [&](std::vector<std::string> columns) {
    config.label_columns = std::move(columns);
    return std::string(ParseCsv(",a,y1,y2\n0,1,2,3\n", config).status().message());
  };
  EXPECT_EQ(error({"y1", "1"}),
            "data.label_columns[1] \"1\" names column 3 of t.csv, as data.label_columns[0] "
            "\"y1\" does")
      << "indices count the columns after the row names; errors, the file's";
  EXPECT_EQ(error({"y1", "z"}),
            "data.label_columns[1] \"z\" is not a column of t.csv (it has 3 columns besides its "
            "row names)");
  EXPECT_EQ(error({"y1", "1.5"}),
            "data.label_columns[1] \"1.5\" is not a column of t.csv (it has 3 columns besides "
            "its row names)")
      << "an index is a whole number";
  EXPECT_EQ(error({"y1", "y2", "a"}),
            "t.csv: each of its 3 columns is a label column; at least one must be a feature");
  config.label_column = "y1";
  EXPECT_EQ(error({"y2"}),
            "give data.label_column (one label) or data.label_columns (several targets), not "
            "both");
  config.label_column = "";
  config.classification = true;
  EXPECT_EQ(error({"y1", "y2"}),
            "data.label_columns names 2 columns: several label columns are regression targets");
}

TEST(DataFormats, CsvLinesEndAtLfCrlfOrALoneCr) {
  CsvConfig config;
  config.path = "t.csv";
  for (const std::string eol : {"\n", "\r\n", "\r"}) {
    const auto table = ParseCsv("a,b,y" + eol + "1,2,0" + eol + eol + "3,4,1" + eol, config);
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    EXPECT_EQ(table->rows, 2);
    EXPECT_EQ(table->inputs, (std::vector<float>{1, 2, 3, 4}));
    EXPECT_EQ(table->targets, (std::vector<double>{0, 1}));
    // Lines are counted at each line end, the blank one too.
    EXPECT_EQ(ParseCsv("a,b,y" + eol + "1,2,0" + eol + eol + "3,x,1", config).status().message(),
              "t.csv:4: column 2: expected a number");
  }
}

TEST(DataFormats, CsvFieldsAreSeparatedByTheFirstLinesCommasTabsOrSemicolons) {
  CsvConfig config;
  config.path = "t.csv";
  config.label_column = "y";
  for (const std::string separator : {",", "\t", ";"}) {
    const std::string s = separator;
    // Spaces around fields, and a quoted name holding the other separators.
    const auto table = ParseCsv("\"a, b\t;\"" + s + " b " + s + "y\n1" + s + "2.5 " + s + "0\n" +
                                    "-3" + s + "\"4\"" + s + "1\n",
                                config);
    ASSERT_TRUE(table.ok()) << table.status().ToString();
    EXPECT_EQ(table->inputs, (std::vector<float>{1, 2.5, -3, 4}));
    EXPECT_EQ(table->targets, (std::vector<double>{0, 1}));
  }
  // A tab-separated file's commas are no separators: a decimal comma is no
  // number.
  EXPECT_EQ(ParseCsv("a\tb\ty\n1,5\t2\t0\n", config).status().message(),
            "t.csv:2: column 1: expected a number");
  EXPECT_EQ(ParseCsv("a;b;y\n1;2;0\n1;2\n", config).status().message(),
            "t.csv:3: expected 3 semicolon-separated columns, found 2");
  // Only spaces and tabs are blanks around a field, never a NUL byte.
  config.label_column = "";
  const std::string nul_first(
      "1,2,0\n\x00"
      "1,2,0\n",
      13);
  EXPECT_EQ(ParseCsv(nul_first, config).status().message(), "t.csv:2: column 1: expected a number");
  // With a comma on the first line, the file is comma-separated.
  EXPECT_EQ(ParseCsv("1,2,0\n1,2;3,1\n", config).status().message(),
            "t.csv:2: column 2: expected a number");
}

TEST(DataFormats, TokensNeedAPositiveSequenceLength) {
  TokenConfig config;
  config.path = "t.bin";
  config.sequence_length = 0;
  EXPECT_EQ(TokenSamples::Index("abc", config).status().message(),
            "data.sequence_length 0 must be positive");
  config.sequence_length = 2;
  config.blocks = true;
  const auto samples = TokenSamples::Index("abcde", config);
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), 2);  // "abc", "cde"
  EXPECT_EQ((*samples)[1].begin, 2);
  EXPECT_EQ((*samples)[1].length, 3);
}

// What the samples were when the reader copied them: documents split at
// every separator, each cut into pieces of up to length + 1 tokens that
// overlap by one, and pieces of fewer than 2 tokens dropped.
std::vector<std::vector<int64_t>> CopiedSamples(const std::string& bytes,
                                                const TokenConfig& config) {
  std::vector<int64_t> tokens;
  for (size_t i = 0; i < bytes.size() / static_cast<size_t>(config.width); ++i) {
    tokens.push_back(TokenAt(bytes, config.width, static_cast<int64_t>(i)));
  }
  std::vector<std::vector<int64_t>> documents(1);
  for (int64_t t : tokens) {
    if (!config.blocks && t == config.separator) {
      documents.emplace_back();
    } else {
      documents.back().push_back(t);
    }
  }
  std::vector<std::vector<int64_t>> samples;
  const auto length = static_cast<size_t>(config.sequence_length);
  for (const auto& d : documents) {
    for (size_t s = 0; s + 1 < d.size(); s += length) {
      samples.emplace_back(
          d.begin() + static_cast<std::ptrdiff_t>(s),
          d.begin() + static_cast<std::ptrdiff_t>(std::min(d.size(), s + length + 1)));
    }
  }
  return samples;
}

TEST(DataFormats, ATokenFileTooShortForOneSampleSaysHowManyTokensItHolds) {
  TokenConfig config;
  config.path = "t.bin";
  config.blocks = true;
  config.sequence_length = 8;
  EXPECT_EQ(TokenSamples::Index(std::string(1, '\1'), config).status().message(),
            "data.path t.bin: 1 token holds no block of at least 2 tokens");
  config.blocks = false;
  EXPECT_EQ(TokenSamples::Index("", config).status().message(),
            "data.path t.bin: 0 tokens hold no document of at least 2 tokens");
}

TEST(DataFormats, TokenSpansHoldWhatTheCopiedSamplesHeld) {
  std::mt19937 random(7);
  for (int trial = 0; trial < 300; ++trial) {
    TokenConfig config;
    config.path = "t.bin";
    config.width = 1 << trial % 3;
    config.blocks = trial % 3 == 0;
    config.separator = trial % 5;
    config.sequence_length = 1 + trial % 7;
    // Small ids, so that separators are common and documents short.
    std::string bytes(random() % 64 * static_cast<size_t>(config.width), '\0');
    for (char& b : bytes) b = static_cast<char>(random() % 6);
    SCOPED_TRACE("trial " + std::to_string(trial));
    const std::vector<std::vector<int64_t>> expected = CopiedSamples(bytes, config);
    const auto samples = TokenSamples::Index(bytes, config);
    if (expected.empty()) {
      EXPECT_NE(
          samples.status().message().find(std::string(config.blocks ? "no block" : "no document") +
                                          " of at least 2 tokens"),
          std::string::npos);
      continue;
    }
    ASSERT_TRUE(samples.ok()) << samples.status().ToString();
    ASSERT_EQ(samples->size(), static_cast<int64_t>(expected.size()));
    for (int64_t i = 0; i < samples->size(); ++i) {
      std::vector<int64_t> got;
      const TokenSpan span = (*samples)[i];
      for (int64_t t = 0; t < span.length; ++t) {
        got.push_back(TokenAt(bytes, config.width, span.begin + t));
      }
      EXPECT_EQ(got, expected[static_cast<size_t>(i)]) << "sample " << i;
    }
  }
}

TEST(DataFormats, TokensAreLittleEndian) {
  EXPECT_EQ(TokenAt(std::string("\x01\x02\xff\xff", 4), 2, 0), 0x0201);
  EXPECT_EQ(TokenAt(std::string("\x01\x02\xff\xff", 4), 2, 1), 0xffff);
  EXPECT_EQ(TokenAt(std::string("\xfe", 1), 1, 0), 0xfe);
  EXPECT_EQ(TokenAt(std::string("\0\0\0\0\x01\x02\x03\x04", 8), 4, 1), 0x04030201);
}

TEST(DataFormats, Uint32TokenFilesAreWholeIdsNoLargerThanAVocabularyHolds) {
  TokenConfig config;
  config.path = "t.bin";
  config.width = 4;
  EXPECT_EQ(TokenSamples::Index(std::string(10, '\1'), config).status().message(),
            "data.path t.bin: 10 bytes is not a whole number of uint32 tokens (at byte 8)");
  // Ids 5, 128255 (Llama 3's largest), 0.
  const std::string ids("\x05\0\0\0\xFF\xF4\x01\0\0\0\0\0", 12);
  EXPECT_EQ(*LargestTokenId(ids, config), 128255);
  EXPECT_EQ(*LargestTokenId("", config), -1);
  EXPECT_EQ(LargestTokenId(ids + std::string("\xFF\xFF\xFF\x00", 4), config).status().message(),
            "data.path t.bin: at byte 12: expected a token id of at most 16777214 (the "
            "vocabulary is the largest id + 1)");
}

TEST(MappedFile, ReadsTheFileAndNamesTheFieldWhenItCannot) {
  const accumulus::testing::TempDir temp;
  const std::string path = temp.path() + "/corpus.bin";
  std::ofstream(path, std::ios::binary) << std::string("ab\0cd", 5);
  const auto file = MappedFile::Open("data.path", path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->bytes(), std::string_view("ab\0cd", 5));

  std::ofstream(temp.path() + "/empty.bin", std::ios::binary);
  const auto empty = MappedFile::Open("data.path", temp.path() + "/empty.bin");
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE((*empty)->bytes().empty());

  EXPECT_EQ(MappedFile::Open("data.path", "").status().message(), "data.path is required");
  const Status missing = MappedFile::Open("data.path", temp.path() + "/none.bin").status();
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.message(),
            "data.path " + temp.path() + "/none.bin: cannot open (No such file or directory)");
  EXPECT_EQ(MappedFile::Open("data.path", temp.path()).status().message(),
            "data.path " + temp.path() + ": not a regular file");
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
