// The OpenAI-compatible harness's exchange (agents.h) with a fake transport: what it sends, what
// it makes of each kind of answer, how it retries and how long it waits (on a manual clock, or a
// timer of a few ms that no thread waits for), and that the API key never reaches what it answers
// or notes. The whole path through a runner and a loopback server is
// tests/e2e/agents_openai_test.sh.
#include "run/agents.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "jr2/run.h"
#include "pool.jr2.h"
#include "run/engine.h"

namespace {

using jr2rt::HttpReply;
using jr2rt::Json;
using jr2rt::ModelServer;

const char* const kKey = "sk-test-7f3a9c-SECRET";

ModelServer Server() {
  ModelServer s;
  s.url = "http://127.0.0.1:1/v1/chat/completions";
  s.shown = "127.0.0.1:1";
  s.model = "qwen";
  s.apiKey = kKey;
  s.timeoutMs = 5000;
  s.attempts = 4;
  s.backoffMs = 1000;
  return s;
}

// A server that answers from a queue (a Failure in place of an answer throws it, as HttpCall does
// for a timeout), and records each request and each wait.
struct Fake {
  std::deque<std::function<HttpReply()>> answers;
  std::vector<Json> requests;
  std::vector<int64_t> waits;
  std::vector<std::string> notes;

  jr2rt::ModelTransport transport() {
    jr2rt::ModelTransport t;
    t.post = [this](const std::string& body, int64_t) {
      requests.push_back(Json::parse(body));
      if (answers.empty()) throw jr2rt::Failure("no answer scripted");
      auto next = answers.front();
      answers.pop_front();
      return next();
    };
    return t;
  }
  // One ask as a run makes it: try, and on a retry note its line, wait (recorded) and try again
  // with the attempt and back-off it gives.
  Json ask(const ModelServer& server, const Json& request = {{"model", "qwen"}}) {
    const std::string body = request.dump();
    int attempt = 1;
    int64_t backoff = server.backoffMs;
    for (;;) {
      Json answer = jr2rt::TryModel(server, body, attempt, backoff, transport());
      if (answer["kind"] != "retry") return answer;
      notes.push_back(answer["line"]);
      waits.push_back(answer["waitMs"]);
      attempt = answer["attempt"];
      backoff = answer["backoffMs"];
    }
  }
  void reply(unsigned status, const std::string& body, const std::string& retryAfter = "") {
    answers.emplace_back([=] { return HttpReply{status, body, retryAfter}; });
  }
  void fail(const std::string& why) {
    answers.emplace_back([=]() -> HttpReply { throw jr2rt::Failure(why); });
  }
};

std::string ToolCall(const std::string& name, const std::string& arguments) {
  return Json{{"choices",
               {{{"message",
                  {{"role", "assistant"},
                   {"content", nullptr},
                   {"tool_calls",
                    {{{"id", "call_1"},
                      {"type", "function"},
                      {"function", {{"name", name}, {"arguments", arguments}}}}}}}}}}}}
      .dump();
}

TEST(ModelHarness, TheRequestCarriesInstructionsMetaAndTheMenuAsTools) {
  const Json definition = {{"model", "m"}, {"instructions", "Answer in one word."}, {"picks", 3}};
  const Json messages = jr2rt::ModelMessages(
      definition, {{"prompt", "What is six times seven?"}, {"ticket", {{"id", "T-1"}}}});
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[0], (Json{{"role", "system"}, {"content", "Answer in one word."}}));
  EXPECT_EQ(messages[1]["role"], "user");
  const std::string user = messages[1]["content"];
  EXPECT_EQ(user.rfind("What is six times seven?\n\n", 0), 0u) << user;
  EXPECT_NE(user.find("\"T-1\""), std::string::npos) << "the meta's other fields follow";

  const Json menu = Json::parse(R"([
    {"event": "answer", "audience": "agent", "description": "Answer the question.",
     "schema": {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"event": "give_up", "audience": "any", "description": "", "schema": null}])");
  const Json request = jr2rt::ModelRequest(Server(), messages, menu);
  EXPECT_EQ(request["model"], "qwen");
  EXPECT_EQ(request["tool_choice"], "required");
  ASSERT_EQ(request["tools"].size(), 2u);
  const Json& answer = request["tools"][0];
  EXPECT_EQ(answer["type"], "function");
  EXPECT_EQ(answer["function"]["name"], "answer");
  EXPECT_EQ(answer["function"]["description"], "Answer the question.");
  EXPECT_EQ(answer["function"]["parameters"]["required"], Json::array({"text"}));
  EXPECT_FALSE(answer["function"]["parameters"].contains("$schema"));
  EXPECT_EQ(request["tools"][1]["function"]["parameters"],
            (Json{{"type", "object"}, {"properties", Json::object()}}))
      << "an event with no payload takes an empty object";
  EXPECT_EQ(request.dump().find(kKey), std::string::npos);
}

