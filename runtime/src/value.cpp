#include "jr2/value.h"

namespace jr2rt {

namespace {
std::string WithArticle(const std::string& type) {
  if (type == "null") return type;
  const bool vowel = !type.empty() && std::string("aeiou").find(type[0]) != std::string::npos;
  return (vowel ? "an " : "a ") + type;
}
}  // namespace

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

Json At(const Json& value, const Json& index, const char* where) {
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
    return it == value.end() ? Json(nullptr) : *it;
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

std::string Str(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

void CheckLiteral(const std::string& value, std::initializer_list<const char*> allowed,
                  const char* where) {
  std::string list;
  for (const char* a : allowed) {
    if (value == a) return;
    if (!list.empty()) list += ", ";
    list += std::string("\"") + a + "\"";
  }
  throw std::invalid_argument(std::string("`") + where + "` is \"" + value +
                              "\", but it must be one of " + list);
}

}  // namespace jr2rt
