// A workflow's runner (docs/runtime.md#the-runner): run, send, status, gates, runs, cancel, log,
// prune.

#include "jr2/runner.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <tuple>

#include "core/occupancy.h"
#include "front/cli/replay_verbs.h"
#include "front/http/serve.h"
#include "front/present/report.h"
#include "front/remote/remote.h"
#include "jr2/callers.h"
#include "jr2/errors.h"
#include "jr2/host.h"
#include "jr2/meant.h"
#include "jr2/postgres_store.h"
#include "jr2/run.h"
#include "jr2/runner_main.h"
#include "jr2/sqlite_store.h"
#include "jr2/store.h"
#include "jr2/store_copy.h"
#include "jr2/verbs.h"

namespace jr2rt {
namespace {

struct Args {
  std::string verb;
  std::vector<std::string> positional;
  std::string input;
  std::string store;
  bool json = false;
  bool all = false;
  bool follow = false;
  std::string resume;  // run --resume RUN
  std::string agents;  // --agents FILE: the scripted Agent harness; --agents openai: a model
  bool resumeGiven = false;
  std::string endedBefore;  // prune --ended-before DURATION
  std::string listen;       // serve --listen HOST:PORT
  std::string callers;      // serve --callers FILE
  std::string server;       // --server URL: the verb goes to a serve
  bool dropHeld = false;    // run --drop-held: resume a standing Pool without its held items
  bool inputGiven = false;
  int threads = 0;                  // --threads N: for blocking host functions; 0 the default
  int maxConnections = 0;           // serve --max-connections N; 0: from the file descriptor limit
  int64_t drainMs = -1;             // serve --drain-timeout SECONDS; -1: the default (10 s)
  std::string logFormat;            // serve --log-format text|json
  std::string tlsCert, tlsKey;      // serve --tls-cert FILE --tls-key FILE
  bool insecureHttp = false;        // serve --insecure-http
  bool supervise = false;           // serve --supervise
  std::string hostName;             // serve --host-name NAME (a PostgreSQL store's hosts)
  int64_t leaseTtlMs = -1;          // serve --lease-ttl SECONDS; -1: the default (15 s)
  int64_t capacity = -1;            // serve --capacity N; -1: the default (10,000 runs)
  bool pollOnly = false;            // serve --poll-only: no LISTEN (a pooler in transaction mode)
  std::vector<std::string> scopes;  // callers add --scope WORKFLOW=SCOPE,…
  std::string gates;                // callers add --gates PATTERN,…
  std::string to;                   // store copy --to LOCATION
  bool ontoNonempty = false;        // store copy --onto-nonempty
  bool endOfOptions = false;        // after `--`, every word is positional
  bool peak = false;                // --peak: the most live at once, beside jr2c's figures
  std::string traces;               // test --traces DIR
};

// `ms` (since the epoch) as ISO 8601 in UTC with milliseconds: `2026-12-02T13:37:52.120Z`, the
// time of `serve --log-format json`.
std::string IsoTime(int64_t ms) {
  const auto t = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", text, static_cast<int>(ms % 1000));
  return out;
}

// How the printed commands (`send …`, `run --resume …`) call this runner: its bare name when that
// is what was typed or PATH finds this very file by it; else the path it was run by, quoted for a
// shell (`./build/samples/tickets`), which works from the same directory.
std::string InvokedAs(const char* argv0, const std::string& name) {
  std::string typed = argv0 == nullptr ? name : argv0;
  if (typed.find('/') == std::string::npos) return typed;
  struct stat self {};
  if (stat(typed.c_str(), &self) != 0) return ShellQuote(typed);
  const char* path = std::getenv("PATH");
  std::string dirs = path == nullptr ? "" : path;
  std::string base = typed.substr(typed.rfind('/') + 1);
  for (size_t at = 0; at <= dirs.size();) {
    const size_t colon = std::min(dirs.find(':', at), dirs.size());
    const std::string dir = dirs.substr(at, colon - at);
    struct stat found {};
    std::string candidate = dir;
    candidate.append("/").append(base);
    if (!dir.empty() && stat(candidate.c_str(), &found) == 0 && found.st_dev == self.st_dev &&
        found.st_ino == self.st_ino)
      return base;
    at = colon + 1;
  }
  return ShellQuote(typed);
}

// --input JSON or --input @FILE: JSON from outside, bounded in size and depth.
Json ReadInput(const std::string& value) {
  if (value.empty()) return Json::object();
  if (value[0] == '@') return ReadExternalJsonFile(value.substr(1), "the input file");
  return ParseExternalJson(value, "the input");
}

// --agents FILE: `{ "AGENT": [ { "event": NAME, "payload": {…} }, … ], … }`.
Json ReadAgentScript(const std::string& path) {
  if (path.empty()) return nullptr;
  const std::string where = "the agent script `" + path + "`";
  Json script = ReadExternalJsonFile(path, "the agent script");
  const std::string shape =
      "; it maps each Agent's name to a list of replies, each "
      "{ \"event\": NAME, \"payload\": { … } }";
  auto refuse = [&](std::string what) {
    what.insert(0, where);
    what += shape;
    throw BadInput(what);
  };
  if (!script.is_object()) refuse(" is not a JSON object");
  for (const auto& [agent, replies] : script.items()) {
    if (!replies.is_array()) refuse(": `" + agent + "` is not a list");
    for (size_t i = 0; i < replies.size(); ++i) {
      const Json& r = replies[i];
      if (!r.is_object() || !r.contains("event") || !r["event"].is_string() ||
          (r.contains("payload") && !r["payload"].is_object())) {
        std::string what = ": reply ";
        what += std::to_string(i + 1);
        what += " of `";
        what += agent;
        what += "` is not a reply";
        refuse(what);
      }
    }
  }
  return script;
}

std::string StorePath(const Args& a) {
  if (!a.store.empty()) return a.store;
  if (const char* env = std::getenv("JR2_STORE"); env != nullptr && *env != '\0') return env;
  return "jr2.db";
}

// `prune --ended-before 30d`: a duration as `.jr2` writes one (LANGUAGE.md): an integer followed
// by `ms`, `s`, `m`, `h` or `d`. A unit spelled otherwise (`90min`, `2w`) is refused with the
// literal to write, as `jr2c check` refuses it in a file.
int64_t DurationArg(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) != 0)
    ++digits;
  const std::string count = text.substr(0, digits);
  const std::string unit = text.substr(digits);
  if (digits > 0 && digits <= 9) {
    if (const long long ms = ::jr2::meant::UnitMillis(unit); ms != 0) return std::stoll(count) * ms;
    // A unit written out: the literal to write instead, as `jr2c check` says it.
    const std::string meant = ::jr2::meant::Duration(count, unit);
    if (!meant.empty())
      throw UsageError("`--ended-before " + Printable(text) + "` is not a duration; write `" +
                       meant + "` (an integer followed by ms, s, m, h or d, as in a `.jr2` file)");
  }
  throw UsageError(
      "`--ended-before` takes a duration as a `.jr2` file writes one: an integer followed by ms, "
      "s, m, h or d (30d, 12h, 90m, 45s), not `" +
      Printable(text) + "`");
}

