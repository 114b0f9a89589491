// A replay of a run's trace (replay.h).
#include "host/replay.h"

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "host/trace.h"
#include "jr2/run.h"
#include "run/replayer.h"

namespace jr2rt {

// A line of a trace.
struct ReplayEntry {
  int64_t seq = 0;
  int64_t time = 0;
  std::string kind;
  Json data;
  std::string line;
};

// What one commit stored: its `turn` mark, then its lines.
struct ReplayTurn {
  int64_t seq = 0;
  int64_t time = 0;
  bool restored = false;  // the first turn stored after the run was restored
  std::vector<ReplayEntry> entries;
};

struct Trace {
  std::string run, workflow;
  std::string home;  // the run's home: where it read a backlog's file to say what is blocked
  Json input;
  int64_t time = 0;
  std::vector<ReplayTurn> turns;
  Json end;
};

namespace {

// What a replay compares, of a turn's lines: not its mark; not what the host wrote beside the
// run (a cancel's line, a drift); not a command's output lines (its whole output is in its
// `result`), nor a note on this machine's threads; not an Agent harness's talk with its model or
// script (a pick is the Gate's `answered`, which is compared).
bool Compared(const std::string& kind) {
  return kind != "turn" && kind != "output" && kind != "note" && kind != "agent" &&
         kind != "cancelled" && kind != "drifted";
}

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string Key(const std::string& kind, const Json& data, const std::string& line) {
  std::string key = kind;
  key += '\n';
  key += Dump(data);
  key += '\n';
  key += line;
  return key;
}

// An event as a person reads it: its line, or its kind and data.
std::string Text(const Json& e) {
  std::string text = e.value("line", std::string());
  if (text.empty()) text = e.value("kind", std::string()) + " " + Dump(e.value("data", Json()));
  if (text.size() > 240) text = text.substr(0, 237) + "...";
  return Printable(text);
}

Json EventJson(const std::string& kind, const Json& data, const std::string& line) {
  return {{"kind", kind}, {"data", data}, {"line", line}};
}

[[noreturn]] void Bad(const std::string& name, size_t n, const std::string& why) {
  throw BadInput(name + ":" + std::to_string(n) + ": " + why);
}

std::string Str(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t Int(const Json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

constexpr size_t kMaxTraceLine = size_t{64} << 20;
// The latest time a trace may name (ms since the epoch, the year 5138): a timer armed from it
// cannot overflow.
constexpr int64_t kMaxTraceTime = 100'000'000'000'000;

// A line of `in` into `line`, without its newline; false at the end. A line longer than
// kMaxTraceLine is refused as soon as it is (never read whole into memory).
bool ReadLine(std::istream& in, std::string& line, const std::string& name, size_t n) {
  line.clear();
  std::streambuf* buf = in.rdbuf();
  bool any = false;
  for (int c = buf->sbumpc(); c != std::char_traits<char>::eof(); c = buf->sbumpc()) {
    any = true;
    if (c == '\n') return true;
    if (line.size() >= kMaxTraceLine) Bad(name, n, "a line longer than 64 MiB");
    line.push_back(static_cast<char>(c));
  }
  return any;
}

Trace Read(std::istream& in, const std::string& name) {
  Trace t;
  std::string text;
  size_t n = 0;
  bool header = false;
  bool ended = false;
  while (ReadLine(in, text, name, n + 1)) {
    ++n;
    if (text.empty()) continue;
    if (ended) Bad(name, n, "a line after the trace's `end`: the trace is two files in one");
    // Checked as JSON from outside is: UTF-8, at most 512 levels deep (found while parsing), at
    // most 64 MiB a line (a command's whole output is one).
    const Json j = ParseExternalJson(text, name + ":" + std::to_string(n), kMaxTraceLine);
    if (!j.is_object()) Bad(name, n, "not a JSON object: each line of a trace is one");
    if (!header) {
      const auto v = j.find("trace");
      if (v == j.end() || !v->is_number_integer())
        Bad(name, n,
            "not a trace: its first line has no `trace` version (write one with `<runner> "
            "export RUN > FILE`)");
      const int64_t version = v->get<int64_t>();
      if (version < kTraceVersion)
        Bad(name, n,
            "a trace of version " + std::to_string(version) +
                ", which marks no turns, cannot be replayed: export the run again with this "
                "runner");
      if (version > kTraceVersion)
        Bad(name, n,
            "a trace of version " + std::to_string(version) + ", newer than this runner reads (" +
                std::to_string(kTraceVersion) +
                "): replay it with a runner as new as the one "
                "that wrote it");
      t.run = Str(j, "run");
      t.workflow = Str(j, "workflow");
      if (t.run.empty() || t.workflow.empty())
        Bad(name, n, "the trace's header names no `run` or no `workflow`");
      t.input = j.value("input", Json::object());
      t.home = Str(j, "home");
      t.time = Int(j, "time");
      if (t.time < 0 || t.time > kMaxTraceTime) Bad(name, n, "its `time` is not a time");
      header = true;
      continue;
    }
    if (j.contains("end")) {
      if (!j["end"].is_object()) Bad(name, n, "its `end` is not an object");
      t.end = j["end"];
      ended = true;
      continue;
    }
    ReplayEntry e;
    if (!j.contains("kind") || !j["kind"].is_string() || !j.contains("seq") ||
        !j["seq"].is_number_integer() || !j.contains("time") || !j["time"].is_number_integer())
      Bad(name, n, "a trace line needs `seq`, `time` and `kind`");
    e.seq = j["seq"].get<int64_t>();
    e.time = j["time"].get<int64_t>();
    e.kind = j["kind"].get<std::string>();
    e.data = j.value("data", Json());
    e.line = Str(j, "line");
    if (e.time < 0 || e.time > kMaxTraceTime) Bad(name, n, "its `time` is not a time");
    if (IsTraceInput(e.kind, e.data) && !e.data.is_object())
      Bad(name, n, "an input (`" + Printable(e.kind) + "`) whose `data` is not an object");
    if (e.kind == "turn") {
      ReplayTurn turn;
      turn.seq = e.seq;
      turn.time = e.time;
      turn.restored = e.data.is_object() && e.data.value("restored", false);
      t.turns.push_back(std::move(turn));
      continue;
    }
    if (t.turns.empty()) {
      // What a host wrote before the run's first turn (a start queued for another serve) is not
      // the run's; an input there is a turn that was not marked.
      if (!IsTraceInput(e.kind, e.data)) continue;
      Bad(name, n,
          "an input before the trace's first `turn`: the run was stored by a runner that did not "
          "mark its turns, and cannot be replayed");
    }
    t.turns.back().entries.push_back(std::move(e));
  }
  if (!header) throw BadInput(name + ": empty, not a trace");
  if (!ended) throw BadInput(name + ": cut short: it has no `end` line (export the run again)");
  if (t.turns.empty())
    throw BadInput(name + ": the trace has no turns: there is nothing to replay");
  return t;
}

// Where `a` and `b` first differ below `path` (`output.items.T-2.outcome`), and what each holds
// there: an object's keys in order, an array's elements, else the values themselves.
void FirstDifference(const Json& a, const Json& b, std::string& path, Json& was, Json& is) {
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto other = b.find(it.key());
      if (other == b.end()) {
        path += "." + it.key();
        was = it.value();
        is = Json("(none)");
        return;
      }
      if (it.value() != *other) {
        path += "." + it.key();
        return FirstDifference(it.value(), *other, path, was, is);
      }
    }
    for (auto it = b.begin(); it != b.end(); ++it) {
      if (!a.contains(it.key())) {
        path += "." + it.key();
        was = Json("(none)");
        is = it.value();
        return;
      }
    }
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i]) {
        path += "." + std::to_string(i);
        return FirstDifference(a[i], b[i], path, was, is);
      }
    }
  }
  was = a;
  is = b;
}

