// The runner's verbs against the run store (verbs.h): each verb opens the store as it needs it,
// makes a RunHost over it, and gives the documents of views.h. Nothing here prints: what a verb
// tells a person goes to StoreVerbsOptions::tell, and the front prints it.
#include "jr2/verbs.h"

#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "host/trace.h"
#include "jr2/registry.h"
#include "jr2/views.h"

namespace jr2rt {
namespace {

// Who answers a Gate from this machine's CLI, for the feed's `answered` event: `user NAME`, the
// account the process runs as (not $USER, which anyone may set), or `user uid N` when the
// account has no name.
std::string LocalUser() {
  const uid_t uid = geteuid();
  std::string buf(4096, '\0');
  passwd pw{};
  passwd* found = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == 0 && found != nullptr &&
      found->pw_name != nullptr && found->pw_name[0] != '\0') {
    return std::string("user ") + found->pw_name;
  }
  return "user uid " + std::to_string(uid);
}

}  // namespace

Json RunListEntry(const RunSummary& run) {
  Json entry = {{"runId", run.id},
                {"workflow", run.workflow},
                {"status", run.status},
                {"updated", run.updatedMs}};
  if (!run.key.empty()) entry["key"] = run.key;  // a page's (Store::page): the dispatch key
  return entry;
}

Json FeedLineJson(const FeedLine& line) {
  return {{"seq", line.seq},
          {"time", line.timeMs},
          {"kind", line.kind},
          {"data", line.data},
          {"line", line.line}};
}

GateList ReadGates(RunHost& host, const std::vector<RunSummary>& runs,
                   const std::function<bool(const std::string&, const std::string&)>& allow,
                   bool throwUnreadable, bool menuOf) {
  GateList out;
  for (const auto& r : runs) {
    Json view;
    try {
      view = host.view(r, /*items=*/false, /*expand=*/!menuOf);
    } catch (const std::exception& e) {
      // One run that cannot be read (damaged, drifted, or anything else) is named, and the
      // others are still listed.
      if (throwUnreadable) throw;
      const bool named = dynamic_cast<const StoreError*>(&e) != nullptr ||
                         dynamic_cast<const RunDrifted*>(&e) != nullptr;
      out.unreadable.push_back(named ? e.what()
                                     : "run " + r.id + " cannot be read: " + ErrorText(e));
      continue;
    }
    // Menus are made the same by one build (a view is trusted only by its own): the first of
    // each kind serves for all.
    if (menuOf && view.contains("menus"))
      out.menus.insert(view["menus"].begin(), view["menus"].end());
    Json& report = view["report"];
    const Json fields = report["text"].value("fields", Json::object());
    for (Json& gate : report["gates"]) {
      if (allow && !allow(r.workflow, gate.value("gate", ""))) continue;
      gate["runId"] = r.id;
      gate["workflow"] = r.workflow;
      Json mine = Json::object();  // the fields of the events it takes, for the lines
      for (const auto& e : gate.value("accepts", Json::array())) {
        const auto& event = e.get_ref<const std::string&>();
        if (const auto f = fields.find(event); f != fields.end()) mine[event] = *f;
      }
      gate["fields"] = std::move(mine);
      out.gates.push_back(std::move(gate));
    }
  }
  return out;
}

namespace {

class StoreVerbs final : public Verbs {
 public:
  StoreVerbs(const Registry& registry, std::string workflow, std::string storePath,
             StoreVerbsOptions options)
      : registry_(registry),
        workflow_(std::move(workflow)),
        path_(std::move(storePath)),
        options_(std::move(options)) {}

  std::string where() const override { return path_; }

  Changed start(const Json& input, bool follow, bool dropHeld) override {
    const WorkflowInfo* wf = registry_.workflow(workflow_);
    if (wf->pool != nullptr && wf->pool->standing) return {resumeStanding(dropHeld), false, ""};
    // A store that exists is checked (a foreign file refused) before anything starts; a new one
    // is made only once the input has been taken: a refused input stores nothing, not even a
    // new store file.
    std::unique_ptr<Store> store;
    try {
      store = OpenStore(path_, StoreMode::kReadOnly);
    } catch (const StoreMissing&) {
    }
    JsonValue read = CheckInput(*wf, input);  // what the run starts from
    if (!store) store = OpenStore(path_, StoreMode::kReadWrite);
    // The run's home: relative paths it reads resolve against the directory it started in.
    const std::string home = CurrentDirectory();
    auto host = this->host(*store);
    std::string id;
    return {drive(*host, id,
                  [&] {
                    id = host->start(workflow_, input, home, std::move(read));
                    return after(*host, id, follow);
                  }),
            false, ""};
  }