// The words each verb takes after it: the same against the store and through `--server`.
void CheckArity(const Args& a) {
  const size_t n = a.positional.size();
  if (a.verb == "run" && n != 0)
    throw UsageError("`run` takes no positional arguments; give the input with --input");
  if (a.verb == "send" && (n < 3 || n > 4)) throw UsageError("`send` takes RUN GATE EVENT [JSON]");
  if (a.verb == "status" && n != 1) throw UsageError("`status` takes RUN");
  if (a.verb == "gates" && n > 1) throw UsageError("`gates` takes at most RUN");
  if (a.verb == "runs" && n != 0) throw UsageError("`runs` takes no run; `status RUN` shows one");
  if (a.verb == "cancel" && n != 1) throw UsageError("`cancel` takes RUN");
  if (a.verb == "log" && n != 1) throw UsageError("`log` takes RUN");
  if (a.verb == "export" && n != 1) throw UsageError("`export` takes RUN: `export RUN > FILE`");
  if (a.verb == "replay" && n != 1) throw UsageError("`replay` takes FILE, a trace: `replay FILE`");
  if (a.verb == "test" && (n != 0 || a.traces.empty()))
    throw UsageError("`test` takes --traces DIR: `test --traces DIR` replays every trace in DIR");
  if (!a.traces.empty() && a.verb != "test") throw UsageError("`--traces` goes with `test`");
}

class Runner {
 public:
  // `command`: how to call this runner again in a printed command (InvokedAs).
  Runner(const Registry& registry, const char* workflow, std::string command)
      : registry_(registry), workflow_(workflow), command_(std::move(command)) {}

  int main(const Args& a) {
    if (!a.agents.empty() && a.verb != "run" && a.verb != "send" && a.verb != "serve")
      throw UsageError("`--agents` goes with `run`, `send` and `serve`");
    // `--agents openai` is the model server of the environment (a script named `openai` is
    // `--agents ./openai`); anything else is a script's path.
    if (a.agents == "openai") {
      // The environment is part of how the command was called: a variable missing or wrong is a
      // usage error (64), said before anything runs.
      try {
        model_ = std::make_shared<const ModelServer>(ModelServerFromEnv());
      } catch (const BadInput& e) {
        throw UsageError(e.what());
      }
    } else
      agents_ = ReadAgentScript(a.agents);
    if (a.resumeGiven && a.verb != "run")
      throw UsageError("`--resume` goes with `run`: `" + workflow_ + " run --resume RUN`");
    if (!a.endedBefore.empty() && a.verb != "prune")
      throw UsageError("`--ended-before` goes with `prune`");
    if (a.follow && a.verb != "run" && a.verb != "send" && a.verb != "log")
      throw UsageError("`--follow` goes with `run`, `send` and `log`");
    if (a.all && a.verb != "runs") throw UsageError("`--all` goes with `runs`");
    if (!a.listen.empty() && a.verb != "serve") throw UsageError("`--listen` goes with `serve`");
    if (!a.callers.empty() && a.verb != "serve" && a.verb != "callers")
      throw UsageError("`--callers` goes with `serve` and `callers add`");
    if ((!a.scopes.empty() || !a.gates.empty()) && a.verb != "callers")
      throw UsageError("`--scope` and `--gates` go with `callers add`");
    if (a.maxConnections != 0 && a.verb != "serve")
      throw UsageError("`--max-connections` goes with `serve`");
    if (a.drainMs >= 0 && a.verb != "serve")
      throw UsageError("`--drain-timeout` goes with `serve`");
    if (!a.logFormat.empty() && a.verb != "serve")
      throw UsageError("`--log-format` goes with `serve`");
    if ((!a.tlsCert.empty() || !a.tlsKey.empty() || a.insecureHttp || a.supervise) &&
        a.verb != "serve")
      throw UsageError(
          "`--tls-cert`, `--tls-key`, `--insecure-http` and `--supervise` go with "
          "`serve`");
    if ((!a.hostName.empty() || a.leaseTtlMs >= 0 || a.capacity >= 0 || a.pollOnly) &&
        a.verb != "serve")
      throw UsageError(
          "`--host-name`, `--lease-ttl`, `--capacity` and `--poll-only` go with `serve`");
    if (a.insecureHttp && !a.tlsCert.empty())
      throw UsageError("`--insecure-http` and `--tls-cert` contradict each other: give one");
    if (a.inputGiven && a.verb != "run") throw UsageError("`--input` goes with `run`");
    if ((!a.to.empty() || a.ontoNonempty) && a.verb != "store")
      throw UsageError("`--to` and `--onto-nonempty` go with `store copy`");
    if (a.dropHeld && a.verb != "run")
      throw UsageError("`--drop-held` goes with `run` (of a paused standing Pool)");
    if (a.threads > 0 && a.verb != "run" && a.verb != "send")
      throw UsageError("`--threads` goes with `run` and `send`");
    CheckArity(a);
    if (!a.server.empty()) checkRemote(a);
    if (a.verb == "run") return unsaidToo(run(a));
    if (a.verb == "send") return unsaidToo(send(a));
    if (a.verb == "status") return status(a);
    if (a.verb == "gates") return gates(a);
    if (a.verb == "runs") return runs(a);
    if (a.verb == "cancel") return cancel(a);
    if (a.verb == "log") return log(a);
    if (a.verb == "export") return exportTrace(a);
    if (a.verb == "replay") return ReplayVerb(registry_, workflow_, a.positional[0], a.json);
    if (a.verb == "test") return TestTracesVerb(registry_, workflow_, a.traces, a.json);
    if (a.verb == "prune") return prune(a);
    if (a.verb == "serve") return serve(a);
    if (a.verb == "store") return storeVerb(a);
    if (a.verb == "callers") return callersVerb(a);
    const std::string guess =
        ClosestName(a.verb, {"run", "send", "status", "gates", "runs", "cancel", "log", "export",
                             "replay", "test", "prune", "serve", "store", "callers"});
    throw UsageError("unknown verb `" + Printable(a.verb) +
                     (guess.empty() ? "`; the verbs are run, send, status, gates, runs, cancel, "
                                      "log, export, replay, test, prune, serve, store and "
                                      "callers"
                                    : "`; did you mean `" + guess + "`?"));
  }

