// A workflow's runner (RUNTIME.md §4): run, send, status, gates, runs, cancel, log, prune.

#include "jr2/runner.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
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
#include <random>
#include <sstream>
#include <thread>

#include "jr2/run.h"
#include "jr2/saver.h"
#include "jr2/store.h"

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
  std::string agents;  // --agents FILE: the scripted Agent harness
  bool resumeGiven = false;
  std::string endedBefore;  // prune --ended-before DURATION
  bool inputGiven = false;
  int threads = 0;            // --threads N: for blocking host functions; 0 the default
  bool endOfOptions = false;  // after `--`, every word is positional
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// --input JSON or --input @FILE: JSON from outside, bounded in size and depth.
Json ReadInput(const std::string& value) {
  if (value.empty()) return Json::object();
  if (value[0] == '@') return ReadExternalJsonFile(value.substr(1), "the input file");
  return ParseExternalJson(value, "the input");
}

// A wait for a person to read: "250 ms", "30 s", "1 min 30 s", "2 h 5 min", "3 d 4 h".
std::string DurationText(int64_t ms) {
  if (ms < 1000) return std::to_string(ms) + " ms";
  const int64_t s = (ms + 500) / 1000;  // to the nearest second: 3,599.9 s reads "1 h"
  auto two = [](int64_t big, const char* bigUnit, int64_t small, const char* smallUnit) {
    std::string out = std::to_string(big) + " " + bigUnit;
    if (small != 0) out += " " + std::to_string(small) + " " + smallUnit;
    return out;
  };
  if (s < 60) return std::to_string(s) + " s";
  if (s < 3600) return two(s / 60, "min", s % 60, "s");
  if (s < 86400) return two(s / 3600, "h", s % 3600 / 60, "min");
  return two(s / 86400, "d", s % 86400 / 3600, "h");
}

// "2026-11-30 06:20:11", in local time.
std::string LocalTime(int64_t ms) {
  const auto t = static_cast<std::time_t>(ms / 1000);
  std::tm local{};
  localtime_r(&t, &local);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &local);
  return text;
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

std::string NewRunId() {
  std::random_device rd;
  std::mt19937_64 gen(
      (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  static const char* hex = "0123456789abcdef";
  std::string id;
  uint64_t v = gen();
  for (int i = 0; i < 12; ++i, v >>= 4) id += hex[v & 15];
  return id;
}

std::string StorePath(const Args& a) {
  if (!a.store.empty()) return a.store;
  if (const char* env = std::getenv("JR2_STORE"); env != nullptr && *env != '\0') return env;
  return "jr2.db";
}

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

// Text from outside (ids, Gate names, reasons, `log(...)` lines) as it may reach a terminal: each
// control character (C0, DEL, C1) is shown escaped (`\n`, `\x1b`), so no text can move the
// cursor, recolour the screen or forge a line of its own.
std::string Printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    char buf[8];
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else if (c == 0xe2 && i + 2 < text.size() &&
               ((text[i + 1] == '\x80' && (static_cast<unsigned char>(text[i + 2]) == 0xa8 ||
                                           static_cast<unsigned char>(text[i + 2]) == 0xa9 ||
                                           (static_cast<unsigned char>(text[i + 2]) >= 0xaa &&
                                            static_cast<unsigned char>(text[i + 2]) <= 0xae))) ||
                (text[i + 1] == '\x81' && static_cast<unsigned char>(text[i + 2]) >= 0xa6 &&
                 static_cast<unsigned char>(text[i + 2]) <= 0xa9))) {
      // U+2028/2029 (line and paragraph separators) and the bidirectional controls
      // (U+202A–202E, U+2066–2069): they can break or reorder what a person reads.
      const unsigned cp = 0x2000u + ((static_cast<unsigned char>(text[i + 1]) & 0x3fu) << 6) +
                          (static_cast<unsigned char>(text[i + 2]) & 0x3fu);
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      out += buf;
      i += 2;
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      // A C1 control (U+0080–U+009F): some terminals take U+009B as an escape sequence.
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(text[i + 1]));
      out += buf;
      ++i;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// One word of a command line for a POSIX shell, to be pasted: plain when it is made only of
// characters no shell treats specially, in single quotes otherwise, and as $'…' with escapes when
// it holds a control character (so that it neither runs anything nor reaches the terminal raw).
std::string ShellQuote(const std::string& word) {
  if (word.empty()) return "''";
  bool plain = true, control = false;
  for (char ch : word) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) control = true;
    if (!(std::isalnum(c) != 0 || std::strchr("_-./:@%+=,", ch) != nullptr) || c >= 0x80)
      plain = false;
  }
  if (plain) return word;
  if (!control && Printable(word) == word) {
    std::string out = "'";
    for (char ch : word) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return out + "'";
  }
  std::string out = "$'";
  for (char ch : word) {
    const auto c = static_cast<unsigned char>(ch);
    char buf[8];
    if (ch == '\'' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f || c >= 0x80) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "'";
}

// `prune --ended-before 30d`: a count and a unit (s, min, h, d, w), as `.jr2` writes durations.
int64_t DurationArg(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])) != 0)
    ++digits;
  const std::string unit = text.substr(digits);
  static const std::pair<const char*, int64_t> kUnits[] = {
      {"ms", 1}, {"s", 1000}, {"min", 60000}, {"h", 3600000}, {"d", 86400000}, {"w", 604800000}};
  if (digits > 0 && digits <= 9) {
    for (const auto& [name, ms] : kUnits) {
      if (unit == name) return std::stoll(text.substr(0, digits)) * ms;
    }
  }
  throw UsageError("`--ended-before` takes a duration such as 30d, 12h, 90min or 45s, not `" +
                   Printable(text) + "`");
}

