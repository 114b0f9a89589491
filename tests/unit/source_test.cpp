#include "compiler/source/source.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace jr2 {
namespace {

TEST(SourceFile, LineAndColumnCountCodePoints) {
  SourceManager sm;
  // `é` is two bytes; the column after it counts one.
  const SourceFile* f = sm.add("a.jr2", "", "ab\ncé d\n");
  EXPECT_EQ(f->lineCol(0).line, 1u);
  EXPECT_EQ(f->lineCol(0).column, 1u);
  EXPECT_EQ(f->lineCol(3).line, 2u);
  EXPECT_EQ(f->lineCol(3).column, 1u);
  // byte 6 is the space after `é` (c=3, é=4..5), column 3
  EXPECT_EQ(f->lineCol(6).column, 3u);
  EXPECT_EQ(f->lineText(2), "cé d");
  EXPECT_EQ(f->lineCount(), 3u);
}

TEST(SourceFile, MapsAntlrCodePointIndexToBytes) {
  SourceManager sm;
  const SourceFile* ascii = sm.add("a.jr2", "", "abc");
  EXPECT_EQ(ascii->byteOffsetOfCodePoint(2), 2u);
  const SourceFile* f = sm.add("b.jr2", "", "é€x");  // 2 + 3 + 1 bytes
  EXPECT_EQ(f->byteOffsetOfCodePoint(0), 0u);
  EXPECT_EQ(f->byteOffsetOfCodePoint(1), 2u);
  EXPECT_EQ(f->byteOffsetOfCodePoint(2), 5u);
  EXPECT_EQ(f->byteOffsetOfCodePoint(3), 6u);
  EXPECT_EQ(f->byteOffsetOfCodePoint(99), 6u);
}

// The index is sparse (a step every 64 code points): every index, across steps and at the ends,
// must give the byte offset a table of every code point gave, with and without a byte order mark.
TEST(SourceFile, MapsEveryCodePointIndexOfALongMixedText) {
  const char* pieces[] = {"a", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\n", " "};
  for (const std::string& prefix : {std::string(), std::string("\xEF\xBB\xBF")}) {
    std::string text = prefix;
    std::vector<uint32_t> starts;  // byte offset of each code point, the brute-force answer
    uint32_t seed = 7;
    for (int i = 0; i < 1000; ++i) {
      seed = seed * 1103515245u + 12345u;
      starts.push_back(static_cast<uint32_t>(text.size()));
      text += pieces[(seed >> 16) % 6];
    }
    SourceManager sm;
    const SourceFile* f = sm.add("m.jr2", "", text);
    for (size_t i = 0; i < starts.size(); ++i) {
      ASSERT_EQ(f->byteOffsetOfCodePoint(i), starts[i]) << "code point " << i;
    }
    for (size_t i = starts.size(); i < starts.size() + 130; ++i) {
      ASSERT_EQ(f->byteOffsetOfCodePoint(i), text.size()) << "past the end, " << i;
    }
  }
}

// A leading byte order mark (as some editors save) is not text: line 1 starts after it, and code
// points are counted from there, as the lexer counts them. Counted, it put every diagnostic of
// such a file one column left of its token.
TEST(SourceFile, ALeadingByteOrderMarkIsNotAColumnOrACodePoint) {
  SourceManager sm;
  const std::string bom = "\xEF\xBB\xBF";
  const SourceFile* ascii = sm.add("a.jr2", "", bom + "ab\ncd");
  EXPECT_EQ(ascii->byteOffsetOfCodePoint(0), 3u);  // `a`
  EXPECT_EQ(ascii->byteOffsetOfCodePoint(3), 6u);  // `c`
  EXPECT_EQ(ascii->lineCol(3).column, 1u);
  EXPECT_EQ(ascii->lineCol(4).column, 2u);
  EXPECT_EQ(ascii->lineCol(0).column, 1u) << "an offset inside the mark is the first column";
  EXPECT_EQ(ascii->lineCol(6).line, 2u);
  EXPECT_EQ(ascii->lineCol(6).column, 1u);
  EXPECT_EQ(ascii->lineText(1), "ab");
  const SourceFile* wide = sm.add("b.jr2", "", bom + "é\nx");
  EXPECT_EQ(wide->byteOffsetOfCodePoint(0), 3u);
  EXPECT_EQ(wide->byteOffsetOfCodePoint(2), 6u);  // `x`, after `é` and the newline
  EXPECT_EQ(wide->lineCol(6).line, 2u);
  const SourceFile* only = sm.add("c.jr2", "", bom);
  EXPECT_EQ(only->lineCol(0).column, 1u);
  EXPECT_EQ(only->lineText(1), "");
  // A mark anywhere else is text (the lexer's BAD_CHAR).
  const SourceFile* later = sm.add("d.jr2", "", "a" + bom + "b");
  EXPECT_EQ(later->byteOffsetOfCodePoint(2), 4u);
}

TEST(Utf8, FindsTheFirstBadByte) {
  std::string why;
  EXPECT_FALSE(FindInvalidUtf8("plain é € 😀", &why).has_value());
  auto bad = FindInvalidUtf8(std::string("ab\xff"), &why);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(*bad, 2u);
  EXPECT_NE(why.find("0xff"), std::string::npos);
  bad = FindInvalidUtf8(std::string("a\0b", 3), &why);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(*bad, 1u);
  EXPECT_NE(why.find("NUL"), std::string::npos);
  EXPECT_TRUE(FindInvalidUtf8("\xc0\xaf", &why).has_value());      // overlong `/`
  EXPECT_TRUE(FindInvalidUtf8("\xed\xa0\x80", &why).has_value());  // a surrogate
  EXPECT_TRUE(FindInvalidUtf8("\xe2\x82", &why).has_value());      // cut off
}

TEST(SourceManager, RefusesMissingDirectoryAndHugeFiles) {
  SourceManager sm;
  LoadError error{};
  EXPECT_EQ(sm.load("/nonexistent/x.jr2", "x.jr2", &error), nullptr);
  EXPECT_EQ(error, LoadError::kNotFound);
  EXPECT_EQ(sm.load("/tmp", "tmp", &error), nullptr);
  EXPECT_EQ(error, LoadError::kIsDirectory);
}

}  // namespace
}  // namespace jr2
