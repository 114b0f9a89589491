// The agreement test of `jr2c diff` on the programs users run (#36,
// docs/diff.md#the-agreement-test): the samples and the conformance workflows, each with seeded
// edits (edits.py, every version compiled into its own namespace and Registry). For every ordered
// pair of versions of one file, every waiting run of the old version is both
//   - restored by the runtime as the new version (Run::Restore, what the run host does, marking a
//     run whose restore throws `drifted`), and
//   - judged by diff::Compare with the run as the store's one waiting run (its snapshot scanned as
//     `jr2c diff --store` scans it): flagged when a change strands it.
// The two must agree. The waiting runs are made by seeded random walks of every workflow: inputs
// and Gate answers made from their JSON Schemas, timers firing on a manual clock, and every effect
// answered as a replay answers it (held, then given an output or a Failure), so nothing runs: no
// process, no request, no model. A `std.backlog` Source reads its file from the source tree.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/diff/diff.h"
#include "compiler/driver/driver.h"
#include "compiler/sema/program.h"
#include "jr2/json_value.h"
#include "jr2/registry.h"
#include "jr2/run.h"
#include "run/replayer.h"
#include "tally.h"
#include "versions.h"

namespace {

using jr2rt::Json;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  return all.str();
}

std::string Padded(int k) { return (k < 10 ? "0" : "") + std::to_string(k); }

// One version of one file: its program as `jr2c diff` reads it, and its generated code's
// workflows in a Registry of their own.
struct Version {
  const jr2agr::FileVersion* info = nullptr;
  std::string edit;  // what was changed from version 0
  jr2::SourceManager sm;
  jr2::Diagnostics diags;
  std::unique_ptr<jr2::sema::LoadResult> loaded;
  jr2::ir::Program charts;
  jr2rt::Registry registry;
};

// A waiting run: its snapshot, its workflow, and where it is (for a message).
struct Waiting {
  std::string workflow;
  std::string snapshot;
  std::string where;
  int64_t atMs = 0;  // the walk's clock when it was kept: a restore goes on from there
};

// ---- payloads from JSON Schemas -----------------------------------------------------------------

// A value that fits `schema` (the subset jr2c writes: object, array, string, integer, number,
// boolean, null, enum, anyOf, $ref into $defs). Strings are distinct (`v17`), so items made for a
// Pool have distinct ids. `full`: every optional field too, else each with even odds.
class Maker {
 public:
  explicit Maker(std::mt19937& random) : random_(random) {}
  Json make(const Json& schema, const Json& root, int depth = 0) {
    if (!schema.is_object() || depth > 6) return nullptr;
    if (auto ref = schema.find("$ref"); ref != schema.end() && ref->is_string()) {
      const std::string name =
          ref->get<std::string>().substr(ref->get<std::string>().rfind('/') + 1);
      const Json* defs = root.contains("$defs") ? &root["$defs"] : nullptr;
      if (defs == nullptr || !defs->contains(name)) return nullptr;
      return make((*defs)[name], root, depth + 1);
    }
    if (auto e = schema.find("enum"); e != schema.end() && e->is_array() && !e->empty())
      return (*e)[random_() % e->size()];
    if (auto any = schema.find("anyOf"); any != schema.end() && any->is_array() && !any->empty())
      return make((*any)[random_() % any->size()], root, depth + 1);
    const std::string type = schema.value("type", std::string());
    if (type == "object") {
      Json out = Json::object();
      std::set<std::string> required;
      if (auto r = schema.find("required"); r != schema.end() && r->is_array()) {
        for (const Json& name : *r) required.insert(name.get<std::string>());
      }
      auto props = schema.find("properties");
      if (props == schema.end() || !props->is_object()) return out;
      for (auto p = props->begin(); p != props->end(); ++p) {
        if (required.count(p.key()) != 0 || random_() % 2 == 0)
          out[p.key()] = make(p.value(), root, depth + 1);
      }
      return out;
    }
    if (type == "array") {
      Json out = Json::array();
      const size_t n = 1 + random_() % 3;
      auto items = schema.find("items");
      for (size_t i = 0; i < n && items != schema.end(); ++i)
        out.push_back(make(*items, root, depth + 1));
      return out;
    }
    if (type == "string") return "v" + std::to_string(++strings_);
    if (type == "integer") return static_cast<int64_t>(random_() % 4);
    if (type == "number") return 1.5;
    if (type == "boolean") return random_() % 2 == 0;
    if (type == "null") return nullptr;
    return "v" + std::to_string(++strings_);  // `json`: any value
  }

