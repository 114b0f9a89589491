// What the host reads of the store for the verbs and serve (docs/runtime.md#what-reads-show):
// runs, their summaries and saved views, feeds, counts; none of it takes a lock or drives.
#include "host/host_internal.h"
#include "jr2/host.h"
#include "jr2/views.h"

namespace jr2rt {

std::map<std::pair<std::string, std::string>, int64_t> RunHost::runCounts() {
  return store_.runCounts();
}

std::vector<RunSummary> RunHost::page(const RunQuery& q) { return store_.page(q); }

std::string RunHost::resolve(const std::string& prefix, const std::string& workflow) {
  std::string id = store_.resolve(prefix);
  if (const auto r = store_.summary(id)) CheckWorkflow(id, r->workflow, workflow);
  return id;
}

std::optional<RunSummary> RunHost::hostedSummary(const std::string& id) const {
  const auto it = runs_.find(id);
  if (it == runs_.end() || !it->second.run) return std::nullopt;
  RunSummary r;
  r.id = id;
  r.workflow = it->second.run->workflow().name;
  r.status = ToString(it->second.run->status());
  return r;
}

RunSummary RunHost::summary(const std::string& prefix, bool view) {
  return store_.find(prefix, view);
}

Json RunHost::view(const std::string& prefix, const std::string& workflow, bool items) {
  const RunSummary r = store_.find(prefix, true);
  CheckWorkflow(r.id, r.workflow, workflow);
  return view(r, items);
}

Json RunHost::view(const RunSummary& r, bool items, bool expand) {
  Json v;
  const auto hostedRun = runs_.find(r.id);
  if (hostedRun != runs_.end() && hostedRun->second.saver &&
      hostedRun->second.saver->view().is_object()) {
    // A run this host drives: the view its last commit stored, as this host made it.
    v = hostedRun->second.saver->view();
  } else if (const std::string text = r.view.empty() ? store_.find(r.id, true).view : r.view;
             !text.empty()) {
    try {
      v = Json::parse(text);
    } catch (const Json::exception&) {
      v = nullptr;  // read again from the run itself, which says what is wrong with it
    }
  }
  if (!v.is_object() || !v.contains("report") || v.value("build", "") != BuildId()) {
    // Saved by another build, or before views were stored: the run is restored once, which
    // finds a run that no longer fits (and marks it `drifted`, as take() would).
    const std::unique_ptr<Run> run = peek(r.id, r.workflow);
    v = SavedView(*run);
  }
  if (expand) ExpandView(v);
  // A Pool's items from its journal, as a restore rebuilds them (a standing Pool's run in memory
  // has forgotten the outputs it settled).
  if (items && ItemsInJournal(v)) FillFromJournal(v, store_.journal(r.id));
  return v;
}

bool RunHost::known(const std::string& id) {
  return runs_.count(id) != 0 || store_.summary(id).has_value();
}

bool RunHost::hadGate(const std::string& id, const std::string& gate) {
  const auto hostedRun = runs_.find(id);
  if (hostedRun == runs_.end()) return store_.gateOpened(id, gate);
  // A run this host drives: its feed read once (a scan of every line: a Pool's reviewer who
  // answers ahead of it, or a Caller naming Gates that are not there, made one a refusal, #33),
  // then its events keep the names (GatesSeen).
  return hostedRun->second.gates->had(gate, [&] { return store_.gatesOpened(id); });
}

std::optional<Store::StartKey> RunHost::startKey(const std::string& caller,
                                                 const std::string& workflow,
                                                 const std::string& key) {
  return store_.startKey(caller, workflow, key);
}

Store::StartKey RunHost::keepStartKey(const std::string& caller, const std::string& workflow,
                                      const std::string& key, const Store::StartKey& start) {
  return store_.keepStartKey(caller, workflow, key, start);
}

std::vector<RunSummary> RunHost::runs(bool ended, const std::string& workflow, bool views) {
  std::vector<RunSummary> out;
  for (auto& r : store_.list(ended, views)) {
    if (workflow.empty() || r.workflow == workflow) out.push_back(std::move(r));
  }
  return out;
}

std::vector<FeedLine> RunHost::feed(const std::string& id, int64_t afterSeq, int64_t limit) {
  return limit > 0 ? store_.feedPage(id, afterSeq, limit) : store_.feed(id, afterSeq);
}

int64_t RunHost::revision(const std::string& id) { return store_.revision(id); }

int64_t RunHost::lastSeq(const std::string& id) { return store_.lastSeq(id); }

std::string RunHost::storedStatus(const std::string& id) {
  const auto r = store_.summary(id);
  return r ? r->status : std::string();
}

int64_t RunHost::prune(int64_t beforeMs, const std::string& workflow) {
  return store_.prune(beforeMs, workflow);
}

}  // namespace jr2rt