std::string FieldsText(const EventSpec& e) {
  if (e.fields.empty()) return "";
  std::string out = " {";
  for (size_t i = 0; i < e.fields.size(); ++i) {
    out += (i ? ", " : " ") + e.fields[i].name + (e.fields[i].required ? "" : "?") + ": " +
           e.fields[i].type;
  }
  return out + " }";
}

std::string ExamplePayload(const EventSpec& e) {
  Json j = Json::object();
  for (const auto& f : e.fields) {
    if (!f.required) continue;
    j[f.name] = f.type == "int" || f.type == "float" ? Json(0)
                : f.type == "bool"                   ? Json(false)
                                                     : Json("…");
  }
  return j.empty() ? "" : " " + ShellQuote(j.dump());
}

// A run that no longer fits this build of the runner (a state renamed, a parameter without a
// default added): it is marked `drifted` in the store, and the command exits 4.
class Drifted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Runner {
 public:
  Runner(const Registry& registry, const char* workflow)
      : registry_(registry), workflow_(workflow) {}

  // The scripted Agent harness, when --agents gave one: in every run this command drives.
  void arm(Run& run) {
    if (!agents_.is_null()) run.scriptAgents(agents_);
  }

  int main(const Args& a) {
    if (!a.agents.empty() && a.verb != "run" && a.verb != "send")
      throw UsageError("`--agents` goes with `run` and `send`");
    agents_ = ReadAgentScript(a.agents);
    if (a.resumeGiven && a.verb != "run")
      throw UsageError("`--resume` goes with `run`: `" + workflow_ + " run --resume RUN`");
    if (!a.endedBefore.empty() && a.verb != "prune")
      throw UsageError("`--ended-before` goes with `prune`");
    if (a.follow && a.verb != "run" && a.verb != "send" && a.verb != "log")
      throw UsageError("`--follow` goes with `run`, `send` and `log`");
    if (a.all && a.verb != "runs") throw UsageError("`--all` goes with `runs`");
    if (a.inputGiven && a.verb != "run") throw UsageError("`--input` goes with `run`");
    if (a.threads > 0 && a.verb != "run" && a.verb != "send")
      throw UsageError("`--threads` goes with `run` and `send`");
    if (a.threads > 0) SetEffectThreads(a.threads);
    if (a.verb == "run") return run(a);
    if (a.verb == "send") return send(a);
    if (a.verb == "status") return status(a);
    if (a.verb == "gates") return gates(a);
    if (a.verb == "runs") return runs(a);
    if (a.verb == "cancel") return cancel(a);
    if (a.verb == "log") return log(a);
    if (a.verb == "prune") return prune(a);
    throw UsageError("unknown verb `" + Printable(a.verb) +
                     "`; the verbs are run, send, status, gates, runs, cancel, log and prune");
  }

