// The door of the runs' `dispatch` workers (the host as a Dispatcher;
// docs/runtime.md#standing-pools-of-runs-over-push-sources-12, "A run per key"): a run per key
// per workflow, found again by its key, and the dispatching runs told when one ends.
#include <set>

#include "host/host_internal.h"
#include "jr2/host.h"

namespace jr2rt {
namespace {

// What the ended stored run `id` gave: its output and reason. Unreadable: left as they are (its
// end is known; the item settles without them).
void EndOf(Store& store, const std::string& id, Json* output, std::string* reason) {
  try {
    const StoredRun stored = store.load(id);
    *output = stored.snapshot.value("output", Json(nullptr));
    *reason = stored.snapshot.value("reason", "");
  } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): said above
  }
}

}  // namespace

Dispatched RunHost::dispatch(const std::string& workflow, const std::string& key, const Json& input,
                             const Json& by) {
  const WorkflowInfo* wf = registry_.workflow(workflow);
  if (wf == nullptr)
    throw BadInput("this runner has no workflow `" + Printable(workflow) + "` to dispatch to");
  if (wf->pool != nullptr && wf->pool->standing)
    throw BadInput("`" + workflow +
                   "` is a standing Pool: serve keeps its one run, and a "
                   "dispatch to it is refused");
  if (auto found = find(workflow, key)) {
    found->existing = true;
    return *found;
  }
  std::string home = ".";
  if (auto parent = runs_.find(by.value("run", "")); parent != runs_.end())
    home = parent->second.run->home();
  std::string id;
  if (hosts_ != nullptr && hosts_->lease()) {
    // Hosts sharing the store: the key reserved before the run starts, in a statement of its
    // own, so that two hosts dispatching it at once start one run (a conflict in a turn's commit
    // would fail every run of the turn). The other host's run is followed instead.
    JsonValue read = CheckInput(*wf, input);  // a refused input reserves nothing
    // A try that failed may have left its reservation (the statement went through and its
    // answer was lost, or the release below could not be made): this try takes its id, so that
    // the reservation is found as this try's own. A new id would find it held by a run that
    // never comes, for as long as this host lives.
    std::string& tried = tried_[{workflow, key}];
    if (tried.empty()) tried = NewRunId();
    id = tried;
    const std::string holder = hosts_->reserveKey(workflow, key, id);
    if (holder != id) {
      tried_.erase({workflow, key});  // it reserved nothing (or what it reserved was taken over)
      keys_[{workflow, key}] = holder;
      if (auto found = find(workflow, key)) {  // stored: followed (find forgets it otherwise)
        found->existing = true;
        return *found;
      }
      // Reserved by another host's dispatch, not stored yet: nothing to follow. Following it
      // anyway would end the item `cancelled` with no run if that host stopped before storing
      // it; asked again instead until it is stored, or its host's lease is gone and the key is
      // taken over here.
      throw DispatchPending("key " + key + " of `" + workflow + "` is reserved by run " + holder +
                            ", which its host has not stored yet");
    }
    try {
      beginRun(workflow, input, home, by, nullptr, id, std::move(read));
    } catch (...) {
      try {
        hosts_->releaseKey(workflow, key, id);
        tried_.erase({workflow, key});
      } catch (const StoreError&) {  // NOLINT(bugprone-empty-catch): kept in tried_, above
      }
      throw;
    }
    tried_.erase({workflow, key});
  } else {
    id = beginRun(workflow, input, home, by);
  }
  keys_[{workflow, key}] = id;
  Dispatched out;
  out.run = id;
  return out;
}

void RunHost::forget(const std::string& workflow, const std::string& key) {
  const auto it = tried_.find({workflow, key});
  if (it == tried_.end() || hosts_ == nullptr) return;
  // No run was started under this id (a try that failed): letting its reservation go is safe.
  try {
    hosts_->releaseKey(workflow, key, it->second);
  } catch (const StoreError&) {  // NOLINT(bugprone-empty-catch): it goes with this host's lease
  }
  tried_.erase(it);
}

std::optional<Dispatched> RunHost::find(const std::string& workflow, const std::string& key) {
  std::string id;
  if (auto it = keys_.find({workflow, key}); it != keys_.end()) {
    id = it->second;
  } else if (auto stored = store_.byKey(workflow, key)) {
    id = stored->id;
  } else {
    return std::nullopt;
  }
  Dispatched out;
  out.run = id;
  if (auto hosted = runs_.find(id); hosted != runs_.end()) {
    const Run& r = *hosted->second.run;
    out.status = ToString(r.status());
    out.output = r.output();
    out.reason = r.reason();
    return out;
  }
  auto summary = store_.summary(id);
  if (!summary) {
    // Not stored (a dispatch of a lease since lost) or pruned meanwhile: what the store has
    // under the key, if anything.
    keys_.erase({workflow, key});
    const auto stored = store_.byKey(workflow, key);
    if (!stored || stored->id == id) return std::nullopt;
    out.run = id = stored->id;
    summary = stored;
  }
  out.status = summary->status;
  if (out.status == "waiting") {
    // Hosted from now on where it can be, so that its end is heard here.
    std::string holder;
    try {
      host(id, &holder);
    } catch (const std::exception& e) {
      note("run " + id + " is not hosted: " + ErrorText(e));
    }
  } else {
    EndOf(store_, id, &out.output, &out.reason);
  }
  return out;
}

int RunHost::hearEnds() {
  // The runs this host's `dispatch` workers wait for that it does not drive: another serve
  // sharing the store drives them (a claim split a Pool from its runs). Their ends are read from
  // the store, each second: the dispatching run hears them as it would here.
  std::set<std::string> remote;
  for (const auto& [id, h] : runs_) {
    for (const std::string& a : h.run->awaited()) {
      if (runs_.count(a) == 0) remote.insert(a);
    }
  }
  int heard = 0;
  for (const std::string& id : remote) {
    const auto summary = store_.summary(id);
    if (!summary && hosts_ != nullptr && !hosts_->reservedLive(id)) {
      // Reserved by a host that stopped before it stored the run: it will never come.
      for (auto& [rid, h] : runs_) {
        h.run->dispatchedEnded(id, "cancelled", nullptr,
                               "the host that started it stopped before it was stored");
      }
      ++heard;
      continue;
    }
    if (!summary || summary->status == "waiting") continue;
    Json output;
    std::string reason;
    EndOf(store_, id, &output, &reason);
    for (auto& [rid, h] : runs_) h.run->dispatchedEnded(id, summary->status, output, reason);
    ++heard;
  }
  if (heard > 0) AskAnotherTurn(*engine_);
  return heard;
}

void RunHost::tellEnded(const std::vector<Store::Save>& batch) {
  for (const Store::Save& save : batch) {
    const StoredRun& r = save.run;
    if (r.status == "waiting" || r.key.empty()) continue;
    // Every run whose `dispatch` worker waits for it: the one that started it, and any other
    // Pool that found it under its key. One that is not hosted finds the end when it is restored.
    const Json output = r.snapshot.value("output", Json(nullptr));
    const std::string reason = r.snapshot.value("reason", "");
    for (auto& [id, h] : runs_) h.run->dispatchedEnded(r.id, r.status, output, reason);
  }
}

}  // namespace jr2rt