  Json resume(const std::string& prefix, bool follow) override {
    auto store = OpenStore(path_, StoreMode::kReadOnly);
    auto host = this->host(*store);
    std::string id = host->take(prefix, workflow_);
    if (host->run(id).ended())
      throw BadInput("run " + id + " has ended `" + ToString(host->run(id).status()) +
                     "`; there is nothing to resume");
    return drive(*host, id, [&] {
      host->tick(id);  // nothing due: nothing is written, and the stored run stays as it is
      return after(*host, id, follow);
    });
  }

  Changed send(const std::string& prefix, const std::string& gate, const std::string& event,
               const Json& payload, bool follow) override {
    auto store = OpenStore(path_, StoreMode::kReadOnly);
    auto host = this->host(*store);
    std::string id;
    Changed out;
    out.view = drive(*host, id, [&] {
      // When another command drives the run (a `run` waiting for its processes), the answer is
      // handed to it; it delivers it at its next turn and answers once that step is stored.
      bool taken = false;
      const std::string by = LocalUser();
      std::tie(id, taken) =
          host->takeOrHand(prefix, workflow_, "send",
                           {{"gate", gate}, {"event", event}, {"payload", payload}, {"by", by}});
      if (!taken) {
        out.handedOver = true;
        return stored(*host, id);
      }
      host->send(id, gate, event, payload, by);
      if (follow && !host->follow(id, true)) return stored(*host, id);
      return RunView(host->run(id));
    });
    return out;
  }

  Changed cancel(const std::string& prefix) override {
    auto store = OpenStore(path_, StoreMode::kReadOnly);
    auto host = this->host(*store);
    // Stored with its `cancelled` and `ended` events, by this command or by the one that drives
    // the run now (asked through the store).
    std::string id;
    Changed out;
    out.view = drive(*host, id, [&] {
      bool taken = false;
      std::tie(id, taken) = host->takeOrHand(prefix, workflow_, "cancel", Json::object());
      out.handedOver = !taken;
      if (taken) host->cancel(id);
      return stored(*host, id);
    });
    return out;
  }

  Json status(const std::string& prefix) override {
    auto store = OpenStore(path_, StoreMode::kReadOnly);
    SystemClock clock;
    RunHost host(registry_, *store, clock);
    Json view = host.view(prefix, workflow_)["report"];
    if (Json standing = host.standingState(workflow_); !standing.is_null())
      view["standing"] = std::move(standing);
    return view;
  }

  GateList gates(const std::string& prefix) override {
    std::unique_ptr<Store> store;
    try {
      store = OpenStore(path_, StoreMode::kReadOnly);
    } catch (const StoreMissing&) {
      if (!prefix.empty()) throw;
      tellNow("", "note", "nothing needs a person: there is no run store at `" + path_ + "` yet");
      return {};
    }
    SystemClock clock;
    RunHost host(registry_, *store, clock);
    std::vector<RunSummary> found;
    if (!prefix.empty()) {
      found.push_back(host.summary(host.resolve(prefix, workflow_), /*view=*/true));
    } else {
      found = host.runs(false, workflow_, /*views=*/true);
    }
    // `gates RUN` for one run that cannot be read is that run's error.
    GateList out = ReadGates(host, found, nullptr, /*throwUnreadable=*/!prefix.empty());
    for (Json& g : out.gates) g.erase("workflow");  // the runner's are all its workflow's
    return out;
  }

  Json runs(bool all) override {
    Json list = Json::array();
    try {
      auto store = OpenStore(path_, StoreMode::kReadOnly);
      SystemClock clock;
      for (const auto& r : RunHost(registry_, *store, clock).runs(all, workflow_))
        list.push_back(RunListEntry(r));
    } catch (const StoreMissing&) {
      // No store yet: no runs, and nothing is created by looking.
    }
    return list;
  }

