// The agreement test of `jr2c diff` (#36, docs/diff.md#the-agreement-test): for every ordered pair
// of the versions in agreement.jr2 (written by generate.py: version 0 and 40 versions of one
// seeded edit each), every waiting run of the old version is both
//   - restored by the runtime as the new version (Run::Restore: what the run host does, marking
//     a run whose restore throws `drifted`), and
//   - judged by diff::Compare, with the run as the store's one waiting run (its snapshot scanned as
//     `jr2c diff --store` scans it): the run is flagged when a change strands it.
// The two must agree: every run diff passes restores, every run it flags is refused. The waiting
// runs are made by seeded random walks (answers at open Gates, timers firing) on a manual clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agreement.jr2.h"
#include "compiler/diff/diff.h"
#include "compiler/driver/driver.h"
#include "compiler/sema/program.h"
#include "jr2/json_value.h"
#include "jr2/run.h"
#include "tally.h"

namespace {

using jr2rt::Json;

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::string Prefix(size_t k) {
  return "v" + std::string(k < 10 ? "0" : "") + std::to_string(k) + "_";
}

// A snapshot of version `from` as build `to` reads it: its names swapped, and saved by another
// build (all versions share one registry, whose assembly would say it is this one's).
Json AsBuild(const std::string& snapshot, size_t from, size_t to) {
  Json snap = Json::parse(Replace(snapshot, Prefix(from), Prefix(to)));
  snap["assembly"] = "the build of version " + std::to_string(from);
  return snap;
}

// One version of the program, checked as `jr2c diff` checks it: its own names, no prefix.
struct Version {
  std::string edit;  // what was changed from version 0
  jr2::SourceManager sm;
  jr2::Diagnostics diags;
  std::unique_ptr<jr2::sema::LoadResult> loaded;
  jr2::ir::Program charts;
};

// A waiting run of one version: its snapshot, and what `jr2c diff --store` reads of it.
struct Waiting {
  std::string workflow;  // as `jr2c diff` names it (`flow`)
  std::string snapshot;  // as the version names it (`v07_…`)
  std::string where;     // its live machines and their states, for a message
  int64_t atMs = 0;      // the walk's clock when it was kept: a restore goes on from there
};

std::vector<std::unique_ptr<Version>> LoadVersions() {
  std::ifstream in(JR2_AGREEMENT_JR2);
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  const std::string marker = "\n// ==== version ";
  const size_t first = text.find(marker);
  EXPECT_NE(first, std::string::npos) << "agreement.jr2 has no versions";
  const std::string header = text.substr(0, first + 1);
  std::vector<std::unique_ptr<Version>> versions;
  for (size_t at = first; at != std::string::npos;) {
    const size_t next = text.find(marker, at + 1);
    std::string section =
        text.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
    auto v = std::make_unique<Version>();
    const size_t colon = section.find(": ");
    v->edit = section.substr(colon + 2, section.find('\n') - colon - 2);
    const std::string prefix = Prefix(versions.size());
    v->loaded = std::make_unique<jr2::sema::LoadResult>(jr2::sema::LoadText(
        v->sm, prefix + "agreement.jr2", Replace(header + section, prefix, ""), v->diags, false));
    v->charts = jr2::driver::Analyze(v->loaded->program, v->diags, jr2::sema::Keep::kReports);
    EXPECT_FALSE(v->diags.hasErrors())
        << "version " << versions.size()
        << " does not check: " << (v->diags.all().empty() ? "" : v->diags.all().front().message);
    versions.push_back(std::move(v));
    at = next;
  }
  return versions;
}

// What an answer at a Gate carries, per event (the shared events of agreement.jr2).
Json Payload(const std::string& event) {
  if (event == "agr_reject") return Json{{"reason", "not now"}};
  if (event == "agr_rethink") return Json{{"note", "look at the logs"}};
  return Json::object();
}

const Json kTickets = Json::parse(
    R"([{"id": "T-1", "title": "One"}, {"id": "T-2", "title": "Two"},
        {"id": "T-3", "title": "Three", "needs": []}])");
const Json kPlainTickets = Json::parse(
    R"([{"id": "T-1", "title": "One"}, {"id": "T-2", "title": "Two"},
        {"id": "T-3", "title": "Three"}])");
