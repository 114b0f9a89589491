// The OpenAI-compatible Agent harness's exchange with its model server (agents.h,
// docs/runtime.md, Agents). One try at a time, on an effect thread: Run::askModel takes the
// answer on the strand and waits out a back-off on the run's executor.

#include "run/agents.h"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <utility>
#include <vector>

#include "jr2/stdlib.h"

namespace jr2rt {

namespace {

const std::string kKeyShown = "[the API key]";

// The UTF-8 bytes of code point `cp`.
std::string Utf8Of(unsigned cp) {
  std::string out;
  AppendUtf8(cp, out);
  return out;
}

// The JSON escape at `text[i]` (a backslash): the bytes it stands for in `out`, and the index
// after it; 0 when there is none. Up to 8 backslashes may lead it (text escaped more than once:
// `arguments` is JSON inside a JSON string), and a surrogate pair is one character. Bounded, so a
// hostile text of backslashes costs linear time.
size_t EscapeAt(const std::string& text, size_t i, std::string& out) {
  constexpr size_t kMaxRun = 8;
  const size_t n = text.size();
  auto run = [&](size_t from) {
    size_t j = from;
    while (j < n && text[j] == '\\' && j - from < kMaxRun) ++j;
    return j;
  };
  auto hex4 = [&](size_t at, unsigned& v) {
    if (at + 4 > n) return false;
    v = 0;
    for (size_t k = at; k < at + 4; ++k) {
      const char c = text[k];
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return false;
      v = v * 16 + static_cast<unsigned>(d);
    }
    return true;
  };
  size_t j = run(i);
  if (j == i || j >= n) return 0;
  if (text[j] == 'u') {
    unsigned cp = 0;
    if (!hex4(j + 1, cp)) return 0;
    j += 5;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      const size_t k = run(j);
      unsigned low = 0;
      if (k == j || k >= n || text[k] != 'u' || !hex4(k + 1, low) || low < 0xDC00 || low > 0xDFFF)
        return 0;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      j = k + 5;
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      return 0;
    }
    out = Utf8Of(cp);
    return j;
  }
  static constexpr char kFrom[] = "\"/bfnrt";
  static constexpr char kTo[] = "\"/\b\f\n\r\t";
  for (size_t k = 0; k + 1 < sizeof kFrom; ++k) {
    if (text[j] == kFrom[k]) {
      out.assign(1, kTo[k]);
      return j + 1;
    }
  }
  return 0;
}

// The length of an occurrence of `key` at `text[at]`, each of its characters there as it is or as
// a JSON escape; 0 when there is none.
size_t KeyAt(const std::string& text, size_t at, const std::string& key) {
  size_t i = at;
  size_t k = 0;
  std::string piece;
  while (k < key.size()) {
    if (i >= text.size()) return 0;
    if (text[i] == '\\') {
      if (const size_t next = EscapeAt(text, i, piece); next != 0) {
        if (key.compare(k, piece.size(), piece) != 0) return 0;
        k += piece.size();
        i = next;
        continue;
      }
    }
    if (text[i] != key[k]) return 0;
    ++i;
    ++k;
  }
  return i - at;
}

// Text from the server, fit for the feed: valid UTF-8, one line, at most `max` bytes, and never
// the key (a server that echoes the request's headers must not put the key on the feed). The
// key is cut before the text is: a cut never leaves a part of it.
std::string Excerpt(const ModelServer& server, std::string text, size_t max = 200) {
  CutKey(server.apiKey, text);
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  if (text.size() > max) {
    size_t cut = max;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text = text.substr(0, cut) + "…";
  }
  return ValidUtf8(text);
}

// Every string in `value`, and every object key, with the key cut out: what the harness keeps of
// an answer goes to the conversation, the feed, the Gate (and so the run's output and store).
void ScrubKey(const ModelServer& server, Json& value) {
  if (server.apiKey.empty()) return;
  if (value.is_string()) {
    std::string text = value.get<std::string>();
    if (CutKey(server.apiKey, text)) value = std::move(text);
  } else if (value.is_object()) {
    std::vector<std::pair<std::string, std::string>> renamed;
    for (auto it = value.begin(); it != value.end(); ++it) {
      ScrubKey(server, it.value());
      std::string name = it.key();
      if (CutKey(server.apiKey, name)) renamed.emplace_back(it.key(), std::move(name));
    }
    for (auto& [from, to] : renamed) {
      Json moved = std::move(value[from]);
      value.erase(from);
      value[to] = std::move(moved);
    }
  } else if (value.is_array()) {
    for (auto& item : value) ScrubKey(server, item);
  }
}

// A `Retry-After`: seconds, or an HTTP date; -1 when it is neither.
int64_t RetryAfterMs(const std::string& value) {
  if (value.empty()) return -1;
  char* end = nullptr;
  const long long secs = std::strtoll(value.c_str(), &end, 10);
  if (end != value.c_str() && *end == '\0' && secs >= 0) return secs * 1000;
  std::tm tm{};
  if (strptime(value.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm) == nullptr) return -1;
  const int64_t at = static_cast<int64_t>(timegm(&tm)) * 1000;
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  return at > now ? at - now : 0;
}

std::string Seconds(int64_t ms) {
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  return std::to_string(ms) + " ms";
}

// What of a chat completion is built while it is parsed: `choices[0].message`'s role, content
// and first tool call (its id, type, and its function's name and arguments). Everything else is
// dropped as the parser reaches it (ParseExternalJson's `keep`): an answer of 100,000 tool calls
// builds one, and counts the others.
class CompletionFilter {
 public:
  size_t droppedCalls = 0;