 private:
  std::unique_ptr<Store> open(const Args& a, StoreMode mode = StoreMode::kReadWrite) {
    storePath_ = StorePath(a);
    return OpenStore(storePath_, mode);
  }

  // The verbs (verbs.h) this command does: against the store, or with `--server` against that
  // serve, with the token of $JR2_TOKEN or else the instance token beside the store
  // (`<store>.token`). What they tell as they work is printed as it comes (say): the lines of
  // each step once it is stored, and on a terminal a live line with the counts (items taken,
  // live, settled, failed).
  std::unique_ptr<Verbs> verbs(const Args& a) {
    storePath_ = StorePath(a);
    // Not on a terminal (CI, a file), a Pool's item lines are bounded (bounded()); `log` prints
    // every line it is asked for.
    const bool bound = a.verb != "log" && isatty(STDERR_FILENO) == 0;
    VerbTell tell = [this, bound](const std::string& run, const std::string& kind,
                                  const std::string& line) {
      endLiveLine();
      if (bound && bounded(run, kind)) return;
      say(line, run, kind);
    };
    if (!a.server.empty()) {
      RemoteCall call;
      call.server = a.server;
      if (const char* env = std::getenv("JR2_TOKEN"); env != nullptr && *env != '\0') {
        call.token = env;
      } else if (IsPostgresLocation(storePath_)) {
        // A store shared by hosts keeps its instance token in the database.
        auto store = OpenStore(storePath_, StoreMode::kReadOnly);
        if (store->hosts() == nullptr)
          throw BadInput("the run store " + Printable(PostgresLocationName(storePath_)) +
                         " has no hosts yet (a serve of this version makes them); give "
                         "$JR2_TOKEN");
        call.token = store->hosts()->instanceToken();
      } else {
        call.token = InstanceToken(storePath_, /*make=*/false);
      }
      call.workflow = workflow_;
      call.command = command_;
      return OpenServerVerbs(call, std::move(tell));
    }
    StoreVerbsOptions o;
    o.agents = agents_;
    o.model = model_;
    o.threads = a.threads;
    // A commit's lines are gathered and written in one write (a stored Pool of 10,000 items made
    // 80,006 writes, four a line, when each piece went to unbuffered stderr on its own).
    gather_ = true;
    o.tell = std::move(tell);
    o.told = [this] { flushSaid(); };
    if (isatty(STDERR_FILENO) != 0)
      o.counted = [this](const std::string&, const Run::FeedEvent& e) { liveLine(e); };
    // A stop by a signal is said here, with the run to take up again, and the process ends at
    // once (a host function still running on a thread is not waited for).
    o.interrupted = [this](const VerbInterrupted& e) {
      flushSaid();
      endLiveLine();
      std::cerr << workflow_ << ": " << e.what();
      if (!e.run.empty()) {
        std::cerr << "; run " << e.run << " is stored as of its last step";
        if (e.stopped > 0)
          std::cerr << ", and the " << e.stopped << " process"
                    << (e.stopped == 1 ? " it ran was" : "es it ran were")
                    << " stopped (they read `interrupted` when it goes on)";
        std::cerr << "; `" << command_ << " run --resume " << e.run << "` takes it up again";
      }
      std::cerr << "\n" << std::flush;
      std::fflush(stdout);
      std::_Exit(128 + RunHost::Interrupted());
    };
    return OpenStoreVerbs(registry_, workflow_, storePath_, std::move(o));
  }

  // serve's run host, with the front end's side of it: the lines of each step once it is stored,
  // and notes.
  std::unique_ptr<RunHost> host(Store& store, Clock& clock, const Args& a) {
    auto host = std::make_unique<RunHost>(registry_, store, clock, a.threads);
    if (!agents_.is_null()) host->scriptAgents(agents_);
    if (model_) host->modelAgents(model_);
    if (isatty(STDERR_FILENO) != 0)
      host->onEvent([this](const std::string&, const Run::FeedEvent& e) { liveLine(e); });
    host->onSaved([this](const std::string& run, const std::vector<FeedLine>& lines) {
      endLiveLine();
      // One write for the commit's lines.
      const bool was = gather_;
      gather_ = true;
      for (const auto& f : lines) {
        if (!f.line.empty()) say(f.line, run, f.kind);
      }
      gather_ = was;
      flushSaid();
    });
    host->onNote([this](const std::string& note) {
      endLiveLine();
      say(note, "", "note");
    });
    return host;
  }

  // On a terminal, the live line of a Pool's counts (items taken, live, settled, failed), kept
  // current as each feed event happens. A run of one machine (whose `settled` and `failed` are
  // its children's) has no items to count, and shows none.
  void liveLine(const Run::FeedEvent& e) {
    count(e.kind);
    if (!e.line.empty() && taken_ > 0) {
      std::cerr << "\r\033[K";
      std::cerr << "[" << workflow_ << "] " << taken_ << " taken · " << live() << " live · "
                << settled_ << " settled · " << failed_ << " failed" << std::flush;
      liveShown_ = true;
    }
  }

  // The counts of a Pool's items, by the kind of each feed line: the live line's on a terminal,
  // bounded()'s elsewhere (one or the other counts, never both).
  void count(const std::string& kind) {
    if (kind == "started") ++taken_;
    if (kind == "settled") ++settled_;
    if (kind == "failed") ++failed_;
  }
  int64_t live() const { return std::max<int64_t>(0, taken_ - settled_ - failed_); }

  // Where nobody watches (stderr not a terminal: CI, a file), a Pool of 10,000 items would print
  // 20,000 lines. The first kItemLines `started` and `settled` lines are said as they come; after
  // them, a line of counts and rate at most once a second, and one at the end saying how many
  // were not printed and where they all are (`log RUN`). A failure is always said, and so is
  // every other line. True when `kind`'s line is not to be said.
  static constexpr int kItemLines = 20;
  bool bounded(const std::string& run, const std::string& kind) {
    const bool item = kind == "started" || kind == "settled";
    count(kind);
    quiet_.run = run;
    if (!item || quiet_.said < kItemLines) {
      if (item) ++quiet_.said;
      return false;
    }
    if (++quiet_.unsaid == 1) {
      say("the next item lines are counted, not printed: stderr is not a terminal; `" + command_ +
              " log " + run + "` prints them all",
          run, "note");
    }
    const auto now = std::chrono::steady_clock::now();
    if (quiet_.last.time_since_epoch().count() == 0) {
      quiet_.last = now;
      quiet_.lastSettled = settled_;
    }
    const double seconds = std::chrono::duration<double>(now - quiet_.last).count();
    if (seconds >= 1.0) {
      const auto rate =
          static_cast<int64_t>(static_cast<double>(settled_ - quiet_.lastSettled) / seconds);
      say(std::to_string(settled_) + " settled · " + std::to_string(live()) + " live · " +
              std::to_string(failed_) + " failed · " + std::to_string(rate) + " settled/s",
          run, "progress");
      quiet_.last = now;
      quiet_.lastSettled = settled_;
    }
    return true;
  }

