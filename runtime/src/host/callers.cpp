#include "jr2/callers.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>

#include "jr2/auth.h"

namespace jr2rt {

const char* ToString(Scope s) {
  switch (s) {
    case Scope::kStart:
      return "start";
    case Scope::kRead:
      return "read";
    case Scope::kAnswer:
      return "answer";
    case Scope::kCancel:
      return "cancel";
    case Scope::kMetrics:
      return "metrics";
  }
  return "?";
}

namespace {

[[noreturn]] void Refuse(const std::string& where, const std::string& path,
                         const std::string& what) {
  throw BadInput(where + ": `" + path + "` " + what);
}

void OnlyFields(const Json& j, const std::string& where, const std::string& path,
                const std::vector<std::string>& fields) {
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const auto& f : fields) known = known || f == key;
    if (known) continue;
    std::string what = "has no field `" + key + "`";
    if (const std::string close = ClosestName(key, fields); !close.empty())
      what += "; did you mean `" + close + "`?";
    what += " Its fields are ";
    for (size_t i = 0; i < fields.size(); ++i) what += (i ? ", " : "") + fields[i];
    Refuse(where, path, what);
  }
}

std::string StringField(const Json& j, const std::string& where, const std::string& path,
                        const char* field) {
  auto it = j.find(field);
  if (it == j.end() || !it->is_string() || it->get<std::string>().empty())
    Refuse(where, path, std::string("needs the field `") + field + "`, a non-empty string");
  return it->get<std::string>();
}

}  // namespace

