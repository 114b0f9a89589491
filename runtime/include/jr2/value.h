// Values at run time. Every `.jr2` value is JSON-shaped: records are generated structs with JSON
// conversion, `json` is nlohmann::json, and these helpers give expressions their meaning (a `!`
// on null is a defect, `??` a default, `len`/`contains`/`keys`/`str` the built-ins).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace jr2rt {

using Json = nlohmann::json;

// The runtime's interface version. Generated code checks it with a static_assert, so a workflow
// built against another runtime fails to compile with a clear message instead of misbehaving.
inline constexpr int kRuntimeVersion = 2;

// A Failure (docs/semantics.md#failures-and-defects): `fail(reason, detail)`, a child's Failure not
// handled by `on error`, or a host function that reports one. A Pool catches it per item.
class Failure : public std::runtime_error {
 public:
  explicit Failure(std::string reason, Json detail = nullptr)
      : std::runtime_error(reason), reason_(std::move(reason)), detail_(std::move(detail)) {}
  const std::string& reason() const { return reason_; }
  const Json& detail() const { return detail_; }

 private:
  std::string reason_;
  Json detail_;
};

// A defect: a broken invariant of the program (a `!` on null, an index out of range, a division
// by zero). It is never caught by a Pool: the run ends `error`.
class Defect : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A store that cannot be opened or read: a clear one-line error (the runner exits 65). Here, in
// the core, because a run that finds its own journal inconsistent says so (StoreDamaged) without
// knowing any store.
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A shared store's server cannot be reached now (it restarted, the network failed): what was
// asked may be asked again once it answers. serve answers a change 503 (retry), a `dispatch`
// worker tries again a second later; a command exits as it does for a busy run. Here, in the
// core, for the `dispatch` worker.
class StoreUnreachable : public StoreError {
 public:
  using StoreError::StoreError;
};

// A run's stored row cannot be read (a snapshot that is not JSON, a row another tool wrote).
// The message names the run; every other run stays usable.
class StoreDamaged : public StoreError {
 public:
  using StoreError::StoreError;
};