TEST(ModelHarness, AWellFormedToolCallIsAPick) {
  Fake fake;
  fake.reply(200, ToolCall("answer", R"({"text": "42"})"));
  const Json a = fake.ask(Server());
  EXPECT_EQ(a["kind"], "pick");
  EXPECT_EQ(a["event"], "answer");
  EXPECT_EQ(a["payload"], (Json{{"text", "42"}}));
  EXPECT_EQ(a["callId"], "call_1");
  EXPECT_TRUE(fake.waits.empty());
  EXPECT_TRUE(fake.notes.empty());
}

TEST(ModelHarness, A500ThenSuccessIsRetriedAfterABackOff) {
  Fake fake;
  fake.reply(500, "upstream exploded");
  fake.reply(503, "warming up");
  fake.reply(200, ToolCall("answer", R"({"text": "42"})"));
  const Json a = fake.ask(Server());
  EXPECT_EQ(a["kind"], "pick");
  EXPECT_EQ(fake.requests.size(), 3u);
  EXPECT_EQ(fake.waits, (std::vector<int64_t>{1000, 2000})) << "the wait doubles";
  ASSERT_EQ(fake.notes.size(), 2u);
  EXPECT_EQ(fake.notes[0],
            "the server answered 500: upstream exploded; asking again in 1 s (try 2 of 4)");
}

TEST(ModelHarness, A429WaitsForItsRetryAfterUpToTheBound) {
  Fake fake;
  fake.reply(429, "slow down", "7");
  fake.reply(429, "slow down", "3600");
  fake.reply(429, "slow down");
  fake.reply(200, ToolCall("answer", R"({"text": "42"})"));
  ModelServer server = Server();
  server.maxRetryAfterMs = 60000;
  const Json a = fake.ask(server);
  EXPECT_EQ(a["kind"], "pick");
  EXPECT_EQ(fake.waits, (std::vector<int64_t>{7000, 60000, 4000}))
      << "Retry-After obeyed, capped, then the back-off when there is none";
  EXPECT_NE(fake.notes[0].find("429"), std::string::npos);
  EXPECT_NE(fake.notes[0].find("Retry-After asks for 7 s"), std::string::npos) << fake.notes[0];
}

TEST(ModelHarness, TimeoutsAreRetriedThenFailWithTheLastReason) {
  Fake fake;
  for (int i = 0; i < 4; ++i) fake.fail("no answer within 5000 ms");
  const Json a = fake.ask(Server());
  EXPECT_EQ(a["kind"], "failed");
  EXPECT_EQ(a["why"], "the server gave no answer within 5000 ms (4 tries)");
  EXPECT_EQ(fake.requests.size(), 4u) << "bounded: no fifth try";
  EXPECT_EQ(fake.waits, (std::vector<int64_t>{1000, 2000, 4000}));
}

TEST(ModelHarness, AMalformedBodyIsRetriedAndNamed) {
  Fake fake;
  fake.reply(200, "<html>gateway</html>");
  fake.reply(200, R"({"choices": []})");
  fake.reply(200, R"({"choices": [{"message": {"tool_calls": [{"type": "function"}]}}]})");
  fake.reply(200, "{\"truncated\": ");
  const Json a = fake.ask(Server());
  EXPECT_EQ(a["kind"], "failed");
  ASSERT_EQ(fake.notes.size(), 3u);
  EXPECT_NE(fake.notes[0].find("is not a chat completion: its body is not JSON: <html>"),
            std::string::npos)
      << fake.notes[0];
  EXPECT_NE(fake.notes[1].find("has no `choices[0].message`"), std::string::npos);
  EXPECT_NE(fake.notes[2].find("its tool call has no `function.name`"), std::string::npos);
}

// A hostile server: a body or arguments nested a million deep are refused at the bound on JSON
// from outside (512 levels), and the refusal says so.
TEST(ModelHarness, JsonNestedBeyondTheBoundIsRefusedNotParsed) {
  Fake fake;
  const std::string deep(1000000, '[');
  for (int i = 0; i < 4; ++i) fake.reply(200, deep);
  const Json a = fake.ask(Server());
  EXPECT_EQ(a["kind"], "failed");
  EXPECT_NE(a["why"].get<std::string>().find("nests deeper than 512 levels"), std::string::npos)
      << a["why"];
  Fake args;
  args.reply(200, ToolCall("answer", std::string(100000, '[')));
  const Json b = args.ask(Server());
  EXPECT_EQ(b["kind"], "bad-arguments");
  EXPECT_NE(b["why"].get<std::string>().find("nests deeper than 512 levels"), std::string::npos)
      << b["why"];
}