bool GlobMatches(std::string_view pattern, std::string_view text) {
  // Iterative, with one backtrack point: linear in practice, never exponential.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

Callers Callers::Parse(const Json& doc, const std::string& where) {
  Callers out;
  if (!doc.is_object()) throw BadInput(where + " is not a JSON object: { \"callers\": [ … ] }");
  OnlyFields(doc, where, "callers file", {"callers", "hooks"});
  const Json callers = doc.value("callers", Json::array());
  if (!callers.is_array()) Refuse(where, "callers", "must be a list");
  std::set<std::string> names, hashes;
  for (size_t i = 0; i < callers.size(); ++i) {
    const Json& c = callers[i];
    const std::string path = "callers[" + std::to_string(i) + "]";
    if (!c.is_object()) Refuse(where, path, "must be an object");
    OnlyFields(c, where, path, {"name", "token_sha256", "scopes", "gates"});
    Caller caller;
    caller.name = StringField(c, where, path, "name");
    if (!names.insert(caller.name).second)
      Refuse(where, path + ".name", "is `" + caller.name + "`, which an earlier caller has");
    caller.tokenSha256 = StringField(c, where, path, "token_sha256");
    bool hex = caller.tokenSha256.size() == 64;
    for (char ch : caller.tokenSha256) hex = hex && std::strchr("0123456789abcdef", ch) && ch;
    if (!hex) {
      Refuse(where, path + ".token_sha256",
             "must be 64 lowercase hex digits: the SHA-256 of the token (`printf %s TOKEN | "
             "sha256sum`), never the token itself");
    }
    if (!hashes.insert(caller.tokenSha256).second)
      Refuse(where, path + ".token_sha256", "is the hash of a token an earlier caller has");
    const Json scopes = c.value("scopes", Json::object());
    if (!scopes.is_object()) Refuse(where, path + ".scopes", "must map workflows to scopes");
    for (const auto& [workflow, list] : scopes.items()) {
      std::string at = path;
      at += ".scopes.";
      at += workflow;
      if (!list.is_array()) Refuse(where, at, "must be a list of scopes");
      for (const Json& s : list) {
        const std::string name = s.is_string() ? s.get<std::string>() : s.dump();
        Scope scope;
        if (name == "start") {
          scope = Scope::kStart;
        } else if (name == "read") {
          scope = Scope::kRead;
        } else if (name == "answer") {
          scope = Scope::kAnswer;
        } else if (name == "cancel") {
          scope = Scope::kCancel;
        } else if (name == "metrics") {
          scope = Scope::kMetrics;
        } else {
          std::string what = "has the scope `" + name +
                             "`; the scopes are start, read, answer, cancel and metrics";
          if (const std::string near =
                  ClosestName(name, {"start", "read", "answer", "cancel", "metrics"});
              !near.empty()) {
            what = "has the scope `" + name + "`; did you mean `";
            what += near;
            what += "`?";
          }
          Refuse(where, at, what);
        }
        caller.scopes[workflow].insert(scope);
      }
    }
    const Json gates = c.value("gates", Json::array());
    if (!gates.is_array()) Refuse(where, path + ".gates", "must be a list of Gate patterns");
    for (const Json& g : gates) {
      if (!g.is_string() || g.get<std::string>().empty())
        Refuse(where, path + ".gates", "must hold Gate patterns such as \"*.review\"");
      caller.gates.push_back(g.get<std::string>());
    }
    out.callers_.push_back(std::move(caller));
  }
  const Json hooks = doc.value("hooks", Json::object());
  if (!hooks.is_object()) Refuse(where, "hooks", "must map hook names to { \"secret_env\": VAR }");
  for (const auto& [name, h] : hooks.items()) {
    const std::string path = "hooks." + name;
    if (!h.is_object()) Refuse(where, path, "must be { \"secret_env\": VAR }");
    OnlyFields(h, where, path, {"secret_env"});
    out.hooks_[name] = HookConfig{StringField(h, where, path, "secret_env")};
  }
  return out;
}

std::string NewToken() {
  std::random_device rd;
  static const char* hex = "0123456789abcdef";
  std::string token;
  for (int i = 0; i < 32; ++i) {
    const unsigned v = rd() & 0xff;
    token += hex[v >> 4];
    token += hex[v & 15];
  }
  return token;
}

std::string AddCaller(const std::string& path, const std::string& name, const Json& scopes,
                      const std::vector<std::string>& gates) {
  struct stat st {};
  Json doc = {{"callers", Json::array()}};
  const bool exists = lstat(path.c_str(), &st) == 0;
  if (exists) {
    if (!S_ISREG(st.st_mode))
      throw BadInput("the callers file `" + path + "` is not a plain file; give another path");
    doc = ReadExternalJsonFile(path, "the callers file");
    Callers::Parse(doc, "the callers file `" + path + "`");  // as it is: it must be sound
  }
  std::string token = NewToken();
  Json caller = {{"name", name}, {"token_sha256", Sha256Hex(token)}, {"scopes", scopes}};
  if (!gates.empty()) caller["gates"] = gates;
  if (!doc.contains("callers") || !doc["callers"].is_array()) doc["callers"] = Json::array();
  doc["callers"].push_back(caller);
  Callers::Parse(doc, "the Caller `" + name + "` (not added)");  // a duplicate name, a bad scope
  const std::string part = path + ".part-" + std::to_string(getpid());
  const int out =
      ::open(part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
  if (out < 0)
    throw BadInput("cannot write the callers file `" + path + "`: " + std::strerror(errno));
  const std::string text = doc.dump(2) + "\n";
  const bool written = ::write(out, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool synced = written && ::fsync(out) == 0;
  ::close(out);
  if (!synced || ::rename(part.c_str(), path.c_str()) != 0) {
    const int why = errno;
    ::unlink(part.c_str());
    throw BadInput("cannot write the callers file `" + path + "`: " + std::strerror(why));
  }
  return token;
}

Callers Callers::Load(const std::string& path) {
  return Parse(ReadExternalJsonFile(path, "the callers file"), "the callers file `" + path + "`");
}

void Callers::addInstance(const std::string& token) {
  Caller c;
  c.name = "instance";
  c.tokenSha256 = Sha256Hex(token);
  c.instance = true;
  callers_.push_back(std::move(c));
}

const Caller* Callers::identify(std::string_view token) const {
  if (token.empty()) return nullptr;
  const std::string hash = Sha256Hex(token);
  const Caller* found = nullptr;
  for (const Caller& c : callers_) {
    // Every hash is compared, found or not: the time says nothing of which caller it was.
    if (ConstantTimeEquals(hash, c.tokenSha256) && found == nullptr) found = &c;
  }
  return found;
}

bool Callers::MayAnswerGate(const Caller& caller, const std::string& gate) {
  if (caller.instance || caller.gates.empty()) return true;
  for (const auto& pattern : caller.gates) {
    if (GlobMatches(pattern, gate)) return true;
  }
  return false;
}

Callers::Decision Callers::authorize(std::string_view token, const std::string& workflow,
                                     Scope scope, const std::string& gate) const {
  const Caller* c = identify(token);
  if (c == nullptr) return Decision::kUnauthorized;
  return Allows(*c, workflow, scope, gate) ? Decision::kAllowed : Decision::kForbidden;
}

bool Callers::Allows(const Caller& c, const std::string& workflow, Scope scope,
                     const std::string& gate) {
  if (c.instance) return true;
  bool has = false;
  for (const char* key : {workflow.c_str(), "*"}) {
    auto it = c.scopes.find(key);
    if (it != c.scopes.end() && it->second.count(scope) != 0) has = true;
  }
  if (!has) return false;
  return scope != Scope::kAnswer || gate.empty() || MayAnswerGate(c, gate);
}

bool Callers::HasAnywhere(const Caller& c, Scope scope) {
  if (c.instance) return true;
  for (const auto& [workflow, scopes] : c.scopes) {
    if (scopes.count(scope) != 0) return true;
  }
  return false;
}

std::string InstanceToken(const std::string& storePath) {
  return InstanceToken(storePath, /*make=*/true);
}

std::string InstanceToken(const std::string& storePath, bool make) {
  const std::string path = storePath + ".token";
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd >= 0) {
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw BadInput("the instance token `" + path + "` is not a plain file; remove it");
    }
    if ((st.st_mode & 077) != 0) {
      ::close(fd);
      throw BadInput("the instance token `" + path +
                     "` can be read by others than its owner; `chmod 600` it, or remove it and "
                     "serve makes a new one");
    }
    char buf[128];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    std::string token(buf, n > 0 ? static_cast<size_t>(n) : 0);
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
    bool ok = token.size() == 64;
    for (char ch : token) ok = ok && std::strchr("0123456789abcdef", ch) && ch;
    if (!ok) throw BadInput("the instance token `" + path + "` is not a token; remove it");
    return token;
  }
  if (errno == ELOOP)
    throw BadInput("the instance token `" + path + "` is a symbolic link; remove it");
  if (errno != ENOENT)
    throw BadInput("cannot read the instance token `" + path + "`: " + std::strerror(errno));
  if (!make) {
    throw BadInput("there is no instance token `" + path +
                   "`: set JR2_TOKEN to a Caller's token, or give the --store that serve uses "
                   "(serve writes `<store>.token` when it starts)");
  }
  const std::string token = NewToken();
  const int out =
      ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
  if (out < 0) {
    if (errno == EEXIST) return InstanceToken(storePath, false);  // another serve made it meanwhile
    throw BadInput("cannot write the instance token `" + path + "`: " + std::strerror(errno));
  }
  const std::string line = token + "\n";
  const bool written = ::write(out, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  ::close(out);
  if (!written) throw BadInput("cannot write the instance token `" + path + "`");
  return token;
}

}  // namespace jr2rt