  bool operator()(int depth, Json::parse_event_t event, Json& parsed) {
    using E = Json::parse_event_t;
    const auto d = static_cast<size_t>(depth);
    // The parser reports no end of a container it dropped: its depth says where it is.
    if (event == E::object_end || event == E::array_end) {
      if (stack_.size() > d) stack_.resize(d);
      return true;
    }
    if (event == E::key) {
      if (d == 0 || stack_.size() < d) return false;
      Frame& parent = stack_[d - 1];
      parent.key = parsed.is_string() ? parsed.get<std::string>() : std::string();
      return roleIn(parent, /*count=*/false) != Role::kDrop;
    }
    if (stack_.size() > d) stack_.resize(d);
    Role role = Role::kRoot;
    if (d > 0) {
      if (stack_.size() < d) return false;
      role = roleIn(stack_[d - 1], /*count=*/true);
    }
    if (event == E::object_start || event == E::array_start)
      stack_.push_back({role, event == E::array_start, {}, 0});
    return role != Role::kDrop;
  }

 private:
  enum class Role { kRoot, kChoices, kChoice, kMessage, kCalls, kCall, kFunction, kWhole, kDrop };
  struct Frame {
    Role role;
    bool array;
    std::string key;  // an object's key being read
    size_t index;     // an array's elements so far
  };

  // The role of the element being read in `parent` (its key, or its index, counted when `count`).
  Role roleIn(Frame& parent, bool count) {
    const std::string& k = parent.key;
    size_t index = 0;
    if (parent.array) {
      index = parent.index;
      if (count) ++parent.index;
    }
    switch (parent.role) {
      case Role::kRoot:
        return !parent.array && k == "choices" ? Role::kChoices : Role::kDrop;
      case Role::kChoices:
        return parent.array && index == 0 ? Role::kChoice : Role::kDrop;
      case Role::kChoice:
        return !parent.array && k == "message" ? Role::kMessage : Role::kDrop;
      case Role::kMessage:
        if (parent.array) return Role::kDrop;
        if (k == "tool_calls") return Role::kCalls;
        return k == "role" || k == "content" ? Role::kWhole : Role::kDrop;
      case Role::kCalls:
        if (!parent.array) return Role::kDrop;
        if (index == 0) return Role::kCall;
        if (count) ++droppedCalls;
        return Role::kDrop;
      case Role::kCall:
        if (parent.array) return Role::kDrop;
        if (k == "function") return Role::kFunction;
        return k == "id" || k == "type" ? Role::kWhole : Role::kDrop;
      case Role::kFunction:
        return !parent.array && (k == "name" || k == "arguments") ? Role::kWhole : Role::kDrop;
      case Role::kWhole:
        return Role::kWhole;
      case Role::kDrop:
        return Role::kDrop;
    }
    return Role::kDrop;
  }

