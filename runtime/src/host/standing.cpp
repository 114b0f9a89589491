// The standing Pools' lifecycle (docs/runtime.md#standing-pools-of-runs-over-push-sources-12):
// each workflow's head, the one rule that counts a run, the back-off and the pause, the start of
// a live run, hand-overs at a bound or a new build, and the resume; what a person is told of it.
#include <algorithm>

#include "jr2/host.h"

namespace jr2rt {
namespace {

// ---- the one rule that counts a standing run ----------------------------------------------
// (docs/runtime.md#standing-pools-of-runs-over-push-sources-12, "One rule counts a run")
// After the n-th counted run in a row, the next run starts after 1 s, 4 s, then 16 s; the run
// counted after three hand-overs from counted runs pauses the Pool.
constexpr int64_t kPauseAfter = 3;
int64_t BackoffMs(int64_t streak) {
  constexpr int64_t kSteps[] = {1000, 4000, 16000};
  return kSteps[std::clamp<int64_t>(streak, 1, 3) - 1];
}

// The head of `workflow` once its standing run `id` ended `status` (`st`: the run's standing()).
// A run counts when it ended `error` or `failed`, or at its bound, and no item it took got a
// run; a run in which one did starts the count again. A cancel is a pause and counts nothing.
Store::Head EndedHead(const std::string& workflow, const std::string& id, const std::string& status,
                      const Json& st, int64_t nowMs) {
  Store::Head h;
  h.workflow = workflow;
  h.run = id;
  h.startedMs = st.value("startedMs", int64_t{0});
  h.streak = st.value("streak", int64_t{0});
  h.endedMs = nowMs;
  if (status == "cancelled") {
    h.ended = h.paused = "cancelled";
    h.why = "its run " + id + " was cancelled";
    return h;
  }
  const bool bound = st.value("bound", false);  // endAtBound: it took items, none got a run
  h.ended = bound ? "bound" : status;
  if (status != "error" && status != "failed" && !bound) return h;  // not an end that counts
  h.streak = st.value("ran", int64_t{0}) > 0 ? 0 : h.streak + 1;
  if (h.streak > kPauseAfter) {
    h.paused = bound ? "bound" : "errors";
    h.why = "its last " + std::to_string(h.streak) + " runs in a row " +
            (bound ? "took their bound" : "ended error or failed") +
            " and no item they took got a run (the newest: " + id + ", " + h.ended + ")";
  }
  return h;
}

}  // namespace

std::string ResumedText(const std::string& workflow, const std::string& id, const std::string& from,
                        bool dropHeld) {
  return "standing Pool `" + workflow + "` resumed: run " + id + " takes over from run " + from +
         (dropHeld ? " (its held items dropped)" : "");
}

std::string StandingChain(const WorkflowInfo& wf) {
  if (wf.pool == nullptr || !wf.pool->standing) return "";
  std::set<std::string> services;
  for (const HookSpec& h : wf.pool->source.hooks) services.insert(h.service);
  std::string from;
  for (const auto& s : services) from += (from.empty() ? "" : ", ") + s;
  return (from.empty() ? std::string("(no hook)") : from) + " → " + wf.name + " → " +
         wf.pool->worker;
}

std::vector<std::string> StandingNotes(const Registry& registry,
                                       const std::vector<std::string>& workflows) {
  std::vector<std::string> out;
  std::map<std::string, std::vector<std::string>> byCallee;
  for (const auto& name : workflows) {
    const WorkflowInfo* wf = registry.workflow(name);
    if (wf == nullptr || wf->pool == nullptr || !wf->pool->standing) continue;
    out.push_back("standing: " + StandingChain(*wf));
    byCallee[wf->pool->worker].push_back(name);
  }
  for (const auto& [callee, pools] : byCallee) {
    if (pools.size() < 2) continue;
    std::string names;
    for (const auto& p : pools) names += (names.empty() ? "`" : "`, `") + p;
    std::string warning = "warning: the standing Pools " + names;
    warning.append("` all dispatch to `").append(callee).append("`: a key is one run of `");
    warning.append(callee).append("`, whichever of them gives it first");
    out.push_back(std::move(warning));
  }
  return out;
}

std::optional<Store::Head> RunHost::headOf(const Hosted& h) const {
  const Run& run = *h.run;
  const Json st = run.standing();
  if (st.is_null()) return std::nullopt;            // not a standing Pool's run
  const int written = std::max(h.head, h.headOut);  // or is written by a batch out
  if (!run.ended()) {
    if (written >= 1) return std::nullopt;  // written when it started (or was taken up)
    Store::Head head;
    head.workflow = run.workflow().name;
    head.run = run.id();
    head.startedMs = st.value("startedMs", int64_t{0});
    head.streak = st.value("streak", int64_t{0});
    return head;
  }
  // Handed over: the new run's head is written by the same commit.
  if (written >= 2 || (run.output().is_object() && run.output().contains("handedOverTo")))
    return std::nullopt;
  return EndedHead(run.workflow().name, run.id(), ToString(run.status()), st, clock_.nowMs());
}

std::optional<Store::Head> RunHost::currentHead(const std::string& workflow) {
  std::optional<Store::Head> head = store_.head(workflow);
  if (!head) {
    // A store from before the heads: the newest run stands for it, if any.
    RunQuery last;
    last.workflows = {workflow};
    last.limit = 1;
    const std::vector<RunSummary> mine = store_.page(last);
    if (mine.empty()) return std::nullopt;
    Store::Head newest;
    newest.workflow = workflow;
    newest.run = mine.front().id;
    head = std::move(newest);
  }
  if (!head->ended.empty()) return head;
  const auto row = store_.summary(head->run);
  if (!row) return std::nullopt;  // its row is gone: nothing to take over
  if (row->status == "waiting") return head;
  // Ended with no head written for its end (outside a host, or a store edited by hand): the end
  // is read from its row, by the same rule.
  Json st = nullptr;
  try {
    const StoredRun stored = store_.load(head->run);
    st = stored.snapshot.value("standing", Json(nullptr));
    if (!st.is_object()) st = stored.snapshot.value("top", Json(nullptr));
  } catch (const std::exception&) {
  }
  if (!st.is_object()) st = Json{{"streak", head->streak}, {"startedMs", head->startedMs}};
  return EndedHead(workflow, head->run, row->status, st, row->updatedMs);
}

Json RunHost::standingState(const std::string& workflow) {
  const WorkflowInfo* wf = registry_.workflow(workflow);
  if (wf == nullptr || wf->pool == nullptr || !wf->pool->standing) return nullptr;
  const std::optional<Store::Head> head = currentHead(workflow);
  if (!head) return {{"workflow", workflow}, {"state", "new"}};
  Json out = {{"workflow", workflow},
              {"run", head->run},
              {"startedMs", head->startedMs},
              {"streak", head->streak}};
  Json carry = nullptr;
  if (const auto it = runs_.find(head->run); it != runs_.end() && !it->second.run->ended()) {
    // Hosted here and live: what it holds now, from memory (the console's runs page asks this
    // at each change; a snapshot read and parsed for it would be the page's dearest part).
    carry = it->second.run->handOverState();
  } else {
    try {
      carry = Run::CarryOf(store_.load(head->run).snapshot);
    } catch (const std::exception&) {
    }
  }
  out["held"] = carry.is_object() ? carry.value("held", Json::array()).size() : 0;
  out["keys"] = carry.is_object() ? carry.value("keys", Json::array()).size() : 0;
  if (head->ended.empty()) {
    out["state"] = "live";
  } else if (!head->paused.empty()) {
    out["state"] = "paused";
    out["paused"] = head->paused;
    out["why"] = head->why;
  } else {
    out["state"] = "waiting";  // ended; the next run starts after its back-off
    out["ended"] = head->ended;
    out["retryAtMs"] = head->endedMs + BackoffMs(head->streak);
  }
  return out;
}

std::vector<std::string> RunHost::standUp(const std::vector<std::string>& workflows) {
  std::vector<std::string> started;
  const int64_t now = clock_.nowMs();
  for (const auto& name : workflows) {
    const WorkflowInfo* wf = registry_.workflow(name);
    if (wf == nullptr || wf->pool == nullptr || !wf->pool->standing) continue;
    bool live = false;
    for (const auto& [id, h] : runs_)
      live = live || (h.run->workflow().name == name && !h.run->ended());
    if (live) {
      // Hosted here and live: nothing to read from the store (this runs every second).
      standing_.erase(name);
      continue;
    }
    // Hosts sharing the store: only the head's owner stands a run up (the database keeps one
    // owner); another host's live run of it is that host's.
    // A host at its capacity takes no head: another host with room stands the workflow up.
    if (hosts_ != nullptr && (!fenced_.empty() || static_cast<int64_t>(runs_.size()) >= capacity_ ||
                              !hosts_->takeHead(name)))
      continue;
    // Its head: live elsewhere (another command drives it, or a restore takes it up), paused,
    // in its back-off, or due to start.
    const std::optional<Store::Head> head = currentHead(name);
    if (head && head->ended.empty()) {
      standing_.erase(name);
      // Hosts sharing the store: the head's owner drives its live run, whatever its capacity
      // (a host whose lease ran out left it, or a claim let it go for want of room); a run a
      // runner command drives now is left to that command.
      if (hosts_ != nullptr && !head->run.empty() && runs_.count(head->run) == 0) {
        std::string holder;
        try {
          if (host(head->run, &holder)) ++metrics_.claimed;
        } catch (const StoreFenced&) {
          throw;
        } catch (const std::exception& e) {
          if (refused_.insert(head->run).second)
            note("run " + head->run + " is not hosted: " + ErrorText(e));
        }
      }
      continue;
    }
    if (head && !head->paused.empty()) {
      if (standing_[name].state != "paused") {
        std::string told = "standing Pool `" + name + "` is paused (";
        told.append(head->paused)
            .append("): ")
            .append(head->why)
            .append("; it is not started again");
        note(told);
      }
      standing_[name] = {"paused", 0, head->why};
      continue;
    }
    if (head) {
      const int64_t at = head->endedMs + BackoffMs(head->streak);
      if (now < at) {
        std::string why = "its run " + head->run;
        why.append(" ended ").append(head->ended);
        if (standing_[name].state != "backoff") {
          std::string told = "standing Pool `" + name + "`: ";
          told.append(why).append("; the next starts in ").append(DurationText(at - now));
          note(told);
        }
        standing_[name] = {"backoff", at, why};
        continue;
      }
    }
    standing_.erase(name);
    try {
      // After an error (or a drift), the new run takes what the last one held, and its count.
      Json carried = nullptr;
      if (head) {
        try {
          carried = Run::CarryOf(store_.load(head->run).snapshot);
        } catch (const std::exception& e) {
          note("standing Pool `" + name + "`: what run " + head->run + " held cannot be read (" +
               ErrorText(e) + "); the new run starts without it");
        }
        if (!carried.is_object()) carried = Json::object();
        carried["streak"] = head->streak;
      }
      const std::string id = beginRun(name, Json::object(), CurrentDirectory(), nullptr, carried);
      started.push_back(id);
      std::string told = "standing Pool `" + name + "`: run ";
      told.append(id).append(" started");
      if (head) told += ", taking over from run " + head->run;
      note(told);
    } catch (const std::exception& e) {
      standing_[name] = {"paused", 0, "it cannot start: " + ErrorText(e)};
      if (refused_.insert("standing:" + name).second)
        note("standing Pool `" + name + "` cannot start: " + ErrorText(e));
    }
  }
  return started;
}

std::vector<std::string> RunHost::handOverDue() {
  std::vector<std::pair<std::string, std::string>> due, bound;  // run, why
  const std::string assembly = registry_.assembly();
  for (const auto& [id, h] : runs_) {
    const Run& r = *h.run;
    if (r.ended() || r.workflow().pool == nullptr || !r.workflow().pool->standing) continue;
    if (!assembly.empty() && !r.assembly().empty() && r.assembly() != assembly) {
      due.emplace_back(id, "a new build of its workflows");
    } else if (r.atBound()) {
      const Json st = r.standing();
      const std::string why = st.value("taken", int64_t{0}) >= kStandingBoundItems
                                  ? std::to_string(kStandingBoundItems) + " items taken"
                                  : "a day old";
      // A run in which an item it took got a run (or that took none: a quiet day) is handed
      // over at once; one whose items all got none ends, and the next starts after a back-off
      // (it counts: a backlog its callee refuses would otherwise hand over without end).
      if (st.value("ran", int64_t{0}) > 0 || st.value("taken", int64_t{0}) == 0) {
        due.emplace_back(id, "at its bound: " + why);
      } else {
        bound.emplace_back(id, why);
      }
    }
  }
  for (const auto& [id, why] : bound) {
    hosted(id).run->endAtBound(why);
    commit({hosted(id).run.get()},
           /*now=*/true);  // stored now, with its head: no other step may come
    std::string told = "standing Pool `" + hosted(id).run->workflow().name;
    told.append("`: run ").append(id).append(" ended at its bound (").append(why);
    told.append(") with no item that got a run; the next starts after a back-off");
    note(told);
  }
  std::vector<std::string> started;
  started.reserve(due.size());
  for (const auto& [id, why] : due) started.push_back(handOver(id, why));
  return started;
}

std::string RunHost::handOver(const std::string& id, const std::string& why) {
  Hosted& old = hosted(id);
  Run& run = *old.run;
  // The count goes on, unless an item this run took got a run.
  Json carried = run.handOverState();
  const Json st = run.standing();
  carried["streak"] = st.value("ran", int64_t{0}) > 0 ? 0 : st.value("streak", int64_t{0});
  std::string next = beginRun(run.workflow().name, run.input(), run.home(), nullptr, carried);
  hosted(id).run->handOver(next, why);  // both are stored by the next commit, in one transaction
  note("standing Pool `" + hosted(id).run->workflow().name + "`: run " + id +
       " handed over to run " + next + " (" + why + ")");
  return next;
}

std::string RunHost::resume(const std::string& workflow, bool dropHeld) {
  const WorkflowInfo* wf = registry_.workflow(workflow);
  if (wf == nullptr || wf->pool == nullptr || !wf->pool->standing)
    throw BadInput("`" + Printable(workflow) + "` is not a standing Pool");
  const std::optional<Store::Head> head = currentHead(workflow);
  if (!head) throw BadInput("standing Pool `" + workflow + "` has never run: `serve` starts it");
  if (head->ended.empty())
    throw BadInput("standing Pool `" + workflow + "` is live: run " + head->run +
                   "; there is nothing to resume");
  if (head->paused.empty() && clock_.nowMs() < head->endedMs + BackoffMs(head->streak))
    throw BadInput("standing Pool `" + workflow + "` waits out a back-off (its run " + head->run +
                   " ended " + head->ended + "); it starts by itself");
  Json carried = Run::CarryOf(store_.load(head->run).snapshot);
  if (!carried.is_object()) carried = Json::object();
  if (dropHeld) carried["held"] = Json::array();
  carried["streak"] = 0;  // a person resumed it: the count starts again
  std::string id = beginRun(workflow, Json::object(), CurrentDirectory(), nullptr, carried);
  standing_.erase(workflow);
  note(ResumedText(workflow, id, head->run, dropHeld));
  return id;
}

}  // namespace jr2rt
