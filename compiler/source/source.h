// Source files and positions. Every later phase names code by a SourceRange (a file id and two
// byte offsets); line and column are computed here, only when a diagnostic is rendered.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jr2 {

// Identifies one file held by a SourceManager. 0 is "no file".
using FileId = uint32_t;

// A half-open byte range [begin, end) in one file.
struct SourceRange {
  FileId file = 0;
  uint32_t begin = 0;
  uint32_t end = 0;

  bool valid() const { return file != 0; }
  // The smallest range that covers both (same file assumed).
  SourceRange to(const SourceRange& other) const {
    return {file, begin < other.begin ? begin : other.begin, end > other.end ? end : other.end};
  }
  static SourceRange point(FileId file, uint32_t offset) { return {file, offset, offset}; }
};

// A 1-based line and a 1-based column counted in Unicode code points (not bytes), so that the
// caret lines up under non-ASCII text.
struct LineCol {
  uint32_t line = 0;
  uint32_t column = 0;
};

// One loaded source file: its name as the user spelled it, its bytes, and a line table.
class SourceFile {
 public:
  SourceFile(FileId id, std::string name, std::string path, std::string text);

  FileId id() const { return id_; }
  // The name to print in diagnostics (the path as given, or `<std>/std.jr2`).
  const std::string& name() const { return name_; }
  // The absolute, normalized path (empty for built-in files).
  const std::string& path() const { return path_; }
  std::string_view text() const { return text_; }

  LineCol lineCol(uint32_t offset) const;
  // The text of 1-based line `line`, without its line break.
  std::string_view lineText(uint32_t line) const;
  uint32_t lineCount() const { return static_cast<uint32_t>(lineStarts_.size()); }
  uint32_t lineStart(uint32_t line) const { return lineStarts_[line - 1]; }

  // ANTLR counts positions in code points; this maps such an index back to a byte offset.
  uint32_t byteOffsetOfCodePoint(size_t index) const;

 private:
  FileId id_;
  std::string name_;
  std::string path_;
  std::string text_;
  std::vector<uint32_t> lineStarts_;
  // Where every kCodePointStep-th code point starts (a byte offset), after the byte order mark:
  // byteOffsetOfCodePoint walks at most kCodePointStep - 1 code points from the one before it.
  // An offset for every code point took 4 bytes a byte of a file with one non-ASCII letter.
  // Empty when the text is pure ASCII (then code point index == byte offset).
  static constexpr size_t kCodePointStep = 64;
  std::vector<uint32_t> codePointSteps_;
};

// Why a file could not be loaded; each maps to a one-line error.
enum class LoadError { kNotFound, kIsDirectory, kUnreadable, kTooLarge };

// Owns every source file of a compilation.
class SourceManager {
 public:
  // The largest source file jr2c reads (8 MiB); larger files are refused with a clear error.
  static constexpr size_t kMaxFileBytes = 8u << 20;

  // Reads `path` from disk. `displayName` is what diagnostics print.
  const SourceFile* load(const std::string& path, const std::string& displayName, LoadError* error,
                         size_t* size = nullptr);
  // Adds a file whose text is in memory (tests, the embedded standard library).
  const SourceFile* add(std::string name, std::string path, std::string text);
  // Texts that stand for files (an editor's unsaved buffers, `jr2c lsp`), by absolute normalized
  // path: load() takes such a file's text from here, not from the disk. Not owned; null for none.
  void setOverlay(const std::map<std::string, std::string>* overlay) { overlay_ = overlay; }
  // Finds a file already loaded by its normalized path.
  const SourceFile* findByPath(const std::string& path) const;

  const SourceFile& file(FileId id) const { return *files_[id - 1]; }
  size_t size() const { return files_.size(); }

 private:
  std::vector<std::unique_ptr<SourceFile>> files_;
  const std::map<std::string, std::string>* overlay_ = nullptr;
};

// Checks that `text` is UTF-8 with no NUL byte. On failure returns the byte offset of the first
// bad byte and sets `why` to a short description.
std::optional<uint32_t> FindInvalidUtf8(std::string_view text, std::string* why);

}  // namespace jr2