  std::vector<Frame> stack_;
};

// What a 200's body says: a pick, a bad pick, text, or (null) not a chat completion, with why.
Json ReadCompletion(const ModelServer& server, const std::string& body, std::string& why) {
  // Bounded as any JSON from outside (ParseExternalJson: 8 MiB here, 512 levels, UTF-8): a
  // hostile server's body nested a million deep is refused at the bound, naming it.
  CompletionFilter filter;
  Json answer;
  try {
    answer = ParseExternalJson(body, "its body", kMaxCompletionBytes,
                               [&filter](int depth, Json::parse_event_t event, Json& parsed) {
                                 return filter(depth, event, parsed);
                               });
  } catch (const BadInput& e) {
    const std::string m = e.what();
    why = m.find("is not valid JSON") != std::string::npos
              ? "its body is not JSON: " + Excerpt(server, body, 80)
              : Excerpt(server, m);
    return nullptr;
  }
  Json* choices = answer.is_object() && answer.contains("choices") ? &answer["choices"] : nullptr;
  if (choices == nullptr || !choices->is_array() || choices->empty() ||
      !(*choices)[0].is_object() || !(*choices)[0].contains("message") ||
      !(*choices)[0]["message"].is_object()) {
    why = "its body has no `choices[0].message`";
    return nullptr;
  }
  Json message = std::move((*choices)[0]["message"]);
  ScrubKey(server, message);
  // What the conversation keeps of the answer: its role, content and one call, nothing more.
  Json kept = {{"role", "assistant"}, {"content", nullptr}};
  if (message.contains("content")) kept["content"] = std::move(message["content"]);
  const Json* calls = message.contains("tool_calls") ? &message["tool_calls"] : nullptr;
  if (calls == nullptr || !calls->is_array() || calls->empty()) {
    const Json& content = kept["content"];
    std::string text = Excerpt(server, content.is_string() ? content.get<std::string>() : "", 400);
    return {{"kind", "text"}, {"text", std::move(text)}, {"message", std::move(kept)}};
  }
  const Json& call = (*calls)[0];
  if (!call.is_object() || !call.contains("function") || !call["function"].is_object() ||
      !call["function"].value("name", Json()).is_string()) {
    why = "its tool call has no `function.name`";
    return nullptr;
  }
  const size_t count = calls->size() + filter.droppedCalls;
  const Json& function = call["function"];
  const std::string event = function["name"].get<std::string>();
  const std::string callId =
      call.value("id", Json()).is_string() ? call["id"].get<std::string>() : std::string("call_0");
  auto keptWith = [&](Json arguments) {
    kept["tool_calls"] =
        Json::array({{{"id", callId},
                      {"type", "function"},
                      {"function", {{"name", event}, {"arguments", std::move(arguments)}}}}});
    return std::move(kept);
  };
  // `arguments` is JSON text (OpenAI); some servers give the object itself. Its text was cut of
  // the key as written; once parsed, its strings and keys are cut again as decoded.
  Json arguments = function.value("arguments", Json::object());
  std::string text;
  if (arguments.is_string()) {
    text = arguments.get<std::string>();
    try {
      arguments = text.empty() ? Json::object() : ParseExternalJson(text, "its arguments");
    } catch (const BadInput& e) {
      const std::string m = e.what();
      return {{"kind", "bad-arguments"},
              {"event", Excerpt(server, event, 80)},
              {"why", m.find("is not valid JSON") != std::string::npos
                          ? "its arguments are not JSON: " + Excerpt(server, text, 80)
                          : Excerpt(server, m)},
              {"message", keptWith(text)},
              {"callId", callId},
              {"calls", count}};
    }
  }
  ScrubKey(server, arguments);
  if (!arguments.is_object()) {
    return {{"kind", "bad-arguments"},
            {"event", Excerpt(server, event, 80)},
            {"why", "its arguments are not a JSON object"},
            {"message", keptWith(arguments.dump())},
            {"callId", callId},
            {"calls", count}};
  }
  Json said = keptWith(arguments.dump());
  return {{"kind", "pick"},
          {"event", event},
          {"payload", std::move(arguments)},
          {"message", std::move(said)},
          {"callId", callId},
          {"calls", count}};
}

}  // namespace

