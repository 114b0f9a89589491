// The pull Sources behind jr2/source.h: scripted (tests), the standard library's, and an
// `extern` `next` function.
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "jr2/run.h"
#include "jr2/source.h"
#include "jr2/stdlib.h"

namespace jr2rt {
namespace {

// Run::scriptNext: the test answers when it chooses.
class ScriptedSource final : public NextSource {
 public:
  explicit ScriptedSource(const NextCall& call) : call_(call) {}
  void next(Run&, SourceCall call) override {
    // The answer function is made once for the Pool's port, not once a call.
    if (call.port != port_) {
      port_ = call.port;
      answer_ = [port = port_](Json a) { port->answer(std::move(a)); };
    }
    call_(call.query(), answer_);
  }

 private:
  const NextCall& call_;
  std::shared_ptr<const SourcePort> port_;
  std::function<void(Json)> answer_;
};

// std.backlog and std.queue: one incremental Source per Pool, answered on the strand.
class StdSource final : public NextSource {
 public:
  explicit StdSource(std::unique_ptr<StdNextSource> std) : std_(std::move(std)) {}
  void next(Run& run, SourceCall call) override {
    // Shared with the task: the Pool (and this Source) may be gone when it runs.
    run.post(
        [std = std_, call = std::move(call)] { call.answer(std->next(*call.args, call.query())); });
  }

 private:
  std::shared_ptr<StdNextSource> std_;
};

// `next: extern NAME(…)`: the host function runs on the thread pool; its Failure is a defect of
// the Source (a Pool cannot go on without its next item).
class ExternSource final : public NextSource {
 public:
  explicit ExternSource(const NextFunction& fn) : fn_(fn) {}
  void next(Run& run, SourceCall call) override {
    const NextFunction* fn = &fn_;
    run.offload(
        [fn, args = call.args, q = call.query()] { return (*fn)(*args, q); },
        [port = call.port](Json a) { port->answer(std::move(a)); },
        [](const Failure& f) { throw Defect(std::string("`next` failed: ") + f.reason()); });
  }

