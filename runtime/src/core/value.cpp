#include "jr2/value.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <new>
#include <system_error>

#include "jr2/meant.h"

namespace jr2rt {

namespace {
std::string WithArticle(const std::string& type) {
  if (type == "null") return type;
  const bool vowel = !type.empty() && std::string("aeiou").find(type[0]) != std::string::npos;
  return (vowel ? "an " : "a ") + type;
}

// Whether records read on this thread refuse unknown fields (StrictFields).
bool& Strict() {
  thread_local bool strict = false;
  return strict;
}

constexpr const char* kIntRange = "between -9223372036854775808 and 9223372036854775807";
}  // namespace

// ---- paths and strictness ---------------------------------------------------------------------

std::string Path::str() const {
  std::vector<const Path*> chain;
  for (const Path* p = this; p != nullptr; p = p->parent_) chain.push_back(p);
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Path& p = **it;
    switch (p.kind_) {
      case Kind::kRoot:
        out += p.text_ != nullptr ? p.text_ : "";
        break;
      case Kind::kField:
        out += out.empty() ? "" : ".";
        out += p.text_;
        break;
      case Kind::kIndex:
        out += "[" + std::to_string(p.index_) + "]";
        break;
      case Kind::kKey:
        out += "[" + Json(*p.key_).dump() + "]";
        break;
    }
  }
  return out;
}

StrictFields::StrictFields() : previous_(Strict()) { Strict() = true; }
StrictFields::~StrictFields() { Strict() = previous_; }
bool StrictFields::active() { return Strict(); }
LenientFields::LenientFields() : previous_(Strict()) { Strict() = false; }
LenientFields::~LenientFields() { Strict() = previous_; }

std::string ClosestName(const std::string& word, const std::vector<std::string>& candidates) {
  return ::jr2::meant::Name(word, candidates);
}

std::string KindOf(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "a list";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "a number";
    default:
      return WithArticle(j.type_name());
  }
}

void CheckFields(const Json& j, const Path& path, std::initializer_list<const char*> fields) {
  if (!Strict() || !j.is_object()) return;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    bool known = false;
    for (const char* f : fields) {
      if (key == f) {
        known = true;
        break;
      }
    }
    if (known) continue;
    std::vector<std::string> names(fields.begin(), fields.end());
    std::string message = "`" + path.str() + "` has no field `" + key + "`";
    const std::string close = ClosestName(key, names);
    if (!close.empty()) message += "; did you mean `" + close + "`?";
    if (names.empty()) {
      message += "; it has no fields";
    } else {
      message += close.empty() ? "; its fields are " : " Its fields are ";
      for (size_t i = 0; i < names.size(); ++i) message += (i == 0 ? "" : ", ") + names[i];
    }
    throw SchemaError(path.str(), message);
  }
}

void CheckRecord(const Json& j, const Path& path, std::initializer_list<const char*> fields) {
  if (!j.is_object()) detail::WrongKind(j, path, "an object");
  CheckFields(j, path, fields);
}

// ---- typed values from JSON -------------------------------------------------------------------

void detail::WrongKind(const Json& j, const Path& path, const char* want) {
  throw SchemaError(path.str(), "`" + path.str() + "` must be " + want + ", not " + KindOf(j));
}

void ReadValue(const Json& j, int64_t& out, const Path& path) {
  switch (j.type()) {
    case Json::value_t::number_integer:
      out = j.get<int64_t>();
      return;
    case Json::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) {
        out = static_cast<int64_t>(u);
        return;
      }
      break;
    }
    case Json::value_t::number_float: {
      // A whole number written with a fraction or an exponent (`3.0`, `1e2`) is an integer
      // below 2^53 in size: from there on a double no longer holds every integer, so the number
      // read may not be the one written (`-9223372036854775809` reads as -2^63,
      // `9007199254740993.0` as 2^53). Those are refused, with the hint to write the integer
      // plainly (an integer without a fraction is read exactly, up to 64 bits).
      const double d = j.get<double>();
      if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) < 0x1p53) {
        out = static_cast<int64_t>(d);
        return;
      }
      if (std::isfinite(d) && std::trunc(d) == d && std::fabs(d) <= 0x1p63) {
        throw SchemaError(path.str(), "`" + path.str() + "` must be a whole number " + kIntRange +
                                          ", not " + j.dump() +
                                          " (from 2^53 on, write a whole number without a fraction "
                                          "or an exponent)");
      }
      break;
    }
    default:
      detail::WrongKind(j, path, "a whole number");
  }
  throw SchemaError(
      path.str(), "`" + path.str() + "` must be a whole number " + kIntRange + ", not " + j.dump());
}

