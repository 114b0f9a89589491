// The pull Sources behind jr2/source.h: scripted (tests), the standard library's, and an
// `extern` `next` function.
#include <cstdio>
#include <utility>

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

Registry::Registry() { RegisterStd(*this); }

void Registry::addWorkflow(WorkflowInfo info) { workflows_.push_back(std::move(info)); }
void Registry::addPool(const PoolSpec* pool) { pools_[pool->name] = pool; }
void Registry::addMachine(const std::string& name, MachineFactory make) { machines_[name] = make; }
void Registry::addAgent(const std::string& name, JsonValue definition) {
  agents_[name] = std::move(definition);
}
void Registry::addModule(const std::string& file, const std::string& hash) {
  modules_[file] = hash;
}
void Registry::addHostFunction(const std::string& name, HostFunctionPtr fn, bool idempotent) {
  addHost(name, HostFunction(fn), idempotent);
}
void Registry::addNextFunction(const std::string& name, NextFunctionPtr fn) {
  addNext(name, NextFunction(fn));
}

std::string Registry::assembly() const {
  if (modules_.empty()) return "";
  uint64_t hash = 1469598103934665603ULL;  // FNV-1a over `file:hash;`, in file order
  for (const auto& [file, h] : modules_) {
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
