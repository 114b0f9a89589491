// A workflow's runner (RUNTIME.md §4): run, send, status, gates, runs, cancel.

#include "jr2/runner.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include "jr2/run.h"
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
};

// One command drives a run at a time: an advisory lock (flock) on `<store>.locks/<run id>`,
// held from loading the run to saving it, and released while a process sleeps for a timer. The
// kernel drops it when the process dies, so a killed command never leaves a run locked.
class DriveLock {
 public:
  DriveLock(const std::string& store, const std::string& run, const std::string& workflow) {
    const std::string dir = store + ".locks";
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
      throw StoreError("cannot make the lock folder `" + dir + "`: " + std::strerror(errno));
    path_ = dir + "/" + run;
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw StoreError("cannot open `" + path_ + "`: " + std::strerror(errno));
    if (flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    std::cerr << workflow << ": another command is driving run " << run
              << "; waiting for it to finish\n";
    take();
  }
  ~DriveLock() {
    if (fd_ >= 0) close(fd_);
  }
  DriveLock(const DriveLock&) = delete;
  DriveLock& operator=(const DriveLock&) = delete;
  void release() { flock(fd_, LOCK_UN); }
  void take() {
    while (flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) throw StoreError("cannot lock `" + path_ + "`: " + std::strerror(errno));
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

Json ParseJson(const std::string& text, const std::string& what) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw BadInput(what + " is not valid JSON: " + ErrorText(e));
  }
}

Json ReadInput(const std::string& value) {
  if (value.empty()) return Json::object();
  if (value[0] == '@') {
    std::ifstream in(value.substr(1), std::ios::binary);
    if (!in) throw BadInput("cannot read the input file `" + value.substr(1) + "`");
    std::stringstream text;
    text << in.rdbuf();
    return ParseJson(text.str(), "the input file `" + value.substr(1) + "`");
  }
  return ParseJson(value, "the input");
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
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadInput("cannot read the agent script `" + path + "`");
  std::stringstream text;
  text << in.rdbuf();
  const std::string where = "the agent script `" + path + "`";
  Json script = ParseJson(text.str(), where);
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
      return kExitFailed;
  }
  return kExitError;
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
  return j.empty() ? "" : " '" + j.dump() + "'";
}

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
    if (a.verb == "run") return run(a);
    if (a.verb == "send") return send(a);
    if (a.verb == "status") return status(a);
    if (a.verb == "gates") return gates(a);
    if (a.verb == "runs") return runs(a);
    if (a.verb == "cancel") return cancel(a);
    throw UsageError("unknown verb `" + a.verb +
                     "`; the verbs are run, send, status, gates, runs and cancel");
  }

 private:
  std::unique_ptr<Store> open(const Args& a) {
    storePath_ = StorePath(a);
    return OpenSqliteStore(storePath_);
  }

  // Takes the run's drive lock (waiting for another command to finish with it), then loads the
  // run as that command left it.
  std::unique_ptr<Run> restoreLocked(Store& store, const std::string& prefix, Clock& clock) {
    const std::string id = store.load(prefix).id;
    lock_ = std::make_unique<DriveLock>(storePath_, id, workflow_);
    return restore(store, id, clock);
  }

  // Progress lines are held until the step they tell of is saved (RUNTIME.md §1: nothing is
  // visible outside before it is stored), then printed to stderr. On a terminal, a live line
  // keeps the counts (items taken, live, settled, failed) current meanwhile.
  void watch(Run& run) {
    const bool tty = isatty(STDERR_FILENO) != 0;
    run.onProgress([this, tty](const std::string& line) {
      auto ends = [&](const char* tail) {
        const size_t n = std::strlen(tail);
        return line.size() >= n && line.compare(line.size() - n, n, tail) == 0;
      };
      if (ends(" started")) ++taken_;
      if (ends(" settled")) ++settled_;
      if (line.find(" failed: ") != std::string::npos) ++failed_;
      pending_.push_back(line);
      if (tty) {
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

  // Saves the run, then prints what happened since the last save.
  void checkpoint(Store& store, Run& run) {
    revision_ = store.save({run.id(), run.workflow().name, ToString(run.status()),
                            SystemClock().nowMs(), run.snapshot(), revision_});
    endLiveLine();
    for (const auto& line : pending_) std::cerr << workflow_ << ": " << line << "\n";
    pending_.clear();
  }

  // Saves the run, then reports it: nothing is printed about a step before it is stored.
  int finish(Store& store, Run& run, const Args& a) {
    checkpoint(store, run);
    report(run, a.json);
    return ExitCodeOf(run.status());
  }

  void report(const Run& run, bool json) {
    const std::string& id = run.id();
    if (json) {
      Json gates = Json::array();
      for (const auto& g : run.gates()) {
        Json accepts = Json::array();
        for (const auto& e : g.accepts) accepts.push_back(e.name);
        gates.push_back({{"name", g.name}, {"meta", g.meta}, {"accepts", accepts}});
      }
      std::cout << Json{{"run", id},
                        {"workflow", run.workflow().name},
                        {"status", ToString(run.status())},
                        {"output", run.output()},
                        {"reason", run.reason()},
                        {"gates", gates}}
                       .dump(2)
                << "\n";
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
          std::cerr << "  " << g.name;
          if (g.meta.is_object() && !g.meta.empty()) std::cerr << "  " << g.meta.dump();
          std::cerr << "\n";
          for (const auto& e : g.accepts) {
            std::cerr << "    " << e.name << FieldsText(e)
                      << (e.description.empty() ? "" : "  — " + e.description) << "\n      "
                      << workflow_ << " send " << id << " " << g.name << " " << e.name
                      << ExamplePayload(e) << "\n";
          }
        }
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
        if (!json) std::cout << run.output().dump(2) << "\n";
        break;
      case RunStatus::kDeadlocked: {
        const Json& out = run.output();
        std::cerr << workflow_ << ": run " << id
                  << " ended deadlocked: no worker is live, and the items left can never start ("
                  << out["items"].size() << " settled)\n";
        if (!json) std::cout << out.dump(2) << "\n";
        break;
      }
      case RunStatus::kFailed:
        std::cerr << workflow_ << ": run " << id << " ended failed: " << run.reason() << "\n";
        if (!json && !run.output().is_null()) std::cout << run.output().dump(2) << "\n";
        break;
      case RunStatus::kError:
        std::cerr << workflow_ << ": run " << id << " ended error: " << run.reason() << "\n";
        break;
      case RunStatus::kCancelled:
        std::cerr << workflow_ << ": run " << id << " was cancelled\n";
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
        if (store.revision(run->id()) != revision_) {
          const std::string id = run->id();
          std::cerr << workflow_ << ": run " << id
                    << " was changed by another command during the wait; going on from what it "
                       "stored\n";
          run = restore(store, id, clock);
          watch(*run);
          arm(*run);
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
    auto store = open(a);
    SystemClock clock;
    auto run = std::make_unique<Run>(registry_, *wf, NewRunId(), clock);
    lock_ = std::make_unique<DriveLock>(storePath_, run->id(), workflow_);
    watch(*run);
    arm(*run);
    run->start(input);
    follow(*store, run, clock, a.follow);
    return finish(*store, *run, a);
  }

  std::unique_ptr<Run> restore(Store& store, const std::string& prefix, Clock& clock) {
    const StoredRun stored = store.load(prefix);
    if (stored.workflow != workflow_) {
      throw BadInput("run " + stored.id + " is a run of `" + stored.workflow + "`, not `" +
                     workflow_ + "`");
    }
    revision_ = stored.revision;
    return Run::Restore(registry_, stored.snapshot, clock);
  }

  // run --resume RUN: takes a saved run up again: fires the timers that fell due while no
  // process ran, and waits for the ones of work under way (all of them with --follow).
  int resume(const Args& a) {
    if (!a.input.empty())
      throw UsageError("`run --resume` goes on with the run's own input; remove --input");
    auto store = open(a);
    SystemClock clock;
    auto run = restoreLocked(*store, a.resume, clock);
    if (run->ended())
      throw BadInput("run " + run->id() + " has ended `" + ToString(run->status()) +
                     "`; there is nothing to resume");
    watch(*run);
    arm(*run);
    const std::string before = run->snapshot().dump();
    run->tick();
    follow(*store, run, clock, a.follow);
    if (run->snapshot().dump() == before) {  // nothing was due: the stored run stays as it is
      report(*run, a.json);
      return ExitCodeOf(run->status());
    }
    return finish(*store, *run, a);
  }

  int send(const Args& a) {
    if (a.positional.size() < 3 || a.positional.size() > 4) {
      throw UsageError("`send` takes RUN GATE EVENT [JSON]");
    }
    const Json payload =
        a.positional.size() == 4 ? ParseJson(a.positional[3], "the payload") : Json::object();
    auto store = open(a);
    SystemClock clock;
    auto run = restoreLocked(*store, a.positional[0], clock);
    watch(*run);
    arm(*run);
    // Timers that fell due while no process ran fire first. If they changed the run, that is
    // saved even when the send itself is then refused.
    const std::string before = run->snapshot().dump();
    run->tick();
    try {
      run->send(a.positional[1], a.positional[2], payload);
    } catch (const BadInput&) {
      if (run->snapshot().dump() != before) checkpoint(*store, *run);
      throw;
    }
    if (a.follow) follow(*store, run, clock, true);
    return finish(*store, *run, a);
  }

  int status(const Args& a) {
    if (a.positional.size() != 1) throw UsageError("`status` takes RUN");
    auto store = open(a);
    SystemClock clock;
    auto run = restore(*store, a.positional[0], clock);
    report(*run, a.json);
    return ExitCodeOf(run->status());
  }

  int gates(const Args& a) {
    auto store = open(a);
    SystemClock clock;
    std::vector<std::string> ids;
    if (a.positional.size() == 1) {
      ids.push_back(store->load(a.positional[0]).id);
    } else {
      for (const auto& r : store->list(false)) {
        if (r.workflow == workflow_) ids.push_back(r.id);
      }
    }
    for (const auto& id : ids) {
      auto run = restore(*store, id, clock);
      for (const auto& g : run->gates()) {
        std::cout << id << "  " << g.name;
        for (const auto& e : g.accepts) std::cout << "  " << e.name << FieldsText(e);
        std::cout << "\n";
      }
    }
    return kExitDone;
  }

  int runs(const Args& a) {
    auto store = open(a);
    for (const auto& r : store->list(a.all)) {
      if (r.workflow != workflow_) continue;
      // id, status, then when it last changed (local time), padded so the columns line up.
      std::string status = r.status;
      status.resize(std::max<size_t>(status.size(), 10), ' ');
      std::cout << r.id << "  " << status << "  " << LocalTime(r.updatedMs) << "\n";
    }
    return kExitDone;
  }

  int cancel(const Args& a) {
    if (a.positional.size() != 1) throw UsageError("`cancel` takes RUN");
    auto store = open(a);
    SystemClock clock;
    auto run = restoreLocked(*store, a.positional[0], clock);
    if (run->ended())
      throw BadInput("run " + run->id() + " has already ended `" + ToString(run->status()) + "`");
    run->cancel();
    return finish(*store, *run, a);
  }

  const Registry& registry_;
  std::string workflow_;
  std::vector<std::string> pending_;
  int64_t revision_ = 0;  // of the run as this command loaded or last saved it
  std::string storePath_;
  std::unique_ptr<DriveLock> lock_;  // held while this command drives the run
  Json agents_;                      // --agents
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
    if (s == "--input")
      a.input = value("--input");
    else if (s == "--store")
      a.store = value("--store");
    else if (s == "--json")
      a.json = true;
    else if (s == "--all")
      a.all = true;
    else if (s == "--follow")
      a.follow = true;
    else if (s == "--agents")
      a.agents = value("--agents");
    else if (s == "--resume") {
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
  const std::string first = argc > 1 ? argv[1] : "";
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
        << "  send  RUN GATE EVENT [JSON]                                      deliver at a Gate; "
           "drive again\n"
        << "  status RUN [--json]                                              status, output, "
           "open Gates\n"
        << "  gates [RUN]                                                      what needs a "
           "person\n"
        << "  runs  [--all]                                                    the runs in the "
           "store\n"
        << "  cancel RUN\n\n"
        << "The store is ./jr2.db, or --store PATH, or $JR2_STORE. A run prefix of 4+ characters\n"
        << "addresses a run. Exit codes: done 0, failed 1, deadlocked 2, waiting 3, error 4,\n"
        << "usage 64, bad input 65.\n";
    return first.empty() ? kExitUsage : kExitDone;
  }
  try {
    const Args args = Parse(argc, argv);
    return Runner(registry, workflow).main(args);
  } catch (const UsageError& e) {
    std::cerr << workflow << ": error: " << e.what() << "\n";
    return kExitUsage;
  } catch (const BadInput& e) {
    std::cerr << workflow << ": error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const StoreError& e) {
    std::cerr << workflow << ": error: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << workflow << ": error: " << e.what() << "\n";
    return kExitError;
  }
}

}  // namespace jr2rt