void ReadValue(const Json& j, double& out, const Path& path) {
  if (!j.is_number()) detail::WrongKind(j, path, "a number");
  out = j.get<double>();
}

void ReadValue(const Json& j, bool& out, const Path& path) {
  if (!j.is_boolean()) detail::WrongKind(j, path, "a boolean");
  out = j.get<bool>();
}

void ReadValue(const Json& j, std::string& out, const Path& path) {
  if (!j.is_string()) detail::WrongKind(j, path, "a string");
  out = j.get_ref<const std::string&>();
}

void ReadValue(const Json& j, Duration& out, const Path& path) {
  if (!j.is_number()) detail::WrongKind(j, path, "a whole number of milliseconds");
  ReadValue(j, out.ms, path);
}

void from_json(const Json& j, Duration& d) { ReadValue(j, d, "a duration"); }

std::string ErrorText(const std::exception& e) {
  std::string text = e.what();
  const std::string prefix = "[json.exception.";
  if (text.rfind(prefix, 0) != 0) return text;
  const size_t close = text.find("] ");
  if (close != std::string::npos) text = text.substr(close + 2);
  // type_error.302: "type must be string, but is number".
  const std::string must = "type must be ", but = ", but is ";
  if (text.rfind(must, 0) == 0) {
    const size_t at = text.find(but);
    if (at != std::string::npos) {
      const std::string want = text.substr(must.size(), at - must.size());
      const std::string got = text.substr(at + but.size());
      return "must be " + WithArticle(want) + ", not " + WithArticle(got);
    }
  }
  // parse_error.101: "parse error at line 1, column 11: syntax error while parsing value -
  // unexpected end of input; expected …".
  const std::string parse = "parse error ";
  if (text.rfind(parse, 0) == 0) text = text.substr(parse.size());
  // "syntax error while parsing object key - ": which part of the parser saw it is noise.
  const size_t at = text.find("syntax error ");
  if (at != std::string::npos) {
    const size_t dash = text.find("- ", at);
    if (dash != std::string::npos) text.erase(at, dash + 2 - at);
  }
  return text;
}

JsonValue At(const Json& value, const Json& index, const char* where) {
  if (value.is_array() && index.is_number_integer()) {
    const auto i = index.get<int64_t>();
    if (i < 0 || static_cast<size_t>(i) >= value.size()) {
      throw Defect("index " + std::to_string(i) + " is outside a list of " +
                   std::to_string(value.size()) + " at " + where);
    }
    return value[static_cast<size_t>(i)];
  }
  if (value.is_object() && index.is_string()) {
    auto it = value.find(index.get<std::string>());
    if (it == value.end()) return nullptr;
    return *it;
  }
  throw Defect(std::string("cannot index a ") + value.type_name() + " with a " + index.type_name() +
               " at " + where);
}

int64_t Len(const Json& v) {
  if (v.is_string()) return Len(v.get<std::string>());
  if (v.is_array() || v.is_object()) return static_cast<int64_t>(v.size());
  throw Defect(std::string("`len` of a ") + v.type_name());
}

bool Contains(const Json& v, const Json& x) {
  if (v.is_array()) {
    for (const auto& e : v) {
      if (e == x) return true;
    }
    return false;
  }
  if (v.is_object() && x.is_string()) return v.contains(x.get<std::string>());
  if (v.is_string() && x.is_string()) {
    return v.get<std::string>().find(x.get<std::string>()) != std::string::npos;
  }
  throw Defect(std::string("`contains` in a ") + v.type_name());
}

std::vector<std::string> Keys(const Json& v) {
  if (!v.is_object()) throw Defect(std::string("`keys` of a ") + v.type_name());
  std::vector<std::string> out;
  for (auto it = v.begin(); it != v.end(); ++it) out.push_back(it.key());
  return out;
}

