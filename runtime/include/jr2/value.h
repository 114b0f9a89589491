// Values at run time, with JSON in full: jr2/json_value.h (what generated code sees) and
// nlohmann/json itself, for the runtime, host functions and tests, which work with `Json` values
// directly. Also the reading of JSON that comes from outside the program.
#pragma once

#include <nlohmann/json.hpp>

#include "jr2/json_value.h"

namespace jr2rt {

// A JsonValue compared with a Json or a scalar as Json compares (`v == "text"`, `v == json`).
template <typename T, typename = std::enable_if_t<!std::is_same_v<std::decay_t<T>, JsonValue>>>
bool operator==(const JsonValue& a, const T& b) {
  return a.json() == b;
}
template <typename T, typename = std::enable_if_t<!std::is_same_v<std::decay_t<T>, JsonValue>>>
bool operator==(const T& a, const JsonValue& b) {
  return a == b.json();
}
template <typename T, typename = std::enable_if_t<!std::is_same_v<std::decay_t<T>, JsonValue>>>
bool operator!=(const JsonValue& a, const T& b) {
  return !(a.json() == b);
}
template <typename T, typename = std::enable_if_t<!std::is_same_v<std::decay_t<T>, JsonValue>>>
bool operator!=(const T& a, const JsonValue& b) {
  return !(a == b.json());
}

// A `json` read into a Json (the runtime's own readers; generated code reads into a JsonValue).
inline void ReadValue(const Json& j, Json& out, const Path&) { out = j; }

// ---- JSON from outside -------------------------------------------------------------------------

// The most a caller takes from outside by default: 16 MiB of text, nested 512 levels deep.
inline constexpr size_t kMaxExternalBytes = size_t{16} << 20;
inline constexpr int kMaxExternalDepth = 512;

// UTF-8 (RFC 3629) at byte `i` of `text`: the length its lead byte announces (0: not a lead
// byte; 1: ASCII) and how many bytes from `i` form a well-formed prefix of that character (equal
// to `length` when the character is whole). One place decides what is well-formed, for the
// checks of JSON from outside and for ValidUtf8.
struct Utf8Step {
  size_t good;
  size_t length;
};
Utf8Step Utf8At(std::string_view text, size_t i);
// Appends the UTF-8 bytes of code point `cp` (at most U+10FFFF; the caller checks it is one).
void AppendUtf8(uint32_t cp, std::string& out);
// `j` appended to `out` as JSON text, as a save writes it (compact, bad UTF-8 replaced): a
// snapshot's and a view's parts written in place, with no string of their own.
void AppendJson(std::string& out, const Json& j);
// `s` appended to `out` as a JSON string, the bytes AppendJson writes for it; false, with `out`
// as it was, when `s` is not UTF-8 (AppendJson then writes nlohmann's replacement).
bool AppendUtf8String(std::string& out, std::string_view s);
// `s` appended to `out` as a JSON string: the bytes AppendJson(out, Json(s)) writes, without the
// copy (nlohmann's replacement when `s` is not UTF-8).
void AppendJsonString(std::string& out, std::string_view s);
// Parses JSON that comes from outside the program (`--input`, a `send` payload, an agent
// script, a request body). Throws BadInput with one line naming `what` ("the input", "the
// payload"):
//   "WHAT is larger than 16 MiB"
//   "WHAT is not UTF-8: the byte 0xFF at line 1, column 7 is not part of a UTF-8 character"
//   "WHAT nests deeper than 512 levels"          (found while parsing, never after)
//   "WHAT is not valid JSON: at line 1, column 11: unexpected end of input; expected …"
// `keep`, when given, is asked of each element after the depth check, as nlohmann's parser
// callback is: what it refuses is never built (a caller that needs a small part of a large text
// keeps its memory to that part).
Json ParseExternalJson(std::string_view text, const std::string& what,
                       size_t maxBytes = kMaxExternalBytes,
                       const Json::parser_callback_t& keep = nullptr);

// Reads a file that comes from outside, at most maxBytes of it (it reads one byte more to know
// that there is more: `/dev/zero` stops at once). Throws BadInput naming `what` and the path:
//   "WHAT `PATH` does not exist", "WHAT `PATH` is a directory, not a file",
//   "cannot read WHAT `PATH`: Permission denied", "WHAT `PATH` is larger than 16 MiB".
// `what` is the file's role without its path: "the input file", "the agent script".
std::string ReadExternalFile(const std::string& path, const std::string& what,
                             size_t maxBytes = kMaxExternalBytes);

// Both: the file's JSON, with messages "WHAT `PATH` is not valid JSON: …".
Json ReadExternalJsonFile(const std::string& path, const std::string& what,
                          size_t maxBytes = kMaxExternalBytes);

}  // namespace jr2rt

// std::optional <-> JSON null.
namespace nlohmann {
template <typename T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& v) {
    if (v.has_value()) {
      j = *v;
    } else {
      j = nullptr;
    }
  }
  static void from_json(const json& j, std::optional<T>& v) {
    if (j.is_null()) {
      v.reset();
    } else {
      v = j.get<T>();
    }
  }
};
}  // namespace nlohmann