bool CutKey(const std::string& key, std::string& text) {
  if (key.empty()) return false;
  std::string out;
  size_t copied = 0;
  for (size_t at = 0; at < text.size();) {
    const char c = text[at];
    const size_t length = c == key[0] || c == '\\' ? KeyAt(text, at, key) : 0;
    if (length == 0) {
      ++at;
      continue;
    }
    out.append(text, copied, at - copied);
    out += kKeyShown;
    at += length;
    copied = at;
  }
  if (copied == 0) return false;
  out.append(text, copied, std::string::npos);
  text = std::move(out);
  return true;
}

ModelServer ModelServerFromEnv() {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v == nullptr ? "" : v);
  };
  ModelServer server;
  std::string base = env("JR2_AGENT_BASE_URL");
  if (base.empty()) {
    throw BadInput(
        "`--agents openai` needs the model server's address in JR2_AGENT_BASE_URL; set it, for "
        "example `export JR2_AGENT_BASE_URL=http://127.0.0.1:8080/v1` (llama.cpp's server)");
  }
  // A hosted API over https (its certificate verified against the system's CA store, or
  // SSL_CERT_FILE), or a local server over http.
  const std::string scheme = base.rfind("https://", 0) == 0 ? "https://" : "http://";
  if (base.rfind(scheme, 0) != 0 || base.size() == scheme.size()) {
    throw BadInput("JR2_AGENT_BASE_URL is `" + ValidUtf8(base) +
                   "`, which is not an http:// or https:// address; write it as "
                   "`https://HOST/v1` (a hosted API) or `http://HOST:PORT/v1` (a local server)");
  }
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string v1 = "/v1";
  const bool hasV1 = base.size() >= v1.size() && base.compare(base.size() - 3, 3, v1) == 0;
  server.url = base + (hasV1 ? "" : "/v1") + "/chat/completions";
  try {
    CheckHttpUrl(server.url);
  } catch (const Failure& f) {
    throw BadInput("JR2_AGENT_BASE_URL is `" + ValidUtf8(base) + "`: the model's address " +
                   ValidUtf8(f.reason()) + "; write it as `https://HOST/v1` or " +
                   "`http://HOST:PORT/v1`");
  }
  server.shown = base.substr(scheme.size());
  if (const size_t slash = server.shown.find('/'); slash != std::string::npos)
    server.shown.resize(slash);
  if (server.shown.find('@') != std::string::npos) {
    throw BadInput(
        "JR2_AGENT_BASE_URL carries credentials; give the key in JR2_AGENT_API_KEY instead");
  }
  server.model = env("JR2_AGENT_MODEL");
  if (server.model.empty()) {
    throw BadInput(
        "`--agents openai` needs the model's name in JR2_AGENT_MODEL (what the server calls "
        "it, as in `curl $JR2_AGENT_BASE_URL/models`); set it");
  }
  server.apiKey = env("JR2_AGENT_API_KEY");
  if (server.apiKey.find_first_of("\r\n") != std::string::npos) {
    throw BadInput("JR2_AGENT_API_KEY holds a line break; give the key alone");
  }
  if (const std::string t = env("JR2_AGENT_TIMEOUT"); !t.empty()) {
    char* end = nullptr;
    const long long secs = std::strtoll(t.c_str(), &end, 10);
    if (end == t.c_str() || *end != '\0' || secs < 1 || secs > 3600) {
      throw BadInput("JR2_AGENT_TIMEOUT is `" + ValidUtf8(t) +
                     "`; it is a request's deadline in seconds, from 1 to 3600");
    }
    server.timeoutMs = secs * 1000;
  }
  return server;
}

Json ModelMessages(const Json& definition, const Json& meta) {
  Json messages = Json::array();
  const Json instructions = definition.value("instructions", Json());
  if (instructions.is_string() && !instructions.get<std::string>().empty())
    messages.push_back({{"role", "system"}, {"content", instructions}});
  std::string user;
  Json rest = meta.is_object() ? meta : Json::object();
  if (meta.is_object() && meta.value("prompt", Json()).is_string()) {
    user = meta["prompt"].get<std::string>();
    rest.erase("prompt");
  } else if (!meta.is_null() && !meta.is_object()) {
    rest = {{"meta", meta}};
  }
  if (!rest.empty()) user += (user.empty() ? "" : "\n\n") + rest.dump(2);
  if (user.empty()) user = "Pick one of the tools.";
  messages.push_back({{"role", "user"}, {"content", user}});
  return messages;
}

