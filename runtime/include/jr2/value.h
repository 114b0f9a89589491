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
#include <utility>
#include <vector>

namespace jr2rt {

using Json = nlohmann::json;

// The runtime's interface version. Generated code checks it with a static_assert, so a workflow
// built against another runtime fails to compile with a clear message instead of misbehaving.
inline constexpr int kRuntimeVersion = 1;

// A Failure (ADR-0073): `fail(reason, detail)`, a child's Failure not handled by `on error`, or a
// host function that reports one. A Pool catches it per item.
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

// Input that is refused before anything changes: an unknown Gate or event, a payload its schema
// refuses, an input that does not fit, JSON from outside that is malformed or too big or deep.
// The runner exits 65; `serve` answers 400.
class BadInput : public std::runtime_error {
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
inline void from_json(const Json& j, Duration& d) { d.ms = j.get<int64_t>(); }

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
inline Json Member(const Json& object, const char* field, const char* where) {
  if (object.is_null()) throw Defect(std::string("reading `.") + field + "` of null at " + where);
  if (!object.is_object()) {
    throw Defect(std::string("reading `.") + field + "` of a " + object.type_name() + " at " +
                 where);
  }
  auto it = object.find(field);
  return it == object.end() ? Json(nullptr) : *it;
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

// Converts between typed values and `json` (a record to `json`, `json` into a record …). A
// `json` value that does not fit the wanted type is a defect naming where.
template <typename T>
T FromJson(const Json& j, const char* where) {
  try {
    return j.get<T>();
  } catch (const std::exception& e) {
    throw Defect(std::string("a value does not fit its type at ") + where + ": " + ErrorText(e));
  }
}

// Reads a field of a record from JSON: a missing required field names the field and the record.
template <typename T>
void ReadField(const Json& j, const char* record, const char* field, T& out, bool required) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) {
    if (required) {
      throw std::invalid_argument(std::string("`") + record + "` needs the field `" + field + "`");
    }
    return;
  }
  try {
    out = it->get<T>();
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("`") + record + "." + field + "`: " + e.what());
  } catch (const nlohmann::json::exception& e) {
    const std::string text = ErrorText(e);
    throw std::invalid_argument(std::string("`") + record + "." + field + "` " +
                                (text.rfind("must be ", 0) == 0 ? "" : "has the wrong type: ") +
                                text);
  }
}

// A string that must be one of a union's literals.
void CheckLiteral(const std::string& value, std::initializer_list<const char*> allowed,
                  const char* where);

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