TEST(ModelHarness, AnAnswerInTextIsNoPick) {
  Fake fake;
  fake.reply(200, R"({"choices": [{"message": {"role": "assistant", "content": "I think 42."}}]})");
  const Json a = fake.ask(Server());
  EXPECT_EQ(a["kind"], "text");
  EXPECT_EQ(a["text"], "I think 42.");
  EXPECT_EQ(fake.requests.size(), 1u) << "the Run, not the exchange, asks again";
}

TEST(ModelHarness, ArgumentsThatAreNotJsonAreABadPick) {
  Fake fake;
  fake.reply(200, ToolCall("answer", "{text: 42"));
  const Json a = fake.ask(Server());
  EXPECT_EQ(a["kind"], "bad-arguments");
  EXPECT_EQ(a["event"], "answer");
  EXPECT_NE(a["why"].get<std::string>().find("not JSON"), std::string::npos);
}

TEST(ModelHarness, A4xxIsNotRetried) {
  Fake fake;
  fake.reply(401, R"({"error": "bad key"})");
  const Json a = fake.ask(Server());
  EXPECT_EQ(a["kind"], "failed");
  EXPECT_EQ(fake.requests.size(), 1u);
  EXPECT_NE(a["why"].get<std::string>().find("refused the request with 401"), std::string::npos);
}

TEST(ModelHarness, TheKeyNeverLeavesEvenWhenTheServerEchoesIt) {
  Fake fake;
  const std::string echo = std::string("Authorization: Bearer ") + kKey + " is not valid";
  fake.reply(500, echo);
  fake.reply(200, std::string(R"({"choices": [{"message": {"content": ")") + kKey + "\"}}]}");
  fake.reply(401, echo);
  ModelServer server = Server();
  const Json first = fake.ask(server);
  const Json second = fake.ask(server);
  std::string all = first.dump() + second.dump();
  for (const auto& n : fake.notes) all += n;
  EXPECT_EQ(all.find(kKey), std::string::npos) << all;
  EXPECT_NE(all.find("[the API key]"), std::string::npos);
  std::printf("[ key leaks: %zu ]\n", all.find(kKey) == std::string::npos ? size_t{0} : size_t{1});
}

// ---- the key in any encoding -------------------------------------------------------------------

// The key with the characters at the positions `mask` picks written as `\uXXXX` (hex in `upper`
// case or not): what a hostile server may send to get it past a cut of the plain text.
std::string Escaped(const std::string& key, const std::function<bool(size_t)>& mask,
                    bool upper = false) {
  std::string out;
  for (size_t i = 0; i < key.size(); ++i) {
    if (!mask(i)) {
      out += key[i];
      continue;
    }
    char buffer[8];
    std::snprintf(buffer, sizeof buffer, upper ? "\\u%04X" : "\\u%04x",
                  static_cast<unsigned char>(key[i]));
    out += buffer;
  }
  return out;
}

// JSON text's escapes decoded (this test's own reading, not the harness's): `\uXXXX` (surrogate
// pairs too) and the one-letter escapes; anything else as it is.
std::string Decoded(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\' || i + 1 >= text.size()) {
      out += text[i];
      continue;
    }
    const char c = text[++i];
    if (c == 'u' && i + 4 < text.size()) {
      unsigned cp = std::stoul(text.substr(i + 1, 4), nullptr, 16);
      i += 4;
      if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 < text.size() && text[i + 1] == '\\' &&
          text[i + 2] == 'u') {
        const unsigned low = std::stoul(text.substr(i + 3, 4), nullptr, 16);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        i += 6;
      }
      // UTF-8 of cp.
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
      continue;
    }
    const std::string from = "\"\\/bfnrt", to = "\"\\/\b\f\n\r\t";
    const size_t at = from.find(c);
    out += at == std::string::npos ? std::string("\\") + c : std::string(1, to[at]);
  }
  return out;
}

// How often the key can be read in `text`: as it is, or once its escapes are decoded, once,
// twice or three times (text in a JSON string in a JSON string).
size_t Leaks(const std::string& text) {
  size_t leaks = 0;
  std::string t = text;
  for (int round = 0; round < 4; ++round) {
    for (size_t at = t.find(kKey); at != std::string::npos; at = t.find(kKey, at + 1)) ++leaks;
    t = Decoded(t);
  }
  return leaks;
}

// A chat completion's body, written as text (so that escapes stay as the server wrote them):
// `message` is the message object's JSON text.
std::string Completion(const std::string& message) {
  return R"({"choices": [{"index": 0, "message": )" + message + "}]}";
}
// A tool call's body whose `arguments` string holds `arguments` (JSON text, written into the
// string as JSON writes it: its backslashes and quotes escaped once more).
std::string ToolCallRaw(const std::string& name, const std::string& arguments,
                        const std::string& id = "call_1") {
  return Completion(R"({"role": "assistant", "content": null, "tool_calls": [{"id": ")" + id +
                    R"(", "type": "function", "function": {"name": ")" + name +
                    R"(", "arguments": )" + Json(arguments).dump() + "}}]}");
}