Json ModelRequest(const ModelServer& server, const Json& messages, const Json& menu) {
  Json tools = Json::array();
  for (const Json& item : menu) {
    Json parameters = item.value("schema", Json());
    if (!parameters.is_object()) parameters = {{"type", "object"}, {"properties", Json::object()}};
    parameters.erase("$schema");  // some servers refuse a dialect they do not know
    Json function = {{"name", item.value("event", "")}, {"parameters", std::move(parameters)}};
    const std::string description = item.value("description", "");
    if (!description.empty()) function["description"] = description;
    tools.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return {{"model", server.model},
          {"messages", messages},
          {"tools", std::move(tools)},
          {"tool_choice", "required"}};
}

ModelTransport HttpTransport(const ModelServer& server) {
  ModelTransport t;
  t.post = [server](const std::string& body, int64_t timeoutMs) {
    std::vector<std::pair<std::string, std::string>> headers;
    if (!server.apiKey.empty()) headers.emplace_back("Authorization", "Bearer " + server.apiKey);
    return HttpCall("POST", server.url, body, headers, timeoutMs, kMaxCompletionBytes);
  };
  return t;
}

Json TryModel(const ModelServer& server, const std::string& body, int attempt, int64_t backoffMs,
              const ModelTransport& transport) {
  const int attempts = std::max(1, server.attempts);
  int64_t wait = std::max<int64_t>(0, backoffMs);
  std::string why;
  Json data = {{"attempt", attempt}, {"attempts", attempts}};
  try {
    const HttpReply reply = transport.post(body, server.timeoutMs);
    data["status"] = reply.status;
    if (reply.status == 200) {
      Json answer = ReadCompletion(server, reply.body, why);
      if (!answer.is_null()) return answer;
      why.insert(0, "the server's answer is not a chat completion: ");
    } else if (reply.status == 429) {
      const int64_t asked = RetryAfterMs(reply.retryAfter);
      if (asked >= 0) wait = std::min(asked, server.maxRetryAfterMs);
      why = "the server is rate-limiting (429)" +
            (asked >= 0 ? ", and its Retry-After asks for " + Seconds(asked)
                        : std::string(", with no Retry-After"));
    } else if (reply.status >= 500) {
      why = "the server answered " + std::to_string(reply.status) + ": " +
            Excerpt(server, reply.body, 120);
    } else {
      // 400, 401, 404 …: the request or the key is wrong; asking again changes nothing.
      why = "the server refused the request with " + std::to_string(reply.status) + ": " +
            Excerpt(server, reply.body, 160);
      return {{"kind", "failed"}, {"why", why}};
    }
  } catch (const Failure& f) {
    why = Excerpt(server, f.reason(), 240);
    if (why.rfind("no answer within", 0) == 0) why.insert(0, "the server gave ");
    // A certificate refused (not trusted, or not for this host): asking again changes nothing.
    if (f.detail().is_object() && f.detail().value("certificate", false))
      return {{"kind", "failed"}, {"why", why}};
  } catch (const std::exception& e) {
    why = Excerpt(server, ErrorText(e), 200);
  }
  if (attempt >= attempts) {
    return {{"kind", "failed"},
            {"why", why + (attempts > 1 ? " (" + std::to_string(attempts) + " tries)" : "")}};
  }
  data["why"] = why;
  data["waitMs"] = wait;
  return {{"kind", "retry"},
          {"why", why},
          {"line", why + "; asking again in " + Seconds(wait) + " (try " +
                       std::to_string(attempt + 1) + " of " + std::to_string(attempts) + ")"},
          {"data", std::move(data)},
          {"waitMs", wait},
          {"attempt", attempt + 1},
          {"backoffMs", std::max<int64_t>(0, backoffMs) * 2}};
}

}  // namespace jr2rt