class TraceReplay final : public Replayer, public Dispatcher {
 public:
  TraceReplay(const Registry& registry, const Trace& trace,
              const std::function<void(const std::string&)>& line)
      : registry_(registry), trace_(trace), line_(line) {}

  ReplayResult go() {
    ReplayResult r;
    r.run = trace_.run;
    r.workflow = trace_.workflow;
    r.turns = static_cast<int>(trace_.turns.size());
    const WorkflowInfo* wf = registry_.workflow(trace_.workflow);
    if (wf == nullptr)
      throw BadInput("the trace is of workflow `" + Printable(trace_.workflow) +
                     "`, which this build does not have");
    for (size_t t = 0; t < trace_.turns.size(); ++t) {
      const ReplayTurn& turn = trace_.turns[t];
      turn_ = static_cast<int>(t) + 1;
      made_.clear();
      madeKeys_.clear();
      consumed_.clear();
      recordedTurn_ = &turn;
      clock_.set(t == 0 ? (trace_.time != 0 ? trace_.time : turn.time) : turn.time);
      if (t == 0) {
        run_ = std::make_unique<Run>(registry_, *wf, trace_.run, clock_);
        if (!trace_.home.empty()) run_->setHome(trace_.home);
        // A standing run starts with what it took over from the run before it (its held items,
        // the live keys, its streak), recorded whole in its first turn.
        for (const ReplayEntry& e : turn.entries) {
          if (e.kind == "taken-over" && e.data.is_object() && e.data.contains("carried")) {
            run_->setCarried(e.data["carried"]);
            // A key whose run the run before was asking for: this one asks on, silently.
            for (const Json& k : e.data["carried"].value("keys", Json::array())) {
              if (k.is_object() && k.contains("retryInput")) asking_.insert(Str(k, "item"));
            }
            break;
          }
        }
        attach();
        try {
          run_->start(trace_.input);
        } catch (const BadInput& e) {
          return diverged(r, turn.seq,
                          "this build refuses the run's input: " + std::string(e.what()),
                          Json::array(), Json::array());
        }
      } else if (turn.restored) {
        try {
          restore();
        } catch (const std::exception& x) {
          return diverged(
              r, turn.seq,
              "the run was restored here, and this build cannot restore it: " + ErrorText(x),
              Json::array(), Json::array());
        }
      }
      // What fell due by the turn's start fires in it, as the host fires it at every turn: a
      // timer that takes no input of its own (a dispatch asked for again each second) makes a
      // turn with no input.
      if (t > 0) run_->tick();
      for (const ReplayEntry& e : turn.entries) {
        if (!IsTraceInput(e.kind, e.data)) continue;
        ++r.inputs;
        // Made by the run itself in this replay (a restore's `interrupted`, timers that fell due
        // together): found, not delivered again.
        // What fell due by its time fires first, as the host fires it at every turn and before
        // an answer: a deadline a changed build shortened fires here, and a Pool's silent
        // poll asks its Source again.
        clock_.set(e.time);
        run_->tick();
        const std::string key = Key(e.kind, e.data, e.line);
        if (auto m = madeKeys_.find(key); m != madeKeys_.end() && m->second > consumed_[key]) {
          ++consumed_[key];
          continue;
        }
        const std::string why = deliver(e);
        ++consumed_[key];
        if (!why.empty()) {
          ReplayResult d = compare(r, turn, /*partial=*/true);
          if (!d.identical) return d;
          // What it asks differs: said alone. Else what was recorded, and why this build
          // cannot take it.
          const std::string said =
              why.rfind("asks `", 0) == 0
                  ? "this build " + why
                  : "recorded " + Text(EventJson(e.kind, e.data, e.line)) + "; this build " + why;
          return diverged(r, e.seq, said, Json::array({EventJson(e.kind, e.data, e.line)}),
                          Json::array());
        }
      }
      ReplayResult d = compare(r, turn, /*partial=*/false);
      if (!d.identical) return d;
    }
    stand(r);
    const Json& end = trace_.end;
    if (r.status != Str(end, "status") || r.output != end.value("output", Json()) ||
        r.reason != Str(end, "reason")) {
      r.identical = false;
      r.turn = 0;
      r.seq = 0;
      const Json rec = {{"status", end.value("status", Json())},
                        {"output", end.value("output", Json())},
                        {"reason", end.value("reason", Json())}};
      const Json now = {{"status", r.status}, {"output", r.output}, {"reason", r.reason}};
      r.recorded = Json::array({rec});
      r.replayed = Json::array({now});
      // The first place they differ, for a person: `end: its output differs at
      // items.T-2.outcome: recorded "rejected"; this build "approved"`.
      std::string where = "status";
      Json was = rec["status"];
      Json is = now["status"];
      if (rec["status"] == now["status"]) {
        if (rec["output"] != now["output"]) {
          where = "output";
          FirstDifference(rec["output"], now["output"], where, was, is);
        } else {
          where = "reason";
          was = rec["reason"];
          is = now["reason"];
        }
      }
      std::string what = "it ended differently";
      if (where == "reason") what = "it ended " + r.status + ", and its reason differs";
      if (where.rfind("output", 0) == 0) {
        what = "it ended " + r.status + ", and its output differs";
        if (where.size() > 6) what += " at " + Printable(where.substr(7));
      }
      r.message = "end: " + what + ": recorded " + Text({{"line", Dump(was)}}) + "; this build " +
                  Text({{"line", Dump(is)}});
    }
    return r;
  }