TEST(ModelHarness, TheKeyInJsonEscapesNeverLeaves) {
  const std::string key = kKey;
  auto all = [](size_t) { return true; };
  auto first = [](size_t i) { return i == 0; };
  auto everyOther = [](size_t i) { return i % 2 == 1; };
  const std::string e1 = Escaped(key, first);
  const std::string eAll = Escaped(key, all);
  const std::string eMixed = Escaped(key, everyOther, /*upper=*/true);
  ASSERT_EQ(Decoded(eAll), key) << "the test's own decoding reads the escapes back";
  ASSERT_EQ(Decoded(eMixed), key);

  struct Case {
    std::string name;
    std::string body;
  };
  const std::vector<Case> cases = {
      {"the first character escaped, in `arguments`",
       ToolCallRaw("answer", R"({"text": ")" + e1 + R"("})")},
      {"every character escaped", ToolCallRaw("answer", R"({"text": ")" + eAll + R"("})")},
      {"every other character, upper-case hex",
       ToolCallRaw("answer", R"({"text": ")" + eMixed + R"("})")},
      {"nested in objects and lists",
       ToolCallRaw("answer",
                   R"({"text": "x", "a": {"b": ["y", {"c": "pre )" + eAll + R"( post"}]}})")},
      {"an object key", ToolCallRaw("answer", R"({")" + eMixed + R"(": "v", "text": "x"})")},
      {"behind a surrogate pair",
       ToolCallRaw("answer", R"({"text": "\ud83d\ude00)" + eAll + R"("})")},
      {"arguments given as an object, escaped in the body itself",
       Completion(R"({"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
                      "function": {"name": "answer", "arguments": {"text": ")" +
                  eMixed + R"("}}}]})")},
      {"arguments that are not JSON", ToolCallRaw("answer", R"({"text": ")" + eAll + R"(", oops)")},
      {"the event's name", Completion(R"({"tool_calls": [{"function": {"name": ")" + eMixed +
                                      R"(", "arguments": "{}"}}]})")},
      {"the call's id", ToolCallRaw("answer", R"({"text": "x"})", eAll)},
      {"in `content`, every character escaped",
       Completion(R"({"role": "assistant", "content": "my key is )" + eAll + R"("})")},
      {"in `content`, split by escapes",
       Completion(R"({"role": "assistant", "content": "sk-te\u0073t-7f3a9c-\u0053ECRET"})")},
      {"a body that is not JSON", R"({"choices": "my key is )" + eAll},
  };
  size_t leaks = 0;
  for (const Case& c : cases) {
    Fake fake;
    fake.reply(200, c.body);
    const Json a = fake.ask(Server());
    std::string seen = a.dump();
    for (const auto& n : fake.notes) seen += n;
    const size_t found = Leaks(seen);
    leaks += found;
    EXPECT_EQ(found, 0u) << c.name << ": " << seen;
    EXPECT_NE(seen.find("[the API key]"), std::string::npos) << c.name << ": " << seen;
  }
  // Server text that is not a completion, escaped: a 500's body and a 401's.
  Fake fake;
  fake.reply(500, R"({"error": "bad key )" + eMixed + R"("})");
  fake.reply(401, R"({"error": "bad key )" + Escaped(key, first) + R"("})");
  const Json a = fake.ask(Server());
  std::string seen = a.dump();
  for (const auto& n : fake.notes) seen += n;
  EXPECT_EQ(Leaks(seen), 0u) << seen;
  leaks += Leaks(seen);
  std::printf("[ key leaks: %zu in %zu encodings ]\n", leaks, cases.size() + 2);
}

TEST(ModelHarness, CutKeyCutsEveryEncodingAndOnlyTheKey) {
  // The last one escaped again (`\\\u0073`: a backslash run before the escape, as `arguments`
  // holds it in the body's text).
  std::string text = std::string("a ") + kKey + " b " + Escaped(kKey, [](size_t) { return true; }) +
                     " c \\\\" + Escaped(kKey, [](size_t i) { return i == 0; }) + " d";
  EXPECT_TRUE(jr2rt::CutKey(kKey, text));
  EXPECT_EQ(text, "a [the API key] b [the API key] c [the API key] d") << text;
  std::string other = "sk-test-7f3a9c-SECRE and \\u0073k-test";
  EXPECT_FALSE(jr2rt::CutKey(kKey, other)) << "a part of the key is not the key";
  std::string backslashes(100000, '\\');
  EXPECT_FALSE(jr2rt::CutKey(kKey, backslashes)) << "and a hostile text costs linear time";
}

// ---- an answer of many tool calls -------------------------------------------------------------