  std::string log(const std::string& prefix, bool follow,
                  const std::function<void(const Json&)>& line, std::string* idOut) override {
    auto store = OpenStore(path_, StoreMode::kReadOnly);
    SystemClock clock;
    RunHost host(registry_, *store, clock);
    const std::string id = host.resolve(prefix, workflow_);
    if (idOut != nullptr) *idOut = id;
    int64_t seq = 0;
    auto show = [&] {
      for (const auto& f : host.feed(id, seq)) {
        seq = f.seq;
        line(FeedLineJson(f));
      }
    };
    show();
    if (!follow) return "";
    int64_t rev = -1;
    for (;;) {
      const int64_t now = host.revision(id);
      if (now != rev) {
        rev = now;
        show();
        if (std::string status = host.storedStatus(id); status != "waiting") return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  std::string trace(const std::string& prefix) override {
    auto store = OpenStore(path_, StoreMode::kReadOnly);
    std::ostringstream out;  // whole or nothing: a run that cannot be read writes no part of it
    ExportTrace(*store, registry_, workflow_, prefix, out);
    return out.str();
  }

  int64_t prune(int64_t beforeMs) override {
    try {
      auto store = OpenStore(path_, StoreMode::kReadOnly);
      SystemClock clock;
      return RunHost(registry_, *store, clock).prune(beforeMs, workflow_);
    } catch (const StoreMissing&) {
      return 0;
    }
  }

 private:
  // The run host a verb drives its run on. Its progress lines are told once the step they
  // tell of is stored (nothing is visible outside before it is stored).
  std::unique_ptr<RunHost> host(Store& store) {
    auto host = std::make_unique<RunHost>(registry_, store, clock_, options_.threads);
    if (!options_.agents.is_null()) host->scriptAgents(options_.agents);
    if (options_.model) host->modelAgents(options_.model);
    if (options_.counted) {
      host->onEvent(
          [this](const std::string& run, const Run::FeedEvent& e) { options_.counted(run, e); });
    }
    host->onSaved([this](const std::string& run, const std::vector<FeedLine>& lines) {
      // A commit's lines are told together, and told() once after them.
      for (const auto& f : lines) {
        if (!f.line.empty()) tell(run, f.kind, f.line);
      }
      told();
    });
    host->onNote([this](const std::string& note) { tellNow("", "note", note); });
    return host;
  }

  // A line for the front, which may gather lines until told() says a group of them is whole.
  void tell(const std::string& run, const std::string& kind, const std::string& line) const {
    if (options_.tell) options_.tell(run, kind, line);
  }
  void told() const {
    if (options_.told) options_.told();
  }
  // A line on its own: told at once.
  void tellNow(const std::string& run, const std::string& kind, const std::string& line) const {
    tell(run, kind, line);
    told();
  }

  // `run` of a standing Pool: nobody starts one (`serve` does); a paused one is resumed: a new
  // run takes the held items (none with `dropHeld`) and the live keys of the last.
  Json resumeStanding(bool dropHeld) {
    std::unique_ptr<Store> store;
    try {
      store = OpenStore(path_, StoreMode::kReadOnly);
    } catch (const StoreMissing&) {
      throw BadInput("`" + workflow_ + "` is a standing Pool: nobody starts it; `" + workflow_ +
                     " serve` starts its one run and keeps it live");
    }
    auto host = this->host(*store);
    std::string id;
    return drive(*host, id, [&] {
      id = host->resume(workflow_, dropHeld);
      host->tick(id);
      tellNow(
          id, "note",
          "a running `serve` takes run " + id + " up within a second; until one runs, it waits");
      return RunView(host->run(id));
    });
  }

  // After a start or a resume: with `follow`, every timer waited for; the run as it is then, or
  // as stored when another command (`serve`) took it over during a wait.
  Json after(RunHost& host, const std::string& id, bool follow) {
    if (!host.follow(id, follow)) return stored(host, id);
    return RunView(host.run(id));
  }

  // A stored run as its last save left it (RunHost::view): read, never restored.
  Json stored(RunHost& host, const std::string& id) { return host.view(id, workflow_)["report"]; }

  // Runs `verb` on `host`; a stop by a signal becomes VerbInterrupted with the run to take up.
  Json drive(RunHost& host, const std::string& id, const std::function<Json()>& verb) {
    try {
      return verb();
    } catch (const HostInterrupted& e) {
      std::string run = id;
      if (run.empty() && !host.ids().empty()) run = host.ids().front();
      const VerbInterrupted stop(e.what(), run, host.stoppedEffects());
      if (options_.interrupted) options_.interrupted(stop);
      throw stop;
    }
  }

  const Registry& registry_;
  const std::string workflow_;
  const std::string path_;
  StoreVerbsOptions options_;
  SystemClock clock_;
};

}  // namespace

std::unique_ptr<Verbs> OpenStoreVerbs(const Registry& registry, const std::string& workflow,
                                      const std::string& storePath, StoreVerbsOptions options) {
  return std::make_unique<StoreVerbs>(registry, workflow, storePath, std::move(options));
}

}  // namespace jr2rt
