// `jr2c lsp` transcripts (after Carbon's language-server tests): each golden/lsp/*.lsp file holds
// the files of a workspace, the messages a client sends, and the messages the server answers.
// The server runs in-process on the messages, with the files written to a temporary folder.
//
//   // What the case is about (comment lines before the first section).
//   // --- FILE types.jr2          a file of the workspace (as many as wanted)
//   …
//   // --- IN                     one JSON message a line (`jsonrpc` is added); in them:
//                                 ${ROOT}            the workspace's `file://` URI
//                                 ${TEXT:main.jr2}   a file's text, escaped for a JSON string
//                                 "${AT:main.jr2:on types.ap|prove}"
//                                                    the position in main.jr2 of the `|` in the
//                                                    first place that text is (no `|`: its start;
//                                                    `\n` is a line break)
//   // --- OUT                    what the server wrote, a message at a time, indented
//
// JR2_AUTOUPDATE=1 rewrites every case's OUT section from what the server writes now. Review the
// diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/lsp/server.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

constexpr const char* kFile = "// --- FILE ";
constexpr const char* kIn = "// --- IN";
constexpr const char* kOut = "// --- OUT";

struct Case {
  fs::path path;
  std::string head;  // everything before `// --- OUT`
  std::vector<std::pair<std::string, std::string>> files;
  std::vector<std::string> in;
  std::string out;
};

Case ReadCase(const fs::path& path) {
  Case c;
  c.path = path;
  std::ifstream f(path, std::ios::binary);
  std::string line;
  enum { kHeader, kInFile, kInMessages, kInOut } where = kHeader;
  while (std::getline(f, line)) {
    if (where != kInOut) c.head += line + "\n";
    if (line.rfind(kFile, 0) == 0) {
      c.files.emplace_back(line.substr(std::string(kFile).size()), "");
      where = kInFile;
    } else if (line == kIn) {
      where = kInMessages;
    } else if (line == kOut) {
      c.head.resize(c.head.size() - line.size() - 1);
      where = kInOut;
    } else if (where == kInFile) {
      c.files.back().second += line + "\n";
    } else if (where == kInMessages) {
      if (!line.empty() && line.rfind("//", 0) != 0) c.in.push_back(line);
    } else if (where == kInOut) {
      c.out += line + "\n";
    }
  }
  return c;
}

std::string Escaped(const std::string& text) {
  const std::string quoted = Json(text).dump();
  return quoted.substr(1, quoted.size() - 2);
}

void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

// The protocol position (UTF-16) of byte `offset` of `text`.
Json PositionOf(const std::string& text, size_t offset) {
  size_t line = 0, units = 0;
  for (size_t i = 0; i < offset;) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      units = 0;
      ++i;
      continue;
    }
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
    units += len == 4 ? 2 : 1;
    i += len;
  }
  return {{"line", line}, {"character", units}};
}

// A message laid out for reading: a value whose one-line form fits in 80 columns (where it
// stands) on one line, a larger one spread over lines, indented by two.
void Pretty(const Json& j, size_t indent, size_t column, std::string* out) {
  const std::string flat = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (flat.size() + column <= 100 || !(j.is_object() || j.is_array()) || j.empty()) {
    *out += flat;
    return;
  }
  const std::string pad(indent + 2, ' ');
  *out += j.is_object() ? "{\n" : "[\n";
  size_t i = 0;
  for (auto it = j.begin(); it != j.end(); ++it, ++i) {
    *out += pad;
    size_t col = pad.size();
    if (j.is_object()) {
      const std::string key = Json(it.key()).dump() + ": ";
      *out += key;
      col += key.size();
    }
    Pretty(*it, indent + 2, col, out);
    *out += i + 1 < j.size() ? ",\n" : "\n";
  }
  *out += std::string(indent, ' ') + (j.is_object() ? "}" : "]");
}