// `n` tool calls, the first `answer` and the rest `other`.
std::string ManyCalls(size_t n) {
  std::string body = R"({"choices":[{"message":{"role":"assistant","tool_calls":[)";
  body.reserve(n * 60);
  for (size_t i = 0; i < n; ++i) {
    body += i == 0 ? R"({"id":"c0","type":"function",)"
                     R"("function":{"name":"answer","arguments":"{\"text\": \"42\"}"}})"
                   : R"(,{"id":"c)" + std::to_string(i) +
                         R"(","function":{"name":"other","arguments":"{}"}})";
  }
  return body + "]}}]}";
}

TEST(ModelHarness, AnAnswerOf100000ToolCallsKeepsOne) {
  Fake fake;
  const std::string body = ManyCalls(100000);
  ASSERT_LT(body.size(), jr2rt::kMaxCompletionBytes) << "within the bound on a body";
  fake.reply(200, body);
  const Json a = fake.ask(Server());
  ASSERT_EQ(a["kind"], "pick") << a.dump().substr(0, 400);
  EXPECT_EQ(a["event"], "answer");
  EXPECT_EQ(a["calls"], 100000) << "every call is counted";
  ASSERT_EQ(a["message"]["tool_calls"].size(), 1u) << "the conversation keeps the pick alone";
  EXPECT_EQ(a["message"]["tool_calls"][0]["id"], "c0");
  EXPECT_EQ(a["message"]["tool_calls"][0]["function"]["arguments"], R"({"text":"42"})");
  const size_t kept = a.dump().size();
  EXPECT_LT(kept, 512u) << a.dump();
  std::printf("[ 100,000 tool calls in %zu bytes: the answer kept is %zu bytes ]\n", body.size(),
              kept);

  // A body over the bound is not parsed at all.
  Fake big;
  const std::string over = ManyCalls(170000);
  ASSERT_GT(over.size(), jr2rt::kMaxCompletionBytes);
  for (int i = 0; i < 4; ++i) big.reply(200, over);
  const Json b = big.ask(Server());
  EXPECT_EQ(b["kind"], "failed");
  EXPECT_NE(b["why"].get<std::string>().find("its body is larger than 8 MiB"), std::string::npos)
      << b["why"];
}

TEST(ModelHarness, WhatTheAnswerCarriesBesideTheCallIsNotKept) {
  Fake fake;
  fake.reply(200, R"({"id": "x", "usage": {"total": 1}, "choices": [
    {"message": {"role": "assistant", "content": "thinking", "refusal": null,
                 "extra": [1, 2, 3], "tool_calls": [
       {"id": "c1", "type": "function", "junk": {"a": 1},
        "function": {"name": "answer", "arguments": "{\"text\": \"42\"}", "more": 1}}]}},
    {"message": {"role": "assistant", "content": "a second choice"}}]})");
  const Json a = fake.ask(Server());
  ASSERT_EQ(a["kind"], "pick");
  EXPECT_EQ(a["message"], Json::parse(R"({"role": "assistant", "content": "thinking",
      "tool_calls": [{"id": "c1", "type": "function",
                      "function": {"name": "answer", "arguments": "{\"text\":\"42\"}"}}]})"));
}

// ---- through a run ------------------------------------------------------------------------------

// A run of `conformance_asker` (its Agent `helper`, `picks: 4`, answers `answer {text}`) whose
// model is `fake`, on a manual clock; its feed (lines and data) collected.
struct AskerRun {
  jr2rt::Registry registry;
  jr2rt::ManualClock clock;
  std::unique_ptr<jr2rt::Run> run;
  std::vector<std::string> feed;

  explicit AskerRun(Fake& fake, ModelServer server = Server()) {
    jr2gen::pool::RegisterWorkflows(registry);
    run = std::make_unique<jr2rt::Run>(registry, *registry.workflow("conformance_asker"), "r1",
                                       clock);
    listen();
    server.transport = std::make_shared<const jr2rt::ModelTransport>(fake.transport());
    run->modelAgents(std::make_shared<const ModelServer>(std::move(server)));
  }
  void listen() {
    run->onEvent([this](const jr2rt::Run::FeedEvent& e) {
      feed.push_back(e.line + " " + e.parsedData().dump());
    });
  }
  std::string all() const {
    std::string out = run->snapshot().dump() + run->output().dump() + run->reason();
    for (const auto& line : feed) out += line + "\n";
    return out;
  }
};