// Input that is refused before anything changes: an unknown Gate or event, a payload its schema
// refuses, an input that does not fit, JSON from outside that is malformed or too big or deep.
// The runner exits 65; `serve` answers 400.
class BadInput : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A value from outside that does not fit its type: what the generated readers (`read_json`,
// parseInput, a payload's check) throw, with the path of the field it is about ("input of
// review.ticket"). What it means depends on where the value came from, and that is decided once at
// each boundary (docs/runtime.md#the-run-host): a command's input or payload is refused (BadInput:
// exit 65, HTTP 400); a Pool's item is that item's Failure; a value made inside a step is a Defect
// of the run.
class SchemaError : public std::runtime_error {
 public:
  SchemaError(std::string path, const std::string& message)
      : std::runtime_error(message), path_(std::move(path)) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A stored run that no longer fits this build: a state renamed, a parameter without a default
// added, a Pool or workflow this runner lacks. The host marks the run `drifted`.
class NoLongerFits : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A `duration`: milliseconds. In JSON it is an integer number of milliseconds.
struct Duration {
  int64_t ms = 0;
  friend bool operator==(Duration a, Duration b) { return a.ms == b.ms; }
  friend bool operator!=(Duration a, Duration b) { return a.ms != b.ms; }
  friend bool operator<(Duration a, Duration b) { return a.ms < b.ms; }
  friend bool operator<=(Duration a, Duration b) { return a.ms <= b.ms; }
  friend bool operator>(Duration a, Duration b) { return a.ms > b.ms; }
  friend bool operator>=(Duration a, Duration b) { return a.ms >= b.ms; }
  friend Duration operator+(Duration a, Duration b) { return {a.ms + b.ms}; }
  friend Duration operator-(Duration a, Duration b) { return {a.ms - b.ms}; }
  friend Duration operator-(Duration a) { return {-a.ms}; }
  friend Duration operator*(Duration a, double k) {
    return {static_cast<int64_t>(static_cast<double>(a.ms) * k)};
  }
  friend Duration operator/(Duration a, double k) {
    return {static_cast<int64_t>(static_cast<double>(a.ms) / k)};
  }
};
inline void to_json(Json& j, Duration d) { j = d.ms; }
void from_json(const Json& j, Duration& d);  // a whole number of milliseconds

// `{ k1: v1, k2: v2 }`: a JSON object from keys and values in turn, each value copied or moved
// in once (nlohmann's initializer lists copy every level: a Pool's `item_input` paid for its item
// twice). A key given twice keeps its first value, as an initializer list does.
inline void PutMembers(Json&) {}
template <typename V, typename... Rest>
void PutMembers(Json& out, const char* key, V&& value, Rest&&... rest) {
  out.get_ref<Json::object_t&>().emplace(key, std::forward<V>(value));
  PutMembers(out, std::forward<Rest>(rest)...);
}
template <typename... KeysAndValues>
Json Object(KeysAndValues&&... kv) {
  static_assert(sizeof...(kv) % 2 == 0, "jr2rt::Object takes keys and values in turn");
  Json out(Json::value_t::object);
  PutMembers(out, std::forward<KeysAndValues>(kv)...);
  return out;
}

// `x!`: the value, or a defect naming where the null was.
template <typename T>
const T& Unwrap(const std::optional<T>& v, const char* where) {
  if (!v.has_value()) throw Defect(std::string("`!` on a null value at ") + where);
  return *v;
}
inline const Json& Unwrap(const Json& v, const char* where) {
  if (v.is_null()) throw Defect(std::string("`!` on a null value at ") + where);
  return v;
}

// `x ?? y`.
template <typename T, typename U>
T Coalesce(const std::optional<T>& v, U&& fallback) {
  return v.has_value() ? *v : T(std::forward<U>(fallback));
}
inline Json Coalesce(const Json& v, const Json& fallback) { return v.is_null() ? fallback : v; }

// Reading `json` values: a missing field reads as null, a field of a non-object is a defect.
// A reference into `object` (or to a null that lives forever): `a.b.c` copies nothing until its
// value is kept. Generated code only reads it within the expression, or copies it into a value.
inline const Json& Member(const Json& object, const char* field, const char* where) {
  static const Json kMissing;
  if (object.is_null()) throw Defect(std::string("reading `.") + field + "` of null at " + where);
  if (!object.is_object()) {
    throw Defect(std::string("reading `.") + field + "` of a " + object.type_name() + " at " +
                 where);
  }
  auto it = object.find(field);
  return it == object.end() ? kMissing : *it;
}

template <typename T>
const T& At(const std::vector<T>& list, int64_t i, const char* where) {
  if (i < 0 || static_cast<size_t>(i) >= list.size()) {
    throw Defect("index " + std::to_string(i) + " is outside a list of " +
                 std::to_string(list.size()) + " at " + where);
  }
  return list[static_cast<size_t>(i)];
}
template <typename T>
const T& At(const std::map<std::string, T>& map, const std::string& key, const char* where) {
  auto it = map.find(key);
  if (it == map.end()) throw Defect("no key `" + key + "` in a map at " + where);
  return it->second;
}
Json At(const Json& value, const Json& index, const char* where);

// `int` arithmetic: an overflow is a defect naming where, never undefined behaviour.
[[noreturn]] inline void Overflow(const char* where) {
  throw Defect(std::string("integer overflow at ") + where);
}
inline int64_t Add(int64_t a, int64_t b, const char* where) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) Overflow(where);
  return r;
}
inline int64_t Sub(int64_t a, int64_t b, const char* where) {
  int64_t r = 0;
  if (__builtin_sub_overflow(a, b, &r)) Overflow(where);
  return r;
}
inline int64_t Mul(int64_t a, int64_t b, const char* where) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) Overflow(where);
  return r;
}
inline int64_t Div(int64_t a, int64_t b, const char* where) {
  if (b == 0) throw Defect(std::string("division by zero at ") + where);
  if (b == -1 && a == INT64_MIN) Overflow(where);
  return a / b;
}
inline int64_t Mod(int64_t a, int64_t b, const char* where) {
  if (b == 0) throw Defect(std::string("division by zero at ") + where);
  if (b == -1) return 0;
  return a % b;
}

// The built-in functions.
template <typename T>
int64_t Len(const std::vector<T>& v) {
  return static_cast<int64_t>(v.size());
}
template <typename T>
int64_t Len(const std::map<std::string, T>& v) {
  return static_cast<int64_t>(v.size());
}
inline int64_t Len(const std::string& s) {
  int64_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}
int64_t Len(const Json& v);

template <typename T, typename U>
bool Contains(const std::vector<T>& v, const U& x) {
  for (const auto& e : v) {
    if (e == x) return true;
  }
  return false;
}
template <typename T>
bool Contains(const std::map<std::string, T>& m, const std::string& key) {
  return m.count(key) != 0;
}
inline bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}
bool Contains(const Json& v, const Json& x);

