// Values at run time, as generated code sees them. Every `.jr2` value is JSON-shaped: records are
// generated structs, `json` is a JsonValue (an nlohmann::json held by value), and these helpers
// give expressions their meaning (a `!` on null is a defect, `??` a default, `len`/`contains`/
// `keys`/`str` the built-ins).
//
// This header never includes nlohmann/json.hpp: `Json` is only declared here
// (nlohmann/json_fwd.hpp), and every read, write and test of a JSON value is a call into the
// runtime's library. A generated `.cpp` includes this and not the 25,000 lines of nlohmann/json,
// whose parser the library's own `_json` literal instantiates in every file that includes it: that
// was two thirds of a sample's build (docs/performance.md, #33's third goal). Code that works with
// `Json` itself — the runtime, host functions, tests — includes jr2/value.h, which adds it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json_fwd.hpp>
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

// A JSON value held by value: exactly an nlohmann::json (its 16 bytes, built in place), whose
// definition the holder need not see. Copies, moves and comparisons are calls into the library;
// `json()` is the value itself, for code that sees `Json` (the runtime). Default: null.
class JsonValue {
 public:
  JsonValue() noexcept;
  JsonValue(std::nullptr_t) noexcept;  // NOLINT: implicit, like Json's own
  // From a Json, copied or moved: implicit, but only from a Json itself. A braced list is not
  // taken: `JsonValue v = {{"key", 1}}` would lose a level of braces and make the list
  // ["key", 1], so it does not compile; write `Json{{"key", 1}}`.
  template <typename J, std::enable_if_t<std::is_same_v<std::decay_t<J>, Json>, int> = 0>
  JsonValue(J&& j) : JsonValue(JsonTag{}, std::forward<J>(j)) {}  // NOLINT: implicit
  JsonValue(const JsonValue& other);
  JsonValue(JsonValue&& other) noexcept;
  JsonValue& operator=(const JsonValue& other);
  JsonValue& operator=(JsonValue&& other) noexcept;
  JsonValue& operator=(const Json& j);
  JsonValue& operator=(Json&& j) noexcept;
  JsonValue& operator=(std::nullptr_t) noexcept;
  ~JsonValue();

  const Json& json() const noexcept { return *reinterpret_cast<const Json*>(storage_); }
  Json& json() noexcept { return *reinterpret_cast<Json*>(storage_); }
  operator const Json&() const noexcept { return json(); }  // NOLINT: reads as the value
  const Json* operator->() const noexcept { return &json(); }
  Json* operator->() noexcept { return &json(); }
  // The value moved out (this becomes null).
  Json take() &&;
  // Where `Json` is complete (jr2/value.h: the runtime, host functions, tests), a JsonValue reads
  // like one: `v["key"]`, `v.get<T>()`, `v.dump()`. Templates, so that they are only made where
  // used.
  template <typename K, typename J = Json>
  decltype(auto) operator[](K&& key) {
    return static_cast<J&>(json())[std::forward<K>(key)];
  }
  template <typename K, typename J = Json>
  decltype(auto) operator[](K&& key) const {
    return static_cast<const J&>(json())[std::forward<K>(key)];
  }
  template <typename T, typename J = Json>
  T get() const {
    return static_cast<const J&>(json()).template get<T>();
  }
  template <typename J = Json>
  bool is_null() const {
    return static_cast<const J&>(json()).is_null();
  }
  template <typename J = Json>
  std::string dump(int indent = -1) const {
    return static_cast<const J&>(json()).dump(indent);
  }

  friend bool operator==(const JsonValue& a, const JsonValue& b);
  friend bool operator!=(const JsonValue& a, const JsonValue& b) { return !(a == b); }

 private:
  struct JsonTag {};
  JsonValue(JsonTag, const Json& j);
  JsonValue(JsonTag, Json&& j) noexcept;
  alignas(8) unsigned char storage_[16];
};

// ---- errors -------------------------------------------------------------------------------------

// A Failure (docs/semantics.md#failures-and-defects): `fail(reason, detail)`, a child's Failure not
// handled by `on error`, or a host function that reports one. A Pool catches it per item.
class Failure : public std::runtime_error {
 public:
  explicit Failure(std::string reason, JsonValue detail = nullptr)
      : std::runtime_error(reason), reason_(std::move(reason)), detail_(std::move(detail)) {}
  const std::string& reason() const { return reason_; }
  const Json& detail() const { return detail_; }