TEST(ModelHarness, TheKeyInEscapesReachesNeitherTheOutputNorTheStoreNorTheFeed) {
  const std::string eAll = Escaped(kKey, [](size_t) { return true; });
  Fake fake;
  // A refused pick first (an unknown field named by the key, the text not a string), then a
  // pick whose text is the key.
  fake.reply(200, ToolCallRaw("answer", R"({")" + eAll + R"(": 1, "text": 7})"));
  fake.reply(200, ToolCallRaw("answer", R"({"text": ")" + eAll + R"("})"));
  AskerRun r(fake);
  r.run->start(Json::object());
  ASSERT_EQ(r.run->status(), jr2rt::RunStatus::kDone) << r.run->reason() << r.all();
  EXPECT_EQ(r.run->output(), "[the API key]");
  const size_t leaks = Leaks(r.all());
  EXPECT_EQ(leaks, 0u) << r.all();
  // What the model is told of its refused pick (the conversation it is sent) is cut too.
  ASSERT_EQ(fake.requests.size(), 2u);
  EXPECT_EQ(Leaks(fake.requests[1]["messages"].dump()), 0u) << fake.requests[1].dump();
  std::printf("[ key leaks through a run (output, snapshot, feed, conversation): %zu ]\n", leaks);
}

TEST(ModelHarness, ARunSaysHowManyToolCallsItDropped) {
  Fake fake;
  fake.reply(200, ManyCalls(100000));
  AskerRun r(fake);
  r.run->start(Json::object());
  ASSERT_EQ(r.run->status(), jr2rt::RunStatus::kDone) << r.run->reason();
  EXPECT_EQ(r.run->output(), "42");
  bool told = false;
  for (const auto& line : r.feed) {
    told = told || line.find(
                       "(qwen, the first of its 100000 tool calls; the other 99999 "
                       "dropped)") != std::string::npos;
  }
  EXPECT_TRUE(told) << ::testing::PrintToString(r.feed);
}

// ---- refused picks across a restore -------------------------------------------------------------

// The refused picks are stored with the run: a run taken up again (its process killed while the
// model thought) goes on counting from where it was, and a Gate whose `picks:` are spent is a
// person's, never put to the model again.
TEST(ModelHarness, RefusedPicksAreStoredAndCountedOnAfterARestore) {
  const std::string bad = ToolCall("answer", R"({"text": 7})");
  Fake first;
  first.reply(200, bad);
  first.reply(200, bad);
  first.reply(503, "the process is killed while the model thinks");
  AskerRun r(first);
  r.run->start(Json::object());
  ASSERT_EQ(first.requests.size(), 3u);
  const Json saved = r.run->snapshot();
  EXPECT_EQ(saved["refusedPicks"], (Json{{"asking", 2}}));

  // Taken up again: picks 3 and 4 of `picks: 4`, then the Gate waits for a person.
  Fake second;
  for (int i = 0; i < 4; ++i) second.reply(200, bad);
  r.run = jr2rt::Run::Restore(r.registry, Json::parse(saved.dump()), r.clock);
  r.feed.clear();
  r.listen();
  ModelServer server = Server();
  server.transport = std::make_shared<const jr2rt::ModelTransport>(second.transport());
  auto shared = std::make_shared<const ModelServer>(std::move(server));
  r.run->modelAgents(shared);
  r.run->tick();
  EXPECT_EQ(second.requests.size(), 2u) << "picks 3 and 4 only: " << r.all();
  EXPECT_EQ(r.run->status(), jr2rt::RunStatus::kWaiting);
  bool third = false, spent = false;
  for (const auto& line : r.feed) {
    third = third || line.find("for a pick at asking (pick 3 of 4)") != std::string::npos;
    spent = spent ||
            line.find("4 picks refused, the Gate asking waits for a person") != std::string::npos;
  }
  EXPECT_TRUE(third) << r.all();
  EXPECT_TRUE(spent) << r.all();

  // Taken up once more: the spent Gate is not put to the model; a person answers it.
  const Json waiting = r.run->snapshot();
  EXPECT_EQ(waiting["refusedPicks"], (Json{{"asking", 4}}));
  r.run = jr2rt::Run::Restore(r.registry, Json::parse(waiting.dump()), r.clock);
  r.run->modelAgents(shared);
  r.run->tick();
  EXPECT_EQ(second.requests.size(), 2u) << "the model is not asked again";
  r.run->send("asking", "answer", {{"text", "by hand"}});
  EXPECT_EQ(r.run->status(), jr2rt::RunStatus::kDone) << r.run->reason();
  EXPECT_FALSE(r.run->snapshot().contains("refusedPicks")) << "nothing stored once it is closed";
}