const Json kOwnedTickets = Json::parse(
    R"([{"id": "T-1", "title": "One", "owner": "ops"}, {"id": "T-2", "title": "Two", "owner": "ops"},
        {"id": "T-3", "title": "Three", "needs": [], "owner": "web"}])");

// Seeded random walks on each workflow of version `k`: after each step, a run that waits is kept,
// one per distinct set of live machines, states, Pools and stored values, up to `cap` a workflow.
std::vector<Waiting> Walk(const jr2rt::Registry& registry, size_t k, int seeds, int steps,
                          size_t cap) {
  std::vector<Waiting> out;
  std::set<std::string> seen;
  const std::string prefix = Prefix(k);
  for (const char* name : {"flow", "single", "solo"}) {
    const jr2rt::WorkflowInfo* wf = registry.workflow(prefix + name);
    if (wf == nullptr) continue;
    size_t mine = 0;  // runs kept of this workflow
    for (int seed = 0; seed < seeds; ++seed) {
      std::mt19937 random(static_cast<unsigned>(seed * 7919 + static_cast<int>(k)));
      jr2rt::ManualClock clock;
      jr2rt::Run run(registry, *wf, "r-" + std::to_string(seed), clock);
      // The Pool's input, or the review's (with the parameter one version adds), with the
      // tickets' `owner` where a version requires it.
      bool started = false;
      for (const Json& tickets : {kTickets, kOwnedTickets, kPlainTickets}) {
        // Half the Pool runs say `mode: "slow"`, where a version has it.
        const Json mode =
            seed % 2 == 0 ? Json{{"items", tickets}, {"mode", "slow"}} : Json{{"items", tickets}};
        for (const Json& input : {mode, Json{{"items", tickets}}, Json{{"ticket", tickets[0]}},
                                  Json{{"ticket", tickets[0]}, {"priority", 1}}}) {
          try {
            run.checkInput(input);
          } catch (const std::exception&) {
            continue;
          }
          run.start(input);
          started = true;
          break;
        }
        if (started) break;
      }
      if (!started) {
        ADD_FAILURE() << "no input starts " << prefix << name;
        break;
      }
      for (int step = 0; step < steps && !run.ended(); ++step) {
        const std::string snapshot = run.snapshot().dump();
        jr2::diff::WaitingRun scanned;
        EXPECT_TRUE(jr2::diff::ScanSnapshot(Replace(snapshot, prefix, ""), scanned));
        std::string where = scanned.workflow;
        for (const jr2::diff::WaitingRun::Machine& m : scanned.machines) {
          where += " " + m.name + ":";
          for (const std::string& s : m.active) where += s + ",";
        }
        for (const jr2::diff::WaitingRun::Pool& p : scanned.pools) where += " pool " + p.name;
        // One run per distinct set of live machines, states, Pools and stored values (a note set
        // by a rethink, back in `triage`, is another run), up to `cap` runs of a version.
        std::string values;
        for (const jr2::diff::WaitingRun::Machine& m : scanned.machines)
          values += std::string(scanned.text(m.context));
        for (const jr2::diff::WaitingRun::Pool& p : scanned.pools)
          values += std::string(scanned.text(p.input)) + std::string(scanned.text(p.inputOver));
        std::string key = std::string(name) + where;
        key += values;
        if (mine < cap && seen.insert(key).second) {
          out.push_back({name, snapshot, std::string(name) + where, clock.nowMs()});
          ++mine;
        }
        // An answer at an open Gate, or time passing.
        std::vector<jr2rt::OpenGate> gates = run.gates();
        gates.erase(std::remove_if(gates.begin(), gates.end(),
                                   [](const jr2rt::OpenGate& g) {
                                     return g.kind != jr2rt::OpenGate::Kind::kGate ||
                                            g.accepts.empty();
                                   }),
                    gates.end());
        if (gates.empty() || random() % 4 == 0) {
          static constexpr int64_t kMinutes[] = {5, 16, 21, 31, 50, 61, 121};
          clock.advance(60'000 * kMinutes[random() % 7]);
          run.tick();
          continue;
        }
        const jr2rt::OpenGate& gate = gates[random() % gates.size()];
        const std::string event = gate.accepts[random() % gate.accepts.size()].name;
        run.send(gate.name, event, Payload(event));
      }
    }
  }
  return out;
}

TEST(Agreement, DiffAgreesWithTheRuntimeOnEveryPairOfVersions) {
  const std::vector<std::unique_ptr<Version>> versions = LoadVersions();
  ASSERT_GE(versions.size(), 41U);
  jr2rt::Registry registry;
  jr2gen::agreement::RegisterWorkflows(registry);

  std::vector<std::vector<Waiting>> waiting;
  size_t runs = 0;
  for (size_t k = 0; k < versions.size(); ++k) {
    waiting.push_back(Walk(registry, k, 40, 16, 40));
    runs += waiting.back().size();
  }

  size_t wentOn = 0, faulted = 0;
  size_t pairs = 0, pairsThatStrand = 0;
  jr2agr::Tally tally;
  for (size_t i = 0; i < versions.size(); ++i) {
    const std::string from = Prefix(i);
    std::vector<jr2::diff::WaitingRun> scanned(waiting[i].size());
    for (size_t r = 0; r < waiting[i].size(); ++r) {
      ASSERT_TRUE(jr2::diff::ScanSnapshot(Replace(waiting[i][r].snapshot, from, ""), scanned[r]));
      scanned[r].workflow = waiting[i][r].workflow;
    }
    for (size_t j = 0; j < versions.size(); ++j) {
      if (i == j) continue;
      ++pairs;
      const Version& a = *versions[i];
      const Version& b = *versions[j];
      jr2::Diagnostics changes;
      std::vector<std::vector<std::string>> stranding;
      jr2::diff::Compare({a.loaded->program, a.charts}, {b.loaded->program, b.charts}, changes,
                         &scanned, &stranding);
      bool any = false;
      for (size_t r = 0; r < waiting[i].size(); ++r) {
        std::string why;
        try {
          jr2rt::ManualClock clock;  // the time the run was saved at
          clock.set(waiting[i][r].atMs);
          auto run = jr2rt::Run::Restore(registry, AsBuild(waiting[i][r].snapshot, i, j), clock);
          // A restored run goes on: three hours pass, its timers fire, and it does not fault.
          clock.advance(int64_t{3} * 3'600'000);
          run->tick();
          if (run->status() == jr2rt::RunStatus::kError) {
            ++faulted;
            ADD_FAILURE() << i << " -> " << j << ": the restored run faulted: " << run->reason();
          }
          ++wentOn;
        } catch (const std::exception& e) {
          why = e.what();
        }
        any = any || !stranding[r].empty();
        tally.add(why, stranding[r], [&] {
          return std::to_string(i) + " -> " + std::to_string(j) + " (" + a.edit + " -> " + b.edit +
                 "), run " + waiting[i][r].where;
        });
      }
      pairsThatStrand += any ? 1 : 0;
    }
  }
  std::printf(
      "agreement: %zu versions, %zu waiting runs made by seeded walks, %zu ordered pairs (%zu of "
      "them strand a run), %zu restores checked: %zu refused by the runtime, %zu flagged by diff, "
      "%zu disagreements; %zu restored runs went on three hours, %zu of them faulted\n",
      versions.size(), runs, pairs, pairsThatStrand, tally.checked, tally.refused, tally.flagged,
      tally.disagree, wentOn, faulted);
  for (const auto& [code, n] : tally.byCode)
    std::printf("  %s flagged %zu restores\n", code.c_str(), n);
  EXPECT_EQ(tally.disagree, 0U) << "diff and the runtime disagree:\n" << tally.report();
  EXPECT_GE(pairs, 1000U);
}

}  // namespace