std::string Concat(std::initializer_list<std::string_view> parts) {
  size_t size = 0;
  for (const std::string_view part : parts) size += part.size();
  std::string out;
  out.reserve(size);
  for (const std::string_view part : parts) out.append(part.data(), part.size());
  return out;
}

std::string Str(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

void CheckLiteral(const std::string& value, std::initializer_list<const char*> allowed,
                  const Path& where) {
  for (const char* a : allowed) {
    if (value == a) return;
  }
  // The list is spelled only for the message: a value that fits costs its compares alone.
  std::string list;
  for (const char* a : allowed) {
    if (!list.empty()) list += ", ";
    list += std::string("\"") + a + "\"";
  }
  throw SchemaError(where.str(),
                    "`" + where.str() + "` is \"" + value + "\", but it must be one of " + list);
}

// ---- JsonValue ---------------------------------------------------------------------------------

static_assert(sizeof(Json) == 16 && alignof(Json) <= 8,
              "JsonValue holds an nlohmann::json in 16 bytes: this nlohmann/json has another size");

JsonValue::JsonValue() noexcept { new (storage_) Json(); }
JsonValue::JsonValue(std::nullptr_t) noexcept { new (storage_) Json(); }
JsonValue::JsonValue(JsonTag, const Json& j) { new (storage_) Json(j); }
JsonValue::JsonValue(JsonTag, Json&& j) noexcept { new (storage_) Json(std::move(j)); }
JsonValue::JsonValue(const JsonValue& other) { new (storage_) Json(other.json()); }
JsonValue::JsonValue(JsonValue&& other) noexcept { new (storage_) Json(std::move(other.json())); }
JsonValue& JsonValue::operator=(const JsonValue& other) {
  if (this != &other) json() = other.json();
  return *this;
}
JsonValue& JsonValue::operator=(JsonValue&& other) noexcept {
  json() = std::move(other.json());
  return *this;
}
JsonValue& JsonValue::operator=(const Json& j) {
  json() = j;
  return *this;
}
JsonValue& JsonValue::operator=(Json&& j) noexcept {
  json() = std::move(j);
  return *this;
}
JsonValue& JsonValue::operator=(std::nullptr_t) noexcept {
  json() = nullptr;
  return *this;
}
JsonValue::~JsonValue() { json().~Json(); }
Json JsonValue::take() && { return std::move(json()); }
bool operator==(const JsonValue& a, const JsonValue& b) { return a.json() == b.json(); }

void to_json(Json& j, Duration d) { j = d.ms; }

// ---- looking at and making JSON values ----------------------------------------------------------

bool IsNull(const Json& j) { return j.is_null(); }
bool IsObject(const Json& j) { return j.is_object(); }
bool IsArray(const Json& j) { return j.is_array(); }
size_t ArraySize(const Json& j) { return j.size(); }
const Json& ArrayAt(const Json& j, size_t i) { return j[i]; }
const Json* FindField(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto& object = j.get_ref<const Json::object_t&>();
  auto it = object.find(key);
  return it == object.end() ? nullptr : &it->second;
}
bool HasValue(const Json& object, const char* key) {
  const Json* value = FindField(object, key);
  return value != nullptr && !value->is_null();
}
const Json& FieldAt(const Json& j, const char* key) { return j.at(key); }
void VisitMembers(const Json& j, MemberVisitor fn, void* context) {
  for (const auto& [key, value] : j.get_ref<const Json::object_t&>()) fn(context, key, value);
}
const Json& OrEmptyObject(const Json& j) {
  static const Json kEmpty = Json::object();
  return j.is_null() ? kEmpty : j;
}
bool JsonEquals(const Json& a, const Json& b) { return a == b; }

namespace {

// What nlohmann's serializer writes for `j` (compact, bad UTF-8 replaced): its own words, for the
// values the writer below does not write itself.
void NlohmannAppend(std::string& out, const Json& j) {
  nlohmann::detail::serializer<Json> s(nlohmann::detail::output_adapter<char, std::string>(out),
                                       ' ', Json::error_handler_t::replace);
  s.dump(j, false, false, 0);
}

// An integer's decimal digits, without the string std::to_string makes.
template <class Int>
void AppendNumber(std::string& out, Int value) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  out.append(digits, static_cast<size_t>(end - digits));
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  if (!AppendUtf8String(out, s)) NlohmannAppend(out, Json(std::string(s)));
}

namespace {

// The bytes a JSON string holds as they are: printable ASCII but the quote and the backslash.
constexpr std::array<bool, 256> kPlainByte = [] {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c < 0x80; ++c) plain[c] = c != '"' && c != '\\';
  return plain;
}();

}  // namespace

