// The safetensors reader on its own (the crosscheck reads files the
// safetensors package wrote): every dtype of numbers, BF16 included; a
// tensor chosen by name, or the file's one; headers that are damaged, lie
// about their ranges or hold what no array is, refused at their byte.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "common/data/safetensors_file.h"
#include "tests/support/safetensors_bytes.h"

namespace accumulus::data {
namespace {

using testing::Safetensors;

std::string Floats(std::initializer_list<float> values) {
  std::string bytes;
  for (float v : values) bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
  return bytes;
}

TEST(Safetensors, TensorsAreReadInPlaceByName) {
  const std::string file = Safetensors(
      R"({"__metadata__": {"format": "np"}, "x": {"dtype": "F32", "shape": [2, 2], )"
      R"("data_offsets": [0, 16]}, "y": {"dtype": "I64", "shape": [2], "data_offsets": [16, 32]}})",
      Floats({1.5f, -2, 0.25f, 8}) + std::string("\x01\0\0\0\0\0\0\0\x02\0\0\0\0\0\0\0", 16));
  const auto parsed = SafetensorsFile::Parse("data.path", "d.safetensors", file);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->tensors().size(), 2u);
  const auto x = parsed->Array("data.array", "x");
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  EXPECT_EQ(x->type, ElementType::kFloat32);
  EXPECT_EQ(x->dims, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ((*x)[0], 1.5);
  EXPECT_EQ((*x)[3], 8);
  EXPECT_EQ(x->data, reinterpret_cast<const uint8_t*>(file.data()) + x->data_offset);
  const auto y = parsed->Array("data.labels_array", "y");
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ((*y)[1], 2);

  EXPECT_EQ(parsed->Array("data.array", "").status().message(),
            "data.array is required: data.path d.safetensors holds 2 tensors (x (float32 (2, "
            "2)), y (int64 (2,))): name the one to read");
  EXPECT_EQ(parsed->Array("data.array", "z").status().message(),
            "data.array \"z\" is not in data.path d.safetensors, which holds 2 tensors (x "
            "(float32 (2, 2)), y (int64 (2,)))");
}

TEST(Safetensors, EveryDtypeOfNumbersAndBf16) {
  struct Case {
    const char* dtype;
    std::string bytes;  // one element
    double value;
  };
  for (const Case& c :
       {Case{"BOOL", "\x01", 1}, Case{"U8", "\xFF", 255}, Case{"I8", "\xFF", -1},
        Case{"U16", std::string("\x01\x80", 2), 32769},
        Case{"I16", std::string("\x00\x80", 2), -32768}, Case{"F16", std::string("\x00\x3C", 2), 1},
        Case{"BF16", std::string("\xC0\x3F", 2), 1.5},
        Case{"U32", std::string("\x00\x00\x00\x80", 4), 2147483648.0},
        Case{"I32", std::string("\xFE\xFF\xFF\xFF", 4), -2}, Case{"F32", Floats({-0.5f}), -0.5},
        Case{"U64", std::string("\x05\0\0\0\0\0\0\0", 8), 5},
        Case{"I64", std::string("\xFD\xFF\xFF\xFF\xFF\xFF\xFF\xFF", 8), -3},
        Case{"F64", std::string("\0\0\0\0\0\0\xF8\x3F", 8), 1.5}}) {
    const std::string file = Safetensors(std::string(R"({"t": {"dtype": ")") + c.dtype +
                                             R"(", "shape": [1], "data_offsets": [0, )" +
                                             std::to_string(c.bytes.size()) + "]}}",
                                         c.bytes);
    const auto parsed = SafetensorsFile::Parse("data.path", "t.safetensors", file);
    ASSERT_TRUE(parsed.ok()) << c.dtype << ": " << parsed.status().ToString();
    const auto array = parsed->Array("data.array", "");  // the file's one tensor
    ASSERT_TRUE(array.ok()) << c.dtype << ": " << array.status().ToString();
    EXPECT_EQ((*array)[0], c.value) << c.dtype;
  }
}

TEST(Safetensors, NamesWithEscapesAreTheirCharacters) {
  const std::string file = Safetensors(
      R"({"caf\u00e9 \"x\"\n\ud83d\ude00": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})",
      "a");
  const auto parsed = SafetensorsFile::Parse("data.path", "t.safetensors", file);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->tensors()[0].name, "caf\xC3\xA9 \"x\"\n\xF0\x9F\x98\x80");
}

