// What `jr2c diff --store` reads of a stored run (compiler/diff/diff.h): its snapshot scanned
// for its live machines and Pools, not parsed into values.
#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>

#include "compiler/diff/diff.h"

namespace jr2::diff {
namespace {

// The machines and Pools live in one stored snapshot (the runtime's actors: `{kind: "machine",
// name, state: {active}}` and `{kind: "pool", name, workers}`, nested through `workers` and
// `children`), for `diff --store`. A scan of the text for those alone: a waiting run's snapshot
// is kilobytes, and 10,000 of them parsed into JSON values cost twice both checks (0.2 s of
// 15 MB); the scan reads them in a tenth of that. It checks the text is JSON as it goes.
class SnapshotScan {
 public:
  SnapshotScan(std::string_view text, WaitingRun& run) : text_(text), run_(run) {}

  // False when the text is not one JSON value (or nests deeper than kMaxDepth).
  bool scan() {
    if (!value(nullptr, false)) return false;
    space();
    return at_ == text_.size();
  }

 private:
  static constexpr int kMaxDepth = 2048;

  void space() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\t' || text_[at_] == '\r'))
      ++at_;
  }
  // A value; `active` receives the strings of an array that is a `state`'s `active`.
  bool value(std::vector<std::string>* active, bool isState) {
    space();
    if (at_ >= text_.size()) return false;
    const char c = text_[at_];
    if (c == '{') return object(isState, active);
    if (c == '[') return array(nullptr, nullptr);
    if (c == '"') return string(nullptr);
    return scalar();
  }
  // A string; its text decoded into `out` when it is wanted.
  bool string(std::string* out) {
    const size_t start = ++at_;
    bool escaped = false;
    while (at_ < text_.size() && text_[at_] != '"') {
      if (static_cast<unsigned char>(text_[at_]) < 0x20) return false;
      if (text_[at_] == '\\') {
        escaped = true;
        ++at_;
      }
      ++at_;
    }
    if (at_ >= text_.size()) return false;
    const std::string_view raw = text_.substr(start, at_ - start);
    ++at_;
    if (out == nullptr) return true;
    if (!escaped) {
      out->assign(raw);
      return true;
    }
    const nlohmann::json decoded =
        nlohmann::json::parse(text_.substr(start - 1, raw.size() + 2), nullptr, false);
    if (!decoded.is_string()) return false;
    *out = decoded.get<std::string>();
    return true;
  }
  bool scalar() {
    for (std::string_view word : {"true", "false", "null"}) {
      if (text_.substr(at_, word.size()) == word) {
        at_ += word.size();
        return true;
      }
    }
    const size_t start = at_;
    while (at_ < text_.size() && text_[at_] != '\0' &&
           std::strchr("+-0123456789.eE", text_[at_]) != nullptr)
      ++at_;
    return at_ > start;
  }
  // The members of an object or the elements of an array, from its opening character to its
  // `close`, each read by `one` (the separators and the depth checked here).
  template <typename One>
  bool each(char close, One one) {
    if (++depth_ > kMaxDepth) return false;
    ++at_;
    space();
    if (at_ < text_.size() && text_[at_] == close) {
      ++at_;
      --depth_;
      return true;
    }
    for (;;) {
      space();
      if (!one()) return false;
      space();
      if (at_ >= text_.size()) return false;
      if (text_[at_] == ',') {
        ++at_;
        continue;
      }
      if (text_[at_] != close) return false;
      ++at_;
      --depth_;
      return true;
    }
  }
  // An object: an actor when it has a string `kind` and `name`. `isState`: it is an actor's
  // `state`, whose `active` strings go to `active`.
  bool object(bool isState, std::vector<std::string>* active, WaitingRun::Span* context = nullptr) {
    std::string kind, name;
    bool named = false;
    std::vector<std::string> mine;
    WaitingRun::Span values, input, inputOver;
    bool workers = false;
    const bool root = depth_ == 0;
    const bool read = each('}', [&] {
      std::string key;
      if (at_ >= text_.size() || text_[at_] != '"' || !string(&key)) return false;
      space();
      if (at_ >= text_.size() || text_[at_] != ':') return false;
      ++at_;
      space();
      if (at_ >= text_.size()) return false;
      const char c = text_[at_];
      if (c == '"' && (key == "kind" || key == "name")) {
        named = named || key == "name";
        return string(key == "kind" ? &kind : &name);
      }
      if (c == '[' && key == "workers") {
        int64_t count = 0;
        const bool ok = array(nullptr, &count);
        workers = count > 0;
        return ok;
      }
      if (c == '{' && (key == "input" || key == "inputOver")) {
        const size_t start = at_;
        if (!value(nullptr, false)) return false;
        (key == "input" ? input : inputOver) = {start, at_ - start};
        return true;
      }
      if (c == '[' && key == "active" && isState) return array(active, nullptr);
      if (c == '{' && key == "context" && isState && context != nullptr) {
        const size_t start = at_;
        if (!value(nullptr, false)) return false;
        *context = {start, at_ - start};
        return true;
      }
      if (c == '{' && key == "state") return object(true, &mine, &values);
      return value(nullptr, false);
    });
    if (!read) return false;
    if (root) {
      run_.inputInSnapshot = input;
    } else if (kind == "machine" && named) {
      run_.machines.push_back({std::move(name), std::move(mine), values});
    } else if (kind == "pool" && named) {
      run_.pools.push_back({std::move(name), input, inputOver, workers});
    }
    return true;
  }
  // An array; its strings go to `strings` when given, its length to `count`.
  bool array(std::vector<std::string>* strings, int64_t* count) {
    return each(']', [&] {
      if (count != nullptr) ++*count;
      if (strings == nullptr || at_ >= text_.size() || text_[at_] != '"')
        return value(nullptr, false);
      std::string s;
      if (!string(&s)) return false;
      strings->push_back(std::move(s));
      return true;
    });
  }

  std::string_view text_;
  size_t at_ = 0;
  int depth_ = 0;
  WaitingRun& run_;
};

}  // namespace

bool ScanSnapshot(std::string_view text, WaitingRun& run, bool keepValues) {
  if (!keepValues) return SnapshotScan(text, run).scan();
  // The text is kept whole (one copy), and the values are places in it.
  run.snapshot.assign(text);
  return SnapshotScan(run.snapshot, run).scan();
}

}  // namespace jr2::diff