  // ---- Replayer: nothing goes out ------------------------------------------------------------
  void effect(const std::string& name, const Json& input, std::shared_ptr<EffectControl> control,
              std::function<void(Json)> then, std::function<void(const Failure&)> failed,
              std::function<void(const Failure&)> defect) override {
    ++held_;
    Pending p{std::move(then), std::move(failed), input, std::move(control), {},
              false,           std::move(defect)};
    effects_[name].push_back(std::move(p));
  }
  bool call(const std::string& pool, const std::string& call, std::weak_ptr<int> alive,
            std::function<void(Json)> answer, std::function<void(const Failure&)> failed) override {
    ++held_;
    Pending p{std::move(answer), std::move(failed), Json(), nullptr, std::move(alive), true, {}};
    calls_[pool + "\n" + call].push_back(std::move(p));
    return true;
  }

  // ---- Dispatcher: the runs the trace says were started ----------------------------------------
  Dispatched dispatch(const std::string& workflow, const std::string& key, const Json&,
                      const Json& by) override {
    const std::string pool = Str(by, "pool");
    for (const ReplayEntry& e : recordedTurn_->entries) {
      if (e.kind != "dispatched" || Str(e.data, "pool") != pool || Str(e.data, "item") != key ||
          usedDispatches_.count(e.seq) != 0)
        continue;
      usedDispatches_.insert(e.seq);
      asking_.erase(key);
      Dispatched d;
      d.run = Str(e.data, "run");
      d.existing = e.data.value("existing", false);
      keys_[{workflow, key}] = d;
      return d;
    }
    // The host refused it at the callee's door, or could not start it yet: its answer, as
    // recorded (the worker marks the item, or says once that it asks again each second).
    for (const ReplayEntry& e : recordedTurn_->entries) {
      if (usedDispatches_.count(e.seq) != 0) continue;
      const bool refused = e.kind == "start-refused" || e.kind == "dispatch-error";
      // (The mark names the Pool by its place, the dispatch by its name: matched by the item.)
      if (refused && Str(e.data, "item") == key) {
        usedDispatches_.insert(e.seq);
        asking_.erase(key);
        std::string why = Str(e.data, "reason");
        if (why.rfind(e.kind + ": ", 0) == 0) why.erase(0, e.kind.size() + 2);
        if (e.kind == "start-refused") throw BadInput(why);
        throw Failure(why);
      }
      if (e.kind == "asking" && Str(e.data, "item") == key && Str(e.data, "pool") == pool) {
        usedDispatches_.insert(e.seq);
        asking_.insert(key);
        throw DispatchPending(Str(e.data, "why"));
      }
    }
    // Asked for again (silently: it said so once) and not started yet, as recorded: in a later
    // turn, or never (the run ended or was handed over while it asked).
    if (asking_.count(key) != 0) throw DispatchPending("");
    throw Failure("the trace records no run of `" + workflow + "` for key " + key +
                  " in this turn");
  }
  std::optional<Dispatched> find(const std::string& workflow, const std::string& key) override {
    auto it = keys_.find({workflow, key});
    if (it != keys_.end()) return it->second;
    // Found by the host for a delivery of this turn (the `hook` input's `found`).
    if (auto f = found_.find(key); f != found_.end()) {
      Dispatched got = f->second;
      found_.erase(f);
      return got;
    }
    return std::nullopt;
  }