// The same count holds for the scripted harness: a restored run whose Agent spent its picks uses
// no more of its replies.
TEST(ModelHarness, AScriptedAgentsSpentPicksStaySpentAfterARestore) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  jr2rt::ManualClock clock;
  const Json bad = {{"event", "answer"}, {"payload", {{"text", 7}}}};
  const Json good = {{"event", "answer"}, {"payload", {{"text", "42"}}}};
  auto run =
      std::make_unique<jr2rt::Run>(registry, *registry.workflow("conformance_asker"), "r", clock);
  run->scriptAgents({{"helper", {bad, bad, bad, bad, good}}});
  run->start(Json::object());
  ASSERT_EQ(run->status(), jr2rt::RunStatus::kWaiting);
  const Json saved = run->snapshot();
  EXPECT_EQ(saved["refusedPicks"], (Json{{"asking", 4}}));
  run = jr2rt::Run::Restore(registry, Json::parse(saved.dump()), clock);
  run->scriptAgents({{"helper", {bad, bad, bad, bad, good}}});
  run->tick();
  EXPECT_EQ(run->status(), jr2rt::RunStatus::kWaiting) << "the fifth reply is not used";
  EXPECT_EQ(run->snapshot()["agentReplies"], (Json{{"helper", 4}}));
}

// ---- the wait between tries --------------------------------------------------------------------

// A back-off is waited out by the run, not by a thread: on a manual clock the retry is due at its
// time and fires at tick(); before, nothing is asked.
TEST(ModelHarness, ARetryWaitsOnTheRunsClockNotOnAThread) {
  Fake fake;
  fake.reply(500, "upstream exploded");
  fake.reply(429, "slow down", "7");
  fake.reply(200, ToolCall("answer", R"({"text": "42"})"));
  AskerRun r(fake);
  r.run->start(Json::object());
  EXPECT_EQ(r.run->status(), jr2rt::RunStatus::kWaiting);
  EXPECT_EQ(fake.requests.size(), 1u);
  EXPECT_EQ(r.run->nextTimer(), 1000) << "the retry is due in the back-off";
  EXPECT_EQ(r.run->nextUnattendedTimer(), 1000) << "work under way, not a person's deadline";
  r.clock.advance(999);
  r.run->tick();
  EXPECT_EQ(fake.requests.size(), 1u) << "not before it is due";
  r.clock.advance(1);
  r.run->tick();
  EXPECT_EQ(fake.requests.size(), 2u);
  EXPECT_EQ(r.run->nextTimer(), 1000 + 7000) << "the 429's Retry-After";
  r.clock.advance(7000);
  r.run->tick();
  ASSERT_EQ(r.run->status(), jr2rt::RunStatus::kDone) << r.run->reason();
  EXPECT_EQ(r.run->output(), "42");
  EXPECT_EQ(fake.requests.size(), 3u);
  EXPECT_FALSE(r.run->nextTimer()) << "nothing left to wait for";
  size_t retries = 0;
  for (const auto& line : r.feed) {
    retries += line.find("asking again in") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(retries, 2u) << ::testing::PrintToString(r.feed);
}

// A retry waited for dies with its Gate: the run cancelled, nothing more is asked.
TEST(ModelHarness, ACancelledRunAsksNoMore) {
  Fake fake;
  fake.reply(503, "warming up");
  fake.reply(200, ToolCall("answer", R"({"text": "42"})"));
  AskerRun r(fake);
  r.run->start(Json::object());
  ASSERT_TRUE(r.run->nextTimer());
  r.run->cancel();
  EXPECT_FALSE(r.run->nextTimer());
  r.clock.advance(60000);
  r.run->tick();
  EXPECT_EQ(fake.requests.size(), 1u);
  EXPECT_EQ(r.run->status(), jr2rt::RunStatus::kCancelled);
}

// On the wall clock, with one effect thread shared by two runs: run A's model fails once and A
// waits out its back-off; run B's model is asked meanwhile, on the thread A's wait does not hold.
// (A back-off slept on the thread would ask A twice before B.) The wait is a 30 ms timer on the
// engine, which the drive waits for: no sleep here.
TEST(ModelHarness, ABackOffHoldsNoEffectThread) {
  std::mutex mu;
  std::vector<std::string> order;
  auto transport = [&](const std::string& name, std::vector<HttpReply> replies) {
    auto left = std::make_shared<std::deque<HttpReply>>(replies.begin(), replies.end());
    jr2rt::ModelTransport t;
    t.post = [&, name, left](const std::string&, int64_t) {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(name);
      HttpReply next = left->front();
      left->pop_front();
      return next;
    };
    return std::make_shared<const jr2rt::ModelTransport>(t);
  };
  const std::string pick = ToolCall("answer", R"({"text": "42"})");
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  jr2rt::SystemClock clock;
  auto engine = std::make_shared<jr2rt::Engine>(1);
  const auto& workflow = *registry.workflow("conformance_asker");
  auto serverOf = [&](const std::string& name, std::vector<HttpReply> replies) {
    ModelServer s = Server();
    s.backoffMs = 30;
    s.transport = transport(name, std::move(replies));
    return std::make_shared<const ModelServer>(std::move(s));
  };
  jr2rt::Run a(registry, workflow, "a", clock, engine);
  jr2rt::Run b(registry, workflow, "b", clock, engine);
  a.modelAgents(serverOf("A", {HttpReply{500, "upstream exploded", ""}, HttpReply{200, pick, ""}}));
  b.modelAgents(serverOf("B", {HttpReply{200, pick, ""}}));
  a.begin(Json::object());
  b.begin(Json::object());
  const auto start = std::chrono::steady_clock::now();
  engine->drive();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  EXPECT_EQ(a.status(), jr2rt::RunStatus::kDone) << a.reason();
  EXPECT_EQ(b.status(), jr2rt::RunStatus::kDone) << b.reason();
  EXPECT_EQ(order, (std::vector<std::string>{"A", "B", "A"}))
      << "B is asked while A waits out its back-off";
  EXPECT_GE(ms, 30) << "the drive waited for A's retry";
  std::printf("[ two runs, one effect thread, a 30 ms back-off: asked %s in %lld ms ]\n",
              ::testing::PrintToString(order).c_str(), static_cast<long long>(ms));
}

// A run cancelled while it waits out a long back-off (a 429 asking for 60 s) lets its engine go at
// once: the timer is cancelled with the Gate, and the drive waits for nothing.
TEST(ModelHarness, ACancelEndsARetryWaitOnTheWallClock) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  jr2rt::SystemClock clock;
  auto engine = std::make_shared<jr2rt::Engine>(1);
  Fake fake;
  fake.reply(429, "slow down", "60");
  ModelServer server = Server();
  server.transport = std::make_shared<const jr2rt::ModelTransport>(fake.transport());
  jr2rt::Run run(registry, *registry.workflow("conformance_asker"), "r", clock, engine);
  run.modelAgents(std::make_shared<const ModelServer>(std::move(server)));
  run.begin(Json::object());
  bool retrying = false;
  run.onEvent([&](const jr2rt::Run::FeedEvent& e) {
    retrying = retrying || e.line.find("asking again in 60 s") != std::string::npos;
  });
  engine->stopWhen([&] { return retrying; }, 10);
  const auto start = std::chrono::steady_clock::now();
  engine->drive();
  ASSERT_TRUE(retrying);
  EXPECT_EQ(engine->out(), 1) << "the wait is counted out, as an effect";
  run.cancel();
  engine->stopWhen(nullptr, 0);
  engine->drive();
  EXPECT_EQ(engine->out(), 0);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  EXPECT_LT(ms, 5000) << "the cancel did not end the 60 s wait";
  EXPECT_EQ(fake.requests.size(), 1u);
}

