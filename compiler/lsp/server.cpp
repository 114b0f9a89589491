#include "compiler/lsp/server.h"

#include <fmt/format.h>
#include <llvm/Support/Casting.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "compiler/fmt/fmt.h"
#include "compiler/lsp/index.h"
#include "compiler/sema/rules.h"
#include "compiler/syntax/scanner.h"

namespace jr2::lsp {

namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

// The largest message the server reads: a 8 MiB file, JSON-escaped, with room.
constexpr size_t kMaxMessageBytes = 64u << 20;
// How deep a message's JSON may nest (the protocol's messages nest a few levels).
constexpr int kMaxJsonDepth = 64;

// ---- channels ---------------------------------------------------------------------------------

// Reads the framing: header lines up to an empty one, `Content-Length` among them.
class FramedReader {
 public:
  virtual ~FramedReader() = default;

  bool readMessage(std::string* body, std::string* error) {
    size_t length = 0;
    bool haveLength = false;
    for (;;) {
      std::string line;
      if (!readLine(&line)) {
        if (!line.empty() || haveLength) *error = "the input ended inside a message's header";
        return false;
      }
      if (line.empty()) break;
      const size_t colon = line.find(':');
      if (colon == std::string::npos) {
        *error = fmt::format("a header line without `:` ({:.40})", line);
        return false;
      }
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(), ::tolower);
      std::string value = line.substr(colon + 1);
      value.erase(0, value.find_first_not_of(' '));
      if (name == "content-length") {
        if (value.empty() || value.size() > 10 ||
            value.find_first_not_of("0123456789") != std::string::npos) {
          *error = fmt::format("Content-Length is not a number ({:.20})", value);
          return false;
        }
        length = std::stoull(value);
        if (length > kMaxMessageBytes) {
          *error = fmt::format("a message of {} bytes; the most is {} MiB", length,
                               kMaxMessageBytes >> 20);
          return false;
        }
        haveLength = true;
      }
    }
    if (!haveLength) {
      *error = "a message without a Content-Length header";
      return false;
    }
    body->clear();
    if (!readBytes(length, body)) {
      *error = "the input ended inside a message's body";
      return false;
    }
    return true;
  }

 protected:
  // Appends up to `n` more bytes to the buffer; 0 at the end.
  virtual size_t fill() = 0;
  std::string buffer_;
  size_t at_ = 0;

 private:
  bool readLine(std::string* line) {
    line->clear();
    for (;;) {
      const size_t nl = buffer_.find('\n', at_);
      if (nl != std::string::npos) {
        line->append(buffer_, at_, nl - at_);
        at_ = nl + 1;
        if (!line->empty() && line->back() == '\r') line->pop_back();
        return true;
      }
      line->append(buffer_, at_, std::string::npos);
      buffer_.clear();
      at_ = 0;
      if (line->size() > 4096) return false;  // not a header
      if (fill() == 0) return false;
    }
  }
  bool readBytes(size_t n, std::string* out) {
    while (buffer_.size() - at_ < n) {
      out->append(buffer_, at_, std::string::npos);
      n -= buffer_.size() - at_;
      buffer_.clear();
      at_ = 0;
      if (fill() == 0) return false;
    }
    out->append(buffer_, at_, n);
    at_ += n;
    if (at_ == buffer_.size()) {
      buffer_.clear();
      at_ = 0;
    }
    return true;
  }
};

class FdChannelImpl : public Channel, FramedReader {
 public:
  explicit FdChannelImpl(int fd) : fd_(fd) {}
  bool read(std::string* body, std::string* error) override { return readMessage(body, error); }
  bool pending() override {
    if (at_ < buffer_.size()) return true;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }

 private:
  size_t fill() override {
    char chunk[65536];
    for (;;) {
      const ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return 0;
      buffer_.append(chunk, static_cast<size_t>(n));
      return static_cast<size_t>(n);
    }
  }
  int fd_;
};

class TextChannelImpl : public Channel, FramedReader {
 public:
  explicit TextChannelImpl(std::string text) : text_(std::move(text)) {}
  bool read(std::string* body, std::string* error) override { return readMessage(body, error); }
  bool pending() override { return false; }

 private:
  size_t fill() override {
    if (given_) return 0;
    given_ = true;
    buffer_ += text_;
    return text_.size();
  }
  std::string text_;
  bool given_ = false;
};

// ---- positions --------------------------------------------------------------------------------

// A text's lines, for the protocol's positions: a line and a character counted in UTF-16 code
// units (a character outside the BMP counts two).
class LineMap {
 public:
  explicit LineMap(std::string_view text) : text_(text) {
    starts_.push_back(0);
    for (size_t i = 0; i < text.size(); ++i) {
      if (text[i] == '\n') starts_.push_back(static_cast<uint32_t>(i + 1));
    }
  }
  Json position(uint32_t offset) const {
    offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text_.size()));
    const size_t line =
        static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) -
                            starts_.begin()) -
        1;
    uint32_t units = 0;
    for (uint32_t i = starts_[line]; i < offset;) {
      const auto c = static_cast<unsigned char>(text_[i]);
      const uint32_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
      units += len == 4 ? 2 : 1;
      i += len;
    }
    return {{"line", line}, {"character", units}};
  }
  Json range(uint32_t begin, uint32_t end) const {
    return {{"start", position(begin)}, {"end", position(end)}};
  }
  // The byte offset of a protocol position (clamped to its line, and the line to the text).
  uint32_t offset(const Json& pos) const {
    const Json& l = pos.at("line");
    const Json& c = pos.at("character");
    if (!l.is_number_integer() || !c.is_number_integer())
      throw std::invalid_argument("a position's line and character are whole numbers");
    if ((!l.is_number_unsigned() && l.get<int64_t>() < 0) ||
        (!c.is_number_unsigned() && c.get<int64_t>() < 0))
      throw std::invalid_argument("a negative position");
    // Past the end of its line or of the text: at the end (as the protocol says).
    auto clamp = [](const Json& j) -> int64_t {
      if (j.is_number_unsigned())
        return static_cast<int64_t>(std::min<uint64_t>(j.get<uint64_t>(), INT32_MAX));
      return std::min<int64_t>(j.get<int64_t>(), INT32_MAX);
    };
    const int64_t lineIn = clamp(l);
    const int64_t charIn = clamp(c);
    if (static_cast<size_t>(lineIn) >= starts_.size()) return static_cast<uint32_t>(text_.size());
    uint32_t i = starts_[static_cast<size_t>(lineIn)];
    const uint32_t lineEnd = static_cast<size_t>(lineIn) + 1 < starts_.size()
                                 ? starts_[static_cast<size_t>(lineIn) + 1] - 1
                                 : static_cast<uint32_t>(text_.size());
    int64_t units = 0;
    while (i < lineEnd && units < charIn) {
      const auto c = static_cast<unsigned char>(text_[i]);
      const uint32_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
      units += len == 4 ? 2 : 1;
      i += len;
    }
    return std::min(i, lineEnd);
  }
  uint32_t lines() const { return static_cast<uint32_t>(starts_.size()); }
  uint32_t lineOf(uint32_t offset) const {
    return static_cast<uint32_t>(std::upper_bound(starts_.begin(), starts_.end(), offset) -
                                 starts_.begin()) -
           1;
  }
  uint32_t lineStart(uint32_t line) const { return starts_[line]; }

 private:
  std::string_view text_;
  std::vector<uint32_t> starts_;
};

// ---- URIs ---------------------------------------------------------------------------------------