 private:
  std::unique_ptr<Store> open(const Args& a, StoreMode mode = StoreMode::kReadWrite) {
    storePath_ = StorePath(a);
    return OpenSqliteStore(storePath_, mode);
  }

  // Takes the run's drive lock (waiting for another command to finish with it), then loads the
  // run as that command left it.
  std::unique_ptr<Run> restoreLocked(Store& store, const std::string& prefix, Clock& clock) {
    const std::string id = store.resolve(prefix);
    lock_ = store.lock(id, [&](const std::string& holder) {
      std::cerr << workflow_ << ": another command"
                << (holder.empty() ? std::string() : " (" + holder + ")") << " is driving run "
                << id << "; waiting for it to finish"
                << (holder.empty() ? std::string()
                                   : " (if it is stopped, `kill -CONT " + holder.substr(4) +
                                         "` lets it go on; Ctrl-C ends this wait)")
                << "\n";
    });
    return restore(store, id, clock);
  }

  // Progress lines are held until the step they tell of is saved (RUNTIME.md §1: nothing is
  // visible outside before it is stored), then printed to stderr and kept in the run's feed. On
  // a terminal, a live line keeps the counts (items taken, live, settled, failed) current.
  void watch(Run& run) {
    const bool tty = isatty(STDERR_FILENO) != 0;
    run.onEvent([this, tty](const Run::FeedEvent& e) {
      if (e.kind == "started") ++taken_;
      if (e.kind == "settled") ++settled_;
      if (e.kind == "failed") ++failed_;
      if (saver_) saver_->addEvent(FeedLine(0, SystemClock().nowMs(), e.line, e.kind, e.data));
      if (tty && !e.line.empty()) {
        std::cerr << "\r\033[K";
        std::cerr << "[" << workflow_ << "] " << taken_ << " taken · "
                  << (taken_ - settled_ - failed_) << " live · " << settled_ << " settled · "
                  << failed_ << " failed" << std::flush;
      }
    });
  }

  void endLiveLine() {
    if (isatty(STDERR_FILENO) != 0 && taken_ > 0) std::cerr << "\r\033[K";
  }

  // The saver of this command's store: it commits the run at the end of each turn, then the
  // lines saved are printed.
  RunSaver& saver(Store& store) {
    if (!saver_) {
      saver_ = std::make_unique<RunSaver>(store);
      saver_->onSaved([this](const std::vector<FeedLine>& lines) {
        endLiveLine();
        for (const auto& f : lines) {
          if (!f.line.empty()) std::cerr << workflow_ << ": " << Printable(f.line) << "\n";
        }
      });
    }
    return *saver_;
  }

  // Watches the run, arms its Agent script, and saves it as it moves: each turn of its executor
  // that changed it is stored (with the turn's feed lines) before anything of the turn is
  // printed or any effect it started goes out (RUNTIME.md §7). `fresh`: a run not started yet.
  void attach(Store& store, Run& run, bool fresh = false) {
    saver(store).attach(run, fresh);
    watch(run);
    arm(run);
  }

  // Saves the run with its new feed lines (if it changed), then prints those lines.
  void checkpoint(Store& store, Run& run) { saver(store).checkpoint(run); }

  // Saves the run, then reports it: nothing is printed about a step before it is stored.
  int finish(Store& store, Run& run, const Args& a) {
    checkpoint(store, run);
    report(run, a.json);
    return ExitCodeOf(run.status());
  }

  static Json GateJson(const OpenGate& g) {
    Json accepts = Json::array();
    for (const auto& e : g.accepts) accepts.push_back(e.name);
    return {{"name", g.name}, {"meta", g.meta}, {"accepts", accepts}};
  }

  static void PrintJson(const Json& j) {
    std::cout << j.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
  }

  // `T-3 settled · 2 live (T-4, T-5) · 1 failed`: what a waiting Pool has done so far.
  static std::string SofarText(const Json& sofar) {
    const Json& live = sofar["live"];
    std::string out = std::to_string(sofar["items"].size()) + " settled, " +
                      std::to_string(sofar["failures"].size()) + " failed, " +
                      std::to_string(live.size()) + " live";
    if (!live.empty()) {
      out += " (";
      size_t shown = 0;
      for (const auto& id : live) {
        if (shown == 8) {
          out += ", …";
          break;
        }
        out += (shown++ ? ", " : "") + Printable(id.get<std::string>());
      }
      out += ")";
    }
    return out;
  }

