// The OpenAI-compatible harness's exchange (agents.h) with a fake transport: what it sends, what
// it makes of each kind of answer, how it retries and waits (a recorded sleep, never a real one),
// and that the API key never reaches what it answers or notes. The whole path through a runner
// and a loopback server is tests/e2e/agents_openai_test.sh.
#include "agents.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

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
    t.sleep = [this](int64_t ms) { waits.push_back(ms); };
    return t;
  }
  Json ask(const ModelServer& server, const Json& request = {{"model", "qwen"}}) {
    return jr2rt::AskModel(server, request, transport(),
                           [this](const std::string& line, const Json&) { notes.push_back(line); });
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
  setenv("JR2_AGENT_BASE_URL", "https://api.example.com/v1", 1);
  EXPECT_NE(refusal().find("plain http only"), std::string::npos);
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
  unsetenv("JR2_AGENT_BASE_URL");
  unsetenv("JR2_AGENT_MODEL");
  unsetenv("JR2_AGENT_TIMEOUT");
}

}  // namespace
