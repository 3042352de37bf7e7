// UTF-8 both ways: each code point AppendUtf8 writes, at every length's
// bounds, DecodeUtf8 reads back as that code point and length.
#include "common/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace accumulus {
namespace {

TEST(Utf8, EveryLengthsBoundsRoundTrip) {
  struct Case {
    uint32_t code_point;
    size_t length;
  };
  for (const Case& c :
       {Case{0x00, 1}, Case{0x7F, 1}, Case{0x80, 2}, Case{0x7FF, 2}, Case{0x800, 3},
        Case{0xD7FF, 3}, Case{0xE000, 3}, Case{0xFFFF, 3}, Case{0x10000, 4}, Case{0x10FFFF, 4}}) {
    std::string text;
    AppendUtf8(c.code_point, &text);
    ASSERT_EQ(text.size(), c.length) << c.code_point;
    uint32_t decoded = 0;
    EXPECT_EQ(DecodeUtf8(text, 0, &decoded), c.length) << c.code_point;
    EXPECT_EQ(decoded, c.code_point);
  }
  std::string euro;
  AppendUtf8(0x20AC, &euro);
  EXPECT_EQ(euro, "\xE2\x82\xAC");
}

}  // namespace
}  // namespace accumulus