TEST(Safetensors, DamagedHeadersAreRefusedAtTheirByte) {
  struct Case {
    std::string header;
    std::string data;
    std::string message;  // after "data.path t.safetensors: "
  };
  const std::string entry = R"("t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]})";
  for (const Case& c : {
           Case{"{" + entry, Floats({1, 2}), "at byte 68: expected ',' or '}' in the header"},
           Case{R"({"t": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}})", "ab",
                "at byte 24: expected a dtype of numbers: BOOL, U8, I8, U16, I16, U32, I32, U64, "
                "I64, F16, BF16, F32 or F64; found \"F8_E4M3\""},
           Case{R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 16]}})", Floats({1, 2}),
                "at byte 61: expected a byte range within the 8 bytes of data after the header"},
           Case{R"({"t": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}})", Floats({1, 2}),
                "at byte 40: expected a list of whole numbers for \"shape\""},
           Case{R"({"t": {"dtype": "F32", "data_offsets": [0, 8]}})", Floats({1, 2}),
                "at byte 14: expected the key \"shape\" in t's entry"},
           Case{"{" + entry + ", " + entry + "}", Floats({1, 2}),
                "at byte 70: expected each tensor once; t is there twice"},
           Case{"{" + entry + "} trailing", Floats({1, 2}),
                "at byte 70: expected only spaces after the header's object"},
       }) {
    const auto parsed =
        SafetensorsFile::Parse("data.path", "t.safetensors", Safetensors(c.header, c.data));
    ASSERT_FALSE(parsed.ok()) << c.header;
    EXPECT_EQ(parsed.status().message(), "data.path t.safetensors: " + c.message) << c.header;
  }
  // A range whose length is not the shape's, and a NaN: the tensor's. (The
  // files outlive their parses, whose arrays point into them.)
  const std::string short_file = Safetensors(
      R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", Floats({1, 2}));
  const auto short_range = SafetensorsFile::Parse("data.path", "t.safetensors", short_file);
  ASSERT_TRUE(short_range.ok());
  EXPECT_EQ(short_range->Array("data.array", "t").status().message(),
            "data.path t.safetensors[t]: at byte 69: expected 12 data bytes for dimensions of the "
            "header, found 8");
  const std::string nan_file =
      Safetensors(R"({"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})",
                  Floats({1, std::nanf("")}));
  const auto nan = SafetensorsFile::Parse("data.path", "t.safetensors", nan_file);
  ASSERT_TRUE(nan.ok());
  EXPECT_NE(nan->Array("data.array", "t").status().message().find("finite"), std::string::npos);
}

TEST(Safetensors, OtherFilesAreNamedAsSuch) {
  EXPECT_EQ(SafetensorsFile::Parse("data.path", "x.npy", std::string("\x93NUMPY\x01\x00v\x00", 10))
                .status()
                .message(),
            "data.path x.npy: at byte 0: expected a safetensors file: an 8-byte header length, "
            "then that many bytes of JSON beginning with '{'; the file is a NumPy .npy file: "
            "data.kind \"npy\" reads it");
  EXPECT_EQ(SafetensorsFile::Parse("data.path", "x", "abc").status().message(),
            "data.path x: at byte 0: expected an 8-byte header length (a safetensors file)");
  // A header of no bytes (found by fuzz_safetensors: its first byte was
  // read past the file).
  EXPECT_EQ(SafetensorsFile::Parse("data.path", "x", std::string(8, '\0')).status().message(),
            "data.path x: at byte 0: expected a safetensors file: an 8-byte header length, then "
            "that many bytes of JSON beginning with '{'");
  // A length past the file's end: no allocation on its word.
  EXPECT_FALSE(
      SafetensorsFile::Parse("data.path", "x", std::string("\xFF\xFF\xFF\xFF\0\0\0\0{}", 10)).ok());
}

}  // namespace
}  // namespace accumulus::data
