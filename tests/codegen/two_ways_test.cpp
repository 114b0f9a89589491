// Every generated machine of the samples and of tests/codegen, run both ways on one trace (#13):
// the generated fast path (a switch over the active leaf) and the table engine alone
// (JR2_NO_FAST_PATH; jr2rt::SetFastPath). Both read the sets the compiler lowered once, so they
// must take the same steps: a seeded random walk of events, timers, and the ends of invoked
// children is given to two instances, and after each step their answers, active states,
// snapshots, timers and invokes must be equal. A machine without a fast path (a parallel state,
// an eventless transition) runs the tables both times, and is walked as a check of the tables.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <random>

#include "alert_triage.jr2.h"
#include "build_matrix.jr2.h"
#include "finish.jr2.h"
#include "nulls.jr2.h"
#include "strict.jr2.h"
#include "tickets.jr2.h"

namespace {

using jr2rt::Event;
using jr2rt::Json;

struct RecordingHost : jr2rt::MachineHost {
  std::map<int, int64_t> timers;
  std::map<int, jr2rt::InvokeSpec> invokes;
  std::vector<Json> logs;
  void startTimer(int id, jr2rt::Duration after) override { timers[id] = after.ms; }
  void cancelTimer(int id) override { timers.erase(id); }
  void startInvoke(const jr2rt::InvokeSpec& spec) override { invokes[spec.id] = spec; }
  void cancelInvoke(int id) override { invokes.erase(id); }
  void log(const Json& value) override { logs.push_back(value); }
  Json seen() const {
    Json t = Json::object(), i = Json::object();
    for (const auto& [id, ms] : timers) t[std::to_string(id)] = ms;
    for (const auto& [id, spec] : invokes) i[std::to_string(id)] = {spec.target, spec.input};
    return {{"timers", t}, {"invokes", i}, {"logs", logs}};
  }
};

// A value of a field's type as EventSpec spells it (`string`, `int`, `"a" | "b"`, `T?`, …).
Json Sample(const std::string& type, std::mt19937& rng) {
  if (!type.empty() && type.back() == '?') {
    if (rng() % 3 == 0) return nullptr;
    return Sample(type.substr(0, type.size() - 1), rng);
  }
  if (type == "string") return rng() % 2 == 0 ? "s" : "";
  if (type == "int") return static_cast<int>(rng() % 4);
  if (type == "float") return 1.5;
  if (type == "bool") return rng() % 2 == 0;
  if (type.rfind("list<", 0) == 0) return Json::array();
  if (!type.empty() && type[0] == '"') {  // a union of literals: one of them
    std::vector<std::string> literals;
    for (size_t at = type.find('"'); at != std::string::npos; at = type.find('"', at)) {
      const size_t end = type.find('"', at + 1);
      literals.push_back(type.substr(at + 1, end - at - 1));
      at = end + 1;
    }
    return literals[rng() % literals.size()];
  }
  return Json::object();  // a record: refused or read with defaults, alike both ways
}

struct Case {
  const char* name;
  std::function<std::unique_ptr<jr2rt::Machine>()> make;
  Json input;
};

// What a step did, to compare: its answer or what it threw, and the machine and host after it.
Json Step(jr2rt::Machine& m, RecordingHost& host, const Event& e, bool fast) {
  jr2rt::SetFastPath(fast);
  Json out;
  try {
    out["moved"] = m.dispatch(e);
  } catch (const std::exception& x) {
    out["threw"] = x.what();
  }
  jr2rt::SetFastPath(true);
  if (out.contains("threw")) return out;  // the machine is not looked at after a throw
  out["active"] = m.activeStates();
  out["done"] = m.isDone();
  out["snapshot"] = m.snapshot();
  out["host"] = host.seen();
  if (m.isDone()) out["output"] = m.output();
  return out;
}

TEST(TwoWays, EveryGeneratedMachineTakesTheSameStepsOnTheFastPathAndOnTheTables) {
  const Json ticket = {{"id", "T-1"}, {"title", "Trim the name."}, {"needs", Json::array()}};
  const Json alert = {{"fingerprint", "S-1"}, {"title", "boom"}, {"level", "fatal"}};
  const std::vector<Case> cases = {
      {"tickets.review", jr2gen::tickets::Make_review, {{"ticket", ticket}}},
      {"build_matrix.build_package",
       jr2gen::build_matrix::Make_build_package,
       {{"package", {{"id", "core"}, {"path", "libs/core"}}}, {"retries", 2}}},
      {"alert_triage.triage_machine",
       jr2gen::alert_triage::Make_triage_machine,
       {{"alert", alert}}},
      {"finish.finisher", jr2gen::finish::Make_finisher, Json::object()},
      {"nulls.reviewer", jr2gen::nulls::Make_reviewer, {{"ticket", {{"id", "T-1"}}}}},
      {"nulls.parent", jr2gen::nulls::Make_parent, {{"ticket", {{"id", "T-1"}}}}},
      {"nulls.idle", jr2gen::nulls::Make_idle, Json::object()},
      {"strict.reviewer",
       jr2gen::strict::Make_reviewer,
       {{"review", {{"id", "R-1"}, {"rounds", 2}}}}},
  };
  constexpr int kWalks = 200;
  constexpr int kSteps = 30;
  int64_t steps = 0, moved = 0, threw = 0, ended = 0;
  for (const Case& c : cases) {
    const int64_t before[] = {steps, moved, threw, ended};
    std::mt19937 rng(20261130);
    for (int walk = 0; walk < kWalks; ++walk) {
      RecordingHost hostA, hostB;
      auto a = c.make();
      auto b = c.make();
      jr2rt::SetFastPath(true);
      a->start(hostA, c.input);
      jr2rt::SetFastPath(false);
      b->start(hostB, c.input);
      jr2rt::SetFastPath(true);
      ASSERT_EQ(a->snapshot(), b->snapshot()) << c.name << ": after start";
      const auto specs = a->eventSpecs();
      for (int step = 0; step < kSteps && !a->isDone(); ++step) {
        // The candidates: every event the machine handles, every timer, every child's end.
        std::vector<Event> candidates;
        for (int id = 0; id < static_cast<int>(specs.size()); ++id) {
          Json payload = Json::object();
          for (const auto& f : specs[static_cast<size_t>(id)].fields) {
            if (!f.required && rng() % 2 == 0) continue;
            payload[f.name] = Sample(f.type, rng);
          }
          candidates.push_back({Event::Kind::kExternal, id, payload});
        }
        for (const auto& [id, ms] : hostA.timers)
          candidates.push_back({Event::Kind::kTimer, id, {}});
        for (const auto& [id, spec] : hostA.invokes) {
          // A child's output: std.command's CommandResult, or an object (a Gate's answer).
          const Json output = spec.target == "std.command"
                                  ? Json{{"exit", 0}, {"stdout", "ok"}, {"stderr", ""}}
                                  : Json::object();
          candidates.push_back({Event::Kind::kDone, id, output});
          candidates.push_back(
              {Event::Kind::kError, id, Json{{"reason", "it failed"}, {"detail", nullptr}}});
        }
        const Event& e = candidates[rng() % candidates.size()];
        const std::vector<std::string> at = a->activeStates();
        const uint64_t misses = jr2rt::FastPathMisses();
        const Json fast = Step(*a, hostA, e, true);
        // The generated dispatch() had a case for the leaf: it did not hand the event to the
        // tables.
        ASSERT_EQ(jr2rt::FastPathMisses(), misses)
            << c.name << ", walk " << walk << ", step " << step << ": the leaf "
            << (at.empty() ? std::string("(none)") : at.back())
            << " is missing from the generated dispatch()";
        const Json tables = Step(*b, hostB, e, false);
        ++steps;
        ASSERT_EQ(fast, tables) << c.name << ", walk " << walk << ", step " << step
                                << ": event kind " << static_cast<int>(e.kind) << " id " << e.id
                                << " " << e.data.dump();
        if (fast.contains("threw")) {
          ++threw;
          break;
        }
        moved += fast["moved"].get<bool>() ? 1 : 0;
        ended += a->isDone() ? 1 : 0;
      }
    }
    std::cout << "[ two ways ] " << c.name << ": " << steps - before[0] << " steps, "
              << moved - before[1] << " moved, " << threw - before[2] << " threw alike, "
              << ended - before[3] << " walks ended done\n";
  }
  std::cout << "[ two ways ] " << cases.size() << " machines, " << steps
            << " steps compared: " << moved << " moved, " << threw << " threw alike, " << ended
            << " walks ended done\n";
  EXPECT_GT(moved, steps / 4) << "the walks must move the machines, not only knock";
  EXPECT_GT(ended, 0);
}

}  // namespace