 private:
  std::mt19937& random_;
  int strings_ = 0;
};

// ---- effects answered, nothing run --------------------------------------------------------------

// Holds every effect and `read` a run starts; the walk answers them later (an output or a
// Failure), or never. A `next` is left to the Source (`std.backlog` reads its file; an `extern`
// one is scripted empty).
class Holder final : public jr2rt::Replayer {
 public:
  struct Held {
    std::string name;  // `T-1.build: std.command`, or `read`
    std::shared_ptr<jr2rt::EffectControl> control;
    std::weak_ptr<int> alive;
    bool call = false;
    std::function<void(Json)> then;
    std::function<void(const jr2rt::Failure&)> failed;
    bool gone() const { return call ? alive.expired() : control && control->cancelled.load(); }
  };
  void effect(const std::string& name, const Json&, std::shared_ptr<jr2rt::EffectControl> control,
              std::function<void(Json)> then, std::function<void(const jr2rt::Failure&)> failed,
              std::function<void(const jr2rt::Failure&)> /*defect*/) override {
    held.push_back({name, std::move(control), {}, false, std::move(then), std::move(failed)});
  }
  bool call(const std::string&, const std::string& call, std::weak_ptr<int> alive,
            std::function<void(Json)> answer,
            std::function<void(const jr2rt::Failure&)> failed) override {
    if (call != "read") return false;
    held.push_back({"read", nullptr, std::move(alive), true, std::move(answer), std::move(failed)});
    return true;
  }
  // Answers one held effect: an output that fits what the standard library gives, or a Failure
  // (a host function is always answered with one: its output's type is not known here).
  bool answerOne(jr2rt::Run& run, std::mt19937& random) {
    held.erase(std::remove_if(held.begin(), held.end(), [](const Held& h) { return h.gone(); }),
               held.end());
    if (held.empty()) return false;
    const size_t at = random() % held.size();
    Held h = std::move(held[at]);
    held.erase(held.begin() + static_cast<std::ptrdiff_t>(at));
    Json output;
    bool ok = random() % 3 != 0;
    if (h.name.find("std.command") != std::string::npos) {
      output = Json{{"exit", 0}, {"stdout", "ok\n"}, {"stderr", ""}};
    } else if (h.name == "read" || h.name.find("std.http_get") != std::string::npos) {
      output = Json{{"items", Json::array()}};  // what the Sources here read as their items
    } else {
      ok = false;
    }
    if (ok) {
      run.post([then = std::move(h.then), output] { then(output); });
    } else {
      run.post([failed = std::move(h.failed)] {
        failed(jr2rt::Failure("the agreement test's walk answered it with a Failure"));
      });
    }
    run.drive();
    return true;
  }
  std::vector<Held> held;
};

// The host's door for a Pool of runs: each dispatch "starts" a run that the walk ends later
// (Run::dispatchedEnded), so a `dispatch` worker waits as it does under a host.
class Door final : public jr2rt::Dispatcher {
 public:
  jr2rt::Dispatched dispatch(const std::string& workflow, const std::string& key, const Json&,
                             const Json&) override {
    jr2rt::Dispatched d;
    d.run = "d-" + workflow + "-" + key;
    runs_[workflow + "\n" + key] = d;
    return d;
  }
  std::optional<jr2rt::Dispatched> find(const std::string& workflow,
                                        const std::string& key) override {
    auto it = runs_.find(workflow + "\n" + key);
    if (it == runs_.end()) return std::nullopt;
    return it->second;
  }
  // Ends one run a `dispatch` worker waits for: done, or failed.
  static bool endOne(jr2rt::Run& run, std::mt19937& random) {
    const std::vector<std::string> awaited = run.awaited();
    if (awaited.empty()) return false;
    const std::string& id = awaited[random() % awaited.size()];
    if (random() % 3 == 0) {
      run.dispatchedEnded(id, "error", nullptr, "the walk ended it");
    } else {
      run.dispatchedEnded(id, "done", Json{{"walk", true}}, "");
    }
    run.drive();
    return true;
  }

 private:
  std::map<std::string, jr2rt::Dispatched> runs_;
};