std::string Transcript(const Case& c, std::string* failure) {
  std::string dirTemplate = (fs::temp_directory_path() / "jr2-lsp-XXXXXX").string();
  const char* made = mkdtemp(dirTemplate.data());
  if (made == nullptr) {
    *failure = "cannot make a temporary folder";
    return "";
  }
  const std::string root = fs::canonical(made).string();
  std::map<std::string, std::string> texts;
  for (const auto& [name, text] : c.files) {
    fs::create_directories((fs::path(root) / name).parent_path());
    std::ofstream(fs::path(root) / name, std::ios::binary) << text;
    texts[name] = text;
  }
  const std::string rootUri = "file://" + root;
  static const std::regex kAt(R"re("\$\{AT:([^:]+):(.*?)\}")re");
  std::string framed;
  for (std::string line : c.in) {
    std::smatch m;
    while (std::regex_search(line, m, kAt)) {
      const std::string file = m[1].str();
      std::string mark = m[2].str();
      const size_t bar = mark.find('|');
      const size_t shift = bar == std::string::npos ? 0 : bar;
      if (bar != std::string::npos) mark.erase(bar, 1);
      ReplaceAll(mark, "\\n", "\n");  // a line break in the text, written `\n`
      const size_t at = texts[file].find(mark);
      if (at == std::string::npos) {
        *failure = "`" + mark + "` is not in ";
        *failure += file;
        return "";
      }
      line.replace(static_cast<size_t>(m.position(0)), static_cast<size_t>(m.length(0)),
                   PositionOf(texts[file], at + shift).dump());
    }
    for (const auto& [name, text] : texts) ReplaceAll(line, "${TEXT:" + name + "}", Escaped(text));
    ReplaceAll(line, "${ROOT}", rootUri);
    Json msg = Json::parse(line, nullptr, false);
    if (msg.is_discarded() || !msg.is_object()) {
      framed += jr2::lsp::Frame(line);  // a broken message, on purpose
      continue;
    }
    Json withVersion = {{"jsonrpc", "2.0"}};
    withVersion.update(msg);
    framed += jr2::lsp::Frame(withVersion.dump());
  }
  auto channel = jr2::lsp::TextChannel(framed);
  std::ostringstream out, log;
  const int code = jr2::lsp::Serve(*channel, out, log, {"test", root + "/.cache"});
  // The answers, a message at a time.
  std::string written = out.str(), shown;
  while (!written.empty()) {
    const size_t headerEnd = written.find("\r\n\r\n");
    if (headerEnd == std::string::npos) break;
    const size_t length = std::stoul(written.substr(written.find(':') + 1));
    Pretty(Json::parse(written.substr(headerEnd + 4, length)), 0, 0, &shown);
    shown += "\n";
    written.erase(0, headerEnd + 4 + length);
  }
  std::istringstream logLines(log.str());
  for (std::string l; std::getline(logLines, l);) shown += "log: " + l + "\n";
  shown += "exit: " + std::to_string(code) + "\n";
  ReplaceAll(shown, rootUri, "${ROOT}");
  ReplaceAll(shown, root, "${ROOTPATH}");
  fs::remove_all(root);
  return shown;
}

std::vector<fs::path> CasePaths() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(JR2_LSP_DIR)) {
    if (e.path().extension() == ".lsp") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

class LspTranscript : public testing::TestWithParam<fs::path> {};

TEST_P(LspTranscript, MatchesExpectations) {
  const Case c = ReadCase(GetParam());
  ASSERT_FALSE(c.in.empty()) << GetParam() << " has no `// --- IN` messages";
  std::string failure;
  const std::string got = Transcript(c, &failure);
  ASSERT_TRUE(failure.empty()) << GetParam() << ": " << failure;
  const char* update = std::getenv("JR2_AUTOUPDATE");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(c.path, std::ios::binary | std::ios::trunc) << c.head << kOut << "\n" << got;
    return;
  }
  EXPECT_EQ(got, c.out) << GetParam()
                        << ": the answers differ (run with JR2_AUTOUPDATE=1 to accept them)";
}

std::string CaseName(const testing::TestParamInfo<fs::path>& info) {
  std::string name = info.param.stem().string();
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Lsp, LspTranscript, testing::ValuesIn(CasePaths()), CaseName);

}  // namespace