bool AppendUtf8String(std::string& out, std::string_view s) {
  const size_t n = s.size();
  const size_t start = out.size();
  size_t i = 0;
  while (i < n && kPlainByte[static_cast<unsigned char>(s[i])]) ++i;
  if (i == n) {
    // The usual string (an id, a key, a mode): nothing to escape, written in one piece. A save's
    // feed, journal and traces are made of them: 150,000 of a stored Pool of 10,000 items (#33).
    out += '"';
    out.append(s.data(), n);
    out += '"';
    return true;
  }
  out += '"';
  out.append(s.data(), i);
  while (i < n) {
    // A run of bytes written as they are, appended at once.
    size_t j = i;
    while (j < n && kPlainByte[static_cast<unsigned char>(s[j])]) ++j;
    out.append(s, i, j - i);
    i = j;
    if (i == n) break;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const Utf8Step step = Utf8At(s, i);
      if (step.length == 0 || step.good != step.length) {
        out.resize(start);
        return false;
      }
      out.append(s, i, step.length);
      i += step.length;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default: {
        static const char kHex[] = "0123456789abcdef";
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
      }
    }
    ++i;
  }
  out += '"';
  return true;
}

void AppendJson(std::string& out, const Json& j) {
  // The same bytes as nlohmann's dump(-1, ' ', false, replace) (JR2_CHECK_SAVES holds every
  // save to it), written without its per-byte state machine for the strings of UTF-8 text that
  // a save is made of (#33).
  switch (j.type()) {
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, value] : j.get_ref<const Json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        AppendJsonString(out, key);
        out += ':';
        AppendJson(out, value);
      }
      out += '}';
      return;
    }
    case Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const Json& value : j.get_ref<const Json::array_t&>()) {
        if (!first) out += ',';
        first = false;
        AppendJson(out, value);
      }
      out += ']';
      return;
    }
    case Json::value_t::string:
      // Text that is not UTF-8: nlohmann's replacement of its bad bytes, as it always made.
      if (!AppendUtf8String(out, j.get_ref<const std::string&>())) NlohmannAppend(out, j);
      return;
    case Json::value_t::boolean:
      out += j.get<bool>() ? "true" : "false";
      return;
    case Json::value_t::null:
      out += "null";
      return;
    case Json::value_t::number_integer:
      return AppendNumber(out, j.get<int64_t>());
    case Json::value_t::number_unsigned:
      return AppendNumber(out, j.get<uint64_t>());
    default:  // a float (nlohmann's shortest form), bytes, a discarded value
      return NlohmannAppend(out, j);
  }
}

void Put(Json& j, std::nullptr_t) { j = nullptr; }
void Put(Json& j, std::nullopt_t) { j = nullptr; }
void Put(Json& j, bool v) { j = v; }
void Put(Json& j, int64_t v) { j = v; }
void Put(Json& j, double v) { j = v; }
void Put(Json& j, const char* v) { j = v; }
void Put(Json& j, const std::string& v) { j = v; }
void Put(Json& j, std::string&& v) { j = std::move(v); }
void Put(Json& j, Duration v) { j = v.ms; }
void Put(Json& j, const Json& v) { j = v; }
void Put(Json& j, Json&& v) { j = std::move(v); }
void Put(Json& j, const JsonValue& v) { j = v.json(); }
void Put(Json& j, JsonValue&& v) { j = std::move(v.json()); }
void MakeObject(Json& j) { j = Json(Json::value_t::object); }
void MakeArray(Json& j, size_t reserve) {
  j = Json(Json::value_t::array);
  j.get_ref<Json::array_t&>().reserve(reserve);
}
Json* AddField(Json& object, const char* key) {
  auto [it, added] = object.get_ref<Json::object_t&>().emplace(key, nullptr);
  return added ? &it->second : nullptr;
}
Json& Append(Json& array) { return array.get_ref<Json::array_t&>().emplace_back(); }
Json& SetField(Json& object, const char* key) { return object[key]; }
JsonValue ToJson(const Json& v) { return v; }
JsonValue ToJson(Json&& v) { return std::move(v); }
JsonValue EmptyObject() { return Json(Json::value_t::object); }

