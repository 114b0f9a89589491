// The texts the tests that hold a hand-written part against ANTLR read (lexer_test.cpp,
// parse_tree_test.cpp): every `.jr2` of the project and the fuzz corpora, and seeded mutations
// of them. Decided once here, so both tests read the same files the same way.
#ifndef JR2_TESTS_UNIT_PROJECT_FILES_H_
#define JR2_TESTS_UNIT_PROJECT_FILES_H_

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "compiler/source/source.h"

namespace jr2::testing {

// The `.jr2` files (and the files of every `corpus` folder) under `dirs` of the source tree that
// are UTF-8 (the others are refused before the lexer runs). `deepest` > 0 leaves out a text
// nested deeper in brackets than that: ANTLR's parser recurses once a bracket, and a fuzz file
// thousands deep would need the big stack `jr2c` parses on (compiler/syntax/parse.cpp).
inline std::vector<std::string> ProjectFiles(std::initializer_list<const char*> dirs,
                                             int deepest = 0) {
  namespace fs = std::filesystem;
  std::vector<std::string> texts;
  for (const char* dir : dirs) {
    const fs::path root = fs::path(JR2_SOURCE_DIR) / dir;
    if (!fs::exists(root)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (!e.is_regular_file()) continue;
      if (e.path().extension() != ".jr2" && e.path().parent_path().filename() != "corpus") continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      std::string why;
      if (jr2::FindInvalidUtf8(text, &why)) continue;
      if (deepest > 0) {
        int depth = 0;
        int most = 0;
        for (char ch : text) {
          depth += (ch == '(' || ch == '[' || ch == '{')   ? 1
                   : (ch == ')' || ch == ']' || ch == '}') ? -1
                                                           : 0;
          most = std::max(most, depth);
        }
        if (most > deepest) continue;
      }
      texts.push_back(std::move(text));
    }
  }
  return texts;
}

// A seeded mutation of one of `texts`: 1 to `maxEdits` edits, each at a character boundary
// (the texts stay UTF-8), each one of: `pieces[k]` put in; 1 to `maxCut` characters taken out;
// and, when `twice`, `pieces[k]` put in twice.
struct Mutation {
  std::vector<std::string> pieces;
  int maxEdits = 3;
  size_t maxCut = 6;
  bool twice = false;

  std::string operator()(const std::vector<std::string>& texts, std::mt19937& rng) const {
    std::string text = texts[rng() % texts.size()];
    for (int edits = 1 + static_cast<int>(rng() % static_cast<unsigned>(maxEdits)); edits > 0;
         --edits) {
      size_t at = text.empty() ? 0 : rng() % text.size();
      while (at > 0 && at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80)
        --at;
      const std::string& piece = pieces[rng() % pieces.size()];
      switch (rng() % (twice ? 3 : 2)) {
        case 0:
          text.insert(at, piece);
          break;
        case 1: {
          size_t end = std::min(text.size(), at + 1 + rng() % maxCut);
          while (end < text.size() && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) ++end;
          text.erase(at, end - at);
          break;
        }
        default:
          text.insert(at, piece + piece);
          break;
      }
    }
    return text;
  }
};

}  // namespace jr2::testing

#endif  // JR2_TESTS_UNIT_PROJECT_FILES_H_
