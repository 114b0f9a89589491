// The runner's verbs as data (docs/architecture.md#the-verbs): one entry per verb — start,
// resume, send, cancel, status, gates, runs, log, prune — each giving the documents that
// `--json` prints and serve answers (views.h), never printing. Two implementations honour it:
// against the store (OpenStoreVerbs: a RunHost over the run store, this layer) and against a
// serve (front/remote/: the same verbs over the HTTP routes of docs/serve.md). The runner's
// command line picks one by `--server` and prints what it gives with one set of printers
// (front/present/report.h), so the two fronts cannot drift apart; serve's read routes take their
// documents from the same functions (ReadGates, RunDocument) as the store's verbs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "jr2/host.h"

namespace jr2rt {

class Registry;
struct ModelServer;

// What a verb tells a person while it works: the lines of each step once it is stored (`kind`
// the feed line's kind), and notes (`kind` "note": a wait for a lock, a timer waited for, a run
// another command drove). `run` is "" for a note about no run in particular.
using VerbTell =
    std::function<void(const std::string& run, const std::string& kind, const std::string& line)>;

// A verb that was stopped by SIGINT or SIGTERM (HostInterrupted) while it drove `run`: what it
// did is stored as of its last step; `stopped` processes it ran were killed (they read
// `interrupted` when the run goes on). `run` is "" when it had none yet.
class VerbInterrupted : public HostInterrupted {
 public:
  VerbInterrupted(const std::string& what, std::string run, int stopped)
      : HostInterrupted(what), run(std::move(run)), stopped(stopped) {}
  std::string run;
  int stopped = 0;
};

// What `run`, `send` and `cancel` give: the run as it is after the step (a RunView), whether
// this verb did the step or handed it to the command that drives the run (the store's inbox),
// and a line to tell after the run when less of it could be shown than the verb shows (a Caller
// that may start runs and not read them).
struct Changed {
  Json view;
  bool handedOver = false;
  std::string after;
};

// What `gates` gives: every open Gate (`{runId, gate, meta, accepts, menu, fields}`), and a line
// for each run that could not be read (`gates` without a run lists the others).
struct GateList {
  Json gates = Json::array();
  std::vector<std::string> unreadable;
  // With ReadGates' `menuOf`: each Gate names its Menu (`menuOf`) in here (views.h DumpExpanded).
  Json menus = Json::object();
};

class Verbs {
 public:
  virtual ~Verbs() = default;
  // `run`: starts a run with `input` (a standing Pool: resumes it, without its held items with
  // `dropHeld`) and drives it until it ends or waits for somebody (every timer with `follow`).
  virtual Changed start(const Json& input, bool follow, bool dropHeld) = 0;
  // `run --resume RUN`: takes a stored run up again (store only).
  virtual Json resume(const std::string& prefix, bool follow) = 0;
  // `send RUN GATE EVENT [PAYLOAD]`: delivers, drives, gives the run after the step.
  virtual Changed send(const std::string& prefix, const std::string& gate, const std::string& event,
                       const Json& payload, bool follow) = 0;
  // `cancel RUN`.
  virtual Changed cancel(const std::string& prefix) = 0;
  // `status RUN`: the run as its last save left it, with the head of its standing workflow.
  virtual Json status(const std::string& prefix) = 0;
  // `gates [RUN]`: the open Gates of one run, or of every waiting run of the workflow.
  virtual GateList gates(const std::string& prefix) = 0;
  // `runs [--all]`: `{runId, workflow, status, updated}` each, oldest change first.
  virtual Json runs(bool all) = 0;
  // `log RUN [--follow]`: each feed line `{seq, time, kind, data, line}` to `line`, in order;
  // with `follow`, the lines still to come until the run ends. Gives the run's status when
  // following ("" otherwise) and its full id in `id`.
  virtual std::string log(const std::string& prefix, bool follow,
                          const std::function<void(const Json& line)>& line, std::string* id) = 0;
  // `export RUN`: the run's trace (docs/runtime.md#traces), whole.
  virtual std::string trace(const std::string& prefix) = 0;
  // `prune --ended-before`: deletes the runs that ended before `beforeMs`; gives how many.
  virtual int64_t prune(int64_t beforeMs) = 0;
  // Where the runs are: the store's path, or the serve's URL.
  virtual std::string where() const = 0;
};

// How the store's verbs run their host: the scripted Agents (Run::scriptAgents) or a model
// server, the threads for blocking host functions, and what a host tells as it works.
struct StoreVerbsOptions {
  Json agents;
  std::shared_ptr<const ModelServer> model;
  int threads = 0;
  VerbTell tell;
  // Called after the lines of one commit (and after each note) were told: a front that gathers
  // what `tell` gives may write it out then, in one write (the runner's stderr).
  std::function<void()> told;
  // As each feed event happens, before it is stored (for counts on a live line only).
  std::function<void(const std::string& run, const Run::FeedEvent& event)> counted;
  // A verb stopped by a signal, while its host still stands: a front that ends the process here
  // (std::_Exit) does not wait for a host function still running on a thread. When it returns,
  // the verb throws `stop`.
  std::function<void(const VerbInterrupted& stop)> interrupted;
};

// The verbs of `workflow` against the run store at `storePath` (opened by each verb as it needs
// it: a read never makes a store, a start makes one only once its input was taken).
std::unique_ptr<Verbs> OpenStoreVerbs(const Registry& registry, const std::string& workflow,
                                      const std::string& storePath, StoreVerbsOptions options);

// The open Gates of `runs` (read from their views) that `allow(workflow, gate)` lets through
// (every one when it is empty), each `{runId, workflow, gate, meta, accepts, menu, fields}`; a run
// that cannot be read is a line in `unreadable`, or thrown with `throwUnreadable`. The one maker of
// `gates`' and `GET /gates`' lists.
GateList ReadGates(
    RunHost& host, const std::vector<RunSummary>& runs,
    const std::function<bool(const std::string& workflow, const std::string& gate)>& allow,
    bool throwUnreadable, bool menuOf = false);

// A run in `runs`' list: `{runId, workflow, status, updated}`, and `key` when it has one (a page).
Json RunListEntry(const RunSummary& run);

// A feed line as `log` and the event stream give it: `{seq, time, kind, data, line}`.
Json FeedLineJson(const FeedLine& line);

}  // namespace jr2rt