template <typename T>
std::vector<std::string> Keys(const std::map<std::string, T>& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}
std::vector<std::string> Keys(const Json& v);

inline std::string Str(const std::string& s) { return s; }
std::string Str(const Json& v);
template <typename T>
std::string Str(const T& v) {
  return Str(Json(v));
}

// An exception's message for a person: nlohmann/json's are cleaned of their library prefix
// ("[json.exception.type_error.302] type must be string, but is number" reads "must be a
// string, not a number"); any other is its what().
std::string ErrorText(const std::exception& e);

// Text from outside (ids, Gate names, reasons, `log(...)` lines) as it may reach a terminal:
// each control character is shown escaped (`\n`, `\x1b`), so no text can move the cursor,
// recolour the screen or forge a line of its own.
std::string Printable(const std::string& text);

// ---- Reading JSON into typed values -----------------------------------------------------------
//
// Every place a JSON value becomes a typed value (a run's input, a payload, a `json` → record
// conversion in an expression, a snapshot) reads it with ReadValue, which names the path of
// anything that does not fit: "`input of review.ticket.needs[2]` must be a string, not a number".
//
// - `int` takes a JSON integer between -2^63 and 2^63-1, or a number written with a fraction or
//   an exponent that is whole and below 2^53 in size (`3.0`, `1e2`); never `1.5`, `1e308`, 2^63
//   or 2^64. `float` takes any number. No number takes a boolean. Messages:
//   "`input of review.rounds` must be a whole number between -9223372036854775808 and
//   9223372036854775807, not 1.5".
// - A record refuses a field it does not have while a StrictFields scope is active on the thread
//   (the runtime opens one around the checks of what comes from outside: a run's input, a payload
//   at a Gate, a wake payload); outside one, extra fields are ignored (width subtyping: an item
//   with more fields than the worker's record still fits).

// Where a value being read sits: a root ("input of review", "event reject", "Ticket") and the
// fields, indexes and map keys below it. It is built on the stack of the reading call and spelled
// only when a message needs it, so reading costs no allocation. A Path refers to its parent (and a
// root to its text): it must not outlive them.
class Path {
 public:
  Path(const char* root) : text_(root) {}  // NOLINT: implicit, so a root reads as a string
  Path(const std::string& root) : text_(root.c_str()) {}  // NOLINT
  Path field(const char* name) const { return {this, Kind::kField, name, nullptr, 0}; }
  Path index(size_t i) const { return {this, Kind::kIndex, nullptr, nullptr, i}; }
  Path key(const std::string& k) const { return {this, Kind::kKey, nullptr, &k, 0}; }
  // `input of review.ticket.needs[2]`, `counts["a"]`.
  std::string str() const;

 private:
  enum class Kind : uint8_t { kRoot, kField, kIndex, kKey };
  Path(const Path* parent, Kind kind, const char* text, const std::string* key, size_t index)
      : parent_(parent), kind_(kind), text_(text), key_(key), index_(index) {}
  const Path* parent_ = nullptr;
  Kind kind_ = Kind::kRoot;
  const char* text_ = nullptr;
  const std::string* key_ = nullptr;
  size_t index_ = 0;
};

// While one is alive on a thread, records read on that thread refuse fields they do not have
// (CheckFields). Scopes nest; LenientFields suspends an enclosing StrictFields.
class StrictFields {
 public:
  StrictFields();
  ~StrictFields();
  StrictFields(const StrictFields&) = delete;
  StrictFields& operator=(const StrictFields&) = delete;
  // Whether records read on this thread now refuse unknown fields.
  static bool active();

 private:
  bool previous_;
};
class LenientFields {
 public:
  LenientFields();
  ~LenientFields();
  LenientFields(const LenientFields&) = delete;
  LenientFields& operator=(const LenientFields&) = delete;

 private:
  bool previous_;
};

// Under StrictFields: refuses a key of `j` (an object) that is not one of `fields`, naming the
// path and the closest field: "`input of review.ticket` has no field `chek`; did you mean
// `check`? Its fields are id, title, needs". Outside the scope it does nothing. Throws
// SchemaError.
void CheckFields(const Json& j, const Path& path, std::initializer_list<const char*> fields);
// A record's JSON: an object ("`PATH` must be an object, not a list"), and CheckFields.
void CheckRecord(const Json& j, const Path& path, std::initializer_list<const char*> fields);

