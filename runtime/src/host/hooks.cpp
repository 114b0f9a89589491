// Hook deliveries (docs/serve.md#hooks): each to every run this host drives, the strongest
// verdict as the answer, and the hook log that answers a delivery id once.
#include <algorithm>

#include "host/host_internal.h"
#include "jr2/host.h"

namespace jr2rt {

void RunHost::runAfterCommit(std::vector<AfterCommit>& due, const std::function<void()>& between) {
  for (auto& a : due) {
    if (a.order == AfterCommit::Order::kHookLog) a.fn();
  }
  if (!hookLogNow_.empty()) {
    std::vector<Store::HookEntry> entries;
    entries.swap(hookLogNow_);
    try {
      store_.logHooks(entries);
    } catch (const StoreConflict&) {
      throw;
    } catch (const StoreError& e) {
      // What the deliveries did is stored (this runs after the commit that stored it), and their
      // answers go out; only their log could not be written (the server of a shared store
      // restarted in between, say). A resend of one is heard anew and finds its item held or its
      // run (`existing`): no reason to stop serve.
      note("the hook log of " + std::to_string(entries.size()) + " deliver" +
           (entries.size() == 1 ? "y" : "ies") + " was not written (" + e.what() +
           "): a resend of one is heard anew");
    }
  }
  for (auto& a : due) {
    if (a.order == AfterCommit::Order::kStore) a.fn();
  }
  if (between) between();
  for (auto& a : due) {
    if (a.order == AfterCommit::Order::kReply) a.fn();
  }
}

std::vector<Json> RunHost::hookLog(const std::string& hook, int64_t limit) {
  return store_.hookLog(hook, limit);
}

Json RunHost::deliverHook(const std::string& hook, const std::string& eventKey,
                          const std::string& delivery, const Json& payload, bool drive,
                          bool retried) {
  if (!delivery.empty()) {
    // Answered already (stored, or answered in this turn and stored with it): the same answer,
    // and nothing changes.
    if (auto it = hookAnswers_.find({hook, delivery}); it != hookAnswers_.end()) return it->second;
    if (auto first = store_.hookAnswer(hook, delivery)) return *first;
  }
  // The answer is the strongest of the runs' verdicts: held, existing, reread, hold-full,
  // skipped (with the first reason), naming the item and the run when one does.
  auto rank = [](const std::string& v) {
    return v == "held" ? 4 : v == "existing" ? 3 : v == "reread" ? 2 : v == "hold-full" ? 1 : 0;
  };
  Json runs = Json::array();
  Json best = {{"verdict", "skipped"}, {"reason", ""}};
  bool bestUnheard = true;
  for (const auto& id : ids()) {
    Run& r = run(id);
    if (!r.hears(hook)) continue;  // a machine, an ended run, a Source with no such hook
    const HookVerdict heard = r.hook(hook, eventKey, payload, drive);  // a reread's read goes out
    if (drive && Interrupted() != 0) stopForSignal();
    Json v = heard.json();
    v["run"] = v.contains("run") ? v["run"] : Json(id);
    v["pool"] = id;
    const std::string verdict = v.value("verdict", "skipped");
    // A Pool whose Source has no hook for this event key did not hear it: its skip is the
    // top-level reason only when no Pool heard it.
    const bool unheard = !heard.heard;
    if (rank(verdict) > rank(best["verdict"]) ||
        (verdict == "skipped" && best["verdict"] == "skipped" &&
         (best["reason"] == "" || (bestUnheard && !unheard)))) {
      best = v;
      bestUnheard = unheard;
    }
    runs.push_back(std::move(v));
  }
  if (runs.empty() && !retried) {
    // No run hosted here hears it. A run that another command drives holds it (503, sent again
    // later); a standing Pool with no live run is started now and hears it, or says why not
    // (paused, in its back-off: 503). Never a `skipped` that the log would keep for good.
    std::vector<std::string> standing;
    const std::vector<RunSummary> waiting = store_.list(false);  // read once per delivery
    for (const WorkflowInfo& wf : registry_.workflows()) {
      if (wf.pool == nullptr) continue;
      bool hearsIt = false;
      for (const HookSpec& h : wf.pool->source.hooks) hearsIt = hearsIt || h.service == hook;
      if (!hearsIt) continue;
      for (const auto& r : waiting) {
        if (r.workflow != wf.name || runs_.count(r.id) != 0) continue;
        std::string holder;
        try {
          if (host(r.id, &holder)) continue;  // free: hosted here from now on
        } catch (const std::exception& e) {
          note("run " + r.id + " is not hosted: " + ErrorText(e));
          continue;
        }
        Json busy = {{"verdict", "busy"},
                     {"reason", "run " + r.id + " of " + wf.name + " is driven by another command" +
                                    (holder.empty() ? std::string() : " (" + holder + ")") +
                                    "; send it again"},
                     {"retryAfter", 1},
                     {"runs", Json::array()}};
        // A serve sharing the store drives it: serve hands the delivery to that serve (through
        // the inbox, as a Gate answer) rather than answer busy.
        if (holder.rfind("host ", 0) == 0 && !retried) busy["forwardTo"] = r.id;
        return busy;
      }
      if (wf.pool->standing) standing.push_back(wf.name);
    }
    if (!standing.empty()) standUp(standing);
    bool heard = false;
    for (const auto& id : ids()) heard = heard || run(id).hears(hook);
    if (heard) return deliverHook(hook, eventKey, delivery, payload, drive, /*retried=*/true);
    for (const auto& name : standing) {
      auto st = standing_.find(name);
      if (st == standing_.end()) continue;
      Json out = {
          {"verdict", st->second.state == "paused" ? "paused" : "backoff"},
          {"reason", "standing Pool `" + name + "` " +
                         (st->second.state == "paused" ? "is paused: " : "is in its back-off: ") +
                         st->second.why},
          {"runs", Json::array()}};
      if (st->second.state == "backoff")
        out["retryAfter"] =
            std::max<int64_t>(1, (st->second.retryAtMs - clock_.nowMs() + 999) / 1000);
      return out;  // not logged: a resend is heard
    }
  }
  Json answer = {
      {"verdict", best["verdict"]}, {"reason", best.value("reason", "")}, {"runs", runs}};
  if (runs.empty()) answer["reason"] = "no run waits for hook " + hook;
  for (const char* key : {"item", "run"}) {
    if (best.contains(key) && answer["verdict"] != "skipped") answer[key] = best[key];
  }
  // Above `hold`, the delivery is not kept: a resend is heard (HTTP 429).
  if (delivery.empty() || answer["verdict"] == "hold-full") return answer;
  Store::HookEntry entry{hook, delivery, clock_.nowMs(), eventKey, answer};
  if (drive) {
    store_.logHooks({entry});  // after the drive that stored its reread
    return answer;
  }
  // Logged in the commit of the batch that stores what it did (prepareBatch gives the
  // deliveries heard until then to the batch: one transaction, one fsync), or, when its turn
  // stored no run, once that turn is committed, with the other such deliveries of that pass in
  // one transaction (runAfterCommit); serve answers after either. A delivery id is never
  // answered from the log for what a kill lost. Each delivery looks for its own entry only: with
  // serve's pipelined commit, entries heard since the last batch was prepared belong to the next
  // one, and logging them before it is stored would answer a resend from the log for an item the
  // kill lost.
  const std::pair<std::string, std::string> key{hook, delivery};
  const auto take = [this, key]() -> std::optional<Store::HookEntry> {
    hookAnswers_.erase(key);
    for (auto it = hookLogDue_.begin(); it != hookLogDue_.end(); ++it) {
      if (it->hook == key.first && it->delivery == key.second) {
        Store::HookEntry e = std::move(*it);
        hookLogDue_.erase(it);
        return e;
      }
    }
    return std::nullopt;  // logged with the runs of the batch that stored its turn
  };
  afterCommit_.push_back({[this, take] {
                            // Its turn stored no run: logged with the others of this pass.
                            if (auto entry = take()) hookLogNow_.push_back(std::move(*entry));
                          },
                          [take] { take(); },  // never stored: a resend of it is heard anew
                          AfterCommit::Order::kHookLog});
  AskAnotherTurn(*engine_);
  hookAnswers_[{hook, delivery}] = answer;
  hookLogDue_.push_back(std::move(entry));
  return answer;
}

}  // namespace jr2rt