namespace {

// The version whose edit says `edit`, by its comment in agreement.jr2.
size_t VersionOf(const std::vector<std::unique_ptr<Version>>& versions, const std::string& edit) {
  for (size_t k = 0; k < versions.size(); ++k) {
    if (versions[k]->edit.find(edit) != std::string::npos) return k;
  }
  ADD_FAILURE() << "no version's edit says " << edit;
  return 0;
}

// What the runtime says when it refuses a restore that only the checks added with the agreement
// test refuse (each once found restoring a run it could not go on with): a workflow whose top
// is another, a Pool whose worker is another machine, a Pool's input its parameters no longer
// read, a value its literal union no longer has. And what `jr2c diff` counts for each.
TEST(Agreement, TheRuntimeSaysWhyItRefusesAndDiffCountsTheSameRun) {
  const std::vector<std::unique_ptr<Version>> versions = LoadVersions();
  jr2rt::Registry registry;
  jr2gen::agreement::RegisterWorkflows(registry);
  jr2rt::ManualClock clock;
  // A Pool run of version `from`, both tickets escalated (`level` is "high"), as version `to`.
  auto restore = [&](size_t from, size_t to, const Json& tickets) -> std::string {
    jr2rt::Run run(registry, *registry.workflow(Prefix(from) + "flow"), "r1", clock);
    run.start(Json{{"items", tickets}});
    run.send("T-1.triage", "agr_escalate", Json::object());
    run.send("T-2.triage", "agr_escalate", Json::object());
    EXPECT_EQ(run.status(), jr2rt::RunStatus::kWaiting);
    const std::string snapshot = run.snapshot().dump();
    jr2::diff::WaitingRun scanned;
    EXPECT_TRUE(jr2::diff::ScanSnapshot(Replace(snapshot, Prefix(from), ""), scanned));
    scanned.workflow = "flow";
    std::vector<jr2::diff::WaitingRun> waiting{scanned};
    std::vector<std::vector<std::string>> stranding;
    jr2::Diagnostics changes;
    jr2::diff::Compare({versions[from]->loaded->program, versions[from]->charts},
                       {versions[to]->loaded->program, versions[to]->charts}, changes, &waiting,
                       &stranding);
    std::string codes;
    for (const std::string& c : stranding[0]) codes += c + " ";
    try {
      jr2rt::Run::Restore(registry, AsBuild(snapshot, from, to), clock);
    } catch (const std::exception& e) {
      return codes + "| " + e.what();
    }
    return codes + "| restored";
  };
  EXPECT_EQ(restore(0, VersionOf(versions, "runs the review alone"), kTickets),
            "D0701 | the stored run of workflow `v31_flow` runs pool `v31_work`, and this build's "
            "`v31_flow` runs a machine: it no longer fits (`jr2c diff` says so beforehand as "
            "D0701)");
  EXPECT_EQ(restore(0, VersionOf(versions, "worker made another machine"), kTickets),
            "D0707 | the saved run of pool `v29_work` has a worker of machine `v29_review` live, "
            "and this build's pool runs machine `v29_review2`");
  EXPECT_EQ(restore(VersionOf(versions, "with a default added to `Ticket`"),
                    VersionOf(versions, "required field `owner` added"), kTickets),
            "D0704 | the saved run of pool `v22_work` has an input this build's parameters no "
            "longer read: `input of v22_work.items[0]` needs the field `owner`");
  EXPECT_EQ(restore(0, VersionOf(versions, "made `urgent`"), kTickets),
            "D0704 | `context.level` is \"high\", but it must be one of \"low\", \"urgent\"");
  // … and what does fit restores, as diff says: the tickets carried their owner.
  EXPECT_EQ(restore(VersionOf(versions, "with a default added to `Ticket`"),
                    VersionOf(versions, "required field `owner` added"), kOwnedTickets),
            "| restored");
}

// An input's literal union is checked as a record field's is: an `urgency` that is not one of its
// literals is refused, before anything runs.
TEST(Agreement, AnInputOutsideItsLiteralUnionIsRefused) {
  jr2rt::Registry registry;
  jr2gen::agreement::RegisterWorkflows(registry);
  jr2rt::ManualClock clock;
  jr2rt::Run run(registry, *registry.workflow("v00_single"), "r1", clock);
  try {
    run.checkInput(Json{{"ticket", kTickets[0]}, {"urgency", "whenever"}});
    ADD_FAILURE() << "an urgency outside the union was taken";
  } catch (const jr2rt::BadInput& e) {
    EXPECT_NE(
        std::string(e.what()).find("is \"whenever\", but it must be one of \"high\", \"low\""),
        std::string::npos)
        << e.what();
  }
  run.checkInput(Json{{"ticket", kTickets[0]}, {"urgency", "high"}});
}

}  // namespace