// The closest of `candidates` to `word` (edit distance with transpositions, at most a third of
// the word's length and at most 2), or "" when none is close.
std::string ClosestName(const std::string& word, const std::vector<std::string>& candidates);

// "a string", "an object", "a list", "a number", "a boolean", "null": what a JSON value is, for
// messages.
std::string KindOf(const Json& j);

// ReadValue(j, out, path): `j` as the C++ type of `out`, or SchemaError naming `path`.
// Records are read by the generated `read_json(j, v, path)` of their namespace (found by ADL).
void ReadValue(const Json& j, int64_t& out, const Path& path);
void ReadValue(const Json& j, double& out, const Path& path);
void ReadValue(const Json& j, bool& out, const Path& path);
void ReadValue(const Json& j, std::string& out, const Path& path);
void ReadValue(const Json& j, Duration& out, const Path& path);
inline void ReadValue(const Json& j, Json& out, const Path&) { out = j; }
template <typename T>
void ReadValue(const Json& j, std::optional<T>& out, const Path& path);
template <typename T>
void ReadValue(const Json& j, std::vector<T>& out, const Path& path);
template <typename T>
void ReadValue(const Json& j, std::map<std::string, T>& out, const Path& path);
template <typename T>
void ReadValue(const Json& j, T& out, const Path& path);

namespace detail {
template <typename T, typename = void>
struct HasReadJson : std::false_type {};
template <typename T>
struct HasReadJson<T,
                   std::void_t<decltype(read_json(std::declval<const Json&>(), std::declval<T&>(),
                                                  std::declval<const Path&>()))>> : std::true_type {
};
[[noreturn]] void WrongKind(const Json& j, const Path& path, const char* want);
}  // namespace detail

template <typename T>
void ReadValue(const Json& j, std::optional<T>& out, const Path& path) {
  if (j.is_null()) {
    out.reset();
    return;
  }
  T v{};
  ReadValue(j, v, path);
  out = std::move(v);
}
template <typename T>
void ReadValue(const Json& j, std::vector<T>& out, const Path& path) {
  if (!j.is_array()) detail::WrongKind(j, path, "a list");
  out.clear();
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    T v{};
    ReadValue(j[i], v, path.index(i));
    out.push_back(std::move(v));
  }
}
template <typename T>
void ReadValue(const Json& j, std::map<std::string, T>& out, const Path& path) {
  if (!j.is_object()) detail::WrongKind(j, path, "an object");
  out.clear();
  for (auto it = j.begin(); it != j.end(); ++it) {
    T v{};
    ReadValue(it.value(), v, path.key(it.key()));
    out.emplace(it.key(), std::move(v));
  }
}
// A record: its generated read_json, into a fresh value (fields it lacks take their defaults).
template <typename T>
void ReadValue(const Json& j, T& out, const Path& path) {
  if constexpr (detail::HasReadJson<T>::value) {
    T v{};
    read_json(j, v, path);
    out = std::move(v);
  } else {
    try {
      out = j.get<T>();
    } catch (const nlohmann::json::exception& e) {
      throw SchemaError(path.str(), "`" + path.str() + "` " + ErrorText(e));
    }
  }
}

// Converts between typed values and `json` (a record to `json`, `json` into a record …). A
// `json` value that does not fit the wanted type is a defect naming where. Inside expressions a
// record is read leniently (an object with more fields fits), whatever scope is active.
template <typename T>
T FromJson(const Json& j, const char* where) {
  LenientFields lenient;
  T out{};
  try {
    if constexpr (detail::HasReadJson<T>::value) {
      out = j.template get<T>();  // the record's own name is the root: "`Ticket` needs …"
    } else {
      ReadValue(j, out, "value");
    }
  } catch (const std::exception& e) {
    throw Defect(std::string("a value does not fit its type at ") + where + ": " + ErrorText(e));
  }
  return out;
}

// Reads a field of a record from JSON: a missing (or null) required field names the field and
// the record's path ("`input of review.ticket` needs the field `title`"); a field that does not
// fit names its path. Absent or null, an optional field keeps its value (its default).
template <typename T>
void ReadField(const Json& j, const Path& record, const char* field, T& out, bool required) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) {
    if (required) {
      throw SchemaError(record.str(), "`" + record.str() + "` needs the field `" + field + "`");
    }
    return;
  }
  ReadValue(*it, out, record.field(field));
}

// A string that must be one of a union's literals.
void CheckLiteral(const std::string& value, std::initializer_list<const char*> allowed,
                  const Path& where);

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