// ---- expressions --------------------------------------------------------------------------------

const Json& Unwrap(const Json& v, const char* where) {
  if (v.is_null()) throw Defect(std::string("`!` on a null value at ") + where);
  return v;
}
JsonValue Coalesce(const Json& v, const Json& fallback) { return v.is_null() ? fallback : v; }
const Json& Member(const Json& object, const char* field, const char* where) {
  static const Json kMissing;
  if (object.is_null()) throw Defect(std::string("reading `.") + field + "` of null at " + where);
  if (!object.is_object()) {
    throw Defect(std::string("reading `.") + field + "` of a " + object.type_name() + " at " +
                 where);
  }
  auto it = object.find(field);
  return it == object.end() ? kMissing : *it;
}
void Overflow(const char* where) { throw Defect(std::string("integer overflow at ") + where); }
void DivisionByZero(const char* where) {
  throw Defect(std::string("division by zero at ") + where);
}
void DoesNotFit(const std::exception& e, const char* where) {
  throw Defect(std::string("a value does not fit its type at ") + where + ": " + ErrorText(e));
}
void MissingField(const Path& record, const char* field) {
  throw SchemaError(record.str(), "`" + record.str() + "` needs the field `" + field + "`");
}
void CheckInputObject(const Json& input, const char* name, bool nullable) {
  if (input.is_object() || (nullable && input.is_null())) return;
  throw SchemaError("input", std::string("the input of `") + name + "` must be an object");
}
void ReadValue(const Json& j, JsonValue& out, const Path&) { out = j; }

// ---- JSON from outside -------------------------------------------------------------------------

namespace {

// "16 MiB", "64 KiB", "100 bytes".
std::string SizeText(size_t bytes) {
  constexpr size_t kKiB = 1024, kMiB = kKiB * 1024;
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  if (bytes >= kKiB && bytes % kKiB == 0) return std::to_string(bytes / kKiB) + " KiB";
  return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
}

// The offset of the first byte that is not part of a well-formed UTF-8 character (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), or npos.
size_t FirstBadUtf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const Utf8Step step = Utf8At(text, i);
    if (step.length == 0) return i;
    if (step.good < step.length) return i + step.good < text.size() ? i + step.good : i;
    i += step.length;
  }
  return std::string_view::npos;
}

struct TooDeep {};

}  // namespace

void AppendUtf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

Utf8Step Utf8At(std::string_view text, size_t i) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const unsigned char b = s[i];
  if (b < 0x80) return {1, 1};
  // The length a lead byte announces, and the range its second byte must fall in: the narrower
  // ranges after E0, ED, F0 and F4 refuse overlong forms, UTF-16 surrogates and code points
  // above U+10FFFF (Unicode table 3-7).
  size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    length = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    length = 3;
    if (b == 0xE0) low = 0xA0;
    if (b == 0xED) high = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    length = 4;
    if (b == 0xF0) low = 0x90;
    if (b == 0xF4) high = 0x8F;
  }
  size_t good = length == 0 ? 0 : 1;
  while (good > 0 && good < length && i + good < text.size()) {
    const unsigned char c = s[i + good];
    const bool fits = good == 1 ? (c >= low && c <= high) : (c >= 0x80 && c <= 0xBF);
    if (!fits) break;
    ++good;
  }
  return {good, length};
}

namespace {

// Whether no `[` or `{` outside a string of `text` opens a container inside `limit` others: the
// most a parser of it could nest (a text that is not JSON fails no deeper than its valid start).
bool NestsLessThan(std::string_view text, int limit) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (inString) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        inString = false;
      }
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (depth >= limit) return false;
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return true;
}

}  // namespace