// Scripts every `next: extern` Source of `text` to answer "nothing now".
void ScriptExternSources(jr2rt::Run& run, const std::string& text) {
  for (size_t at = text.find("next: extern "); at != std::string::npos;
       at = text.find("next: extern ", at + 1)) {
    size_t b = at + 13, e = b;
    while (e < text.size() && (isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_')) ++e;
    run.scriptNext(text.substr(b, e - b),
                   [](const jr2rt::NextQuery&, const std::function<void(Json)>& answer) {
                     answer(Json{{"item", nullptr}, {"open", 0}});
                   });
  }
}

// The hooks a version's Sources take (`hook SERVICE "EVENT" => …`), each with the paths of the
// delivery its `carry` reads (`payload.data.issue.id`), and the string literals of the file, which
// the walks put at those paths (a literal union takes one of them) beside distinct strings.
struct Hook {
  std::string service, event;
  std::vector<std::vector<std::string>> paths;
};
struct Hooks {
  std::vector<Hook> hooks;
  std::vector<std::string> literals;
};

Hooks HooksOf(const std::string& text) {
  Hooks out;
  static const std::regex kHook(R"re(hook\s+(\w+)\s+"([^"]+)"\s*=>\s*(\w+))re");
  static const std::regex kPath(R"re(\bpayload((?:\.\w+)+))re");
  static const std::regex kLiteral(R"re("([\w.-]{1,20})")re");
  for (auto m = std::sregex_iterator(text.begin(), text.end(), kHook); m != std::sregex_iterator();
       ++m) {
    Hook h{(*m)[1].str(), (*m)[2].str(), {}};
    // What `carry` reads: to the end of its line, or of its `{ … }`.
    auto at = static_cast<size_t>(m->position(0) + m->length(0));
    size_t end = text.find('\n', at);
    if ((*m)[3].str() == "carry") {
      const size_t brace = text.find('{', at);
      if (brace != std::string::npos && brace < end) {
        int depth = 0;
        for (end = brace; end < text.size(); ++end) {
          if (text[end] == '{') ++depth;
          if (text[end] == '}' && --depth == 0) break;
        }
      }
    }
    const std::string body = text.substr(at, end - at);
    for (auto p = std::sregex_iterator(body.begin(), body.end(), kPath);
         p != std::sregex_iterator(); ++p) {
      std::vector<std::string> path;
      std::stringstream parts((*p)[1].str().substr(1));
      for (std::string part; std::getline(parts, part, '.');) path.push_back(part);
      h.paths.push_back(path);
    }
    out.hooks.push_back(h);
  }
  for (auto m = std::sregex_iterator(text.begin(), text.end(), kLiteral);
       m != std::sregex_iterator(); ++m)
    out.literals.push_back((*m)[1].str());
  return out;
}

// A delivery to one of `hooks`: its paths set, each to a literal of the file or a new string.
bool Deliver(jr2rt::Run& run, const Hooks& hooks, std::mt19937& random, int& strings) {
  if (hooks.hooks.empty()) return false;
  const Hook& h = hooks.hooks[random() % hooks.hooks.size()];
  if (!run.hears(h.service)) return false;
  Json payload = Json::object();
  for (const std::vector<std::string>& path : h.paths) {
    Json* at = &payload;
    for (const std::string& part : path) {
      if (!at->is_object()) *at = Json::object();
      at = &(*at)[part];
    }
    *at = random() % 2 == 0 && !hooks.literals.empty()
              ? Json(hooks.literals[random() % hooks.literals.size()])
              : Json("h" + std::to_string(++strings));
  }
  try {
    run.hook(h.service, h.event, payload);
  } catch (const std::exception&) {
    // a delivery the Source refuses with an error (its carry does not fit the item type)
  }
  return true;
}

// A backlog file of three items that every conformance item type reads (an id each), written
// once for the walks.
std::string Backlog() {
  static const std::string kPath = [] {
    std::string p = ::testing::TempDir() + "agreement_backlog.json";
    std::ofstream(p) << R"([{"id": "A"}, {"id": "B"}, {"id": "C"}])";
    return p;
  }();
  return kPath;
}

// What the walks give a workflow beside what its schema makes: the files its Source reads (a
// schema cannot say which string is a path), and items with ids where its items are `json`.
// By the workflow's name in version 0 (an edit that renames one adds `_next`).
Json Fixture(std::string workflow) {
  if (workflow.size() > 5 && workflow.compare(workflow.size() - 5, 5, "_next") == 0)
    workflow.resize(workflow.size() - 5);
  if (workflow == "build_matrix") return Json{{"file", "samples/build-matrix/repo/packages.json"}};
  if (workflow == "tickets") return Json{{"backlog_file", "samples/tickets/backlog.json"}};
  if (workflow == "conformance_tickets" || workflow == "conformance_load")
    return Json{{"backlog", Backlog()}};
  if (workflow == "conformance_hooked" || workflow == "conformance_instant" ||
      workflow == "conformance_torture")
    return Json{{"tasks", Backlog()}};
  if (workflow == "conformance_queued")
    return Json{{"tasks", Json::parse(R"([{"id": "A"}, {"id": "B"}, {"id": "C"}])")}};
  return Json::object();
}

// Seeded random walks on each workflow of version `v`: after each step, a run that waits is
// kept, one per distinct snapshot shape, up to `cap` a workflow.
// What the kept runs have: a Pool holding pushed items, an effect out, a Pool with live workers.
struct Shapes {
  size_t held = 0, out = 0, workers = 0;
};

std::vector<Waiting> Walk(Version& v, const std::string& text, int seeds, int steps, size_t cap,
                          size_t& started, std::map<std::string, size_t>& errors, Shapes& shapes) {
  std::vector<Waiting> out;
  std::set<std::string> seen;
  const Hooks hooks = HooksOf(text);
  for (const jr2rt::WorkflowInfo& wf : v.registry.workflows()) {
    size_t mine = 0;
    for (int seed = 0; seed < seeds && mine < cap; ++seed) {
      std::mt19937 random(static_cast<unsigned>(seed * 7919 + v.info->version * 31 + 7));
      Maker maker(random);
      jr2rt::ManualClock clock;
      Holder holder;
      Door door;
      jr2rt::Run run(v.registry, wf, "r-" + std::to_string(seed), clock);
      run.setHome(JR2_SOURCE_DIR);
      run.replayWith(&holder);
      run.setDispatcher(&door);
      ScriptExternSources(run, text);
      const Json schema = wf.inputSchema != nullptr ? Json::parse(wf.inputSchema) : Json();
      Json input = maker.make(schema, schema);
      if (!input.is_object()) input = Json::object();
      // The file the Source reads, where the workflow still takes it (an edit may remove it).
      const Json fixture = Fixture(wf.name);
      for (auto f = fixture.begin(); f != fixture.end(); ++f) {
        if (schema.is_object() && schema.contains("properties") &&
            schema["properties"].contains(f.key()))
          input[f.key()] = f.value();
      }
      try {
        run.start(input);
      } catch (const std::exception&) {
        continue;  // an input the schema cannot say (a literal a union narrows), or a Defect
      }
      ++started;
      int strings = 0;
      for (int step = 0; step < steps && !run.ended(); ++step) {
        const std::string snapshot = run.snapshot().dump();
        jr2::diff::WaitingRun scanned;
        EXPECT_TRUE(jr2::diff::ScanSnapshot(snapshot, scanned));
        std::string where = scanned.workflow;
        std::string values;
        for (const jr2::diff::WaitingRun::Machine& m : scanned.machines) {
          where += " " + m.name + ":";
          for (const std::string& s : m.active) where += s + ",";
          values += std::string(scanned.text(m.context));
        }
        for (const jr2::diff::WaitingRun::Pool& p : scanned.pools) {
          where += " pool " + p.name;
          values += std::string(scanned.text(p.input)) + std::string(scanned.text(p.inputOver));
        }
        // A top Pool's live workers and held items make another shape too (a Pool of runs has
        // no machine for `where` to name).
        const Json top = Json::parse(snapshot)["top"];
        if (top.is_object() && top.value("kind", "") == "pool") {
          where += " workers " + std::to_string(top.value("workers", Json::array()).size()) +
                   " held " + std::to_string(top.value("held", Json::array()).size());
        }
        if (mine < cap && seen.insert(where + values).second) {
          out.push_back({wf.name, snapshot, where, clock.nowMs()});
          ++mine;
          shapes.held += snapshot.find("\"held\":[{") != std::string::npos ? 1 : 0;
          shapes.out += std::any_of(holder.held.begin(), holder.held.end(),
                                    [](const Holder::Held& h) { return !h.gone(); })
                            ? 1
                            : 0;
          shapes.workers += snapshot.find("\"workers\":[{") != std::string::npos ? 1 : 0;
        }
        // An effect answered, an answer at an open Gate, or time passing.
        if (!holder.held.empty() && random() % 3 == 0 && holder.answerOne(run, random)) continue;
        if (random() % 3 == 0 && Deliver(run, hooks, random, strings)) continue;
        if (random() % 4 == 0 && Door::endOne(run, random)) continue;
        std::vector<jr2rt::OpenGate> gates = run.gates();
        gates.erase(std::remove_if(gates.begin(), gates.end(),
                                   [](const jr2rt::OpenGate& g) { return g.accepts.empty(); }),
                    gates.end());
        if (gates.empty() || random() % 4 == 0) {
          static constexpr int64_t kMinutes[] = {1, 5, 16, 31, 61, 121, 300};
          clock.advance(60'000 * kMinutes[random() % 7]);
          run.tick();
          continue;
        }
        const jr2rt::OpenGate& gate = gates[random() % gates.size()];
        const Json menu = jr2rt::MenuJson(gate);
        const Json& pick = menu[random() % menu.size()];
        const Json& schema = pick["schema"];
        Json payload = schema.is_null() ? Json::object() : maker.make(schema, schema);
        try {
          run.send(gate.name, pick["event"].get<std::string>(), payload);
        } catch (const jr2rt::BadInput&) {
          // a Gate that takes no answer from a person now (an Agent's), or a payload a
          // narrowed literal refuses: the walk goes on with another step
        }
      }
      if (run.status() == jr2rt::RunStatus::kError)
        ++errors[wf.name + ": " + run.reason().substr(0, 140)];
    }
  }
  return out;
}

size_t Total(const std::map<std::string, size_t>& counts) {
  size_t n = 0;
  for (const auto& [_, c] : counts) n += c;
  return n;
}

std::vector<std::unique_ptr<Version>> LoadVersions(std::map<std::string, std::string>& texts) {
  std::vector<std::unique_ptr<Version>> out;
  std::map<std::string, std::vector<Json>> edits;  // by stem, by version
  for (const jr2agr::FileVersion& f : jr2agr::Versions()) {
    if (edits.count(f.stem) == 0) {
      std::istringstream lines(Read(std::string(JR2_AGREEMENT_DIR) + "/agr_" + f.stem + ".edits"));
      for (std::string line; std::getline(lines, line);) edits[f.stem].push_back(Json::parse(line));
    }
    const Json& e = edits[f.stem].at(static_cast<size_t>(f.version));
    if (e["edit"].is_null()) continue;  // fewer edits of this file check than versions asked
    auto v = std::make_unique<Version>();
    v->info = &f;
    v->edit = e["edit"].get<std::string>();
    const std::string text =
        Read(std::string(JR2_AGREEMENT_DIR) + "/agr_" + f.stem + "_v" + Padded(f.version) + ".jr2");
    texts[std::string(f.stem) + Padded(f.version)] = text;
    v->loaded = std::make_unique<jr2::sema::LoadResult>(
        // Named as if beside its versions, where the files it imports were copied.
        jr2::sema::LoadText(v->sm, std::string(JR2_AGREEMENT_DIR) + "/" + f.stem + ".jr2", text,
                            v->diags));
    v->charts = jr2::driver::Analyze(v->loaded->program, v->diags, jr2::sema::Keep::kReports);
    EXPECT_FALSE(v->diags.hasErrors())
        << f.stem << " version " << f.version
        << " does not check: " << (v->diags.all().empty() ? "" : v->diags.all().front().message);
    f.registerWorkflows(v->registry);
    out.push_back(std::move(v));
  }
  return out;
}

TEST(SamplesAgreement, DiffAgreesWithTheRuntimeOnSeededEditsOfTheSamplesAndConformanceFiles) {
  std::map<std::string, std::string> texts;
  const std::vector<std::unique_ptr<Version>> versions = LoadVersions(texts);

  // The waiting runs of each version, by the walks.
  std::vector<std::vector<Waiting>> waiting(versions.size());
  size_t runs = 0, started = 0;
  std::map<std::string, size_t> errors;
  Shapes shapes;
  std::map<std::string, size_t> waitingByFile;
  for (size_t k = 0; k < versions.size(); ++k) {
    Version& v = *versions[k];
    waiting[k] = Walk(v, texts[std::string(v.info->stem) + Padded(v.info->version)], 10, 24, 10,
                      started, errors, shapes);
    runs += waiting[k].size();
    waitingByFile[v.info->stem] += waiting[k].size();
  }

  size_t pairs = 0, wentOn = 0, restoredFaulted = 0, pairsThatStrand = 0, files = 0;
  std::map<std::string, size_t> pairsByFile;
  std::map<std::string, size_t> faults;
  jr2agr::Tally tally;
  for (size_t i = 0; i < versions.size(); ++i) {
    const Version& a = *versions[i];
    if (i == 0 || std::string(versions[i - 1]->info->stem) != a.info->stem) ++files;
    std::vector<jr2::diff::WaitingRun> scanned(waiting[i].size());
    for (size_t r = 0; r < waiting[i].size(); ++r) {
      ASSERT_TRUE(jr2::diff::ScanSnapshot(waiting[i][r].snapshot, scanned[r]));
      scanned[r].workflow = waiting[i][r].workflow;
    }
    for (size_t j = 0; j < versions.size(); ++j) {
      const Version& b = *versions[j];
      if (i == j || std::string(a.info->stem) != b.info->stem) continue;
      ++pairs;
      ++pairsByFile[a.info->stem];
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
          Json snap = Json::parse(waiting[i][r].snapshot);
          snap["assembly"] = "version " + std::to_string(a.info->version);
          auto run = jr2rt::Run::Restore(b.registry, snap, clock);
          Holder holder;
          Door door;
          run->replayWith(&holder);
          run->setDispatcher(&door);
          ScriptExternSources(*run, texts[std::string(b.info->stem) + Padded(b.info->version)]);
          // A restored run goes on: three hours pass and its timers fire.
          clock.advance(int64_t{3} * 3'600'000);
          run->tick();
          if (run->status() == jr2rt::RunStatus::kError) {
            ++restoredFaulted;
            ++faults[run->reason().substr(0, 160)];
          }
          ++wentOn;
        } catch (const std::exception& e) {
          why = e.what();
        }
        any = any || !stranding[r].empty();
        tally.add(why, stranding[r], [&] {
          return std::string(a.info->stem) + " " + std::to_string(a.info->version) + " -> " +
                 std::to_string(b.info->version) + " (" + a.edit + " -> " + b.edit + "), run " +
                 waiting[i][r].where;
        });
      }
      pairsThatStrand += any ? 1 : 0;
    }
  }
  std::printf(
      "samples agreement: %zu files, %zu versions (each one seeded edit of its file, or the file), "
      "%zu runs started by the walks (%zu ended in an error), %zu waiting runs kept; %zu ordered "
      "pairs of versions of one file (%zu strand a run), %zu restores checked: %zu refused by the "
      "runtime, %zu flagged by diff, %zu disagreements; %zu restored runs went on three hours, "
      "%zu of them then faulted\n",
      files, versions.size(), started, Total(errors), runs, pairs, pairsThatStrand, tally.checked,
      tally.refused, tally.flagged, tally.disagree, wentOn, restoredFaulted);
  std::printf(
      "  of the waiting runs: %zu have a Pool with live workers, %zu an effect out, %zu a "
      "Pool holding pushed items\n",
      shapes.workers, shapes.out, shapes.held);
  for (const auto& [file, n] : pairsByFile)
    std::printf("  %s: %zu pairs, %zu waiting runs\n", file.c_str(), n, waitingByFile[file]);
  for (const auto& [reason, n] : errors)
    std::printf("  a walk ended %zu runs: %s\n", n, reason.c_str());
  for (const auto& [code, n] : tally.byCode)
    std::printf("  %s flagged %zu restores\n", code.c_str(), n);
  for (const auto& [reason, n] : faults)
    std::printf("  faulted %zu times: %s\n", n, reason.c_str());
  EXPECT_EQ(tally.disagree, 0U) << "diff and the runtime disagree:\n" << tally.report();
  // Not vacuous: every file takes part with edits that check and runs that wait, and both sides
  // say no as well as yes.
  for (const auto& [file, n] : pairsByFile) {
    EXPECT_GE(n, 7U * 6U) << file << ": fewer than 6 of its edits check";
    EXPECT_GE(waitingByFile[file], 10U) << file << ": its walks kept fewer than 10 waiting runs";
  }
  EXPECT_EQ(pairsByFile.size(), jr2agr::FileCount()) << "a file has no version that checks";
  EXPECT_GE(tally.checked, 10000U);
  EXPECT_GE(tally.refused, 1000U);
  EXPECT_GE(tally.checked - tally.refused, 1000U);
  EXPECT_GE(pairs, 1000U);
}

}  // namespace