  void report(const Run& run, bool json) {
    const std::string& id = run.id();
    const Json sofar = run.sofar();  // what a waiting Pool has done; null otherwise
    if (json) {
      Json gates = Json::array();
      for (const auto& g : run.gates()) gates.push_back(GateJson(g));
      Json doc = {{"run", id},
                  {"workflow", run.workflow().name},
                  {"status", ToString(run.status())},
                  {"output", run.output()},
                  {"reason", run.reason()},
                  {"gates", gates}};
      if (!sofar.is_null()) doc["sofar"] = sofar;
      PrintJson(doc);
    }
    switch (run.status()) {
      case RunStatus::kWaiting: {
        const auto gates = run.gates();
        if (gates.empty()) {
          std::cerr << workflow_ << ": run " << id << " is waiting, with no Gate open:\n";
        } else {
          std::cerr << workflow_ << ": run " << id << " is waiting at " << gates.size() << " Gate"
                    << (gates.size() == 1 ? "" : "s") << ":\n";
        }
        for (const auto& g : gates) {
          std::cerr << "  " << Printable(g.name);
          if (g.meta.is_object() && !g.meta.empty())
            std::cerr << "  "
                      << Printable(g.meta.dump(-1, ' ', false, Json::error_handler_t::replace));
          std::cerr << "\n";
          for (const auto& e : g.accepts) {
            std::cerr << "    " << e.name << FieldsText(e)
                      << (e.description.empty() ? "" : "  — " + Printable(e.description))
                      << "\n      " << workflow_ << " send " << id << " "
                      << (g.name.rfind('-', 0) == 0 ? "-- " : "") << ShellQuote(g.name) << " "
                      << e.name << ExamplePayload(e) << "\n";
          }
        }
        if (!sofar.is_null()) std::cerr << "  so far: " << SofarText(sofar) << "\n";
        const auto underWay = run.nextUnattendedTimer();
        if (const auto due = underWay ? underWay : run.nextTimer()) {
          const int64_t wait = *due - SystemClock().nowMs();
          std::cerr << "  and a timer" << (underWay ? " of work under way" : "") << ", "
                    << (wait > 0 ? "due in " + DurationText(wait) : "due now");
          if (gates.empty() || underWay) {
            std::cerr << ": a `run` process waiting for it goes on with it; if none is, `"
                      << workflow_ << " run --resume " << id << "` does\n";
          } else {
            std::cerr << ": it fires at the next `send`, or wait for it with `" << workflow_
                      << " run --resume " << id << " --follow`\n";
          }
        }
        break;
      }
      case RunStatus::kDone:
        std::cerr << workflow_ << ": run " << id << " ended done\n";
        if (!json) PrintJson(run.output());
        break;
      case RunStatus::kDeadlocked: {
        const Json& out = run.output();
        std::cerr << workflow_ << ": run " << id
                  << " ended deadlocked: no worker is live, and the items left can never start ("
                  << out["items"].size() << " settled)\n";
        if (!json) PrintJson(out);
        break;
      }
      case RunStatus::kFailed:
        std::cerr << workflow_ << ": run " << id << " ended failed: " << Printable(run.reason())
                  << "\n";
        if (!json && !run.output().is_null()) PrintJson(run.output());
        break;
      case RunStatus::kError:
        std::cerr << workflow_ << ": run " << id << " ended error: " << Printable(run.reason())
                  << "\n";
        break;
      case RunStatus::kCancelled:
        std::cerr << workflow_ << ": run " << id << " was cancelled";
        if (run.output().is_object()) {
          std::cerr << "; what it had done is kept: " << run.output()["items"].size()
                    << " settled, " << run.output()["failures"].size() << " failed";
        }
        std::cerr << "\n";
        if (!json && !run.output().is_null()) PrintJson(run.output());
        break;
    }
  }