TEST(ModelHarness, TheEnvironmentNamesWhatIsMissing) {
  unsetenv("JR2_AGENT_BASE_URL");
  unsetenv("JR2_AGENT_MODEL");
  unsetenv("JR2_AGENT_TIMEOUT");
  auto refusal = [] {
    try {
      jr2rt::ModelServerFromEnv();
    } catch (const jr2rt::BadInput& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refusal().find("JR2_AGENT_BASE_URL"), std::string::npos);
  setenv("JR2_AGENT_BASE_URL", "ftp://api.example.com/v1", 1);
  EXPECT_NE(refusal().find("not an http:// or https:// address"), std::string::npos);
  setenv("JR2_AGENT_BASE_URL", "https://", 1);
  EXPECT_NE(refusal().find("not an http:// or https:// address"), std::string::npos);
  setenv("JR2_AGENT_BASE_URL", "http://127.0.0.1:8080/v1/", 1);
  EXPECT_NE(refusal().find("JR2_AGENT_MODEL"), std::string::npos);
  setenv("JR2_AGENT_MODEL", "qwen", 1);
  setenv("JR2_AGENT_TIMEOUT", "0", 1);
  EXPECT_NE(refusal().find("JR2_AGENT_TIMEOUT"), std::string::npos);
  setenv("JR2_AGENT_TIMEOUT", "30", 1);
  const ModelServer s = jr2rt::ModelServerFromEnv();
  EXPECT_EQ(s.url, "http://127.0.0.1:8080/v1/chat/completions");
  EXPECT_EQ(s.shown, "127.0.0.1:8080");
  EXPECT_EQ(s.timeoutMs, 30000);
  setenv("JR2_AGENT_BASE_URL", "http://localhost:11434", 1);
  EXPECT_EQ(jr2rt::ModelServerFromEnv().url, "http://localhost:11434/v1/chat/completions");
  // A hosted API over https (its certificate verified: tests/runtime/http_test.cpp).
  setenv("JR2_AGENT_BASE_URL", "https://api.example.com/v1", 1);
  EXPECT_EQ(jr2rt::ModelServerFromEnv().url, "https://api.example.com/v1/chat/completions");
  EXPECT_EQ(jr2rt::ModelServerFromEnv().shown, "api.example.com");
  unsetenv("JR2_AGENT_BASE_URL");
  unsetenv("JR2_AGENT_MODEL");
  unsetenv("JR2_AGENT_TIMEOUT");
}

}  // namespace