 private:
  struct Pending {
    std::function<void(Json)> then;
    std::function<void(const Failure&)> failed;
    Json input;                              // what the build asked of an effect
    std::shared_ptr<EffectControl> control;  // an effect's: cancelled with its invoke
    std::weak_ptr<int> alive;                // a Source call's: its Pool
    bool hasAlive = false;
    std::function<void(const Failure&)> defect;  // an effect's, for a recorded defect
    // Its invoke was cancelled, or its Pool is gone: the run took no answer for it (none was
    // recorded), so a later one of the same name is not its.
    bool gone() const { return (control && control->cancelled) || (hasAlive && alive.expired()); }
  };
  // The oldest live one of `q`, taken; nullopt when none is.
  static std::optional<Pending> Take(std::deque<Pending>& q) {
    while (!q.empty()) {
      Pending p = std::move(q.front());
      q.pop_front();
      if (!p.gone()) return p;
    }
    return std::nullopt;
  }
  struct Made {
    std::string kind;
    Json data;
    std::string line;
    std::string key;
  };

  void attach() {
    run_->replayWith(this);
    run_->setDispatcher(this);
    run_->onEvent([this](const Run::FeedEvent& e) {
      Json data = e.parsedData();
      std::string key = Key(e.kind, data, e.line);
      Made m{e.kind, std::move(data), e.line, std::move(key)};
      ++madeKeys_[m.key];
      made_.push_back(std::move(m));
      if (line_ && !e.line.empty()) line_(e.line);
    });
  }