  // Drives the run through its timers: while it has a timer of work under way (an actor that
  // holds no Gate, such as a retry's cool-down), or every timer with --follow, until it ends or
  // only Gates remain. Until such a timer fires the run waits for nobody, and a process that
  // exited would leave it stuck. `run` and `run --resume` call this; `send` only with --follow,
  // so a person answering a Gate is never kept waiting for somebody else's work.
  void follow(Store& store, std::unique_ptr<Run>& run, Clock& clock, bool all) {
    bool told = false;
    while (!run->ended()) {
      // While the process stays, every timer fires on time, deadlines and polls included.
      const auto next = all || run->nextUnattendedTimer() ? run->nextTimer() : std::nullopt;
      if (!next) return;
      checkpoint(store, *run);  // what happened so far is stored and shown before the wait
      const int64_t wait = *next - clock.nowMs();
      if (wait > 0) {
        if (!told) {
          std::cerr << workflow_ << ": run " << run->id() << " has a timer due in "
                    << DurationText(wait)
                    << (all ? "; waiting for it (--follow)"
                            : " for work under way; waiting for it (Ctrl-C stops the wait, and `" +
                                  workflow_ + " run --resume " + run->id() + "` takes it up again)")
                    << "\n";
          told = true;
        }
        if (lock_) lock_->release();  // others may drive the run while this one sleeps
        std::this_thread::sleep_for(std::chrono::milliseconds(wait));
        if (lock_) lock_->take();
        // A `send` or a `cancel` may have changed the run meanwhile: go on from what it stored,
        // never from this process's older copy, which would undo it.
        if (store.revision(run->id()) != saver(store).revision()) {
          const std::string id = run->id();
          std::cerr << workflow_ << ": run " << id
                    << " was changed by another command during the wait; going on from what it "
                       "stored\n";
          run = restore(store, id, clock);
          attach(store, *run);
          run->tick();  // a restored run schedules its timers as it is driven
          continue;
        }
      }
      run->tick();
    }
  }

  int run(const Args& a) {
    if (!a.positional.empty())
      throw UsageError("`run` takes no positional arguments; give the input with --input");
    if (!a.resume.empty()) return resume(a);
    const WorkflowInfo* wf = registry_.workflow(workflow_);
    const Json input = ReadInput(a.input);
    // A store that exists is checked (a foreign file refused) before anything starts; a new one
    // is made only once the input has been taken.
    std::unique_ptr<Store> store;
    try {
      store = open(a, StoreMode::kReadOnly);
    } catch (const StoreMissing&) {
    }
    SystemClock clock;
    auto run = std::make_unique<Run>(registry_, *wf, NewRunId(), clock);
    // The run's home: relative paths it reads resolve against the directory it started in.
    std::string home = ".";
    if (char* cwd = getcwd(nullptr, 0)) {
      home = cwd;
      std::free(cwd);
    }
    run->setHome(home);
    // A refused input stores nothing, not even a new store file: the input is checked before
    // the store is opened. Then the run is saved from its first step on, as it moves.
    run->checkInput(input);
    if (!store) store = open(a);
    lock_ = store->lock(run->id(), [](const std::string&) {});
    attach(*store, *run, /*fresh=*/true);  // its top Pool's items go to the journal
    run->start(input);
    follow(*store, run, clock, a.follow);
    return finish(*store, *run, a);
  }

  // Restores a stored run. A snapshot that no longer fits this build marks the run `drifted`
  // (with the reason), so that `runs` says so and no verb trips on it again.
  std::unique_ptr<Run> restore(Store& store, const std::string& prefix, Clock& clock) {
    StoredRun stored = store.load(prefix);
    if (stored.workflow != workflow_) {
      throw BadInput("run " + stored.id + " is a run of `" + Printable(stored.workflow) +
                     "`, not `" + workflow_ + "`");
    }
    if (stored.status == "drifted") throw Drifted(DriftText(stored));
    try {
      return saver(store).restore(registry_, stored, clock);
    } catch (const StoreDamaged&) {
      throw;  // damage in the store is not drift of the build: said as it is (65), nothing marked
    } catch (const std::exception& e) {
      stored.status = "drifted";
      stored.snapshot["status"] = "drifted";
      stored.snapshot["reason"] = ErrorText(e);
      stored.updatedMs = SystemClock().nowMs();
      try {
        store.save(stored, {FeedLine(0, stored.updatedMs, "drifted: " + ErrorText(e), "drifted",
                                     Json{{"reason", ErrorText(e)}})});
      } catch (const StoreConflict&) {
        // Another command changed it meanwhile; it finds the drift itself.
      }
      throw Drifted(DriftText(stored));
    }
  }