 private:
  std::string reason_;
  JsonValue detail_;
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
void to_json(Json& j, Duration d);
void from_json(const Json& j, Duration& d);  // a whole number of milliseconds

// ---- looking at a JSON value --------------------------------------------------------------------

bool IsNull(const Json& j);
bool IsObject(const Json& j);
bool IsArray(const Json& j);
// An array's length and its element `i` (in range: the caller checked).
size_t ArraySize(const Json& j);
const Json& ArrayAt(const Json& j, size_t i);
// An object's member, or null when `j` is not an object or has no such member.
const Json* FindField(const Json& j, const char* key);
// An object's member that must be there: nlohmann's `at`, which throws when it is not (a
// snapshot without its `context`).
const Json& FieldAt(const Json& j, const char* key);
// Whether an object has the member `key`, not null.
bool HasValue(const Json& object, const char* key);
// Calls fn(context, key, value) for each member of an object, in order.
using MemberVisitor = void (*)(void* context, const std::string& key, const Json& value);
void VisitMembers(const Json& j, MemberVisitor fn, void* context);
// `j` itself, or an empty object when it is null (a payload left out is `{}`).
const Json& OrEmptyObject(const Json& j);
// JSON equality, as `==` of two `json` values means it.
bool JsonEquals(const Json& a, const Json& b);

// ---- making a JSON value ------------------------------------------------------------------------

// Each Put makes `j` the JSON of the value given (a record by its generated `to_json`).
void Put(Json& j, std::nullptr_t);
void Put(Json& j, std::nullopt_t);
void Put(Json& j, bool v);
void Put(Json& j, int64_t v);
void Put(Json& j, double v);
void Put(Json& j, const char* v);
void Put(Json& j, const std::string& v);
void Put(Json& j, std::string&& v);
void Put(Json& j, Duration v);
void Put(Json& j, const Json& v);
void Put(Json& j, Json&& v);
void Put(Json& j, const JsonValue& v);
void Put(Json& j, JsonValue&& v);
// `j` made an empty object or array, and a slot in one: the member `key` added as null (nullptr
// when the object has it already: the first value given for a key is kept), or an element added
// at the end as null.
void MakeObject(Json& j);
void MakeArray(Json& j, size_t reserve);
Json* AddField(Json& object, const char* key);
Json& Append(Json& array);
// `object[key] = value` (replacing any value it had): the slot to Put into.
Json& SetField(Json& object, const char* key);

template <typename T>
void Put(Json& j, const std::optional<T>& v);
template <typename T>
void Put(Json& j, const std::vector<T>& v);
template <typename T>
void Put(Json& j, std::vector<T>&& v);
template <typename T>
void Put(Json& j, const std::map<std::string, T>& v);
template <typename T, typename = decltype(to_json(std::declval<Json&>(), std::declval<const T&>()))>
void Put(Json& j, const T& v) {
  to_json(j, v);  // a record: its generated to_json, found by ADL
}

template <typename T>
void Put(Json& j, const std::optional<T>& v) {
  if (v.has_value()) {
    Put(j, *v);
  } else {
    Put(j, nullptr);
  }
}
template <typename T>
void Put(Json& j, const std::vector<T>& v) {
  MakeArray(j, v.size());
  for (const T& x : v) Put(Append(j), x);
}
// A list given up: its elements moved, not copied (a Source's `list<json>` argument read from
// the input and written back, #33).
template <typename T>
void Put(Json& j, std::vector<T>&& v) {
  MakeArray(j, v.size());
  for (T& x : v) Put(Append(j), std::move(x));
}
template <typename T>
void Put(Json& j, const std::map<std::string, T>& v) {
  MakeObject(j);
  for (const auto& [k, x] : v) Put(SetField(j, k.c_str()), x);
}

// The JSON of a value.
JsonValue ToJson(const Json& v);
JsonValue ToJson(Json&& v);
inline JsonValue ToJson(const JsonValue& v) { return v; }
inline JsonValue ToJson(JsonValue&& v) { return std::move(v); }
template <typename T>
JsonValue ToJson(T&& v) {
  JsonValue out;
  Put(out.json(), std::forward<T>(v));
  return out;
}
JsonValue EmptyObject();

// `{ k1: v1, k2: v2 }`: a JSON object from keys and values in turn, each value copied or moved
// in once. A key given twice keeps its first value, as an initializer list does.
inline void PutMembers(Json&) {}
template <typename V, typename... Rest>
void PutMembers(Json& out, const char* key, V&& value, Rest&&... rest) {
  if (Json* slot = AddField(out, key)) Put(*slot, std::forward<V>(value));
  PutMembers(out, std::forward<Rest>(rest)...);
}
template <typename... KeysAndValues>
JsonValue Object(KeysAndValues&&... kv) {
  static_assert(sizeof...(kv) % 2 == 0, "jr2rt::Object takes keys and values in turn");
  JsonValue out;
  MakeObject(out.json());
  PutMembers(out.json(), std::forward<KeysAndValues>(kv)...);
  return out;
}
// `[a, b, c]` of `json` values.
template <typename... Values>
JsonValue Array(Values&&... values) {
  JsonValue out;
  MakeArray(out.json(), sizeof...(values));
  (Put(Append(out.json()), std::forward<Values>(values)), ...);
  return out;
}

// ---- expressions
// ----------------------------------------------------------------------------------

// `x!`: the value, or a defect naming where the null was.
template <typename T>
const T& Unwrap(const std::optional<T>& v, const char* where) {
  if (!v.has_value()) throw Defect(std::string("`!` on a null value at ") + where);
  return *v;
}
const Json& Unwrap(const Json& v, const char* where);

// `x ?? y`.
template <typename T, typename U>
T Coalesce(const std::optional<T>& v, U&& fallback) {
  return v.has_value() ? *v : T(std::forward<U>(fallback));
}
JsonValue Coalesce(const Json& v, const Json& fallback);

// Reading `json` values: a missing field reads as null, a field of a non-object is a defect.
// A reference into `object` (or to a null that lives forever): `a.b.c` copies nothing until its
// value is kept. Generated code only reads it within the expression, or copies it into a value.
const Json& Member(const Json& object, const char* field, const char* where);

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
JsonValue At(const Json& value, const Json& index, const char* where);

// `int` arithmetic: an overflow is a defect naming where, never undefined behaviour.
[[noreturn]] void Overflow(const char* where);
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
[[noreturn]] void DivisionByZero(const char* where);
inline int64_t Div(int64_t a, int64_t b, const char* where) {
  if (b == 0) DivisionByZero(where);
  if (b == -1 && a == INT64_MIN) Overflow(where);
  return a / b;
}
inline int64_t Mod(int64_t a, int64_t b, const char* where) {
  if (b == 0) DivisionByZero(where);
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

// `a + b + c` of strings: one call and one result, not a temporary for each `+` (the code of
// a long chain was most of a prompt's state entry in generated code).
std::string Concat(std::initializer_list<std::string_view> parts);

inline std::string Str(const std::string& s) { return s; }
// `min(a, b)`: the smaller of two numbers (as the checker typed the call: both `int`, or both
// `float`).
inline int64_t Min(int64_t a, int64_t b) { return a < b ? a : b; }
inline double Min(double a, double b) { return a < b ? a : b; }
std::string Str(const Json& v);
inline std::string Str(const JsonValue& v) { return Str(v.json()); }
template <typename T>
std::string Str(const T& v) {
  return Str(ToJson(v).json());
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
// A machine's or a Pool's input: an object, or SchemaError("input", "the input of `NAME` must be
// an object"); null too when `nullable` (a Pool's input may be left out).
void CheckInputObject(const Json& input, const char* name, bool nullable);

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
void ReadValue(const Json& j, JsonValue& out, const Path& path);
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
  if (IsNull(j)) {
    out.reset();
    return;
  }
  T v{};
  ReadValue(j, v, path);
  out = std::move(v);
}
template <typename T>
void ReadValue(const Json& j, std::vector<T>& out, const Path& path) {
  if (!IsArray(j)) detail::WrongKind(j, path, "a list");
  const size_t n = ArraySize(j);
  out.clear();
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    T v{};
    ReadValue(ArrayAt(j, i), v, path.index(i));
    out.push_back(std::move(v));
  }
}
template <typename T>
void ReadValue(const Json& j, std::map<std::string, T>& out, const Path& path) {
  if (!IsObject(j)) detail::WrongKind(j, path, "an object");
  out.clear();
  struct Into {
    std::map<std::string, T>* out;
    const Path* path;
  } into{&out, &path};
  VisitMembers(
      j,
      [](void* context, const std::string& key, const Json& value) {
        auto* c = static_cast<Into*>(context);
        T v{};
        ReadValue(value, v, c->path->key(key));
        c->out->emplace(key, std::move(v));
      },
      &into);
}
// A record: its generated read_json, into a fresh value (fields it lacks take their defaults).
template <typename T>
void ReadValue(const Json& j, T& out, const Path& path) {
  static_assert(detail::HasReadJson<T>::value,
                "jr2rt::ReadValue reads ints, floats, booleans, strings, durations, json, "
                "optionals, lists, maps and generated records");
  T v{};
  read_json(j, v, path);
  out = std::move(v);
}

// Converts between typed values and `json` (a record to `json`, `json` into a record …). A
// `json` value that does not fit the wanted type is a defect naming where. Inside expressions a
// record is read leniently (an object with more fields fits), whatever scope is active.
[[noreturn]] void DoesNotFit(const std::exception& e, const char* where);
template <typename T>
T FromJson(const Json& j, const char* where) {
  LenientFields lenient;
  T out{};
  try {
    if constexpr (detail::HasReadJson<T>::value) {
      from_json(j, out);  // the record's own name is the root: "`Ticket` needs …"
    } else {
      ReadValue(j, out, "value");
    }
  } catch (const std::exception& e) {
    DoesNotFit(e, where);
  }
  return out;
}

// Reads a field of a record from JSON: a missing (or null) required field names the field and
// the record's path ("`input of review.ticket` needs the field `title`"); a field that does not
// fit names its path. Absent or null, an optional field keeps its value (its default).
[[noreturn]] void MissingField(const Path& record, const char* field);
template <typename T>
void ReadField(const Json& j, const Path& record, const char* field, T& out, bool required) {
  const Json* value = FindField(j, field);
  if (value == nullptr || IsNull(*value)) {
    if (required) MissingField(record, field);
    return;
  }
  ReadValue(*value, out, record.field(field));
}

// Checks that `j` reads as a T, as ReadValue would (the same refusals, the same messages),
// without keeping what it reads: a list or map is checked element by element, each read into a
// value of its own and let go, and `json` takes anything, copying nothing. A Pool's input of
// 100,000 items checked as a `list<json>` was copied whole to be thrown away (#33).
template <typename T>
void CheckValue(const Json& j, const Path& path);

namespace detail {
template <typename T>
struct Shape {
  static void check(const Json& j, const Path& path) {
    T v{};
    ReadValue(j, v, path);
  }
};
template <>
struct Shape<JsonValue> {
  static void check(const Json& /*j*/, const Path& /*path*/) {}
};
template <typename T>
struct Shape<std::optional<T>> {
  static void check(const Json& j, const Path& path) {
    if (!IsNull(j)) CheckValue<T>(j, path);
  }
};
template <typename T>
struct Shape<std::vector<T>> {
  static void check(const Json& j, const Path& path) {
    if (!IsArray(j)) WrongKind(j, path, "a list");
    if constexpr (std::is_same_v<T, JsonValue>) return;  // a list of anything
    const size_t n = ArraySize(j);
    for (size_t i = 0; i < n; ++i) CheckValue<T>(ArrayAt(j, i), path.index(i));
  }
};
template <typename T>
struct Shape<std::map<std::string, T>> {
  static void check(const Json& j, const Path& path) {
    if (!IsObject(j)) WrongKind(j, path, "an object");
    if constexpr (std::is_same_v<T, JsonValue>) return;
    struct At {
      const Path* path;
    } at{&path};
    VisitMembers(
        j,
        [](void* context, const std::string& key, const Json& value) {
          CheckValue<T>(value, static_cast<At*>(context)->path->key(key));
        },
        &at);
  }
};
}  // namespace detail

template <typename T>
void CheckValue(const Json& j, const Path& path) {
  detail::Shape<T>::check(j, path);
}

// ReadField's check alone (CheckValue): a missing or null required field, or one that does not
// read as a T, refused as ReadField refuses it.
template <typename T>
void CheckField(const Json& j, const Path& record, const char* field, bool required) {
  const Json* value = FindField(j, field);
  if (value == nullptr || IsNull(*value)) {
    if (required) MissingField(record, field);
    return;
  }
  CheckValue<T>(*value, record.field(field));
}

// A string that must be one of a union's literals.
void CheckLiteral(const std::string& value, std::initializer_list<const char*> allowed,
                  const Path& where);

}  // namespace jr2rt
