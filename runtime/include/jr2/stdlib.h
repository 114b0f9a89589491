// The standard library's Sources and effects (docs/language.md#the-standard-library), so samples
// need no C++.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jr2/registry.h"
#include "jr2/value.h"

namespace jr2rt {

// What an actor holds of an effect it started, to stop it: set `cancelled` when its invoke is
// cancelled (the state left, the run cancelled or ended). An effect still held for its commit
// then never starts; a process that runs is killed (`pid`, until it is reaped).
struct EffectControl {
  std::atomic<bool> cancelled{false};
  std::atomic<int> pid{-1};         // a process's, once spawned
  std::atomic<bool> reaped{false};  // the process ended and was waited for: its pid may be reused
  // A process's `output` lines as the feed has them, stdout's then stderr's (on the run's strand
  // only): its `result` leaves out what they hold already (docs/runtime.md#traces).
  std::vector<std::string> told[2];
  // Stops it: marks it cancelled and kills the process if one runs.
  void cancel();
};

// A standard-library pull Source (`std.backlog`, `std.queue`), one per Pool: it keeps what it
// worked out at earlier calls, so a call costs what changed since the last one, never a pass
// over every item. It is called on the run's strand only (never from two threads at once). A
// Source that is made again (a restored run) starts from nothing and gives the same answers.
class StdNextSource {
 public:
  virtual ~StdNextSource() = default;
  // Answers `{ "item": ITEM-or-null, "open": N }`. A Defect for what ends the run `error`: a
  // backlog that cannot be read or parsed (naming the path), two items of one id (naming it),
  // an item with no id.
  virtual Json next(const Json& args, const NextQuery& query) = 0;
};

// `function` is `std.backlog` or `std.queue` (null for any other name). `idOf` is the Pool's
// `item_id`; `home` is the run's home, against which a relative backlog path resolves.
std::unique_ptr<StdNextSource> MakeStdNext(const std::string& function, ItemIdOf idOf,
                                           const std::string& home);

// One-call forms, for tests and host code: a fresh Source per call (each call is a full pass).
// The id of an item is `idOf`'s, or by default its `id` field (the item itself when a string).
Json StdBacklog(const Json& args, const NextQuery& query, ItemIdOf idOf = nullptr,
                const std::string& home = ".");
Json StdQueue(const Json& args, const NextQuery& query, ItemIdOf idOf = nullptr);
// Why the items a `std.backlog` Pool left can never start (a deadlock): `{"blocked": [{"id",
// "waitsFor": [{"id", "is"}]}], "count", "cycle"?}` — the first 10 items left, each with the needs
// it waits for (`is`: `failed`, `missing` (no item has that id) or `waiting` (left too)), how many
// are blocked in all, and a dependency cycle among them when there is one (`[A, B, A]`).
Json ExplainBacklog(const Json& args, const NextQuery& query, ItemIdOf idOf = nullptr,
                    const std::string& home = ".");

// `std.command({ argv, cwd, timeout })` → `{ exit, stdout, stderr }`; a non-zero exit or a
// timeout is a Failure. `cwd` (default ".") resolves against `home`. Output that is not UTF-8 is
// kept with each bad sequence replaced by U+FFFD, and the result says so (`"replaced":
// {"stdout": N, "stderr": M}`, only when something was replaced).
// `std.http_get({ url, timeout })` → the JSON body of a GET.
Json StdEffect(const std::string& name, const Json& args, const std::string& home = ".");

// std.command in two halves, shared by the blocking form (StdEffect) and the host's executor,
// which awaits a process asynchronously: the spawn (argv[0] looked up on PATH, `cwd` against
// `home`, stdout and stderr on close-on-exec pipes; a Failure when it cannot start) and the
// result of its end (a Failure when it timed out or exited non-zero; text made valid UTF-8).
struct SpawnedCommand {
  pid_t pid = -1;
  int out = -1;  // the read ends of its stdout and stderr
  int err = -1;
  std::string program;
  int64_t timeoutMs = 0;
};
SpawnedCommand SpawnCommand(const Json& spec, const std::string& home);
// Kills a spawned command with SIGKILL: its process group (each command is the leader of its
// own), so the processes it started die with it.
void KillCommand(int pid);
// What a run keeps of each of a process's two outputs: the last kCommandOutputKept bytes (a
// build log's end is where its error is); how many were dropped before them is in the result
// (`"truncated": {"stdout": N}`). A process that prints without end costs bounded memory and
// store.
inline constexpr size_t kCommandOutputKept = size_t{1} << 20;
// What of a process's output reaches the run's feed as it comes, when it runs on the executor
// (the feed is stored; the whole output, up to its last MiB, is in the result): the first
// kCommandFeedLines lines of each output, each cut at kCommandFeedLineBytes.
inline constexpr int kCommandFeedLines = 100;
inline constexpr size_t kCommandFeedLineBytes = 400;
// Appends `n` bytes of output to `into`, keeping its last kCommandOutputKept bytes; counts what
// it drops in `dropped`.
void KeepOutput(std::string& into, const char* data, size_t n, size_t& dropped);
Json CommandResult(const SpawnedCommand& c, int waitStatus, bool timedOut, std::string out,
                   std::string err, size_t outDropped = 0, size_t errDropped = 0);
// The blocking wait: reads both pipes and waits for the end, on the calling thread.
Json AwaitCommand(const SpawnedCommand& c);

// `std.http_get({ url, timeout })`: GETs an http:// URL (redirects followed, up to 5) and gives
// its body as JSON. A status other than 2xx, a body that is not JSON, no answer within
// `timeout` (30 s by default), a URL it cannot reach, or an https:// URL (no TLS here) is a
// Failure whose detail holds the url, and the status and body when there was an answer.
Json HttpGet(const Json& request);

// `text` with each byte sequence that is not valid UTF-8 replaced by U+FFFD; `replaced` (if
// given) is set to how many were replaced.
std::string ValidUtf8(std::string_view text, size_t* replaced = nullptr);

// `path` against `home` when it is relative ("" and "." give `home`); as it is when absolute.
std::string ResolveAgainst(const std::string& home, const std::string& path);

}  // namespace jr2rt