  // After a verb that drove a run: how many item lines bounded() kept back, and where they are.
  int unsaidToo(int code) {
    if (quiet_.unsaid > 0) {
      say(std::to_string(settled_) + " settled, " + std::to_string(failed_) + " failed; " +
              std::to_string(quiet_.unsaid) + " item lines were counted, not printed: `" +
              command_ + " log " + quiet_.run + "` prints them all",
          quiet_.run, "note");
      flushSaid();
    }
    return code;
  }

  // Clears the live line before a line is printed, so that nothing is glued onto it.
  void endLiveLine() {
    if (liveShown_) std::cerr << "\r\033[K";
    liveShown_ = false;
  }

  // From here on, SIGINT and SIGTERM stop the host at the end of its turn: what it did is
  // stored, the processes its run started are killed (a restore finds them `interrupted`), and
  // the command exits 128 + the signal. SIGHUP (its terminal closed) and SIGPIPE (`| head`
  // went away) stop it the same way, rather than killing it where it stands; a write to the
  // closed pipe then fails instead (#30). Through `--server` the client handles its own stops.
  static void CatchStops(const Args& a) {
    if (!a.server.empty()) return;
    struct sigaction sa {};
    sa.sa_handler = [](int sig) { RunHost::Interrupt(sig); };
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) sigaction(sig, &sa, nullptr);
  }

  // How this command prints (report.h): the same printers for both fronts.
  PrintOptions printing(const Args& a) const {
    PrintOptions o;
    o.runner = workflow_;
    o.command = command_;
    o.server = a.server;
    o.json = a.json;
    return o;
  }

  int run(const Args& a) {
    auto verbs = this->verbs(a);
    if (!a.resume.empty()) {
      if (a.inputGiven)
        throw UsageError("`run --resume` goes on with the run's own input; remove --input");
      CatchStops(a);
      return PrintRun(verbs->resume(a.resume, a.follow), printing(a));
    }
    const WorkflowInfo* wf = registry_.workflow(workflow_);
    if (wf->pool != nullptr && wf->pool->standing && a.inputGiven)
      throw UsageError("a standing Pool takes no --input: `serve` starts it with its defaults");
    const Json input = ReadInput(a.input);
    CatchStops(a);
    const Changed started = verbs->start(input, a.follow, a.dropHeld);
    const int code = PrintRun(started.view, printing(a));
    if (!started.after.empty()) std::cerr << workflow_ << ": " << Printable(started.after) << "\n";
    return code;
  }

  int send(const Args& a) {
    const Json payload = a.positional.size() == 4
                             ? ParseExternalJson(a.positional[3], "the payload")
                             : Json::object();
    auto verbs = this->verbs(a);
    CatchStops(a);  // Ctrl-C from here on: a hand-over not yet taken is withdrawn
    const Changed done =
        verbs->send(a.positional[0], a.positional[1], a.positional[2], payload, a.follow);
    if (done.handedOver)
      std::cerr << workflow_ << ": the command that drives run " << done.view.value("runId", "")
                << " took the answer\n";
    return PrintRun(done.view, printing(a));
  }

  int status(const Args& a) { return PrintRun(verbs(a)->status(a.positional[0]), printing(a)); }

  int gates(const Args& a) {
    const GateList found = verbs(a)->gates(a.positional.empty() ? "" : a.positional[0]);
    for (const auto& line : found.unreadable)
      std::cerr << workflow_ << ": " << Printable(line) << "\n";
    PrintGates(found.gates, printing(a));
    return found.unreadable.empty() ? kExitDone : kExitError;
  }

  int runs(const Args& a) {
    auto verbs = this->verbs(a);
    PrintRuns(verbs->runs(a.all), a.all, verbs->where(), printing(a));
    return kExitDone;
  }

  int cancel(const Args& a) {
    auto verbs = this->verbs(a);
    CatchStops(a);  // Ctrl-C: a hand-over not yet taken is withdrawn
    PrintRun(verbs->cancel(a.positional[0]).view, printing(a));
    return kExitDone;  // docs/runtime.md: the `cancel` that cancelled the run exits 0
  }

  // log RUN [--follow]: the run's feed as it was saved, each line with its local time; with
  // --follow, then the lines still to come, until the run ends (or Ctrl-C).
  int log(const Args& a) {
    Json all = Json::array();
    std::string id;
    const std::string ended = verbs(a)->log(
        a.positional[0], a.follow,
        [&](const Json& line) { PrintFeedLine(line, a.follow, printing(a), all); }, &id);
    if (a.follow) PrintFeedEnd(id, ended, printing(a));
    if (a.json && !a.follow) PrintJson(all);
    return kExitDone;
  }

  // export RUN: the run's trace (docs/runtime.md#traces) on stdout, from the store or from a
  // serve (`GET /runs/:id/trace`), whole or nothing.
  int exportTrace(const Args& a) {
    std::cout << verbs(a)->trace(a.positional[0]) << std::flush;
    return kExitDone;
  }

  // --server URL: the verbs that go to a serve, and the options that are the serve's.
  static void checkRemote(const Args& a) {
    if (a.verb == "serve" || a.verb == "prune" || a.verb == "store" || a.verb == "callers")
      throw UsageError(
          "`--server` goes with run, send, status, gates, runs, cancel, log and export; `" +
          a.verb + "` works on the store itself");
    if (a.verb == "replay" || a.verb == "test")
      throw UsageError("`" + a.verb +
                       "` reads trace files and needs no store or serve: drop `--server` (`export "
                       "RUN --server URL > FILE` fetches a trace from a serve)");
    if (!a.agents.empty() || a.threads > 0 || a.resumeGiven)
      throw UsageError(
          "with `--server` the serve drives the runs: --agents, --threads and "
          "--resume are the serve's business");
  }

  // serve [--listen HOST:PORT]: hosts every waiting run of this runner's workflows until SIGTERM
  // or Ctrl-C (docs/runtime.md#serve).
  int serve(const Args& a) {
    if (!a.positional.empty()) throw UsageError("`serve` takes no run; it hosts every waiting one");
    ServeOptions options;
    if (!a.listen.empty()) options.listen = a.listen;
    options.maxConnections = a.maxConnections;
    if (a.drainMs >= 0) options.drainMs = a.drainMs;
    options.tlsCert = a.tlsCert;
    options.tlsKey = a.tlsKey;
    options.insecureHttp = a.insecureHttp;
    options.hostName = a.hostName;
    if (a.leaseTtlMs >= 0) options.leaseTtlMs = a.leaseTtlMs;
    if (a.capacity >= 0) options.capacity = a.capacity;
    options.pollOnly = a.pollOnly;
    if (a.supervise) {
      // The supervisor binds, then forks each serve; it returns here in the serve it forked.
      options.listenFd = ListenOn(options.listen);
      supervise();
    }
    serving_ = true;
    logJson_ = a.logFormat == "json";
    for (const auto& w : registry_.workflows()) options.workflows.push_back(w.name);
    options.callersFile = a.callers;
    auto store = open(a);
    options.storePath = storePath_;
    options.home = CurrentDirectory();
    SystemClock clock;
    auto host = this->host(*store, clock, a);
    CatchStops(a);
    return Serve(*host, options, [this](const std::string& line) { say(line, "", "serve"); });
  }

  // serve --supervise: this process stays a supervisor, and each serve it forks returns from
  // here to serve on the socket bound before. A serve that ends by a signal it did not handle
  // (SIGSEGV, SIGABRT, SIGBUS, SIGKILL from the OOM killer, …) is started again after a pause
  // (0.5 s, doubled up to 8 s); five such ends within 60 s give up (exit 70). A serve that
  // exits is followed: its code is the supervisor's. SIGTERM, SIGINT and SIGHUP are passed on
  // to the serve (which drains); a serve outlives no supervisor (PR_SET_PDEATHSIG).
  void supervise() {
    static volatile std::sig_atomic_t passOn = 0;
    struct sigaction sa {};
    sa.sa_handler = [](int sig) { passOn = sig; };
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
    std::vector<std::chrono::steady_clock::time_point> crashes;
    const pid_t supervisor = getpid();
    for (;;) {
      std::fflush(stdout);
      std::cerr << std::flush;
      const pid_t child = fork();
      if (child < 0)
        throw BadInput(std::string("serve --supervise cannot fork: ") + std::strerror(errno));
      if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != supervisor) std::_Exit(0);  // the supervisor was gone already
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &dfl, nullptr);
        return;  // this is the serve
      }
      int status = 0;
      bool told = false;
      for (;;) {
        if (passOn != 0 && !told) {
          kill(child, passOn);
          told = true;
        }
        const pid_t r = waitpid(child, &status, 0);
        if (r == child) break;
        if (r < 0 && errno != EINTR) std::_Exit(70);
      }
      if (WIFEXITED(status)) std::_Exit(WEXITSTATUS(status));
      const int sig = WTERMSIG(status);
      if (told) std::_Exit(128 + sig);
      const auto now = std::chrono::steady_clock::now();
      crashes.push_back(now);
      while (!crashes.empty() && now - crashes.front() > std::chrono::seconds(60))
        crashes.erase(crashes.begin());
      const char* name = strsignal(sig);
      if (crashes.size() >= 5) {
        say("serve (pid " + std::to_string(child) + ") ended by signal " + std::to_string(sig) +
                " (" + (name != nullptr ? name : "?") + "), the 5th time in 60 s; giving up",
            "", "supervisor");
        std::_Exit(70);
      }
      const int64_t pauseMs = std::min<int64_t>(8000, int64_t{500} << (crashes.size() - 1));
      say("serve (pid " + std::to_string(child) + ") ended by signal " + std::to_string(sig) +
              " (" + (name != nullptr ? name : "?") + "); starting it again in " +
              std::to_string(pauseMs) + " ms (" + std::to_string(crashes.size()) +
              " in 60 s; the runs it hosted go on from the store, an effect that was out reads "
              "`interrupted`)",
          "", "supervisor");
      for (int64_t waited = 0; waited < pauseMs && passOn == 0; waited += 50)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (passOn != 0) std::_Exit(128 + passOn);
    }
  }

  // A line for the person (or the log collector) watching serve or a run: `WORKFLOW: TEXT` (with
  // the run under serve, which hosts many), or with `serve --log-format json` one JSON object a
  // line: `{"time", "workflow", "run"?, "kind", "message"}`.
  // Each line is made whole and written in one write; while gather_ is set (a commit's lines),
  // they wait in said_ for flushSaid().
  void say(const std::string& text, const std::string& run, const std::string& kind) {
    if (logJson_) {
      Json line = {{"time", IsoTime(SystemClock().nowMs())}, {"workflow", workflow_}};
      if (!run.empty()) line["run"] = run;
      line["kind"] = kind;
      line["message"] = text;
      said_ += line.dump(-1, ' ', false, Json::error_handler_t::replace);
    } else {
      said_ += workflow_;
      said_ += ": ";
      if (serving_ && !run.empty()) said_ += run + ": ";
      said_ += Printable(text);
    }
    said_ += '\n';
    if (!gather_ || said_.size() >= size_t{64} * 1024) flushSaid();
  }
  // Writes what say() gathered (stderr is unbuffered: one fwrite is one write).
  void flushSaid() {
    if (said_.empty()) return;
    std::cerr.flush();
    std::fwrite(said_.data(), 1, said_.size(), stderr);
    said_.clear();
  }

  // prune --ended-before DURATION: deletes this workflow's runs that ended longer ago than that.
  int prune(const Args& a) {
    if (!a.positional.empty()) throw UsageError("`prune` takes no run; give --ended-before");
    if (a.endedBefore.empty())
      throw UsageError("`prune` needs --ended-before DURATION (30d, 12h, …)");
    const int64_t age = DurationArg(a.endedBefore);
    const int64_t before = SystemClock().nowMs() - age;
    const int64_t pruned = verbs(a)->prune(before);
    if (a.json) PrintJson({{"pruned", pruned}, {"endedBefore", before}});
    std::cerr << workflow_ << ": pruned " << pruned << " run" << (pruned == 1 ? "" : "s")
              << " that ended before " << LocalTime(before) << "\n";
    return kExitDone;
  }

  // callers add NAME --scope WORKFLOW=SCOPE,… [--gates PATTERN,…] --callers FILE: a Caller
  // added to the callers file, its token printed once (stdout), only its hash kept.
  int callersVerb(const Args& a) {
    if (a.positional.size() != 2 || a.positional[0] != "add")
      throw UsageError("`callers` takes `add NAME`: `" + workflow_ + " callers add ci --scope " +
                       workflow_ + "=start,read --callers FILE`");
    if (a.callers.empty())
      throw UsageError("`callers add` needs --callers FILE (the file serve reads)");
    if (a.scopes.empty())
      throw UsageError("`callers add` needs at least one --scope WORKFLOW=SCOPE,… (`" + workflow_ +
                       "=start,read,answer,cancel`, or `*=read`)");
    Json scopes = Json::object();
    for (const auto& s : a.scopes) {
      const size_t eq = s.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
        throw UsageError("--scope takes WORKFLOW=SCOPE,…, such as `" + workflow_ +
                         "=start,read`, not `" + Printable(s) + "`");
      Json& list = scopes[s.substr(0, eq)];
      if (!list.is_array()) list = Json::array();
      for (const auto& scope : SplitCommas(s.substr(eq + 1))) list.push_back(scope);
    }
    const std::string token = AddCaller(a.callers, a.positional[1], scopes, SplitCommas(a.gates));
    if (a.json) {
      PrintJson({{"caller", a.positional[1]}, {"token", token}, {"callers", a.callers}});
    } else {
      std::cout << token << "\n" << std::flush;
    }
    std::cerr << workflow_ << ": Caller `" << Printable(a.positional[1]) << "` added to "
              << Printable(a.callers)
              << "; its token, above, is shown this once (the file keeps its SHA-256). serve reads "
                 "the file when it starts: restart it\n";
    return kExitDone;
  }

  static std::vector<std::string> SplitCommas(const std::string& text) {
    std::vector<std::string> out;
    size_t from = 0;
    while (from < text.size()) {
      const size_t comma = text.find(',', from);
      std::string part =
          text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
      if (!part.empty()) out.push_back(std::move(part));
      if (comma == std::string::npos) break;
      from = comma + 1;
    }
    return out;
  }

  // store backup FILE: a consistent copy of the store, safe while serve and commands use it.
  // store copy --to LOCATION [--onto-nonempty]: the SQLite store copied into PostgreSQL.
  int storeVerb(const Args& a) {
    if (a.positional.size() == 1 && a.positional[0] == "copy") return storeCopy(a);
    if (!a.to.empty() || a.ontoNonempty)
      throw UsageError("`--to` and `--onto-nonempty` go with `store copy`");
    if (a.positional.size() != 2 || a.positional[0] != "backup")
      throw UsageError("`store` takes `backup FILE` or `copy --to LOCATION`: `" + workflow_ +
                       " store backup jr2-copy.db`");
    storePath_ = StorePath(a);
    if (IsPostgresLocation(storePath_)) {
      throw UsageError("`store backup` copies a SQLite store; " +
                       Printable(PostgresLocationName(storePath_)) +
                       " is a PostgreSQL database: back it up with `pg_dump` "
                       "(docs/scaling.md#pointing-a-runner-at-postgresql)");
    }
    const std::string& to = a.positional[1];
    const BackupInfo info = BackupSqliteStore(storePath_, to);
    if (a.json) PrintJson({{"backup", to}, {"runs", info.runs}, {"bytes", info.bytes}});
    std::cerr << workflow_ << ": backed up " << info.runs << " run" << (info.runs == 1 ? "" : "s")
              << " (" << (info.bytes + 1023) / 1024 << " KB) from " << Printable(storePath_)
              << " to " << Printable(to) << "\n";
    return kExitDone;
  }

  int storeCopy(const Args& a) {
    storePath_ = StorePath(a);
    if (a.to.empty())
      throw UsageError(
          "`store copy` needs `--to LOCATION`, the PostgreSQL database to copy into: `" +
          workflow_ + " store copy --to postgresql://jr2@db.example/jr2`");
    if (IsPostgresLocation(storePath_) || !IsPostgresLocation(a.to)) {
      throw UsageError(
          IsPostgresLocation(storePath_)
              ? "`store copy` copies a SQLite store into PostgreSQL, and the store " +
                    Printable(PostgresLocationName(storePath_)) +
                    " is a PostgreSQL database already: give the SQLite file with --store or "
                    "JR2_STORE (between databases, use pg_dump)"
              : "`store copy --to` takes a PostgreSQL database (postgresql://… or host=… "
                "dbname=…), and `" +
                    Printable(a.to) +
                    "` is a path: give the database's location (into a SQLite file, use `store "
                    "backup FILE`)");
    }
    const StoreCopyCounts n = CopySqliteToPostgres(storePath_, a.to, {a.ontoNonempty});
    const std::string to = PostgresLocationName(a.to);
    if (a.json) {
      PrintJson({{"from", storePath_},
                 {"to", to},
                 {"runs", n.runs},
                 {"waiting", n.waiting},
                 {"feed", n.feed},
                 {"journal", n.journal},
                 {"heads", n.heads},
                 {"starts", n.starts},
                 {"hooks", n.hooks},
                 {"hooksKept", n.hooksKept},
                 {"requestsLeft", n.requestsLeft}});
    }
    std::cerr << workflow_ << ": copied " << n.runs << " run" << (n.runs == 1 ? "" : "s") << " ("
              << n.waiting << " waiting), " << n.feed << " feed lines, " << n.journal
              << " journal entries, " << n.heads << " heads, " << n.starts << " start keys, "
              << n.hooks << " hook deliveries";
    if (n.hooksKept > 0) std::cerr << " (" << n.hooksKept << " logged there already, kept)";
    std::cerr << " from " << Printable(storePath_) << " to " << Printable(to) << "; the inbox's "
              << n.requestsLeft << " requests stay behind; the runs are owned by no host\n";
    return kExitDone;
  }

  const Registry& registry_;
  std::string workflow_;
  std::string command_;  // the runner as the printed commands call it
  std::string storePath_;
  std::string said_;                          // lines said and not yet written (say, flushSaid)
  bool gather_ = false;                       // say() gathers its lines until flushSaid()
  Json agents_;                               // --agents FILE
  std::shared_ptr<const ModelServer> model_;  // --agents openai
  bool serving_ = false;                      // serve: its lines name their run
  bool liveShown_ = false;  // the live line is on the terminal (cleared before the next line)
  bool logJson_ = false;    // serve --log-format json
  int64_t taken_ = 0;       // count(): a Pool's items started, settled and failed
  int64_t settled_ = 0;
  int64_t failed_ = 0;
  struct Quiet {                   // bounded(): the item lines where nobody watches
    int64_t said = 0, unsaid = 0;  // item lines said, and not said
    std::chrono::steady_clock::time_point last{};
    int64_t lastSettled = 0;
    std::string run;  // the run they are of
  } quiet_;
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto value = [&](const char* flag) {
      if (i + 1 >= argc) throw UsageError(std::string("`") + flag + "` needs a value");
      return std::string(argv[++i]);
    };
    if (a.endOfOptions) {  // `send RUN -- -GATE EVENT`: a word that starts with `-`
      if (a.verb.empty()) {
        a.verb = s;
      } else {
        a.positional.push_back(s);
      }
      continue;
    }
    auto once = [&](bool& seen, const char* flag) {
      if (seen) throw UsageError(std::string("`") + flag + "` is given twice");
      seen = true;
    };
    if (s == "--") {
      a.endOfOptions = true;
    } else if (s == "--input") {
      once(a.inputGiven, "--input");
      a.input = value("--input");
    } else if (s == "--store")
      a.store = value("--store");
    else if (s == "--json")
      a.json = true;
    else if (s == "--all")
      a.all = true;
    else if (s == "--follow")
      once(a.follow, "--follow");
    else if (s == "--agents")
      a.agents = value("--agents");
    else if (s == "--ended-before")
      a.endedBefore = value("--ended-before");
    else if (s == "--listen")
      a.listen = value("--listen");
    else if (s == "--callers")
      a.callers = value("--callers");
    else if (s == "--scope")
      a.scopes.push_back(value("--scope"));
    else if (s == "--gates")
      a.gates = value("--gates");
    else if (s == "--server")
      a.server = value("--server");
    else if (s == "--drop-held")
      a.dropHeld = true;
    else if (s == "--threads") {
      if (a.threads != 0) throw UsageError("`--threads` is given twice");
      const std::string v = value("--threads");
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0])) || *end != '\0' || n < 1 ||
          n > 1024)
        throw UsageError("`--threads` takes a whole number from 1 to 1024, not `" + v + "`");
      a.threads = static_cast<int>(n);
    } else if (s == "--max-connections") {
      if (a.maxConnections != 0) throw UsageError("`--max-connections` is given twice");
      const std::string v = value("--max-connections");
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0])) || *end != '\0' || n < 4 ||
          n > 1000000)
        throw UsageError("`--max-connections` takes a whole number from 4 to 1000000, not `" + v +
                         "`");
      a.maxConnections = static_cast<int>(n);
    } else if (s == "--drain-timeout") {
      if (a.drainMs >= 0) throw UsageError("`--drain-timeout` is given twice");
      const std::string v = value("--drain-timeout");
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0])) || *end != '\0' || n < 0 ||
          n > 3600)
        throw UsageError("`--drain-timeout` takes whole seconds from 0 to 3600, not `" + v + "`");
      a.drainMs = static_cast<int64_t>(n) * 1000;
    } else if (s == "--host-name") {
      if (!a.hostName.empty()) throw UsageError("`--host-name` is given twice");
      a.hostName = value("--host-name");
      bool ok = !a.hostName.empty() && a.hostName.size() <= 200;
      for (const char c : a.hostName) ok = ok && c > ' ' && c < 127;
      if (!ok)
        throw UsageError("`--host-name` takes 1 to 200 printable characters without spaces, not `" +
                         Printable(a.hostName) + "`");
    } else if (s == "--poll-only") {
      a.pollOnly = true;
    } else if (s == "--lease-ttl" || s == "--capacity") {
      int64_t& to = s == "--lease-ttl" ? a.leaseTtlMs : a.capacity;
      if (to >= 0) throw UsageError("`" + s + "` is given twice");
      const std::string v = value(s.c_str());
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      const long low = s == "--lease-ttl" ? 3 : 1;
      const long high = s == "--lease-ttl" ? 3600 : 1000000;
      if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0])) || *end != '\0' || n < low ||
          n > high)
        throw UsageError("`" + s + "` takes a whole number" +
                         (s == "--lease-ttl" ? std::string(" of seconds") : std::string()) +
                         " from " + std::to_string(low) + " to " + std::to_string(high) +
                         ", not `" + Printable(v) + "`");
      to = s == "--lease-ttl" ? static_cast<int64_t>(n) * 1000 : static_cast<int64_t>(n);
    } else if (s == "--tls-cert") {
      if (!a.tlsCert.empty()) throw UsageError("`--tls-cert` is given twice");
      a.tlsCert = value("--tls-cert");
      if (a.tlsCert.empty()) throw UsageError("`--tls-cert` needs a file");
    } else if (s == "--tls-key") {
      if (!a.tlsKey.empty()) throw UsageError("`--tls-key` is given twice");
      a.tlsKey = value("--tls-key");
      if (a.tlsKey.empty()) throw UsageError("`--tls-key` needs a file");
    } else if (s == "--insecure-http") {
      a.insecureHttp = true;
    } else if (s == "--supervise") {
      a.supervise = true;
    } else if (s == "--log-format") {
      if (!a.logFormat.empty()) throw UsageError("`--log-format` is given twice");
      a.logFormat = value("--log-format");
      if (a.logFormat != "text" && a.logFormat != "json")
        throw UsageError("`--log-format` takes `text` or `json`, not `" + a.logFormat + "`");
    } else if (s == "--to") {
      a.to = value("--to");
    } else if (s == "--onto-nonempty") {
      a.ontoNonempty = true;
    } else if (s == "--peak") {
      a.peak = true;
    } else if (s == "--traces") {
      if (!a.traces.empty()) throw UsageError("`--traces` is given twice");
      a.traces = value("--traces");
      if (a.traces.empty()) throw UsageError("`--traces` needs a folder");
    } else if (s == "--resume") {
      a.resume = value("--resume");
      a.resumeGiven = true;
      if (a.resume.empty()) throw UsageError("`--resume` needs a run id");
    } else if (s.size() > 1 && s[0] == '-' && s != "-") {
      // Every option above, for a typo's did-you-mean.
      static const std::vector<std::string> kOptions{"--agents",
                                                     "--all",
                                                     "--callers",
                                                     "--capacity",
                                                     "--drain-timeout",
                                                     "--drop-held",
                                                     "--ended-before",
                                                     "--follow",
                                                     "--gates",
                                                     "--host-name",
                                                     "--input",
                                                     "--insecure-http",
                                                     "--json",
                                                     "--lease-ttl",
                                                     "--listen",
                                                     "--log-format",
                                                     "--max-connections",
                                                     "--onto-nonempty",
                                                     "--peak",
                                                     "--poll-only",
                                                     "--resume",
                                                     "--scope",
                                                     "--server",
                                                     "--store",
                                                     "--supervise",
                                                     "--traces",
                                                     "--threads",
                                                     "--tls-cert",
                                                     "--tls-key",
                                                     "--to"};
      const std::string guess = ClosestName(s, kOptions);
      throw UsageError("unknown option `" + Printable(s) + "`" +
                       (guess.empty() ? "" : "; did you mean `" + guess + "`?"));
    } else if (a.verb.empty())
      a.verb = s;
    else
      a.positional.push_back(s);
  }
  return a;
}

