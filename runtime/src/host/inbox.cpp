// The inbox and the runs' drive locks (docs/runtime.md#the-run-host, "The inbox: one driver,
// many clients"): a run taken up with its lock, or a verb handed to the command that holds it
// through the store's inbox; the requests this host answers; serve taking up the runs whose
// lock is free.
#include <algorithm>
#include <chrono>
#include <thread>

#include "host/host_internal.h"
#include "jr2/errors.h"
#include "jr2/host.h"
#include "jr2/views.h"

namespace jr2rt {
namespace {

struct LockBusy {
  std::string holder;
};

// Run `id`'s lock, taken now if it is free (never waiting); null when another command holds it,
// with the holder in `holder`.
std::unique_ptr<RunLock> TryLock(Store& store, const std::string& id, std::string* holder) {
  try {
    return store.lock(id, [](const std::string& h) { throw LockBusy{h}; });
  } catch (const LockBusy& busy) {
    *holder = busy.holder;
    return nullptr;
  }
}

// The stored run `id` to adopt, once its lock is held: a run of `workflow` (BadInput otherwise).
StoredRun LoadRun(Store& store, const std::string& id, const std::string& workflow) {
  StoredRun stored = store.load(id);
  CheckWorkflow(id, stored.workflow, workflow);
  return stored;
}

}  // namespace

bool RunHost::lockFree(const std::string& id, std::string* holder) {
  // Free: released here at once. A caller that goes on to drive the run takes it with TryLock
  // instead, and keeps it: a lock let go and taken again could be taken by another meanwhile.
  return runs_.count(id) != 0 || TryLock(store_, id, holder) != nullptr;
}

std::string RunHost::take(const std::string& prefix, const std::string& workflow) {
  std::string id = store_.resolve(prefix);
  if (runs_.count(id) != 0) return id;
  auto lock = store_.lock(id, [&](const std::string& holder) {
    if (holder.rfind("host ", 0) == 0) {
      // A serve of hosts sharing the store owns it: it is let go when that host stops.
      note(holder + " (a serve sharing this run store) drives run " + id +
           "; waiting for it to let the run go (`--server` sends the verb to a serve instead; "
           "Ctrl-C ends this wait)");
      return;
    }
    note("another command" + (holder.empty() ? std::string() : " (" + holder + ")") +
         " is driving run " + id + "; waiting for it to finish" +
         (holder.rfind("pid ", 0) != 0 ? std::string()
                                       : " (if it is stopped, `kill -CONT " + holder.substr(4) +
                                             "` lets it go on; Ctrl-C ends this wait)"));
  });
  adopt(LoadRun(store_, id, workflow), std::move(lock));
  return id;
}

void RunHost::answerDue() {
  if (answersDue_.empty()) return;
  std::vector<AnswerDue> due;
  due.swap(answersDue_);
  answerDue(due);
}

void RunHost::answerDue(const std::vector<AnswerDue>& due) {
  for (const auto& [seq, id, machine] : due) {
    auto it = runs_.find(id);
    if (it == runs_.end()) continue;
    Run& run = *it->second.run;
    // `answered`: what a serve that handed this over answers its client with (views.h); its
    // `open` names every open Gate. (A command that handed it over reads only that it came.)
    answerRequest(seq,
                  {{"status", ToString(run.status())}, {"answered", AnsweredGates(run, machine)}});
  }
}

void RunHost::answerRequest(int64_t seq, const Json& answer) {
  if (unwritten_.empty()) {
    try {
      store_.answer(seq, answer);
      return;
    } catch (const StoreConflict&) {
      throw;
    } catch (const StoreError& e) {
      // What it answers is stored (or was refused and changed nothing); only the answer could
      // not be written. The asker polls for it: written at the next pass that reaches the store.
      note("the answer to a request another command handed over was not written (" +
           std::string(e.what()) + "): it is written once the store answers again");
    }
  }
  unwritten_.emplace_back(seq, answer);  // after the ones before it, in order
}

void RunHost::writeAnswers() {
  size_t written = 0;
  try {
    for (; written < unwritten_.size(); ++written)
      store_.answer(unwritten_[written].first, unwritten_[written].second);
  } catch (const StoreConflict&) {
    throw;
  } catch (const StoreError&) {  // NOLINT(bugprone-empty-catch): the rest at the next pass
  }
  unwritten_.erase(unwritten_.begin(), unwritten_.begin() + static_cast<std::ptrdiff_t>(written));
}

void RunHost::serveInbox() {
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  if (now - inboxCheckedMs_ < 200) return;
  inboxCheckedMs_ = now;
  // A host that lost its lease takes nothing more: what it takes, it could not store.
  const std::vector<Inbox::Request> asked =
      fenced_.empty() ? store_.asked() : std::vector<Inbox::Request>();
  for (const auto& request : asked) {
    auto it = runs_.find(request.run);
    if (it == runs_.end() || !store_.takeRequest(request.seq)) continue;
    Hosted& h = it->second;
    Run& run = *h.run;
    const Json& body = request.body;
    try {
      if (request.verb == "cancel") {
        if (run.ended())
          throw RunEnded("run " + run.id() + " has already ended `" + ToString(run.status()) + "`");
        cancelNow(h);
        note("run " + run.id() + " was cancelled by another command");
        answerRequest(request.seq, {{"status", ToString(run.status())}});
        // Answers handed over before the cancel, in this pass, were never delivered: said so.
        for (auto due = answersDue_.begin(); due != answersDue_.end();) {
          if (due->run != run.id()) {
            ++due;
            continue;
          }
          answerRequest(due->seq,
                        {{"error", "run " + run.id() +
                                       " was cancelled by another command before this answer "
                                       "was delivered"}});
          due = answersDue_.erase(due);
        }
      } else if (request.verb == "send") {
        if (!body.is_object() || !body.contains("gate") || !body["gate"].is_string() ||
            !body.contains("event") || !body["event"].is_string() || !body.contains("payload"))
          throw BadInput("the request `send` must be {gate, event, payload}");
        const std::string gate = body["gate"].get<std::string>();
        const std::string event = body["event"].get<std::string>();
        // Checked here; delivered at the next turn. `by`: who answered, as the command that
        // handed it over knew it.
        const auto by = body.find("by");
        run.deliver(gate, event, body["payload"], nullptr,
                    by != body.end() && by->is_string() ? by->get<std::string>() : "");
        std::string machine = run.gateMachine(gate).value_or("");
        std::string told = "another command answered ";
        told += event;
        told += " at " + gate;
        told += " of run " + run.id();
        note(told);
        answersDue_.push_back({request.seq, run.id(), std::move(machine)});
        AskAnotherTurn(*engine_);  // the delivery is a step of the next turn, even with nothing out
      } else if (request.verb == "hook") {
        // A hook delivery another serve sharing the store took for a Pool this host drives
        // (RunHost::deliverHook's `forwardTo`): delivered here, answered with its verdict after
        // the commit that stores what it did (and its hook log).
        if (!body.is_object() || !body.contains("hook") || !body["hook"].is_string() ||
            !body.contains("event") || !body["event"].is_string() || !body.contains("delivery") ||
            !body["delivery"].is_string() || !body.contains("payload"))
          throw BadInput("the request `hook` must be {hook, event, delivery, payload}");
        const Json verdict =
            deliverHook(body["hook"].get<std::string>(), body["event"].get<std::string>(),
                        body["delivery"].get<std::string>(), body["payload"], /*drive=*/false);
        const int64_t seq = request.seq;
        afterCommit(
            [this, seq, verdict] {
              answerRequest(seq, {{"verdict", verdict}});
            },
            [this, seq] {
              answerRequest(seq, {{"error",
                                   "the serve that drove the hook's Pool lost its lease before "
                                   "the delivery was stored; nothing of it was kept: send it "
                                   "again"},
                                  {"kind", RuleOf(ErrorKind::kBusy).name}});
            });
        AskAnotherTurn(*engine_);
      } else {
        throw BadInput("the request `" + request.verb + "` is not one a host takes");
      }
    } catch (const BadInput& e) {
      // Its kind by the table (errors.h), for an asker that answers by it (a serve forwarding).
      answerRequest(request.seq, {{"error", e.what()}, {"kind", RuleOf(KindOf(e)).name}});
    } catch (const RunBusy& e) {
      answerRequest(request.seq, {{"error", e.what()}, {"kind", RuleOf(KindOf(e)).name}});
    }
  }
  pollForwarded();
}

void RunHost::forward(const std::string& id, const std::string& verb, const Json& body,
                      int64_t patienceMs, std::function<void(const std::optional<Json>&)> done) {
  const int64_t seq = store_.ask(id, verb, body);
  forwarded_.push_back({seq,
                        std::chrono::steady_clock::now() + std::chrono::milliseconds(patienceMs),
                        std::move(done)});
}

void RunHost::pollForwarded() {
  if (forwarded_.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  std::vector<Forwarded> waiting;
  std::vector<std::pair<std::function<void(const std::optional<Json>&)>, std::optional<Json>>> due;
  for (auto& f : forwarded_) {
    if (auto answer = store_.answerOf(f.seq)) {
      due.emplace_back(std::move(f.done), std::move(answer));
    } else if (now >= f.deadline && store_.withdraw(f.seq)) {
      due.emplace_back(std::move(f.done), std::nullopt);  // nobody took it: nothing was done
    } else if (now >= f.deadline + std::chrono::seconds(30)) {
      // Taken, and not answered 30 s later (its host died or lost its lease after taking it):
      // what it did is not known here; the asker is told so rather than kept waiting.
      due.emplace_back(std::move(f.done),
                       Json{{"error",
                             "the serve that took this request did not answer within 40 s "
                             "(it stopped, or lost its lease); whether it was done is "
                             "not known: read the run before sending it again"},
                            {"kind", RuleOf(ErrorKind::kBusy).name}});
    } else {
      waiting.push_back(std::move(f));  // not yet, or taken: its answer comes
    }
  }
  forwarded_ = std::move(waiting);
  for (auto& [done, answer] : due) done(answer);
}

std::optional<Json> RunHost::askHolder(const std::string& id, const std::string& holder,
                                       const std::string& verb, const Json& body,
                                       int64_t patienceMs, bool told) {
  const int64_t seq = store_.ask(id, verb, body);
  if (!told) {
    note("run " + id + " is driven by another command" +
         (holder.empty() ? std::string() : " (" + holder + ")") + "; handing it the " + verb);
  }
  const auto start = std::chrono::steady_clock::now();
  auto lastLook = start;
  for (;;) {
    if (auto answer = store_.answerOf(seq)) {
      if (answer->contains("error"))
        throw BadInput(answer->value("error", "the " + verb + " was refused"));
      return answer;
    }
    const auto now = std::chrono::steady_clock::now();
    if (Interrupted() != 0 && store_.withdraw(seq)) stopForSignal();  // taken: its answer comes
    if (now - start >= std::chrono::milliseconds(patienceMs) && store_.withdraw(seq)) {
      return std::nullopt;  // nobody took it: not done, and never done later
    }
    // Taken and not answered: the holder is doing it, unless it stopped meanwhile (its lock is
    // free): then nobody will answer, and whether the verb was done is in the run's feed.
    if (now - lastLook >= std::chrono::seconds(1)) {
      lastLook = now;
      std::string who;
      if (store_.taken(seq) && lockFree(id, &who)) {
        store_.withdraw(seq);
        std::string what = "the command that drove run " + id;
        what.append(" took the ").append(verb).append(" and stopped before it answered; `log ");
        what.append(id).append("` shows whether it was done");
        throw std::runtime_error(what);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::pair<std::string, bool> RunHost::takeOrHand(const std::string& prefix,
                                                 const std::string& workflow,
                                                 const std::string& verb, const Json& body,
                                                 int64_t patienceMs) {
  std::string id = resolve(prefix, workflow);  // another workflow's run is refused first
  if (runs_.count(id) != 0) return {id, true};
  bool told = false;
  std::string holder;
  // Handed over for as long as a command holds the run's lock; taken here once it is free (and
  // kept from then on). A holder that does not answer (stopped, or not a runner) is asked again
  // after each patience: a runner stopped with SIGSTOP and let go on gets the verb then.
  std::unique_ptr<RunLock> lock;
  while (!(lock = TryLock(store_, id, &holder))) {
    if (askHolder(id, holder, verb, body, patienceMs, told)) return {id, false};
    if (!told) {
      note("it did not answer in " + DurationText(patienceMs) +
           "; waiting for it (its lock, or its answer: the " + verb + " is asked again)");
    }
    told = true;
  }
  adopt(LoadRun(store_, id, workflow), std::move(lock));
  return {id, true};
}

int RunHost::takeLive(const std::vector<std::string>& workflows) {
  int taken = 0;
  if (hosts_ != nullptr) {
    // Hosts sharing the store: the runs nobody owns, claimed (each now this host's, its revision
    // bumped) up to this host's capacity; a run another live host owns is never listed.
    if (!fenced_.empty()) return 0;
    if (!unreleased_.empty()) {
      hosts_->release(unreleased_);  // queued starts let go for the hosts with room at last
      unreleased_.clear();
    }
    const int64_t room = capacity_ - liveRuns();
    const int64_t limit = std::min<int64_t>(room, 256);
    // No room, or a full batch: more may wait (serve then claims every 100 ms, not each second).
    if (limit <= 0) {
      backlog_ = true;
      return 0;
    }
    const std::vector<RunSummary> claimed = hosts_->claim(limit, workflows);
    for (const auto& summary : claimed) {
      ++metrics_.claimed;
      // A standing workflow's run is driven by the owner of its head (which stands it up, hands
      // it over and backs it off), never by a host that only claimed the run.
      const WorkflowInfo* wf = registry_.workflow(summary.workflow);
      const bool standing = wf != nullptr && wf->pool != nullptr && wf->pool->standing;
      std::string holder;
      std::unique_ptr<RunLock> lock;
      if (!standing || hosts_->takeHead(summary.workflow))
        lock = TryLock(store_, summary.id, &holder);  // its owner is this host now
      if (!lock) {
        hosts_->release({summary.id});  // not driven here: left for a host that can
        continue;
      }
      try {
        adopt(LoadRun(store_, summary.id, summary.workflow), std::move(lock));
        AskAnotherTurn(*engine_);
        ++taken;
      } catch (const StoreFenced&) {
        throw;
      } catch (const std::exception& e) {
        runs_.erase(summary.id);
        // Held, not driven: let go, it would be claimed again at once, here or by another host.
        if (lock) parked_[summary.id] = std::move(lock);
        if (refused_.insert(summary.id).second)
          note("run " + summary.id + " is not hosted: " + ErrorText(e) +
               (parked_.count(summary.id) != 0
                    ? std::string(" (this serve keeps it, undriven, so that no serve takes it up "
                                  "again and again)")
                    : std::string()));
      }
    }
    // A full batch taken: more may wait. (One that could not be taken — damaged, say — is not
    // claimed again before the next second.)
    backlog_ = taken == limit;
    return taken;
  }
  for (const auto& summary : store_.list(false)) {
    if (runs_.count(summary.id) != 0) continue;
    if (std::find(workflows.begin(), workflows.end(), summary.workflow) == workflows.end())
      continue;
    std::string holder;
    auto lock = TryLock(store_, summary.id, &holder);
    if (!lock) continue;  // another command drives it: later
    try {
      adopt(LoadRun(store_, summary.id, summary.workflow), std::move(lock));
      // The timers that fell due while nobody hosted it fire at the engine's next turn (it is
      // being driven: this is serve's).
      AskAnotherTurn(*engine_);
      ++taken;
    } catch (const std::exception& e) {
      // One run that cannot be taken (damaged, drifted) is told once and left; the others go on.
      runs_.erase(summary.id);
      if (refused_.insert(summary.id).second)
        note("run " + summary.id + " is not hosted: " + ErrorText(e));
    }
  }
  return taken;
}

Run& RunHost::changeable(const RunSummary& r, bool cancel) {
  const auto ended = [&](const std::string& status) {
    return RunEnded(cancel ? "run " + r.id + " has already ended `" + status + "`"
                           : "run " + r.id + " has ended `" + status + "`; it takes no events");
  };
  if (r.status != "waiting" && !hosts(r.id)) throw ended(r.status);
  std::string holder;
  if (!host(r.id, &holder)) {
    if (holder.rfind("host ", 0) == 0) {
      throw RunBusy("run " + r.id + " is driven by " + holder +
                        ", a serve sharing this run store: send the change to that serve (this "
                        "one takes the run up only when that host lets it go or its lease runs "
                        "out)",
                    holder);
    }
    throw RunBusy("run " + r.id + " is driven by another command" +
                      (holder.empty() ? std::string() : " (" + holder + ")") +
                      " now; serve takes it up when that command lets it go: try again",
                  holder);
  }
  Run& run = *runs_.at(r.id).run;
  if (run.ended()) throw ended(ToString(run.status()));
  return run;
}

void RunHost::answerAt(const RunSummary& r, const std::string& gate, const std::string& event,
                       const Json& payload, const std::string& by) {
  changeable(r).deliver(gate, event, payload, nullptr, by);
}

bool RunHost::host(const std::string& id, std::string* holder) {
  if (runs_.count(id) != 0) return true;
  auto lock = TryLock(store_, id, holder);
  if (!lock) return false;
  const auto summary = store_.summary(id);
  if (!summary) throw StoreError("there is no run " + id + " in the store");
  adopt(LoadRun(store_, id, summary->workflow), std::move(lock));
  AskAnotherTurn(*engine_);  // its due timers fire at the next turn
  return true;
}

}  // namespace jr2rt