std::string UriOfPath(const std::string& path) {
  std::string out = "file://";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// The absolute, normalized path a `file:` URI names; empty for any other scheme.
std::string PathOfUri(const std::string& uri) {
  if (uri.rfind("file://", 0) != 0) return "";
  std::string rest = uri.substr(7);
  if (!rest.empty() && rest[0] != '/') {  // file://host/path: only the local host
    const size_t slash = rest.find('/');
    if (slash == std::string::npos || rest.substr(0, slash) != "localhost") return "";
    rest = rest.substr(slash);
  }
  std::string path;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '%' && i + 2 < rest.size() && std::isxdigit(rest[i + 1]) &&
        std::isxdigit(rest[i + 2])) {
      path += static_cast<char>(std::stoi(rest.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      path += rest[i];
    }
  }
  if (path.find('\0') != std::string::npos) return "";
  std::error_code ec;
  const std::string canonical = fs::weakly_canonical(fs::path(path), ec).string();
  return ec ? fs::path(path).lexically_normal().string() : canonical;
}

// ---- protocol errors ----------------------------------------------------------------------------

struct RpcError {
  int code;
  std::string message;
};
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidParams = -32602;
constexpr int kInternalError = -32603;
constexpr int kServerNotInitialized = -32002;
constexpr int kRequestFailed = -32803;

// How deep `text`'s brackets nest (outside strings): checked before a message is parsed.
int JsonDepth(std::string_view text) {
  int depth = 0, most = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '{' || c == '[') {
      most = std::max(most, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return most;
}

// ---- documents --------------------------------------------------------------------------------

struct Document {
  std::string uri;
  std::string path;
  std::string text;
  int64_t version = 0;
  bool dirty = true;
  std::shared_ptr<Analysis> current;  // of `text`, once checked
  // The last analysis whose program passed the parse (names, types, the walk all ran), and the
  // text it was made of: hover, definition and completion fall back on it while the text does
  // not parse. The current one when it passed.
  std::shared_ptr<Analysis> lastGood;
  std::string lastGoodText;
  bool alias = false;  // a second URI of a file open already: not checked
};

// Where an offset of the current text was in `old`: the same offset before the first byte that
// differs, shifted by the change after the last; nothing inside the changed span.
// What an edit changed, between the text a last good analysis was made of (`old`) and the text
// now: the bytes before the first that differs and after the last are the same in both, and an
// offset there means the same place in both; an offset in the changed span has no counterpart.
class Edited {
 public:
  Edited(const std::string& now, const std::string& old)
      : nowSize_(now.size()), oldSize_(old.size()) {
    const size_t most = std::min(now.size(), old.size());
    while (prefix_ < most && now[prefix_] == old[prefix_]) ++prefix_;
    while (suffix_ < most - prefix_ &&
           now[now.size() - 1 - suffix_] == old[old.size() - 1 - suffix_])
      ++suffix_;
  }
  std::optional<uint32_t> toOld(uint32_t offset) const { return map(offset, nowSize_, oldSize_); }
  // A range of the old text in the text now; none when the edit touched it.
  std::optional<std::pair<uint32_t, uint32_t>> rangeToNow(uint32_t begin, uint32_t end) const {
    if (begin < oldSize_ - suffix_ && end > prefix_) return std::nullopt;  // it overlaps the edit
    const auto b = map(begin, oldSize_, nowSize_);
    const auto e = map(end, oldSize_, nowSize_);
    if (!b || !e || *e < *b) return std::nullopt;
    return std::make_pair(*b, *e);
  }

 private:
  std::optional<uint32_t> map(uint32_t offset, size_t fromSize, size_t toSize) const {
    if (offset <= prefix_) return offset;
    if (offset >= fromSize - suffix_) return static_cast<uint32_t>(offset + toSize - fromSize);
    return std::nullopt;
  }
  size_t nowSize_, oldSize_;
  size_t prefix_ = 0, suffix_ = 0;
};

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// ---- the server ---------------------------------------------------------------------------------

class Server {
 public:
  Server(std::ostream& out, Options options) : out_(out), options_(std::move(options)) {}

  // Handles one message; false once the client said `exit`.
  bool handle(const std::string& body) {
    if (JsonDepth(body) > kMaxJsonDepth) {
      reply(nullptr, RpcError{kParseError, fmt::format("the message nests deeper than {} levels",
                                                       kMaxJsonDepth)});
      return true;
    }
    Json msg = Json::parse(body, nullptr, false);
    if (msg.is_discarded()) {
      reply(nullptr, RpcError{kParseError, "the message is not JSON"});
      return true;
    }
    if (!msg.is_object() || !msg.contains("method") || !msg["method"].is_string()) {
      if (msg.is_object() && !msg.contains("method") && msg.contains("id")) return true;  // a reply
      reply(msg.is_object() && msg.contains("id") ? msg["id"] : Json(nullptr),
            RpcError{kInvalidRequest, "a request needs a `method` string"});
      return true;
    }
    const std::string method = msg["method"];
    const bool isRequest = msg.contains("id");
    Json id = isRequest ? msg["id"] : Json(nullptr);
    if (isRequest && !id.is_string() && !id.is_number_integer()) {
      reply(nullptr, RpcError{kInvalidRequest, "a request's `id` is a number or a string"});
      return true;
    }
    const Json params = msg.contains("params") ? msg["params"] : Json::object();
    if (method == "exit") {
      exitCode_ = shutdown_ ? 0 : 1;
      return false;
    }
    if (!initialized_ && method != "initialize") {
      if (isRequest) reply(id, RpcError{kServerNotInitialized, "send `initialize` first"});
      return true;
    }
    if (shutdown_ && isRequest) {
      reply(id, RpcError{kInvalidRequest, "the server is shutting down; send `exit`"});
      return true;
    }
    try {
      if (isRequest) {
        reply(id, request(method, params));
      } else {
        notification(method, params);
      }
    } catch (const RpcError& e) {
      answerError(isRequest, id, method, e);
    } catch (const Json::exception& e) {
      answerError(
          isRequest, id, method,
          RpcError{kInvalidParams, fmt::format("bad params for `{}`: {}", method, e.what())});
    } catch (const std::invalid_argument& e) {
      answerError(
          isRequest, id, method,
          RpcError{kInvalidParams, fmt::format("bad params for `{}`: {}", method, e.what())});
    } catch (const std::exception& e) {
      answerError(isRequest, id, method, RpcError{kInternalError, e.what()});
    }
    return true;
  }

  // Checks every document edited since it was last checked, and publishes its diagnostics.
  void checkEdited() {
    for (auto& [uri, doc] : docs_) {
      if (doc.dirty) analyze(doc);
    }
  }

  int exitCode() const { return exitCode_; }

 private:
  // A request's error is its answer; a notification has none, so the client's log says it.
  void answerError(bool isRequest, const Json& id, const std::string& method, const RpcError& e) {
    if (isRequest) {
      reply(id, e);
    } else {
      notify("window/logMessage",
             {{"type", 2},
              {"message", fmt::format("jr2c lsp: `{}` was ignored: {}", method, e.message)}});
    }
  }

  // ---- output -------------------------------------------------------------------------------

  void send(const Json& msg) {
    const std::string body = msg.dump(-1, ' ', false, Json::error_handler_t::replace);
    out_ << fmt::format("Content-Length: {}\r\n\r\n", body.size()) << body;
    out_.flush();
  }
  // The answer is moved into the message, never copied (an outline of 20,000 declarations is a
  // tree of 200,000 JSON values: an initializer list would copy it whole).
  void reply(const Json& id, Json result) {
    Json msg = Json::object();
    msg["jsonrpc"] = "2.0";
    msg["id"] = id;
    msg["result"] = std::move(result);
    send(msg);
  }
  void reply(const Json& id, const RpcError& e) {
    send({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", e.code}, {"message", e.message}}}});
  }
  void notify(const std::string& method, Json params) {
    Json msg = Json::object();
    msg["jsonrpc"] = "2.0";
    msg["method"] = method;
    msg["params"] = std::move(params);
    send(msg);
  }

  // ---- dispatch ------------------------------------------------------------------------------

  Json request(const std::string& method, const Json& params) {
    if (method == "initialize") return initialize(params);
    if (method == "shutdown") {
      shutdown_ = true;
      return nullptr;
    }
    if (method == "textDocument/hover") return hover(params);
    if (method == "textDocument/definition") return definition(params);
    if (method == "textDocument/references") return references(params);
    if (method == "textDocument/prepareRename") return prepareRename(params);
    if (method == "textDocument/rename") return rename(params);
    if (method == "textDocument/completion") return completion(params);
    if (method == "textDocument/documentSymbol") return documentSymbols(params);
    if (method == "textDocument/foldingRange") return foldingRanges(params);
    if (method == "textDocument/formatting") return formatting(params);
    if (method == "textDocument/codeAction") return codeActions(params);
    throw RpcError{kMethodNotFound, fmt::format("`{}` is not a method jr2c lsp serves", method)};
  }

  void notification(const std::string& method, const Json& params) {
    // Each notification is read whole before anything changes: one with a bad part changes
    // nothing (and says so in the client's log).
    if (method == "textDocument/didOpen") {
      const Json& td = params.at("textDocument");
      const std::string uri = td.at("uri");
      std::string text = td.at("text").get<std::string>();
      const int64_t version = td.contains("version") ? td["version"].get<int64_t>() : 0;
      const std::string path = PathOfUri(uri);
      std::string alias;
      for (const auto& [other, d] : docs_) {
        if (other != uri && !path.empty() && d.path == path && !d.alias) alias = other;
      }
      Document& doc = docs_[uri];
      doc = Document{};
      doc.uri = uri;
      doc.path = path;
      doc.text = std::move(text);
      doc.version = version;
      doc.dirty = true;
      if (!alias.empty()) {
        // One file, two names: the first open one is the file; this one is not checked.
        doc.alias = true;
        notify("window/showMessage",
               {{"type", 2},
                {"message", fmt::format("jr2c lsp: `{}` is the file already open as `{}`; only "
                                        "that one is checked",
                                        uri, alias)}});
        return;
      }
      overlay_[doc.path] = doc.text;
    } else if (method == "textDocument/didChange") {
      const std::string uri = params.at("textDocument").at("uri");
      auto it = docs_.find(uri);
      if (it == docs_.end()) return;
      Document& doc = it->second;
      std::string text = doc.text;
      for (const Json& change : params.at("contentChanges")) {
        if (change.contains("range")) {
          LineMap lines(text);
          const uint32_t begin = lines.offset(change["range"].at("start"));
          const uint32_t end = std::max(begin, lines.offset(change["range"].at("end")));
          text.replace(begin, end - begin, change.at("text").get<std::string>());
        } else {
          text = change.at("text").get<std::string>();
        }
      }
      const Json& td = params["textDocument"];
      const int64_t version =
          td.contains("version") ? td["version"].get<int64_t>() : doc.version + 1;
      doc.text = std::move(text);
      doc.version = version;
      doc.dirty = true;
      if (doc.alias) return;
      overlay_[doc.path] = doc.text;
      markImportersDirty(doc.path);
    } else if (method == "textDocument/didClose") {
      const std::string uri = params.at("textDocument").at("uri");
      auto it = docs_.find(uri);
      if (it == docs_.end()) return;
      if (!it->second.alias) overlay_.erase(it->second.path);
      const std::string path = it->second.path;
      docs_.erase(it);
      notify("textDocument/publishDiagnostics", {{"uri", uri}, {"diagnostics", Json::array()}});
      markImportersDirty(path);
    } else if (method == "textDocument/didSave" || method == "workspace/didChangeWatchedFiles") {
      // A file on disk changed: every open document may import it.
      for (auto& [uri, doc] : docs_) doc.dirty = true;
    }
    // `initialized`, `$/cancelRequest`, `$/setTrace` and the rest need nothing.
  }

  // An open document that imports the file at `path` (checked last time) is checked again.
  void markImportersDirty(const std::string& path) {
    for (auto& [uri, doc] : docs_) {
      if (doc.path == path || !doc.current) continue;
      if (doc.current->sm.findByPath(path) != nullptr) doc.dirty = true;
    }
  }

  // ---- initialize ----------------------------------------------------------------------------

  Json initialize(const Json& params) {
    if (initialized_) throw RpcError{kInvalidRequest, "`initialize` was sent twice"};
    std::string root;  // read whole before the server counts as initialized
    if (params.contains("workspaceFolders") && params["workspaceFolders"].is_array() &&
        !params["workspaceFolders"].empty()) {
      root = PathOfUri(params["workspaceFolders"][0].at("uri").get<std::string>());
    } else if (params.contains("rootUri") && params["rootUri"].is_string()) {
      root = PathOfUri(params["rootUri"]);
    } else if (params.contains("rootPath") && params["rootPath"].is_string()) {
      root = params["rootPath"].get<std::string>();
    }
    root_ = root;
    initialized_ = true;
    return {
        {"capabilities",
         {
             {"positionEncoding", "utf-16"},
             {"textDocumentSync",
              {{"openClose", true}, {"change", 2}, {"save", {{"includeText", false}}}}},
             {"hoverProvider", true},
             {"definitionProvider", true},
             {"referencesProvider", true},
             {"renameProvider", {{"prepareProvider", true}}},
             {"completionProvider", {{"triggerCharacters", {".", ">"}}}},
             {"documentSymbolProvider", true},
             {"foldingRangeProvider", true},
             {"documentFormattingProvider", true},
             {"codeActionProvider", {{"codeActionKinds", {"quickfix"}}}},
         }},
        {"serverInfo", {{"name", "jr2c"}, {"version", options_.version}}},
    };
  }

  // ---- analysis ------------------------------------------------------------------------------

  void analyze(Document& doc) {
    doc.dirty = false;
    if (doc.path.empty() || doc.alias) {
      doc.current.reset();
      return;
    }
    doc.current = Analyze(doc.path, overlay_);
    if (doc.current->checked) {
      doc.lastGood = doc.current;
      doc.lastGoodText = doc.text;
    }
    publish(doc);
  }

  // The analysis of a document's current text (checked first if it was edited).
  const Analysis* analysisOf(Document& doc) {
    if (doc.dirty) analyze(doc);
    return doc.current.get();
  }

  Document& documentOf(const Json& params) {
    const std::string uri = params.at("textDocument").at("uri");
    auto it = docs_.find(uri);
    if (it != docs_.end()) return it->second;
    // Not open: read from the disk, as a client may ask about a file it has not opened — a
    // regular file, of at most the size jr2c reads (not /dev/zero, not the server's stdin).
    const std::string path = PathOfUri(uri);
    std::error_code ec;
    if (path.empty() || !fs::is_regular_file(path, ec))
      throw RpcError{kInvalidParams,
                     fmt::format("`{}` is not open and is not a file jr2c can read", uri)};
    if (fs::file_size(path, ec) > SourceManager::kMaxFileBytes)
      throw RpcError{kInvalidParams, fmt::format("`{}` is larger than {} MiB, the most jr2c reads",
                                                 uri, SourceManager::kMaxFileBytes >> 20)};
    std::ifstream in(path, std::ios::binary);
    if (!in) throw RpcError{kInvalidParams, fmt::format("`{}` cannot be read", uri)};
    if (closed_.size() >= 16 && closed_.count(uri) == 0) closed_.clear();
    std::ostringstream text;
    text << in.rdbuf();
    Document& doc = closed_[uri];
    if (doc.text != text.str() || !doc.current) {
      doc.uri = uri;
      doc.path = path;
      doc.text = text.str();
      doc.dirty = true;
    }
    return doc;
  }

  // Where a request's position is, in the analysis that can answer it: the current one when it
  // passed the parse, else the last good one (with the offset moved to where that text had it).
  struct Place {
    const Analysis* analysis = nullptr;
    FileId file = 0;
    uint32_t offset = 0;
  };
  Place placeOf(Document& doc, const Json& params) {
    const Analysis* a = analysisOf(doc);
    LineMap lines(doc.text);
    const uint32_t offset = lines.offset(params.at("position"));
    if (a != nullptr && a->checked && a->root != nullptr) {
      return {a, fileIn(*a, doc.path), offset};
    }
    if (doc.lastGood && doc.lastGood != doc.current) {
      if (auto old = Edited(doc.text, doc.lastGoodText).toOld(offset)) {
        return {doc.lastGood.get(), fileIn(*doc.lastGood, doc.path), *old};
      }
    }
    return {};  // inside what was edited since the text last parsed: nothing is known there
  }

  static FileId fileIn(const Analysis& a, const std::string& path) {
    const SourceFile* f = a.sm.findByPath(path);
    return f == nullptr ? 0 : f->id();
  }

  // ---- locations -----------------------------------------------------------------------------

  std::string uriOf(const Analysis& a, FileId file) {
    const SourceFile& f = a.sm.file(file);
    if (!f.path().empty()) return UriOfPath(f.path());
    return UriOfPath(stdPath(f.text()));
  }

  // The standard library's text, written once where an editor can open it.
  std::string stdPath(std::string_view text) {
    if (!stdPath_.empty()) return stdPath_;
    std::string dir = options_.stdDir;
    if (dir.empty()) {
      const char* cache = std::getenv("XDG_CACHE_HOME");
      const char* home = std::getenv("HOME");
      dir = cache != nullptr && *cache != '\0' ? std::string(cache) + "/jr2c"
            : home != nullptr                  ? std::string(home) + "/.cache/jr2c"
                                               : "/tmp/jr2c";
    }
    std::error_code ec;
    fs::create_directories(dir, ec);
    std::string path = fmt::format("{}/std-{}.jr2", dir, options_.version);
    std::ifstream in(path, std::ios::binary);
    std::ostringstream have;
    if (in) have << in.rdbuf();
    if (!in || have.str() != text) {
      const std::string tmp = path + ".tmp";
      {
        std::ofstream outFile(tmp, std::ios::binary | std::ios::trunc);
        outFile << text;
      }
      fs::rename(tmp, path, ec);
      ::chmod(path.c_str(), 0444);
    }
    stdPath_ = path;
    return path;
  }

  Json rangeOf(const Analysis& a, SourceRange r) {
    const SourceFile& f = a.sm.file(r.file);
    const LineMap& lines = linesOf(a, r.file);
    (void)f;
    return lines.range(r.begin, r.end);
  }
  Json locationOf(const Analysis& a, SourceRange r) {
    return {{"uri", uriOf(a, r.file)}, {"range", rangeOf(a, r)}};
  }
  // Line maps of the files an answer names, kept for the request.
  const LineMap& linesOf(const Analysis& a, FileId file) {
    const auto key = std::make_pair(&a, file);
    auto it = lineMaps_.find(key);
    if (it == lineMaps_.end()) {
      it = lineMaps_.emplace(key, std::make_unique<LineMap>(a.sm.file(file).text())).first;
    }
    return *it->second;
  }

  // ---- diagnostics ---------------------------------------------------------------------------

  Json diagnostic(const Analysis& a, const Diagnostic& d, const LineMap& lines) {
    Json out;
    out["range"] = d.range.valid() ? lines.range(d.range.begin, d.range.end) : lines.range(0, 0);
    out["severity"] = d.severity == Severity::kError ? 1 : d.severity == Severity::kWarning ? 2 : 3;
    out["code"] = d.code();
    out["source"] = "jr2c";
    std::string message = d.message;
    Json related = Json::array();
    for (const Note& n : d.notes) {
      if (n.range.valid()) {
        related.push_back({{"location", locationOf(a, n.range)}, {"message", n.message}});
      } else {
        message += "\nnote: " + n.message;
      }
    }
    out["message"] = message;
    if (!related.empty()) out["relatedInformation"] = related;
    return out;
  }

  void publish(Document& doc) {
    if (docs_.count(doc.uri) == 0) return;  // a file asked about, not open: not the editor's
    lineMaps_.clear();
    const Analysis& a = *doc.current;
    LineMap lines(doc.text);
    const FileId file = fileIn(a, doc.path);
    Json list = Json::array();
    for (const Diagnostic& d : a.diags.all()) {
      if (d.range.valid() ? d.range.file != file : file != 0) continue;
      list.push_back(diagnostic(a, d, lines));
    }
    for (Json& d : importedProblems(a, file, lines)) list.push_back(std::move(d));
    Json params = {{"uri", doc.uri}, {"version", doc.version}};
    params["diagnostics"] = std::move(list);
    notify("textDocument/publishDiagnostics", std::move(params));
    lineMaps_.clear();
  }

  // What `jr2c check` of this file reports in the files it imports (an import cycle, a mistake
  // in an imported file): one diagnostic at each import through which they are reached, with the
  // first one's code and message, so that a file whose program does not check never looks clean.
  std::vector<Json> importedProblems(const Analysis& a, FileId file, const LineMap& lines) {
    std::vector<Json> out;
    const sema::Module* root = a.moduleOf(file);
    if (root == nullptr) return out;
    for (const ast::Import& imp : root->ast->imports) {
      auto it = root->imports.find(fs::path(imp.path).stem().string());
      if (it == root->imports.end()) continue;
      // The files this import reaches.
      std::set<FileId> reached;
      std::vector<const sema::Module*> stack{it->second};
      while (!stack.empty()) {
        const sema::Module* m = stack.back();
        stack.pop_back();
        if (m->source == nullptr || !reached.insert(m->source->id()).second) continue;
        for (const auto& [stem, next] : m->imports) stack.push_back(next);
      }
      reached.erase(file);
      const Diagnostic* first = nullptr;
      size_t errors = 0, warnings = 0;
      for (const Diagnostic& d : a.diags.all()) {
        if (!d.range.valid() || reached.count(d.range.file) == 0) continue;
        if (d.severity == Severity::kError)
          ++errors;
        else if (d.severity == Severity::kWarning)
          ++warnings;
        else
          continue;
        if (first == nullptr ||
            (d.severity == Severity::kError && first->severity != Severity::kError))
          first = &d;
      }
      if (first == nullptr) continue;
      const SourceFile& f = a.sm.file(first->range.file);
      const LineCol at = f.lineCol(first->range.begin);
      std::string counts;
      if (errors > 0) counts = fmt::format("{} error{}", errors, errors == 1 ? "" : "s");
      if (warnings > 0)
        counts += fmt::format("{}{} warning{}", counts.empty() ? "" : " and ", warnings,
                              warnings == 1 ? "" : "s");
      out.push_back(
          {{"range", lines.range(imp.pathRange.begin, imp.pathRange.end)},
           {"severity", errors > 0 ? 1 : 2},
           {"code", first->code()},
           {"source", "jr2c"},
           {"message",
            fmt::format("`{}` brings {} with it; the first, at {}:{}: {}", imp.path, counts,
                        fs::path(f.name()).filename().string(), at.line, first->message)},
           {"relatedInformation", Json::array({{{"location", locationOf(a, first->range)},
                                                {"message", first->message}}})}});
    }
    return out;
  }

  // ---- hover, definition ---------------------------------------------------------------------

  Json hover(const Json& params) {
    lineMaps_.clear();
    Document& doc = documentOf(params);
    const Place p = placeOf(doc, params);
    if (p.analysis == nullptr || p.file == 0) return nullptr;
    const Analysis& a = *p.analysis;
    if (const Occurrence* o = a.occurrenceAt(p.file, p.offset)) {
      Json out = {
          {"contents", {{"kind", "markdown"}, {"value", HoverText(a, a.symbols[o->symbol])}}}};
      if (auto r = rangeNow(doc, a, o->range)) out["range"] = *r;
      return out;
    }
    // A name the index does not bind (`item`, `input`, `event`, `done`): its type.
    if (const TypedExpr* t = a.typedAt(p.file, p.offset)) {
      if (t->expr->kind == ast::Expr::Kind::kName || t->expr->kind == ast::Expr::Kind::kMember) {
        const SourceFile& f = a.sm.file(p.file);
        const std::string text(f.text().substr(t->range.begin, t->range.end - t->range.begin));
        return {{"contents",
                 {{"kind", "markdown"},
                  {"value", fmt::format("```jr2\n{}: {}\n```\n", text, sema::Spell(t->type))}}},
                {"range", currentRange(doc, a, t->range)}};
      }
    }
    return nullptr;
  }

  // A range of the analysis's file in the document's current text (the same when it is the
  // current analysis; moved by the edit since, for the last good one).
  Json currentRange(Document& doc, const Analysis& a, SourceRange r) {
    const std::optional<Json> now = rangeNow(doc, a, r);
    return now ? *now : Json(nullptr);
  }
  // None when the edit since the last good analysis touched it.
  std::optional<Json> rangeNow(Document& doc, const Analysis& a, SourceRange r) {
    if (&a == doc.current.get() || r.file != fileIn(a, doc.path)) return rangeOf(a, r);
    const auto moved = Edited(doc.text, doc.lastGoodText).rangeToNow(r.begin, r.end);
    if (!moved) return std::nullopt;
    return LineMap(doc.text).range(moved->first, moved->second);
  }
  // A location of an analysis, in the document's text now when it is the document's file.
  std::optional<Json> locationNow(Document& doc, const Analysis& a, SourceRange r) {
    const std::optional<Json> range = rangeNow(doc, a, r);
    if (!range) return std::nullopt;
    return Json{{"uri", uriOf(a, r.file)}, {"range", *range}};
  }

  Json definition(const Json& params) {
    lineMaps_.clear();
    Document& doc = documentOf(params);
    const Place p = placeOf(doc, params);
    if (p.analysis == nullptr || p.file == 0) return nullptr;
    const Analysis& a = *p.analysis;
    // An import's path: the file it names.
    if (const sema::Module* m = a.moduleOf(p.file)) {
      for (const ast::Import& imp : m->ast->imports) {
        if (p.offset < imp.pathRange.begin || p.offset > imp.pathRange.end) continue;
        const std::string stem = fs::path(imp.path).stem().string();
        auto it = m->imports.find(stem);
        if (it == m->imports.end()) return nullptr;
        return {{"uri", uriOf(a, it->second->source->id())}, {"range", LineMap("").range(0, 0)}};
      }
    }
    const Occurrence* o = a.occurrenceAt(p.file, p.offset);
    if (o == nullptr) return nullptr;
    const Symbol& s = a.symbols[o->symbol];
    const std::optional<Json> at = locationNow(doc, a, s.nameRange);
    return at ? *at : Json(nullptr);
  }

  // ---- references and rename -----------------------------------------------------------------

  // A symbol named independently of the analysis that found it: its file and where its name is.
  struct SymbolKey {
    std::string file;
    uint32_t begin = 0;
    bool operator<(const SymbolKey& o) const {
      return std::tie(file, begin) < std::tie(o.file, o.begin);
    }
    bool operator==(const SymbolKey& o) const { return file == o.file && begin == o.begin; }
  };
  static std::string FileKey(const Analysis& a, FileId file) {
    const SourceFile& f = a.sm.file(file);
    return f.path().empty() ? f.name() : f.path();
  }

  // The workspace's `.jr2` files (hidden folders, node_modules and build folders left out).
  std::vector<std::string> workspaceFiles() {
    std::vector<std::string> out;
    if (root_.empty()) return out;
    std::error_code ec;
    fs::recursive_directory_iterator it(root_, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      const fs::path& p = it->path();
      const std::string name = p.filename().string();
      if (it->is_directory(ec)) {
        if (name.empty() || name[0] == '.' || name == "node_modules" || name.rfind("build", 0) == 0)
          it.disable_recursion_pending();
        continue;
      }
      if (p.extension() == ".jr2" && it->is_regular_file(ec)) out.push_back(p.string());
      if (out.size() >= 5000) break;
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // The import paths a file's text names, resolved from its folder (read as text: the file need
  // not parse).
  static std::vector<std::string> ImportsOf(const std::string& path, const std::string& text) {
    std::vector<std::string> out;
    const fs::path dir = fs::path(path).parent_path();
    for (size_t at = 0; at < text.size();) {
      size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      // `import "FILE"` at the start of a line (after spaces): a line scan, linear in the text.
      size_t i = text.find_first_not_of(" \t\r", at);
      if (i != std::string::npos && i < end && text.compare(i, 6, "import") == 0) {
        i = text.find_first_not_of(" \t", i + 6);
        if (i != std::string::npos && i < end && text[i] == '"') {
          const size_t close = text.find('"', i + 1);
          if (close != std::string::npos && close < end) {
            std::error_code ec;
            out.push_back(
                fs::weakly_canonical(dir / text.substr(i + 1, close - i - 1), ec).string());
          }
        }
      }
      at = end + 1;
    }
    return out;
  }

  // Every occurrence of a symbol, in this document's analysis and in those of the workspace's
  // files that import its file (directly or through others), each file's once.
  struct Found {
    std::vector<std::pair<const Analysis*, const Occurrence*>> occurrences;
    std::vector<std::shared_ptr<Analysis>> keep;  // the analyses made for the search
  };
  Found everywhere(Document& doc, const Analysis& a, const Symbol& s) {
    Found found;
    const SymbolKey key{FileKey(a, s.nameRange.file), s.nameRange.begin};
    std::set<std::string> covered;  // files whose occurrences are counted
    auto collect = [&](const Analysis& an) {
      int id = -1;
      for (const Occurrence& o : an.occurrences) {
        if (o.declaration && FileKey(an, o.range.file) == key.file && o.range.begin == key.begin) {
          id = o.symbol;
          break;
        }
      }
      if (id < 0) return;
      std::set<std::string> filesHere;
      for (const Occurrence* o : an.occurrencesOf(id)) {
        const std::string f = FileKey(an, o->range.file);
        if (covered.count(f) != 0) continue;
        filesHere.insert(f);
        found.occurrences.emplace_back(&an, o);
      }
      covered.insert(filesHere.begin(), filesHere.end());
      for (size_t i = 1; i <= an.sm.size(); ++i)
        covered.insert(FileKey(an, static_cast<FileId>(i)));
    };
    collect(a);
    // The files that import the symbol's file, found by their import lines, then checked each as
    // a root of its own.
    if (key.file.empty() || key.file[0] != '/') return found;  // the standard library's
    std::set<std::string> targets{key.file};
    std::map<std::string, std::string> texts;
    for (const std::string& f : workspaceFiles()) {
      std::error_code ec;
      const std::string canonical = fs::weakly_canonical(f, ec).string();
      if (auto o = overlay_.find(canonical); o != overlay_.end()) {
        texts[canonical] = o->second;
      } else {
        std::ifstream in(f, std::ios::binary);
        std::ostringstream t;
        t << in.rdbuf();
        if (t.str().find("import") != std::string::npos) texts[canonical] = t.str();
      }
    }
    std::vector<std::string> importers;
    for (bool grew = true; grew;) {
      grew = false;
      for (const auto& [path, text] : texts) {
        if (targets.count(path) != 0) continue;
        for (const std::string& imp : ImportsOf(path, text)) {
          if (targets.count(imp) != 0) {
            targets.insert(path);
            importers.push_back(path);
            grew = true;
            break;
          }
        }
      }
    }
    for (const std::string& path : importers) {
      if (covered.count(path) != 0) continue;
      std::shared_ptr<Analysis> other = Analyze(path, overlay_);
      if (!other->checked) continue;
      collect(*other);
      found.keep.push_back(std::move(other));
    }
    (void)doc;
    return found;
  }

  const Symbol* symbolAt(Document& doc, const Json& params, Place* place) {
    *place = placeOf(doc, params);
    if (place->analysis == nullptr || place->file == 0) return nullptr;
    const Occurrence* o = place->analysis->occurrenceAt(place->file, place->offset);
    return o == nullptr ? nullptr : &place->analysis->symbols[o->symbol];
  }

  Json references(const Json& params) {
    lineMaps_.clear();
    Document& doc = documentOf(params);
    Place p;
    const Symbol* s = symbolAt(doc, params, &p);
    if (s == nullptr) return Json::array();
    const bool withDecl =
        params.contains("context") ? params["context"].value("includeDeclaration", true) : true;
    Found found = everywhere(doc, *p.analysis, *s);
    Json out = Json::array();
    for (const auto& [an, o] : found.occurrences) {
      if (o->declaration && !withDecl) continue;
      if (auto at = locationNow(doc, *an, o->range)) out.push_back(*at);
    }
    return out;
  }

  // Why a symbol cannot be renamed, or "".
  std::string cannotRename(const Analysis& a, const Symbol& s) {
    const SourceFile& f = a.sm.file(s.nameRange.file);
    if (f.path().empty())
      return fmt::format("`{}` is declared in the standard library, which cannot be renamed",
                         s.name);
    return "";
  }

  Json prepareRename(const Json& params) {
    lineMaps_.clear();
    Document& doc = documentOf(params);
    Place p;
    const Symbol* s = symbolAt(doc, params, &p);
    if (s == nullptr) {
      throw RpcError{kRequestFailed,
                     "nothing to rename here: put the cursor on the name of a declaration, a "
                     "state, a field, a parameter or a `var`"};
    }
    if (std::string why = cannotRename(*p.analysis, *s); !why.empty())
      throw RpcError{kRequestFailed, why};
    const Occurrence* o = p.analysis->occurrenceAt(p.file, p.offset);
    const std::optional<Json> range = rangeNow(doc, *p.analysis, o->range);
    if (!range)
      throw RpcError{kRequestFailed, "the name here was edited since the file last parsed"};
    return {{"range", *range}, {"placeholder", s->name.str()}};
  }

  static const char* KindWord(Symbol::Kind k) {
    switch (k) {
      case Symbol::Kind::kType:
        return "type";
      case Symbol::Kind::kEvent:
        return "event";
      case Symbol::Kind::kAgent:
        return "agent";
      case Symbol::Kind::kExtern:
        return "extern";
      case Symbol::Kind::kSource:
        return "source";
      case Symbol::Kind::kMachine:
        return "machine";
      case Symbol::Kind::kPool:
        return "pool";
      case Symbol::Kind::kWorkflow:
        return "workflow";
      case Symbol::Kind::kState:
        return "state";
      case Symbol::Kind::kField:
        return "field";
      case Symbol::Kind::kParam:
        return "parameter";
      case Symbol::Kind::kVar:
        return "`var`";
    }
    return "name";
  }

  // The names beside which `s` must stay unique: its siblings.
  static std::string Clash(const Analysis& a, const Symbol& s, const std::string& name) {
    // Names the language gives a meaning: a type, a function, a name an expression reads.
    auto among = [&](const auto& list) {
      return std::any_of(std::begin(list), std::end(list),
                         [&](const char* n) { return name == n; });
    };
    const bool local = s.kind == Symbol::Kind::kParam || s.kind == Symbol::Kind::kVar;
    if (among(sema::kBuiltinTypes) && s.kind != Symbol::Kind::kField &&
        s.kind != Symbol::Kind::kState)
      return fmt::format("`{}` is a built-in type; choose another name", name);
    if ((local || s.parent < 0) && (among(sema::kBuiltinFunctions) || among(sema::kContextNames)))
      return fmt::format("`{}` already means something in an expression; choose another name",
                         name);
    // A file's stems: `stem.NAME` would read the file, or the new name would hide it.
    const sema::Module* m = a.moduleOf(s.nameRange.file);
    if ((local || s.parent < 0) && m != nullptr && m->imports.count(name) != 0)
      return fmt::format(
          "`{}` names an imported file here (`import \"{}.jr2\"`); choose another "
          "name",
          name, name);
    if (local && m != nullptr) {
      // A parameter or `var` would hide a declaration of the file, or an `as` of the machine.
      if (m->decls.count(name) != 0)
        return fmt::format(
            "`{}` is declared in this file already; a parameter or `var` of that "
            "name would hide it",
            name);
      int top = s.parent;
      while (top >= 0 && a.symbols[top].parent >= 0) top = a.symbols[top].parent;
      if (top >= 0) {
        if (const auto* mach = llvm::dyn_cast_or_null<ast::MachineDecl>(a.symbols[top].decl)) {
          if (AsNamed(mach->body, name))
            return fmt::format(
                "`{}` names an invoke of machine `{}` (`as {}`); choose another "
                "name",
                name, a.symbols[top].name, name);
        }
      }
    }
    for (size_t i = 0; i < a.symbols.size(); ++i) {
      const Symbol& o = a.symbols[i];
      if (&o == &s || o.name != name) continue;
      const bool topLevel = s.parent < 0 && o.parent < 0 && o.nameRange.file == s.nameRange.file;
      const bool sibling = s.parent >= 0 && o.parent == s.parent &&
                           (s.kind == Symbol::Kind::kState) == (o.kind == Symbol::Kind::kState);
      const bool machineName = s.parent >= 0 && o.parent == s.parent &&
                               (s.kind == Symbol::Kind::kParam || s.kind == Symbol::Kind::kVar) &&
                               (o.kind == Symbol::Kind::kParam || o.kind == Symbol::Kind::kVar);
      if (topLevel || sibling || machineName) {
        return fmt::format("`{}` is taken here already by the {} `{}` (line {})", name,
                           KindWord(o.kind), QualifiedName(a, o),
                           a.sm.file(o.nameRange.file).lineCol(o.nameRange.begin).line);
      }
    }
    return "";
  }

  // Whether an invoke of the body (or of a state in it) is named `name` with `as`.
  static bool AsNamed(const ast::StateBody& body, const std::string& name) {
    for (const auto& inv : body.invokes) {
      if (inv.as && inv.as->text == name) return true;
    }
    for (const auto& st : body.states) {
      if (AsNamed(st->body, name)) return true;
    }
    return false;
  }

  Json rename(const Json& params) {
    lineMaps_.clear();
    Document& doc = documentOf(params);
    const std::string newName = params.at("newName");
    Place p;
    const Symbol* s = symbolAt(doc, params, &p);
    if (s == nullptr) throw RpcError{kRequestFailed, "nothing to rename here"};
    if (std::string why = cannotRename(*p.analysis, *s); !why.empty())
      throw RpcError{kRequestFailed, why};
    if (!sema::IsIdentifier(newName)) {
      throw RpcError{kRequestFailed,
                     fmt::format("`{}` is not a name: write letters, digits and `_`, not starting "
                                 "with a digit",
                                 newName)};
    }
    for (std::string_view k : syntax::Keywords()) {
      if (k == newName)
        throw RpcError{kRequestFailed,
                       fmt::format("`{}` is a keyword; choose another name", newName)};
    }
    if (std::string why = Clash(*p.analysis, *s, newName); !why.empty())
      throw RpcError{kRequestFailed, why};
    if (p.analysis != doc.current.get()) {
      throw RpcError{kRequestFailed,
                     "the file does not parse now; fix its syntax errors, then rename"};
    }
    Found found = everywhere(doc, *p.analysis, *s);
    Json changes = Json::object();
    for (const auto& [an, o] : found.occurrences) {
      changes[uriOf(*an, o->range.file)].push_back(
          {{"range", rangeOf(*an, o->range)}, {"newText", newName}});
    }
    return {{"changes", changes}};
  }

  // ---- completion ----------------------------------------------------------------------------

  enum ItemKind {
    kText = 1,
    kFunction = 3,
    kField = 5,
    kVariable = 6,
    kClass = 7,
    kInterface = 8,
    kModule = 9,
    kProperty = 10,
    kEnumMember = 20,
    kKeyword = 14,
    kStruct = 22,
    kEvent = 23,
  };

  static int ItemKindOf(Symbol::Kind k) {
    switch (k) {
      case Symbol::Kind::kType:
        return kStruct;
      case Symbol::Kind::kEvent:
        return kEvent;
      case Symbol::Kind::kAgent:
        return kInterface;
      case Symbol::Kind::kExtern:
        return kFunction;
      case Symbol::Kind::kSource:
        return kModule;
      case Symbol::Kind::kMachine:
      case Symbol::Kind::kPool:
      case Symbol::Kind::kWorkflow:
        return kClass;
      case Symbol::Kind::kState:
        return kEnumMember;
      case Symbol::Kind::kField:
        return kField;
      case Symbol::Kind::kParam:
      case Symbol::Kind::kVar:
        return kVariable;
    }
    return kText;
  }

  // The innermost `{` open before `offset` (strings and comments skipped), and the first word of
  // its line: what kind of body the cursor is in ("" at the top level).
  static std::string EnclosingBody(const std::string& text, uint32_t offset, uint32_t* at) {
    std::vector<uint32_t> open;
    for (uint32_t i = 0; i < offset && i < text.size(); ++i) {
      const char c = text[i];
      if (c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
        while (i < offset && text[i] != '\n') ++i;
      } else if (c == '"') {
        const bool block = text.compare(i, 3, "\"\"\"") == 0;
        i += block ? 3 : 1;
        while (i < offset && !(block ? text.compare(i, 3, "\"\"\"") == 0 : text[i] == '"') &&
               (block || text[i] != '\n')) {
          if (text[i] == '\\') ++i;
          ++i;
        }
        if (block) i += 2;
      } else if (c == '{') {
        open.push_back(i);
      } else if (c == '}' && !open.empty()) {
        open.pop_back();
      }
    }
    if (open.empty()) return "";
    *at = open.back();
    const size_t lineStart = text.rfind('\n', open.back());
    const size_t from = lineStart == std::string::npos ? 0 : lineStart + 1;
    size_t b = text.find_first_not_of(" \t", from);
    size_t e = b;
    while (e < text.size() && IsWordChar(text[e])) ++e;
    return b == std::string::npos ? "" : text.substr(b, e - b);
  }

  // The top-level declaration the cursor is in, by the text: the nearest line before it that
  // starts (at column 0) with a declaration's keyword. Its kind word and name.
  static std::pair<std::string, std::string> EnclosingDecl(const std::string& text,
                                                           uint32_t offset) {
    static const std::regex kDecl(
        R"re(^(type|event|agent|extern|source|machine|pool|workflow)\s+([A-Za-z_][A-Za-z0-9_]*))re");
    size_t end = std::min<size_t>(offset, text.size());
    for (;;) {
      const size_t nl = end == 0 ? std::string::npos : text.rfind('\n', end - 1);
      const size_t start = nl == std::string::npos ? 0 : nl + 1;
      const std::string line = text.substr(start, text.find('\n', start) - start);
      std::smatch m;
      if (std::regex_search(line, m, kDecl)) return {m[1].str(), m[2].str()};
      if (start == 0) return {"", ""};
      end = start - 1;
    }
  }

  // A declaration of the analysis's root module by name.
  static const ast::Decl* DeclNamed(const Analysis& a, FileId file, const std::string& name) {
    const sema::Module* m = a.moduleOf(file);
    if (m == nullptr) return nullptr;
    auto it = m->decls.find(name);
    if (it != m->decls.end()) return it->second;
    // A file that never parsed has no table of its declarations (names were not resolved):
    // what the parse recovered is still in its symbols.
    for (const Symbol& s : a.symbols) {
      if (s.decl != nullptr && s.nameRange.file == file && s.name == name) return s.decl;
    }
    return nullptr;
  }

  static void Add(Json& items, const std::string& label, int kind, const std::string& detail = "",
                  const std::string& sort = "") {
    Json item = {{"label", label}, {"kind", kind}};
    if (!detail.empty()) item["detail"] = detail;
    if (!sort.empty()) item["sortText"] = sort;
    items.push_back(item);
  }

  // The record fields of a type, as completion items.
  static void Fields(Json& items, sema::TypePtr t) {
    t = t == nullptr ? nullptr : sema::StripOptional(t);
    if (t == nullptr || t->kind != sema::Type::Kind::kRecord || t->record == nullptr) return;
    for (const auto& f : t->record->fields) {
      Json item = {{"label", f.name}, {"kind", kField}, {"detail", sema::Spell(f.type)}};
      if (!f.description.empty()) item["documentation"] = f.description;
      items.push_back(item);
    }
  }

  // What `first.more…` is, from the declarations around the cursor: a parameter or `var` of the
  // machine, `event` (the transition's), `input` and `item` (a pool's), then each field.
  sema::TypePtr typeOfChain(const Analysis& a, FileId file, const std::string& text,
                            uint32_t offset, const std::vector<std::string>& chain) {
    if (!a.program.typeInfo) return nullptr;
    const auto [kind, declName] = EnclosingDecl(text, offset);
    const ast::Decl* d = DeclNamed(a, file, declName);
    if (d == nullptr) return nullptr;
    const sema::TypeInfo& info = *a.program.typeInfo;
    sema::TypePtr t = nullptr;
    const std::string& first = chain[0];
    if (const auto* ps = sema::ParamsOf(d)) {
      for (const auto& p : *ps)
        if (p.name.text == first && p.type) t = p.type->checked;
    }
    if (const auto* m = llvm::dyn_cast<ast::MachineDecl>(d)) {
      for (const auto& v : m->vars)
        if (v.name.text == first && v.type) t = v.type->checked;
    }
    if (t == nullptr && first == "input") {
      if (auto it = info.inputTypes.find(d); it != info.inputTypes.end()) t = it->second;
    }
    if (t == nullptr && first == "item") {
      if (const auto* p = llvm::dyn_cast<ast::PoolDecl>(d)) {
        if (const auto* src = llvm::dyn_cast_or_null<ast::SourceDecl>(p->sourceRef.resolved)) {
          if (src->itemType) t = src->itemType->checked;
        }
      }
    }
    if (t == nullptr && first == "event") {
      // The event of the nearest `on EVENT` before the cursor.
      static const std::regex kOn(
          R"re(\bon\s+([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?))re");
      const std::string before = text.substr(0, offset);
      std::string event;
      for (auto it = std::sregex_iterator(before.begin(), before.end(), kOn);
           it != std::sregex_iterator(); ++it) {
        event = (*it)[1].str();
      }
      const ast::Decl* e = nullptr;
      const size_t dot = event.find('.');
      if (dot == std::string::npos) {
        e = DeclNamed(a, file, event);
      } else if (const sema::Module* m = a.moduleOf(file)) {
        const std::string stem = event.substr(0, dot);
        const sema::Module* target =
            stem == "std" ? a.program.std
                          : (m->imports.count(stem) != 0 ? m->imports.at(stem) : nullptr);
        if (target != nullptr) {
          auto it = target->decls.find(event.substr(dot + 1));
          if (it != target->decls.end()) e = it->second;
        }
      }
      if (e != nullptr) {
        if (auto it = info.declTypes.find(e); it != info.declTypes.end()) t = it->second;
      }
    }
    for (size_t i = 1; i < chain.size() && t != nullptr; ++i) {
      t = sema::StripOptional(t);
      if (t->kind != sema::Type::Kind::kRecord || t->record == nullptr) return nullptr;
      const sema::RecordField* f = t->record->find(chain[i]);
      t = f == nullptr ? nullptr : f->type;
    }
    return t;
  }

  Json completion(const Json& params) {
    lineMaps_.clear();
    Document& doc = documentOf(params);
    const Place p = placeOf(doc, params);
    const uint32_t offset = LineMap(doc.text).offset(params.at("position"));
    const size_t lineStart = offset == 0 ? 0 : doc.text.rfind('\n', offset - 1);
    const size_t from = lineStart == std::string::npos || offset == 0 ? 0 : lineStart + 1;
    // The line up to the cursor, at most its last 256 bytes: the patterns below look at the
    // cursor's end of it (a long line costs no more).
    const std::string line = doc.text.substr(from, offset - from);
    const std::string prefix = line.size() > 256 ? line.substr(line.size() - 256) : line;
    // Whether the line so far is spaces and at most one word: where a body's key or keyword goes.
    size_t wordStart = line.size();
    while (wordStart > 0 && IsWordChar(line[wordStart - 1])) --wordStart;
    const bool keyStart =
        line.find_first_not_of(" \t") >= wordStart &&
        (wordStart == line.size() || !std::isdigit(static_cast<unsigned char>(line[wordStart])));
    Json items = Json::array();
    // Completion reads names, not places: the last good analysis serves whole while the text
    // does not parse (the name before a `.` is looked up by the text around the cursor).
    const Analysis* a = p.analysis;
    if ((a == nullptr || !a->checked) && doc.lastGood) a = doc.lastGood.get();
    const FileId file = a == nullptr ? 0 : fileIn(*a, doc.path);
    const sema::Module* module = a != nullptr ? a->moduleOf(file) : nullptr;
    std::smatch m;

    auto declsOf = [&](const sema::Module* mod, const std::string& qualifier, auto pick) {
      if (mod == nullptr) return;
      for (const auto& [name, d] : mod->decls) {
        const int id = a->symbolOf(d);
        if (id < 0 || !pick(a->symbols[id].kind)) continue;
        Add(items, qualifier + name, ItemKindOf(a->symbols[id].kind),
            Signature(*a, a->symbols[id]));
      }
    };
    auto visible = [&](auto pick) {
      if (module == nullptr) return;
      declsOf(module, "", pick);
      for (const auto& [stem, mod] : module->imports) declsOf(mod, stem + ".", pick);
    };

    static const std::regex kOnEvent(R"re((?:^|\s)on\s+([A-Za-z0-9_.]*)$)re");
    static const std::regex kArrow(R"re(->\s*([A-Za-z0-9_.]*)$)re");
    static const std::regex kMember(
        R"re(([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\.([A-Za-z0-9_]*)$)re");
    static const std::regex kTypeSpot(R"re((?::|\bof|<|\|)\s*([A-Za-z0-9_.]*)$)re");

    const auto [declKind, declName] = EnclosingDecl(doc.text, offset);
    uint32_t braceAt = 0;
    const std::string body = EnclosingBody(doc.text, offset, &braceAt);

    if (std::regex_search(prefix, m, kOnEvent)) {
      visible([](Symbol::Kind k) { return k == Symbol::Kind::kEvent; });
      Add(items, "done", kKeyword, "the invoked child finished");
      Add(items, "error", kKeyword, "the invoked child failed");
      return items;
    }
    if (std::regex_search(prefix, m, kArrow) && declKind == "machine" &&
        prefix.find("machine") == std::string::npos) {
      const ast::Decl* d = a != nullptr ? DeclNamed(*a, file, declName) : nullptr;
      if (d == nullptr) return items;
      const int machine = a->symbolOf(d);
      for (size_t i = 0; i < a->symbols.size(); ++i) {
        const Symbol& s = a->symbols[i];
        if (s.kind != Symbol::Kind::kState) continue;
        int top = s.parent;
        while (top >= 0 && a->symbols[top].parent >= 0) top = a->symbols[top].parent;
        if (top != machine) continue;
        const std::string path = QualifiedName(*a, s).substr(declName.size() + 1);
        Add(items, path, kEnumMember, Signature(*a, s));
      }
      return items;
    }
    if (std::regex_search(prefix, m, kMember)) {
      std::vector<std::string> chain;
      std::stringstream parts(m[1].str());
      for (std::string part; std::getline(parts, part, '.');) chain.push_back(part);
      if (a == nullptr) return items;
      // `std.` and an import's `stem.`: that file's declarations.
      if (chain.size() == 1 && module != nullptr) {
        const sema::Module* target = chain[0] == "std" ? a->program.std : nullptr;
        if (auto it = module->imports.find(chain[0]); it != module->imports.end())
          target = it->second;
        if (target != nullptr) {
          declsOf(target, "", [](Symbol::Kind) { return true; });
          return items;
        }
      }
      // The checker's type of the expression before the dot, when this text was checked.
      const uint32_t dot = offset - static_cast<uint32_t>(m[2].length()) - 1;
      if (a->checked && a == doc.current.get()) {
        if (const TypedExpr* t = a->typedEndingAt(file, dot)) {
          Fields(items, t->type);
          if (!items.empty()) return items;
        }
      }
      Fields(items, typeOfChain(*a, file, doc.text, offset, chain));
      return items;
    }
    if ((body == "type" || body == "event") && std::regex_search(prefix, m, kTypeSpot)) {
      for (const char* t : sema::kBuiltinTypes) Add(items, t, kKeyword, "a built-in type");
      visible([](Symbol::Kind k) { return k == Symbol::Kind::kType; });
      return items;
    }
    if (keyStart) {
      if (body.empty()) {
        for (const char* k : {"import", "type", "event", "agent", "extern", "source", "machine",
                              "pool", "workflow"})
          Add(items, k, kKeyword);
        return items;
      }
      if (body == "pool") {
        for (const char* k : ast::kPoolKeys) Add(items, k, kProperty, "a pool's key");
        return items;
      }
      if (body == "source") {
        for (const char* k : ast::kSourceKeys) Add(items, k, kProperty, "a source's key");
        return items;
      }
      if (body == "agent") {
        for (const char* k : ast::kAgentKeys) Add(items, k, kProperty, "an agent's key");
        return items;
      }
      if (body == "workflow") {
        for (const char* k : ast::kBudgetKeys) Add(items, k, kProperty, "a budget's key");
        return items;
      }
      if (body == "machine" || body == "state" || body == "initial" || body == "final" ||
          body == "parallel") {
        for (const char* k : {"state", "initial", "final", "parallel", "on", "after", "always",
                              "invoke", "entry", "exit"})
          Add(items, k, kKeyword);
        if (body == "machine")
          for (const char* k : {"var", "output"}) Add(items, k, kKeyword);
        return items;
      }
      if (body == "type" || body == "event") return items;  // a new field's name: anything
    }
    // An expression: the names in scope, the declarations, the built-in functions and keywords.
    if (a != nullptr) {
      const ast::Decl* d = DeclNamed(*a, file, declName);
      if (d != nullptr) {
        const int id = a->symbolOf(d);
        for (size_t i = 0; i < a->symbols.size(); ++i) {
          const Symbol& s = a->symbols[i];
          if (s.parent == id && (s.kind == Symbol::Kind::kParam || s.kind == Symbol::Kind::kVar)) {
            Add(items, s.name.str(), kVariable, Signature(*a, s), "0");
          }
        }
      }
      visible([](Symbol::Kind k) {
        return k == Symbol::Kind::kSource || k == Symbol::Kind::kExtern ||
               k == Symbol::Kind::kMachine || k == Symbol::Kind::kPool || k == Symbol::Kind::kAgent;
      });
    }
    for (const char* f : sema::kBuiltinFunctions) Add(items, f, kFunction, "built-in");
    for (const char* n : {"item", "input", "event", "std"}) Add(items, n, kVariable);
    for (const char* k : {"true", "false", "null", "if", "fail"}) Add(items, k, kKeyword);
    return items;
  }

  // ---- outline, folding, formatting, quick fixes ---------------------------------------------

  static int SymbolKindOf(Symbol::Kind k) {
    switch (k) {
      case Symbol::Kind::kType:
        return 23;  // Struct
      case Symbol::Kind::kEvent:
        return 24;  // Event
      case Symbol::Kind::kAgent:
        return 11;  // Interface
      case Symbol::Kind::kExtern:
        return 12;  // Function
      case Symbol::Kind::kSource:
        return 4;  // Package
      case Symbol::Kind::kMachine:
        return 5;  // Class
      case Symbol::Kind::kPool:
        return 18;  // Array
      case Symbol::Kind::kWorkflow:
        return 2;  // Module
      case Symbol::Kind::kState:
        return 22;  // EnumMember
      case Symbol::Kind::kField:
        return 8;  // Field
      case Symbol::Kind::kParam:
      case Symbol::Kind::kVar:
        return 13;  // Variable
    }
    return 13;
  }

  // The analysis of the document as it is now, whatever it could check (the outline and folding
  // of a file with a syntax error are still its declarations').
  const Analysis* nowOf(Document& doc, FileId* file) {
    const Analysis* a = analysisOf(doc);
    *file = a == nullptr ? 0 : fileIn(*a, doc.path);
    return a;
  }

  Json documentSymbols(const Json& params) {
    lineMaps_.clear();
    Document& doc = documentOf(params);
    FileId file = 0;
    const Analysis* a = nowOf(doc, &file);
    if (a == nullptr || file == 0) return Json::array();
    std::map<int, Json> built;
    Json top = Json::array();
    // Children come after their parents in `symbols`: build bottom-up by walking backwards.
    std::vector<std::vector<int>> children(a->symbols.size());
    std::vector<int> roots;
    for (size_t i = 0; i < a->symbols.size(); ++i) {
      const Symbol& s = a->symbols[i];
      if (s.nameRange.file != file) continue;
      if (s.parent < 0)
        roots.push_back(static_cast<int>(i));
      else
        children[s.parent].push_back(static_cast<int>(i));
    }
    std::function<Json(int)> make = [&](int id) {
      const Symbol& s = a->symbols[id];
      SourceRange whole = s.range.valid() ? s.range : s.nameRange;
      whole = whole.to(s.nameRange);
      Json j = {{"name", s.name.str()},
                {"detail", Signature(*a, s)},
                {"kind", SymbolKindOf(s.kind)},
                {"range", rangeOf(*a, whole)},
                {"selectionRange", rangeOf(*a, s.nameRange)}};
      if (!children[id].empty()) {
        j["children"] = Json::array();
        for (int c : children[id]) j["children"].push_back(make(c));
      }
      return j;
    };
    for (int r : roots) top.push_back(make(r));
    return top;
  }

  Json foldingRanges(const Json& params) {
    lineMaps_.clear();
    Document& doc = documentOf(params);
    FileId file = 0;
    const Analysis* a = nowOf(doc, &file);
    Json out = Json::array();
    LineMap lines(doc.text);
    std::set<std::pair<uint32_t, uint32_t>> seen;
    auto fold = [&](uint32_t first, uint32_t last, const char* kind) {
      if (last <= first || !seen.insert({first, last}).second) return;
      Json r = {{"startLine", first}, {"endLine", last}};
      if (kind != nullptr) r["kind"] = kind;
      out.push_back(r);
    };
    if (a != nullptr && file != 0) {
      for (const Symbol& s : a->symbols) {
        if (s.nameRange.file != file || !s.range.valid()) continue;
        if (s.kind == Symbol::Kind::kField || s.kind == Symbol::Kind::kParam) continue;
        fold(lines.lineOf(s.range.begin), lines.lineOf(s.range.end > 0 ? s.range.end - 1 : 0),
             nullptr);
      }
      if (const sema::Module* m = a->moduleOf(file); m != nullptr && m->ast->imports.size() > 1) {
        fold(lines.lineOf(m->ast->imports.front().range.begin),
             lines.lineOf(m->ast->imports.back().range.end), "imports");
      }
    }
    // Runs of two or more comment lines.
    uint32_t runStart = 0, runLength = 0;
    for (uint32_t l = 0; l <= lines.lines(); ++l) {
      bool comment = false;
      if (l < lines.lines()) {
        const uint32_t b = lines.lineStart(l);
        const size_t at = doc.text.find_first_not_of(" \t", b);
        comment = at != std::string::npos && doc.text.compare(at, 2, "//") == 0 &&
                  lines.lineOf(static_cast<uint32_t>(at)) == l;
      }
      if (comment) {
        if (runLength++ == 0) runStart = l;
      } else {
        if (runLength >= 2) fold(runStart, runStart + runLength - 1, "comment");
        runLength = 0;
      }
    }
    std::sort(out.begin(), out.end(), [](const Json& x, const Json& y) {
      return std::make_pair(x["startLine"].get<int>(), x["endLine"].get<int>()) <
             std::make_pair(y["startLine"].get<int>(), y["endLine"].get<int>());
    });
    return out;
  }

  Json formatting(const Json& params) {
    Document& doc = documentOf(params);
    // As `jr2c fmt`: a file with a syntax error is not formatted.
    FileId file = 0;
    if (const Analysis* a = nowOf(doc, &file); a != nullptr && file != 0) {
      for (const Diagnostic& d : a->diags.all()) {
        if (d.range.file == file && std::string_view(d.code()) == "E0001")
          throw RpcError{kRequestFailed,
                         "jr2c fmt: the file has syntax errors (the diagnostics say where) and "
                         "was not formatted"};
      }
    }
    const layout::Formatted f = layout::Format(doc.text);
    if (!f.ok) throw RpcError{kRequestFailed, "jr2c fmt: " + f.why};
    if (!layout::SameTokens(doc.text, f.text))
      throw RpcError{kInternalError,
                     "jr2c fmt would change the file's tokens; nothing was changed "
                     "(please report it with the file)"};
    if (f.text == doc.text) return Json::array();
    LineMap lines(doc.text);
    return Json::array(
        {{{"range", lines.range(0, static_cast<uint32_t>(doc.text.size()))}, {"newText", f.text}}});
  }

  Json codeActions(const Json& params) {
    lineMaps_.clear();
    Document& doc = documentOf(params);
    FileId file = 0;
    const Analysis* a = nowOf(doc, &file);
    Json out = Json::array();
    if (a == nullptr || file == 0) return out;
    LineMap lines(doc.text);
    const uint32_t from = lines.offset(params.at("range").at("start"));
    const uint32_t to = lines.offset(params.at("range").at("end"));
    for (const Diagnostic& d : a->diags.all()) {
      if (d.fixits.empty() || !d.range.valid() || d.range.file != file) continue;
      if (d.range.end < from || d.range.begin > to) continue;
      Json edits = Json::array();
      std::string title;
      for (const FixIt& fix : d.fixits) {
        if (fix.range.file != file) continue;
        edits.push_back(
            {{"range", lines.range(fix.range.begin, fix.range.end)}, {"newText", fix.text}});
        const std::string old = doc.text.substr(fix.range.begin, fix.range.end - fix.range.begin);
        if (!title.empty()) continue;
        if (old.empty())
          title = fmt::format("Insert `{}`", fix.text);
        else if (fix.text.empty())
          title = fmt::format("Remove `{}`", old);
        else
          title = fmt::format("Change `{}` to `{}`", old, fix.text);
      }
      if (edits.empty()) continue;
      out.push_back({{"title", fmt::format("{} ({})", title, d.code())},
                     {"kind", "quickfix"},
                     {"isPreferred", d.fixits.size() == 1},
                     {"diagnostics", Json::array({diagnostic(*a, d, lines)})},
                     {"edit", {{"changes", {{doc.uri, edits}}}}}});
    }
    return out;
  }

  std::ostream& out_;
  Options options_;
  bool initialized_ = false;
  bool shutdown_ = false;
  int exitCode_ = 1;
  std::string root_;
  std::string stdPath_;
  std::map<std::string, Document> docs_;
  std::map<std::string, Document> closed_;  // files asked about without being opened
  std::map<std::string, std::string> overlay_;
  std::map<std::pair<const Analysis*, FileId>, std::unique_ptr<LineMap>> lineMaps_;
};

}  // namespace

std::unique_ptr<Channel> FdChannel(int fd) { return std::make_unique<FdChannelImpl>(fd); }
std::unique_ptr<Channel> TextChannel(std::string framed) {
  return std::make_unique<TextChannelImpl>(std::move(framed));
}

std::string Frame(const std::string& body) {
  return fmt::format("Content-Length: {}\r\n\r\n{}", body.size(), body);
}

int Serve(Channel& in, std::ostream& out, std::ostream& log, const Options& options) {
  Server server(out, options);
  std::string body, error;
  while (in.read(&body, &error)) {
    if (!server.handle(body)) return server.exitCode();
    if (!in.pending()) server.checkEdited();
  }
  if (!error.empty()) log << "jr2c lsp: " << error << "; stopping\n";
  return 1;
}

}  // namespace jr2::lsp