  // The run as its host restored it: from what the last turn stored, its effects and Source
  // calls asked again (the ones held before are the old run's, gone with it).
  void restore() {
    const Json snapshot = run_->snapshot(/*withInput=*/true);
    effects_.clear();
    calls_.clear();
    run_.reset();
    run_ = Run::Restore(registry_, snapshot, clock_);
    attach();
    run_->drive();
  }

  static Failure FailureOf(const Json& f) {
    return Failure(Str(f, "reason"), f.is_object() ? f.value("detail", Json()) : Json());
  }

  // Delivers input `e` to the run and drives it; "" when it was taken, else why not (what this
  // build did instead, for a person).
  std::string deliver(const ReplayEntry& e) {
    const Json& d = e.data;
    Run& run = *run_;
    if (e.kind == "answered") {
      try {
        run.send(Str(d, "gate"), Str(d, "event"), d.value("payload", Json::object()), nullptr,
                 Str(d, "by"));
      } catch (const BadInput& x) {
        return "refuses it: " + std::string(x.what());
      }
      return "";
    }
    if (e.kind == "timer") {
      run.tick();
      return "";
    }
    if (e.kind == "result" && d.contains("effect")) {
      const std::string name = Str(d, "effect");
      auto it = effects_.find(name);
      std::optional<Pending> taken;
      if (it != effects_.end()) taken = Take(it->second);
      if (!taken) return "has no effect `" + name + "` out" + out();
      Pending p = std::move(*taken);
      // What it asks must be what the run asked: a changed command line is a changed run.
      if (d.contains("input") && d["input"] != p.input) {
        return "asks `" + name + "` with " + Text({{"line", Dump(p.input)}}) + "; the run asked " +
               Text({{"line", Dump(d["input"])}});
      }
      if (d.contains("output")) {
        run.post([then = std::move(p.then), out = d["output"]] { then(out); });
      } else {
        // A host function's defect, recorded as such, is one again.
        const Json& failure = d.value("failure", Json());
        const auto marked = failure.is_object() ? failure.find("defect") : failure.end();
        const bool defect =
            marked != failure.end() && marked->is_boolean() && marked->get<bool>() && p.defect;
        run.post([failed = std::move(defect ? p.defect : p.failed), f = FailureOf(failure)] {
          failed(f);
        });
      }
      run.drive();
      return "";
    }
    if (e.kind == "result") {  // how a dispatched run ended
      const std::string id = Str(d, "run");
      for (auto& [k, got] : keys_) {
        if (got.run == id) {
          got.status = Str(d, "status");
          got.output = d.value("output", Json());
          got.reason = Str(d, "reason");
        }
      }
      run.dispatchedEnded(id, Str(d, "status"), d.value("output", Json()), Str(d, "reason"));
      run.drive();
      return "";
    }
    if (e.kind == "source") {
      const std::string call = Str(d, "call");
      auto it = calls_.find(Str(d, "pool") + "\n" + call);
      std::optional<Pending> taken;
      if (it != calls_.end()) taken = Take(it->second);
      if (!taken)
        return "has no `" + call + "` of the Source of `" + Str(d, "pool") + "` out" + out();
      Pending p = std::move(*taken);
      if (d.contains("failure") && p.failed) {
        run.post([failed = std::move(p.failed), f = FailureOf(d["failure"])] { failed(f); });
      } else {
        run.post([then = std::move(p.then), a = d.value("answer", Json())] { then(a); });
      }
      run.drive();
      return "";
    }
    if (e.kind == "hook") {
      if (const auto f = d.find("found"); f != d.end() && f->is_object()) {
        // The run its host found holding the item's key, as it found it.
        Dispatched got;
        got.run = Str(*f, "run");
        got.status = Str(*f, "status");
        got.existing = true;
        found_[Str(*f, "item")] = got;
      }
      run.hook(Str(d, "service"), Str(d, "event"), d.value("payload", Json()));
      return "";
    }
    if (e.kind == "agent") {
      // A refused pick counts against the Agent's `picks:`; a reply that was none changed
      // nothing.
      if (d.contains("refused") && !run.replayRefusedPick(Str(d, "gate")))
        return "has no Agent Gate `" + Str(d, "gate") + "` open";
      return "";
    }
    if (e.kind == "ended") {
      run.cancel();
      run.drive();
      return "";
    }
    if (e.kind == "handed-over" || e.kind == "bound") {
      // The host's decision, at the turn it made it: the replay makes the same.
      if (run.ended()) return "had ended already";
      if (e.kind == "bound") {
        run.endAtBound(Str(d, "why"));
      } else {
        run.handOver(Str(d, "to"), Str(d, "why"));
      }
      run.drive();
      return "";
    }
    return "cannot replay an input of kind `" + e.kind + "`";
  }

