// The OpenAI-compatible Agent harness's exchange with its model server (docs/runtime.md, Agents):
// the request a Turn sends, and one blocking ask with its retries. Run::askModel calls AskModel on
// the effect threads and takes its answer on the run's strand. Private to the runtime (and its
// tests, which give it a fake server and a clock that does not sleep).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "http_client.h"
#include "jr2/run.h"

namespace jr2rt {

// The messages that open an Agent's Turn: the Agent's `instructions` as the system message
// (none when the declaration has none), and the Gate's meta as the user message (its `prompt`
// text, and any other field as JSON below it).
Json ModelMessages(const Json& definition, const Json& meta);

// The body of `POST …/chat/completions` for a Turn: the model, the messages so far, and the
// Gate's Menu (MenuJson) as tools, one function per event, its parameters the payload's schema;
// a tool call is required.
Json ModelRequest(const ModelServer& server, const Json& messages, const Json& menu);

// How AskModel reaches the server and waits: tests give fakes.
struct ModelTransport {
  std::function<HttpReply(const std::string& body, int64_t timeoutMs)> post;
  std::function<void(int64_t ms)> sleep;
};
// The transport of a real server: HttpCall to `server.url` with the key as a Bearer token, and
// a sleep of this thread.
ModelTransport HttpTransport(const ModelServer& server);

// One ask: sends `request`, tries again after a timeout, a 429 (after its `Retry-After`, at most
// maxRetryAfterMs), a 5xx or a body that is not a chat completion (after backoffMs, doubled at
// each try), up to `attempts` tries, each told to `note` as a line and its data. Never throws;
// answers one of:
//   {"kind": "pick", "event", "payload", "message", "callId", "calls"}  a tool call
//   {"kind": "bad-arguments", "event", "why", "message", "callId"}      its arguments not JSON
//   {"kind": "text", "text", "message"}                                 no tool call
//   {"kind": "failed", "why"}                                           no answer to take
// `message` is the assistant's message as the server gave it, to append to the conversation.
// The API key never appears in what it answers or notes (a server that echoes it is cut).
Json AskModel(const ModelServer& server, const Json& request, const ModelTransport& transport,
              const std::function<void(const std::string& line, const Json& data)>& note);

}  // namespace jr2rt