Json ParseExternalJson(std::string_view text, const std::string& what, size_t maxBytes,
                       const Json::parser_callback_t& keep) {
  if (text.size() > maxBytes) throw BadInput(what + " is larger than " + SizeText(maxBytes));
  if (const size_t bad = FirstBadUtf8(text); bad != std::string_view::npos) {
    size_t line = 1, lineStart = 0;
    for (size_t i = 0; i < bad; ++i) {
      if (text[i] == '\n') ++line, lineStart = i + 1;
    }
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
    throw BadInput(what + " is not UTF-8: the byte " + hex + " at line " + std::to_string(line) +
                   ", column " + std::to_string(bad - lineStart + 1) +
                   " is not part of a UTF-8 character (JSON text must be UTF-8)");
  }
  // The depth is checked as the parser opens each object or list, so a deep text never becomes
  // a deep tree (whose destructor and serializer recurse). A text that nests less than the limit
  // outside its strings (counted first, in one pass) cannot: nlohmann's parser without a callback
  // reads it, in a third less time (#33: the runner's `--input` of 10,000 items).
  if (!keep && NestsLessThan(text, kMaxExternalDepth)) {
    try {
      return Json::parse(text.begin(), text.end());
    } catch (const Json::exception& e) {
      throw BadInput(what + " is not valid JSON: " + ErrorText(e));
    }
  }
  const Json::parser_callback_t depth = [&keep](int level, Json::parse_event_t event,
                                                Json& parsed) {
    if ((event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start) &&
        level >= kMaxExternalDepth) {
      throw TooDeep{};
    }
    return keep ? keep(level, event, parsed) : true;
  };
  try {
    return Json::parse(text.begin(), text.end(), depth);
  } catch (const TooDeep&) {
    throw BadInput(what + " nests deeper than " + std::to_string(kMaxExternalDepth) + " levels");
  } catch (const Json::exception& e) {
    throw BadInput(what + " is not valid JSON: " + ErrorText(e));
  }
}

std::string ReadExternalFile(const std::string& path, const std::string& what, size_t maxBytes) {
  const std::string named = what + " `" + path + "`";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw BadInput(named + " does not exist");
    if (err == EISDIR) throw BadInput(named + " is a directory, not a file");
    throw BadInput("cannot read " + named + ": " + std::generic_category().message(err));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw BadInput(named + " is a directory, not a file");
    if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > maxBytes)
      throw BadInput(named + " is larger than " + SizeText(maxBytes));
  }
  std::string text;
  char buffer[65536];
  // One byte more than the limit tells a file at the limit from a longer one.
  while (text.size() <= maxBytes) {
    const size_t want = std::min(sizeof buffer, maxBytes + 1 - text.size());
    const ssize_t got = ::read(fd, buffer, want);
    if (got < 0) {
      const int err = errno;
      if (err == EINTR) continue;
      if (err == EISDIR) throw BadInput(named + " is a directory, not a file");
      throw BadInput("cannot read " + named + ": " + std::generic_category().message(err));
    }
    if (got == 0) break;
    text.append(buffer, static_cast<size_t>(got));
  }
  if (text.size() > maxBytes) throw BadInput(named + " is larger than " + SizeText(maxBytes));
  return text;
}

Json ReadExternalJsonFile(const std::string& path, const std::string& what, size_t maxBytes) {
  return ParseExternalJson(ReadExternalFile(path, what, maxBytes), what + " `" + path + "`",
                           maxBytes);
}

std::string Printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    char buf[8];
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else if (c == 0xe2 && i + 2 < text.size() &&
               ((text[i + 1] == '\x80' && (static_cast<unsigned char>(text[i + 2]) == 0xa8 ||
                                           static_cast<unsigned char>(text[i + 2]) == 0xa9 ||
                                           (static_cast<unsigned char>(text[i + 2]) >= 0xaa &&
                                            static_cast<unsigned char>(text[i + 2]) <= 0xae))) ||
                (text[i + 1] == '\x81' && static_cast<unsigned char>(text[i + 2]) >= 0xa6 &&
                 static_cast<unsigned char>(text[i + 2]) <= 0xa9))) {
      // U+2028/2029 (line and paragraph separators) and the bidirectional controls
      // (U+202A–202E, U+2066–2069): they can break or reorder what a person reads.
      const unsigned cp = 0x2000u + ((static_cast<unsigned char>(text[i + 1]) & 0x3fu) << 6) +
                          (static_cast<unsigned char>(text[i + 2]) & 0x3fu);
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      out += buf;
      i += 2;
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      // A C1 control (U+0080–U+009F): some terminals take U+009B as an escape sequence.
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(text[i + 1]));
      out += buf;
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace jr2rt