  std::string DriftText(const StoredRun& stored) const {
    return "run " + stored.id + " no longer fits this build of `" + workflow_ + "`: " +
           Printable(stored.snapshot.value("reason", std::string("it cannot be restored"))) +
           ". It is marked `drifted`; the other runs are not affected. Finish it with the runner "
           "built from the .jr2 that started it, or start a new run";
  }

  // run --resume RUN: takes a saved run up again: fires the timers that fell due while no
  // process ran, and waits for the ones of work under way (all of them with --follow).
  int resume(const Args& a) {
    if (!a.input.empty())
      throw UsageError("`run --resume` goes on with the run's own input; remove --input");
    auto store = open(a, StoreMode::kReadOnly);
    SystemClock clock;
    auto run = restoreLocked(*store, a.resume, clock);
    if (run->ended())
      throw BadInput("run " + run->id() + " has ended `" + ToString(run->status()) +
                     "`; there is nothing to resume");
    attach(*store, *run);
    run->tick();
    follow(*store, run, clock, a.follow);
    // Nothing was due: the saver writes nothing, and the stored run stays as it is.
    return finish(*store, *run, a);
  }

  // What fired during this command before the answer was delivered, for a person to read.
  static std::string FiredText(const Run& run) {
    const auto& fired = run.firedTimers();
    if (fired.empty()) return "the run moved on by itself before this answer";
    const auto& last = fired.back();
    std::string what = "the deadline";
    if (last.afterMs >= 0) what += " `after " + DurationText(last.afterMs) + "`";
    if (!last.state.empty()) what += " in `" + Printable(last.state) + "`";
    return what + " fired before this answer";
  }

  int send(const Args& a) {
    if (a.positional.size() < 3 || a.positional.size() > 4) {
      throw UsageError("`send` takes RUN GATE EVENT [JSON]");
    }
    const Json payload = a.positional.size() == 4
                             ? ParseExternalJson(a.positional[3], "the payload")
                             : Json::object();
    auto store = open(a, StoreMode::kReadOnly);
    SystemClock clock;
    auto run = restoreLocked(*store, a.positional[0], clock);
    // A refused event or payload at a Gate open now is refused before anything is driven.
    run->precheck(a.positional[1], a.positional[2], payload);
    attach(*store, *run);
    // Timers that fell due while no process ran fire first. If they changed the run, that is
    // saved even when the send itself is then refused.
    const bool wasEnded = run->ended();
    run->tick();
    if (!wasEnded && run->ended()) {
      checkpoint(*store, *run);
      throw BadInput(FiredText(*run) + "; the run ended `" + ToString(run->status()) +
                     "`, and the answer was not delivered");
    }
    try {
      run->send(a.positional[1], a.positional[2], payload);
    } catch (const BadInput&) {
      checkpoint(*store, *run);  // what the due timers did, if anything (the saver skips no change)
      throw;
    }
    if (a.follow) follow(*store, run, clock, true);
    return finish(*store, *run, a);
  }

  int status(const Args& a) {
    if (a.positional.size() != 1) throw UsageError("`status` takes RUN");
    auto store = open(a, StoreMode::kReadOnly);
    SystemClock clock;
    auto run = restore(*store, a.positional[0], clock);
    report(*run, a.json);
    return ExitCodeOf(run->status());
  }

  int gates(const Args& a) {
    if (a.positional.size() > 1) throw UsageError("`gates` takes at most RUN");
    std::unique_ptr<Store> store;
    try {
      store = open(a, StoreMode::kReadOnly);
    } catch (const StoreMissing&) {
      if (!a.positional.empty()) throw;
      if (a.json) PrintJson(Json::array());
      std::cerr << workflow_ << ": nothing needs a person: there is no run store at `"
                << Printable(storePath_) << "` yet\n";
      return kExitDone;
    }
    SystemClock clock;
    std::vector<std::string> ids;
    if (a.positional.size() == 1) {
      ids.push_back(store->resolve(a.positional[0]));
    } else {
      for (const auto& r : store->list(false)) {
        if (r.workflow == workflow_) ids.push_back(r.id);
      }
    }
    Json all = Json::array();
    int broken = 0;
    for (const auto& id : ids) {
      std::unique_ptr<Run> run;
      try {
        run = restore(*store, id, clock);
      } catch (const std::exception& e) {
        // One run that cannot be read (damaged, drifted, or anything else) is named, and the
        // others are still listed; `gates RUN` for that run alone is its error.
        if (a.positional.size() == 1) throw;
        ++broken;
        const bool named = dynamic_cast<const StoreError*>(&e) != nullptr ||
                           dynamic_cast<const Drifted*>(&e) != nullptr;
        std::cerr << workflow_ << ": "
                  << Printable(named ? e.what() : "run " + id + " cannot be read: " + ErrorText(e))
                  << "\n";
        continue;
      }
      for (const auto& g : run->gates()) {
        if (a.json) {
          Json gate = GateJson(g);
          gate["run"] = id;
          all.push_back(std::move(gate));
          continue;
        }
        std::cout << id << "  " << Printable(g.name);
        for (const auto& e : g.accepts) std::cout << "  " << e.name << FieldsText(e);
        std::cout << "\n";
      }
    }
    if (a.json) PrintJson(all);
    return broken > 0 ? kExitError : kExitDone;
  }

