#include "compiler/source/source.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace jr2 {

SourceFile::SourceFile(FileId id, std::string name, std::string path, std::string text)
    : id_(id), name_(std::move(name)), path_(std::move(path)), text_(std::move(text)) {
  // A leading byte order mark is not text: line 1 starts after it, and code points are counted
  // from there, as the lexer (and ANTLR's input stream) count them. Counted as a column, it put
  // every diagnostic of the file one column left of its token.
  const uint32_t body = text_.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  // Sized exactly: the line table lives as long as the file, through a check's peak memory.
  lineStarts_.reserve(1 + static_cast<size_t>(std::count(text_.begin(), text_.end(), '\n')));
  lineStarts_.push_back(body);
  bool ascii = true;
  size_t codePoints = 0;
  for (uint32_t i = body; i < text_.size(); ++i) {
    const auto c = static_cast<unsigned char>(text_[i]);
    if (c == '\n') lineStarts_.push_back(i + 1);
    if (c >= 0x80) ascii = false;
    codePoints += (c & 0xC0) != 0x80 ? 1 : 0;
  }
  if (!ascii) {
    codePointSteps_.reserve(codePoints / kCodePointStep + 1);
    size_t n = 0;  // code points before byte i
    for (uint32_t i = body; i < text_.size(); ++i) {
      if ((static_cast<unsigned char>(text_[i]) & 0xC0) == 0x80) continue;  // continuation
      if (n % kCodePointStep == 0) codePointSteps_.push_back(i);
      ++n;
    }
  }
}

uint32_t SourceFile::byteOffsetOfCodePoint(size_t index) const {
  const auto size = static_cast<uint32_t>(text_.size());
  if (codePointSteps_.empty()) {  // ASCII after a byte order mark, if any
    return static_cast<uint32_t>(std::min<size_t>(index + lineStarts_[0], size));
  }
  const size_t step = index / kCodePointStep;
  if (step >= codePointSteps_.size()) return size;
  uint32_t at = codePointSteps_[step];
  // Walk the rest, at most kCodePointStep - 1 code points: past each lead byte and its
  // continuation bytes (the text is valid UTF-8 wherever a position is asked of it).
  for (size_t left = index % kCodePointStep; left > 0 && at < size; --left) {
    ++at;
    while (at < size && (static_cast<unsigned char>(text_[at]) & 0xC0) == 0x80) ++at;
  }
  return at;
}

LineCol SourceFile::lineCol(uint32_t offset) const {
  offset = std::clamp<uint32_t>(offset, lineStarts_[0], static_cast<uint32_t>(text_.size()));
  auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), offset);
  const auto line = static_cast<uint32_t>(it - lineStarts_.begin());
  const uint32_t start = lineStarts_[line - 1];
  uint32_t column = 1;
  for (uint32_t i = start; i < offset; ++i) {
    if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) ++column;
  }
  return {line, column};
}

std::string_view SourceFile::lineText(uint32_t line) const {
  if (line == 0 || line > lineStarts_.size()) return {};
  const uint32_t start = lineStarts_[line - 1];
  uint32_t end =
      line < lineStarts_.size() ? lineStarts_[line] : static_cast<uint32_t>(text_.size());
  while (end > start && (text_[end - 1] == '\n' || text_[end - 1] == '\r')) --end;
  return std::string_view(text_).substr(start, end - start);
}

const SourceFile* SourceManager::add(std::string name, std::string path, std::string text) {
  const auto id = static_cast<FileId>(files_.size() + 1);
  files_.push_back(
      std::make_unique<SourceFile>(id, std::move(name), std::move(path), std::move(text)));
  return files_.back().get();
}

const SourceFile* SourceManager::findByPath(const std::string& path) const {
  for (const auto& f : files_) {
    if (!f->path().empty() && f->path() == path) return f.get();
  }
  return nullptr;
}

const SourceFile* SourceManager::load(const std::string& path, const std::string& displayName,
                                      LoadError* error, size_t* size) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  if (overlay_ != nullptr) {
    const auto canonical = fs::weakly_canonical(fs::absolute(p, ec), ec).string();
    if (auto it = overlay_->find(canonical); it != overlay_->end()) {
      if (const auto* existing = findByPath(canonical)) return existing;
      if (it->second.size() > kMaxFileBytes) {
        if (size) *size = it->second.size();
        *error = LoadError::kTooLarge;
        return nullptr;
      }
      return add(displayName, canonical, it->second);
    }
  }
  const auto status = fs::status(p, ec);
  if (ec || !fs::exists(status)) {
    *error = LoadError::kNotFound;
    return nullptr;
  }
  if (fs::is_directory(status)) {
    *error = LoadError::kIsDirectory;
    return nullptr;
  }
  const auto canonical = fs::weakly_canonical(p, ec).string();
  if (const auto* existing = findByPath(canonical)) return existing;
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    *error = LoadError::kUnreadable;
    return nullptr;
  }
  const auto bytes = fs::file_size(p, ec);
  if (!ec && bytes > kMaxFileBytes) {
    if (size) *size = bytes;
    *error = LoadError::kTooLarge;
    return nullptr;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string text = std::move(buffer).str();
  if (text.size() > kMaxFileBytes) {  // a pipe or a file that grew while we read it
    if (size) *size = text.size();
    *error = LoadError::kTooLarge;
    return nullptr;
  }
  return add(displayName, canonical, std::move(text));
}

std::optional<uint32_t> FindInvalidUtf8(std::string_view text, std::string* why) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c == 0) {
      *why = "a NUL byte (is this a binary file?)";
      return static_cast<uint32_t>(i);
    }
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      *why = fmt::format("the byte 0x{:02x}, which starts no UTF-8 sequence", c);
      return static_cast<uint32_t>(i);
    }
    if (i + len > n) {
      *why = "a UTF-8 sequence cut off by the end of the file";
      return static_cast<uint32_t>(i);
    }
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) {
        *why = fmt::format(
            "the byte 0x{:02x} starts a UTF-8 sequence that the next byte breaks "
            "(is the file Latin-1?)",
            c);
        return static_cast<uint32_t>(i);
      }
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    const bool overlong =
        (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      *why = "an invalid UTF-8 sequence";
      return static_cast<uint32_t>(i);
    }
    i += len;
  }
  return std::nullopt;
}

}  // namespace jr2