// `--peak`'s line: the most of each live at once in this process (core/occupancy.h), of the
// workflow's figures that jr2c worked out (WorkflowInfo::concurrency).
std::string PeakLine(const WorkflowInfo& wf) {
  Json figures = nullptr;
  if (wf.concurrency != nullptr) figures = Json::parse(wf.concurrency);
  std::string out = "peak:";
  const std::pair<Live, const char*> kinds[] = {
      {Live::kWorker, "workers"}, {Live::kProcess, "processes"}, {Live::kRun, "runs"}};
  for (const auto& [kind, name] : kinds) {
    if (kind != Live::kWorker) out += ",";
    out += std::string(" ") + name + " " + std::to_string(Occupancy(kind).peak) + " of ";
    if (!figures.is_object()) {
      out += "?";
    } else if (figures.value(name, Json()).is_number_integer()) {
      out += std::to_string(figures[name].get<int64_t>());
    } else {
      out += "unbounded";
    }
  }
  return out + " (the most live at once in this process, of what `jr2c check` worked out for `" +
         wf.name + "`" + (figures.is_object() ? "" : ": not in this build") + ")";
}

}  // namespace

int ExitCodeOf(RunStatus s) {
  switch (s) {
    case RunStatus::kDone:
      return kExitDone;
    case RunStatus::kFailed:
      return kExitFailed;
    case RunStatus::kDeadlocked:
      return kExitDeadlocked;
    case RunStatus::kWaiting:
      return kExitWaiting;
    case RunStatus::kError:
      return kExitError;
    case RunStatus::kCancelled:
      return kExitCancelled;
  }
  return kExitError;
}