  int runs(const Args& a) {
    if (!a.positional.empty()) throw UsageError("`runs` takes no run; `status RUN` shows one");
    std::vector<RunSummary> found;
    try {
      auto store = open(a, StoreMode::kReadOnly);
      for (auto& r : store->list(a.all)) {
        if (r.workflow == workflow_) found.push_back(std::move(r));
      }
    } catch (const StoreMissing&) {
      // No store yet: no runs, and nothing is created by looking.
    }
    if (a.json) {
      Json list = Json::array();
      for (const auto& r : found) {
        list.push_back({{"run", r.id},
                        {"workflow", r.workflow},
                        {"status", r.status},
                        {"updated", r.updatedMs}});
      }
      PrintJson(list);
      return kExitDone;
    }
    if (found.empty()) {
      std::cerr << workflow_ << ": no " << (a.all ? "" : "waiting ") << "runs of `" << workflow_
                << "` in `" << Printable(storePath_) << "`"
                << (a.all ? "" : "; `runs --all` lists the ended ones too") << "\n";
      return kExitDone;
    }
    for (const auto& r : found) {
      // id, status, then when it last changed (local time), padded so the columns line up.
      std::string status = r.status;
      status.resize(std::max<size_t>(status.size(), 10), ' ');
      std::cout << r.id << "  " << status << "  " << LocalTime(r.updatedMs) << "\n";
    }
    return kExitDone;
  }

  int cancel(const Args& a) {
    if (a.positional.size() != 1) throw UsageError("`cancel` takes RUN");
    auto store = open(a, StoreMode::kReadOnly);
    SystemClock clock;
    auto run = restoreLocked(*store, a.positional[0], clock);
    if (run->ended())
      throw BadInput("run " + run->id() + " has already ended `" + ToString(run->status()) + "`");
    attach(*store, *run);  // its feed gets the `ended` event with the `cancelled` line
    run->cancel();
    saver(*store).addEvent(FeedLine(0, SystemClock().nowMs(), "cancelled", "cancelled"));
    finish(*store, *run, a);
    return kExitDone;  // RUNTIME.md §4: the `cancel` that cancelled the run exits 0
  }

