// The OpenAI-compatible Agent harness's exchange with its model server (agents.h,
// docs/runtime.md, Agents). Blocking, on an effect thread: Run::askModel takes the answer on the
// strand.

#include "agents.h"

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <thread>

#include "jr2/stdlib.h"

namespace jr2rt {

namespace {

// Text from the server, fit for the feed: valid UTF-8, one line, at most `max` bytes, and never
// the key (a server that echoes the request's headers must not put the key on the feed).
// `text` with every occurrence of the key replaced; whether there was one.
bool CutKey(const ModelServer& server, std::string& text) {
  bool cut = false;
  if (server.apiKey.empty()) return cut;
  for (size_t at = text.find(server.apiKey); at != std::string::npos;
       at = text.find(server.apiKey, at)) {
    text.replace(at, server.apiKey.size(), "[the API key]");
    cut = true;
  }
  return cut;
}

std::string Excerpt(const ModelServer& server, std::string text, size_t max = 200) {
  CutKey(server, text);
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

// Every string in `value` with the key cut out (the assistant's message is kept for the Turn's
// conversation: a server that echoes the key into it must not get it into memory the run keeps).
void ScrubKey(const ModelServer& server, Json& value) {
  if (server.apiKey.empty()) return;
  if (value.is_string()) {
    std::string text = value.get<std::string>();
    if (CutKey(server, text)) value = text;
  } else if (value.is_structured()) {
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

// What a 200's body says: a pick, a bad pick, text, or (empty) not a chat completion, with why.
Json ReadCompletion(const ModelServer& server, const std::string& body, std::string& why) {
  // Bounded as any JSON from outside (ParseExternalJson: 16 MiB, 512 levels, UTF-8): a hostile
  // server's body nested a million deep is refused at the bound, naming it.
  Json answer;
  try {
    answer = ParseExternalJson(body, "its body");
  } catch (const BadInput& e) {
    const std::string m = e.what();
    why = m.find("is not valid JSON") != std::string::npos
              ? "its body is not JSON: " + Excerpt(server, body, 80)
              : Excerpt(server, m);
    return nullptr;
  }
  const Json* choices =
      answer.is_object() && answer.contains("choices") ? &answer["choices"] : nullptr;
  if (choices == nullptr || !choices->is_array() || choices->empty() ||
      !(*choices)[0].is_object() || !(*choices)[0].contains("message") ||
      !(*choices)[0]["message"].is_object()) {
    why = "its body has no `choices[0].message`";
    return nullptr;
  }
  Json message = (*choices)[0]["message"];
  ScrubKey(server, message);
  const Json calls = message.value("tool_calls", Json());
  if (!calls.is_array() || calls.empty()) {
    const Json content = message.value("content", Json());
    return {{"kind", "text"},
            {"text", Excerpt(server, content.is_string() ? content.get<std::string>() : "", 400)},
            {"message", message}};
  }
  const Json& call = calls[0];
  if (!call.is_object() || !call.contains("function") || !call["function"].is_object() ||
      !call["function"].value("name", Json()).is_string()) {
    why = "its tool call has no `function.name`";
    return nullptr;
  }
  const Json& function = call["function"];
  const std::string event = function["name"].get<std::string>();
  const std::string callId =
      call.value("id", Json()).is_string() ? call["id"].get<std::string>() : std::string("call_0");
  // `arguments` is JSON text (OpenAI); some servers give the object itself.
  Json arguments = function.value("arguments", Json::object());
  if (arguments.is_string()) {
    const std::string text = arguments.get<std::string>();
    try {
      arguments = text.empty() ? Json::object() : ParseExternalJson(text, "its arguments");
    } catch (const BadInput& e) {
      const std::string m = e.what();
      return {{"kind", "bad-arguments"},
              {"event", Excerpt(server, event, 80)},
              {"why", m.find("is not valid JSON") != std::string::npos
                          ? "its arguments are not JSON: " + Excerpt(server, text, 80)
                          : Excerpt(server, m)},
              {"message", message},
              {"callId", callId}};
    }
  }
  if (!arguments.is_object()) {
    return {{"kind", "bad-arguments"},
            {"event", Excerpt(server, event, 80)},
            {"why", "its arguments are not a JSON object"},
            {"message", message},
            {"callId", callId}};
  }
  return {{"kind", "pick"},     {"event", event},   {"payload", std::move(arguments)},
          {"message", message}, {"callId", callId}, {"calls", calls.size()}};
}

}  // namespace

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
  if (base.rfind("https://", 0) == 0) {
    throw BadInput(
        "JR2_AGENT_BASE_URL is `" + ValidUtf8(base) +
        "`, an https address, and this runtime speaks plain http only; put a local "
        "proxy in front of the hosted API (docs/runtime.md, Agents) and give its http address");
  }
  const std::string scheme = "http://";
  if (base.rfind(scheme, 0) != 0 || base.size() == scheme.size()) {
    throw BadInput("JR2_AGENT_BASE_URL is `" + ValidUtf8(base) +
                   "`, which is not an http:// address; write it as `http://HOST:PORT/v1`");
  }
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string v1 = "/v1";
  const bool hasV1 = base.size() >= v1.size() && base.compare(base.size() - 3, 3, v1) == 0;
  server.url = base + (hasV1 ? "" : "/v1") + "/chat/completions";
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
    return HttpCall("POST", server.url, body, headers, timeoutMs);
  };
  t.sleep = [](int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
  return t;
}

Json AskModel(const ModelServer& server, const Json& request, const ModelTransport& transport,
              const std::function<void(const std::string& line, const Json& data)>& note) {
  const std::string body = request.dump();
  const int attempts = std::max(1, server.attempts);
  int64_t backoff = std::max<int64_t>(0, server.backoffMs);
  std::string why;
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    int64_t wait = backoff;
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
      why = Excerpt(server, f.reason(), 200);
      if (why.rfind("no answer within", 0) == 0) why.insert(0, "the server gave ");
    }
    data["why"] = why;
    if (attempt == attempts) break;
    data["waitMs"] = wait;
    note(why + "; asking again in " + Seconds(wait) + " (try " + std::to_string(attempt + 1) +
             " of " + std::to_string(attempts) + ")",
         data);
    if (wait > 0) transport.sleep(wait);
    backoff *= 2;
  }
  return {{"kind", "failed"},
          {"why", why + (attempts > 1 ? " (" + std::to_string(attempts) + " tries)" : "")}};
}

}  // namespace jr2rt