  // What is held now, for a message.
  std::string out() const {
    std::string names;
    const auto live = [](const std::deque<Pending>& q) {
      for (const Pending& p : q) {
        if (!p.gone()) return true;
      }
      return false;
    };
    for (const auto& [name, q] : effects_) {
      if (!live(q)) continue;
      names += (names.empty() ? "" : ", ") + name;
    }
    for (const auto& [where, q] : calls_) {
      if (!live(q)) continue;
      std::string w = where;
      w.replace(w.find('\n'), 1, ": ");
      names += (names.empty() ? "" : ", ") + ("source " + w);
    }
    return names.empty() ? " (it has nothing out)" : " (it has out: " + names + ")";
  }

  // The turn's lines, recorded and made, as multisets: the first difference.
  ReplayResult compare(ReplayResult r, const ReplayTurn& turn, bool partial) {
    // Every line made, counted (one of a kind not compared never has a compared line's key).
    std::unordered_map<std::string, int64_t> made = madeKeys_;
    Json missing = Json::array();
    for (const ReplayEntry& e : turn.entries) {
      if (!Compared(e.kind)) continue;
      auto it = made.find(Key(e.kind, e.data, e.line));
      if (it != made.end() && it->second > 0) {
        --it->second;
      } else if (!partial) {
        missing.push_back(EventJson(e.kind, e.data, e.line));
      }
    }
    Json extra = Json::array();
    for (const Made& m : made_) {
      if (!Compared(m.kind)) continue;
      auto it = made.find(m.key);
      if (it->second > 0) {
        --it->second;
        extra.push_back(EventJson(m.kind, m.data, m.line));
      }
    }
    if (missing.empty() && extra.empty()) return r;
    std::string message;
    if (!extra.empty()) {
      const Json& x = extra.front();
      // Paired with what the run did to the same item, Gate or effect, when there is one.
      const Json* pair = missing.empty() ? nullptr : &missing.front();
      const auto same = [&x](const Json& m) {
        for (const char* field : {"item", "gate", "effect", "run"}) {
          const std::string a = Str(x["data"], field);
          if (!a.empty() && a == Str(m["data"], field)) return true;
        }
        return false;
      };
      for (const Json& m : missing) {
        if (same(m)) {
          pair = &m;
          break;
        }
      }
      message = pair != nullptr ? "recorded " + Text(*pair) + "; this build: " + Text(x)
                                : "this build: " + Text(x) + "; the run did not";
    } else {
      message = "recorded " + Text(missing.front()) + "; this build did not";
    }
    return diverged(r, turn.seq, message, missing, extra);
  }