  // log RUN [--follow]: the run's feed as it was saved, each line with its local time; with
  // --follow, then the lines still to come, until the run ends (or Ctrl-C).
  int log(const Args& a) {
    if (a.positional.size() != 1) throw UsageError("`log` takes RUN");
    auto store = open(a, StoreMode::kReadOnly);
    const std::string id = store->resolve(a.positional[0]);
    if (const StoredRun stored = store->load(id); stored.workflow != workflow_) {
      throw BadInput("run " + id + " is a run of `" + Printable(stored.workflow) + "`, not `" +
                     workflow_ + "`");
    }
    int64_t seq = 0;
    Json all = Json::array();
    auto show = [&] {
      for (const auto& f : store->feed(id, seq)) {
        seq = f.seq;
        const Json doc = {{"seq", f.seq},
                          {"time", f.timeMs},
                          {"kind", f.kind},
                          {"data", f.data},
                          {"line", f.line}};
        if (a.json && !a.follow) {
          all.push_back(doc);
        } else if (a.json) {  // --follow --json: one JSON document per line, as they come
          std::cout << doc.dump(-1, ' ', false, Json::error_handler_t::replace) << std::endl;
        } else if (!f.line.empty()) {  // the events that are only data are for --json
          std::cout << LocalTime(f.timeMs) << "  " << Printable(f.line) << std::endl;
        }
      }
    };
    show();
    if (a.follow) {
      int64_t rev = -1;
      for (;;) {
        const int64_t now = store->revision(id);
        if (now != rev) {
          rev = now;
          show();
          if (const std::string status = store->load(id).status; status != "waiting") {
            std::cerr << workflow_ << ": run " << id << " ended " << status << "\n";
            break;
          }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }
    if (a.json && !a.follow) PrintJson(all);
    return kExitDone;
  }

  // prune --ended-before DURATION: deletes this workflow's runs that ended longer ago than that.
  int prune(const Args& a) {
    if (!a.positional.empty()) throw UsageError("`prune` takes no run; give --ended-before");
    if (a.endedBefore.empty())
      throw UsageError("`prune` needs --ended-before DURATION (30d, 12h, …)");
    const int64_t age = DurationArg(a.endedBefore);
    int64_t pruned = 0;
    const int64_t before = SystemClock().nowMs() - age;
    try {
      auto store = open(a, StoreMode::kReadOnly);
      pruned = store->prune(before, workflow_);
    } catch (const StoreMissing&) {
    }
    if (a.json) PrintJson({{"pruned", pruned}, {"endedBefore", before}});
    std::cerr << workflow_ << ": pruned " << pruned << " run" << (pruned == 1 ? "" : "s")
              << " that ended before " << LocalTime(before) << "\n";
    return kExitDone;
  }

  const Registry& registry_;
  std::string workflow_;
  std::unique_ptr<RunSaver> saver_;  // made with the first store a verb saves to
  std::string storePath_;
  std::unique_ptr<RunLock> lock_;  // held while this command drives the run
  Json agents_;                    // --agents
  int taken_ = 0;
  int settled_ = 0;
  int failed_ = 0;
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
    else if (s == "--threads") {
      if (a.threads != 0) throw UsageError("`--threads` is given twice");
      const std::string v = value("--threads");
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || !std::isdigit(static_cast<unsigned char>(v[0])) || *end != '\0' || n < 1 ||
          n > 1024)
        throw UsageError("`--threads` takes a whole number from 1 to 1024, not `" + v + "`");
      a.threads = static_cast<int>(n);
    } else if (s == "--resume") {
      a.resume = value("--resume");
      a.resumeGiven = true;
      if (a.resume.empty()) throw UsageError("`--resume` needs a run id");
    } else if (s.size() > 1 && s[0] == '-' && s != "-")
      throw UsageError("unknown option `" + s + "`");
    else if (a.verb.empty())
      a.verb = s;
    else
      a.positional.push_back(s);
  }
  return a;
}

}  // namespace

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
        << "  run, send … --agents FILE                                        answer Agents from "
           "a script\n"
        << "  run, send … --threads N                                          threads for "
           "blocking host functions\n"
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
        << "  prune --ended-before DURATION                                    delete runs that "
           "ended before\n"
        << "Every verb that prints takes --json.\n\n"
        << "The store is ./jr2.db, or --store PATH, or $JR2_STORE. A run prefix of 4+ characters\n"
        << "addresses a run. Exit codes: done 0, failed 1, deadlocked 2, waiting 3, error 4,\n"
        << "cancelled 5, usage 64, bad input 65.\n";
    return first.empty() ? kExitUsage : kExitDone;
  }
  try {
    const Args args = Parse(argc, argv);
    return Runner(registry, workflow).main(args);
  } catch (const UsageError& e) {
    std::cerr << workflow << ": error: " << Printable(e.what()) << "\n";
    return kExitUsage;
  } catch (const BadInput& e) {
    std::cerr << workflow << ": error: " << Printable(e.what()) << "\n";
    return kExitBadInput;
  } catch (const StoreError& e) {
    std::cerr << workflow << ": error: " << Printable(e.what()) << "\n";
    return kExitBadInput;
  } catch (const Drifted& e) {
    std::cerr << workflow << ": error: " << Printable(e.what()) << "\n";
    return kExitError;
  } catch (const std::exception& e) {
    std::cerr << workflow << ": error: " << Printable(e.what()) << "\n";
    return kExitError;
  }
}

}  // namespace jr2rt