int RunnerMainOf(const RegisterWorkflowsFn* registers, int count, const char* workflow, int argc,
                 char** argv) {
  Registry registry;
  for (int i = 0; i < count; ++i) registers[i](registry);
  return RunnerMain(registry, workflow, argc, argv);
}

int RunnerMain(const Registry& registry, const char* workflow, int argc, char** argv) {
  const WorkflowInfo* wf = registry.workflow(workflow);
  if (wf == nullptr) {
    std::cerr << workflow << ": error: this runner was built without the workflow `" << workflow
              << "`\n";
    return kExitError;
  }
  std::string first = argc > 1 ? argv[1] : "";
  for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i) {
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) first = "--help";
  }
  if (first.empty() || first == "--help" || first == "-h" || first == "help") {
    (first.empty() ? std::cerr : std::cout)
        << "usage: " << workflow << " <verb> …   (the runner of workflow `" << workflow << "`, "
        << wf->file << ")\n\n"
        << "  run   [--input JSON|@FILE] [--store PATH] [--follow] [--json]   start; drive until "
           "it ends or waits\n"
        << "  run   --resume RUN [--follow]                                    take a saved run "
           "up again\n"
        << "  run, send, serve … --agents FILE                                 answer Agents from "
           "a script\n"
        << "  run, send, serve … --agents openai                               answer Agents with "
           "a model (JR2_AGENT_*)\n"
        << "  run, send … --threads N                                          threads for "
           "blocking host functions\n"
        << "  run, send … --peak                                               the most workers, "
           "processes, runs at once\n"
        << "  send  RUN GATE EVENT [JSON]                                      deliver at a Gate; "
           "drive again\n"
        << "  status RUN [--json]                                              status, output, "
           "open Gates\n"
        << "  gates [RUN]                                                      what needs a "
           "person\n"
        << "  runs  [--all]                                                    the runs in the "
           "store\n"
        << "  cancel RUN\n"
        << "  log   RUN [--follow]                                             the run's feed\n"
        << "  export RUN > FILE                                                the run's trace: "
           "what each turn took in\n"
        << "  replay FILE [--json]                                             drive a trace "
           "again; none of its effects run\n"
        << "  test --traces DIR                                                replay each "
           "DIR/*.jsonl; exit 1 if one diverged\n"
        << "  prune --ended-before DURATION                                    delete runs that "
           "ended before\n"
        << "  serve [--listen HOST:PORT] [--callers FILE] [--max-connections N]  host every "
           "waiting run, over HTTP\n"
        << "        [--tls-cert FILE --tls-key FILE | --insecure-http] [--drain-timeout S] "
           "[--log-format text|json]\n"
        << "        [--host-name NAME] [--lease-ttl S] [--capacity N] [--poll-only]   with hosts "
           "sharing a PostgreSQL store\n"
        << "  store backup FILE                                                a copy of the "
           "store, safe while it is used\n"
        << "  store copy --to LOCATION [--onto-nonempty]                       the SQLite store "
           "copied into PostgreSQL\n"
        << "  callers add NAME --scope WORKFLOW=SCOPE,… [--gates P,…] --callers FILE   a Caller, "
           "its token printed once\n"
        << "  run, send, status, gates, runs, cancel, log, export … --server URL   the same, "
           "sent to a serve\n"
        << "Every verb that prints takes --json.\n\n"
        << "The store is ./jr2.db, or --store PATH, or $JR2_STORE. A run prefix of 4+ characters\n"
        << "addresses a run. Exit codes: done 0, failed 1, deadlocked 2, waiting 3, error 4,\n"
        << "cancelled 5, usage 64, bad input 65.\n";
    return first.empty() ? kExitUsage : kExitDone;
  }
  try {
    const Args args = Parse(argc, argv);
    if (args.peak && !args.server.empty())
      throw UsageError(
          "`--peak` counts what this process ran; with `--server` the serve runs it (its "
          "/metrics has `jr2_live_peak`)");
    const int code =
        Runner(registry, workflow, InvokedAs(argc > 0 ? argv[0] : workflow, workflow)).main(args);
    if (args.peak) std::cerr << PeakLine(*wf) << "\n";
    return code;
  } catch (const std::exception& e) {
    // The exit code of each kind of error is the table's (errors.h), as serve's status is.
    std::cerr << workflow << ": error: " << Printable(e.what()) << "\n";
    return RuleOf(KindOf(e)).exit;
  }
}

}  // namespace jr2rt