 private:
  const NextFunction& fn_;
};

}  // namespace

std::unique_ptr<NextSource> MakeNextSource(Run& run, const SourceSite& site) {
  if (const NextCall* scripted = run.scripted(site.function)) {
    return std::make_unique<ScriptedSource>(*scripted);
  }
  if (const Registry::SourceFactory* make = run.registry().source(site.function)) {
    if (auto source = (*make)(site)) return source;
  }
  if (const NextFunction* fn = run.registry().next(site.function)) {
    return std::make_unique<ExternSource>(*fn);
  }
  return nullptr;
}

void RegisterStd(Registry& registry) {
  for (const char* name : {"std.backlog", "std.queue"}) {
    registry.addSource(name, [](const SourceSite& site) -> std::unique_ptr<NextSource> {
      return std::make_unique<StdSource>(MakeStdNext(site.function, site.idOf, site.home));
    });
  }
  registry.addHost(
      "std.http_get", [](const Json& args) { return StdEffect("std.http_get", args); },
      /*idempotent=*/true);
  registry.addProcess("std.command");
}

struct Registry::Tables {
  std::vector<WorkflowInfo> workflows;
  std::map<std::string, const PoolSpec*> pools;
  std::map<std::string, MachineFactory> machines;
  std::map<std::string, HostFunction> hosts;
  std::set<std::string> idempotentHosts;
  std::map<std::string, SourceFactory> sources;
  std::set<std::string> processes;
  std::map<std::string, NextFunction> nexts;
  std::map<std::string, std::string> modules;
  std::map<std::string, JsonValue> agents;
  std::map<std::string, std::string> pictures;
};

namespace {
template <typename Map>
const typename Map::mapped_type* Find(const Map& map, const std::string& key) {
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}
}  // namespace

Registry::Registry() : t_(std::make_unique<Tables>()) { RegisterStd(*this); }
Registry::~Registry() = default;
Registry::Registry(Registry&&) noexcept = default;
Registry& Registry::operator=(Registry&&) noexcept = default;

void Registry::addWorkflow(WorkflowInfo info) { t_->workflows.push_back(std::move(info)); }
void Registry::addPool(const PoolSpec* pool) { t_->pools[pool->name] = pool; }
void Registry::addMachine(const std::string& name, MachineFactory make) {
  t_->machines[name] = make;
}
void Registry::addHost(const std::string& name, HostFunction fn, bool idempotent) {
  t_->hosts[name] = std::move(fn);
  if (idempotent) t_->idempotentHosts.insert(name);
}
bool Registry::hostIdempotent(const std::string& name) const {
  return t_->idempotentHosts.count(name) != 0;
}
void Registry::addSource(const std::string& name, SourceFactory make) {
  t_->sources[name] = std::move(make);
}
const Registry::SourceFactory* Registry::source(const std::string& name) const {
  return Find(t_->sources, name);
}
void Registry::addProcess(const std::string& name) { t_->processes.insert(name); }
bool Registry::isProcess(const std::string& name) const { return t_->processes.count(name) != 0; }
void Registry::addNext(const std::string& name, NextFunction fn) {
  t_->nexts[name] = std::move(fn);
}
void Registry::addHostFunction(const std::string& name, HostFunctionPtr fn, bool idempotent) {
  addHost(name, HostFunction(fn), idempotent);
}
void Registry::addNextFunction(const std::string& name, NextFunctionPtr fn) {
  addNext(name, NextFunction(fn));
}
void Registry::addAgent(const std::string& name, JsonValue definition) {
  t_->agents[name] = std::move(definition);
}
const Json* Registry::agent(const std::string& name) const {
  auto it = t_->agents.find(name);
  if (it == t_->agents.end() && name.rfind('.') != std::string::npos)
    it = t_->agents.find(name.substr(name.rfind('.') + 1));
  return it == t_->agents.end() ? nullptr : &it->second.json();
}
void Registry::addModule(const std::string& file, const std::string& hash) {
  t_->modules[file] = hash;
}
void Registry::addPicture(const std::string& workflow, const unsigned char* svg, size_t size) {
  t_->pictures[workflow] = std::string(reinterpret_cast<const char*>(svg), size);
}
const std::string* Registry::picture(const std::string& workflow) const {
  return Find(t_->pictures, workflow);
}
const std::vector<WorkflowInfo>& Registry::workflows() const { return t_->workflows; }
const WorkflowInfo* Registry::workflow(const std::string& name) const {
  for (const auto& w : t_->workflows) {
    if (w.name == name) return &w;
  }
  return nullptr;
}
const PoolSpec* Registry::pool(const std::string& name) const {
  const auto* found = Find(t_->pools, name);
  return found == nullptr ? nullptr : *found;
}
MachineFactory Registry::machine(const std::string& name) const {
  const auto* found = Find(t_->machines, name);
  return found == nullptr ? nullptr : *found;
}
const std::string* Registry::machineName(const std::string& name) const {
  auto it = t_->machines.find(name);
  return it == t_->machines.end() ? nullptr : &it->first;
}
const HostFunction* Registry::host(const std::string& name) const { return Find(t_->hosts, name); }
const NextFunction* Registry::next(const std::string& name) const { return Find(t_->nexts, name); }

std::string Registry::assembly() const {
  if (t_->modules.empty()) return "";
  uint64_t hash = 1469598103934665603ULL;  // FNV-1a over `file:hash;`, in file order
  for (const auto& [file, h] : t_->modules) {
    for (const char ch : file + ":" + h + ";") {
      hash ^= static_cast<unsigned char>(ch);
      hash *= 1099511628211ULL;
    }
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(hash));
  return out;
}

}  // namespace jr2rt