  ReplayResult diverged(ReplayResult r, int64_t seq, const std::string& message,
                        const Json& recorded, const Json& replayed) {
    stand(r);
    r.identical = false;
    r.turn = turn_;
    r.seq = seq;
    r.message = "turn " + std::to_string(turn_) + ": " + message;
    r.recorded = Json::array();
    r.replayed = Json::array();
    for (size_t i = 0; i < recorded.size() && i < 20; ++i) r.recorded.push_back(recorded[i]);
    for (size_t i = 0; i < replayed.size() && i < 20; ++i) r.replayed.push_back(replayed[i]);
    return r;
  }

  void stand(ReplayResult& r) const {
    r.held = held_;
    if (!run_) return;
    r.status = ToString(run_->status());
    r.output = run_->output();
    r.reason = run_->reason();
  }

  const Registry& registry_;
  const Trace& trace_;
  const std::function<void(const std::string&)> line_;
  ManualClock clock_;
  std::unique_ptr<Run> run_;
  int turn_ = 0;
  const ReplayTurn* recordedTurn_ = nullptr;
  std::vector<Made> made_;  // this turn's lines, as this build made them
  std::unordered_map<std::string, int64_t> madeKeys_;
  std::unordered_map<std::string, int64_t> consumed_;   // inputs of the turn taken or found
  std::map<std::string, std::deque<Pending>> effects_;  // held, by name, oldest first
  std::map<std::string, std::deque<Pending>> calls_;    // by `POOL\nCALL`
  std::map<std::pair<std::string, std::string>, Dispatched> keys_;
  std::set<int64_t> usedDispatches_;
  std::set<std::string> asking_;             // items whose dispatch the host said it asks for again
  std::map<std::string, Dispatched> found_;  // item -> the run the host found for a delivery
  int64_t held_ = 0;
};

}  // namespace

Json ReplayResult::json() const {
  Json j = {
      {"run", run},       {"workflow", workflow}, {"turns", turns},         {"inputs", inputs},
      {"held", held},     {"effectsRun", 0},      {"identical", identical}, {"status", status},
      {"output", output}, {"reason", reason}};
  if (!identical) {
    j["divergence"] = {{"turn", turn},
                       {"seq", seq},
                       {"message", message},
                       {"recorded", recorded},
                       {"replayed", replayed}};
  }
  return j;
}

ReadTrace::ReadTrace(std::istream& in, const std::string& name)
    : trace_(std::make_unique<Trace>(Read(in, name))) {}
ReadTrace::~ReadTrace() = default;
const std::string& ReadTrace::workflow() const { return trace_->workflow; }

ReplayResult Replay(const Registry& registry, const ReadTrace& trace,
                    const std::function<void(const std::string&)>& line) {
  TraceReplay replay(registry, trace.trace(), line);
  return replay.go();
}

}  // namespace jr2rt
