// The OpenAI-compatible Agent harness's exchange with its model server (docs/runtime.md, Agents):
// the request a Turn sends, and one try of it. Run::askModel calls TryModel on an effect thread,
// takes its answer on the run's strand, and waits out a back-off on the run's executor (no thread
// waits). Private to the runtime (and its tests, which give it a fake server).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "effects/http_client.h"
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

// How a try reaches the server: tests give a fake (ModelServer::transport).
struct ModelTransport {
  std::function<HttpReply(const std::string& body, int64_t timeoutMs)> post;
};
// The transport of a real server: HttpCall to `server.url` with the key as a Bearer token, at
// most kMaxCompletionBytes of its answer read.
ModelTransport HttpTransport(const ModelServer& server);

// The most of a chat completion that is read and parsed. A model's longest answer is a few
// hundred KB; a server that sends more is answered as one whose body is not a chat completion.
inline constexpr size_t kMaxCompletionBytes = size_t{8} << 20;

// One try of an ask: sends `body` (ModelRequest's, as text). Never throws; answers one of:
//   {"kind": "pick", "event", "payload", "message", "callId", "calls"}   a tool call
//   {"kind": "bad-arguments", "event", "why", "message", "callId", "calls"}  its arguments not
//                                                                       a JSON object
//   {"kind": "text", "text", "message"}                                 no tool call
//   {"kind": "retry", "why", "line", "data", "waitMs", "attempt", "backoffMs"}
//   {"kind": "failed", "why"}                                           no answer to take
// A timeout, a 429, a 5xx or a body that is not a chat completion is a `retry` while tries are
// left: ask again after `waitMs` (the 429's `Retry-After`, at most maxRetryAfterMs, else
// `backoffMs`) with the `attempt` and `backoffMs` it gives (the back-off doubled), telling
// `line` and `data` on the feed. The last try's failure, a 4xx, and a certificate the client
// refuses are `failed`.
//
// Only the first tool call is the pick, so only it is built: the rest of the calls, and every
// field of the answer the harness does not read, are dropped while the body is parsed (`calls`
// counts them all). `message` is the assistant's message rebuilt from what was read (its role,
// content and that one call, its arguments as JSON text), to append to the conversation: it
// stays one call long whatever the server sent.
//
// The API key never appears in what it answers: every string of the answer, object keys
// included, has the key cut out, whether the server wrote it as it is or in JSON escapes
// (`\u0073k-…`, escaped again inside `arguments`), and the arguments are cut again once parsed.
Json TryModel(const ModelServer& server, const std::string& body, int attempt, int64_t backoffMs,
              const ModelTransport& transport);

// `text` with every occurrence of `key` replaced by `[the API key]`: as it is, or with any of
// its characters written as JSON escapes (`\u0073`, `\/`, a surrogate pair; behind up to 8
// backslashes, as in text escaped more than once). Gives whether it cut one. For text that goes
// where a person or the store sees it.
bool CutKey(const std::string& key, std::string& text);

}  // namespace jr2rt
