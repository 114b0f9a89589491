// What the verbs show of a run (docs/runtime.md#what-reads-show), as data: a Gate with its Menu,
// the run as `run`, `send`, `status` and `cancel` show it, and the view that each save stores
// beside the snapshot so that reads (`status`, `gates`, every HTTP read) never restore a run.
// The printers (front/present) and serve's answers are made from these; nothing here prints.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "jr2/run.h"

namespace jr2rt {

// A Gate as the verbs show it (`--json`, HTTP): `{gate, meta, accepts, menu}`.
Json GateJson(const OpenGate& gate);
// The same without its Menu, `{gate, meta, accepts}`: what serve's answer to a Gate answer
// carries of each Gate open then.
Json GateBrief(const Run::GateView& gate);
// What the 200 of a Gate answer is made from, once the turn that delivered it is stored:
// `{gates, open}`, `gates` each open Gate of the machine whose Gate was answered (`machine`,
// Run::gateMachine) and of what it invoked, brief; `open` the names of every open Gate. The host
// that drives the run makes it (serve's own answer, or a `send` another serve handed over).
Json AnsweredGates(const Run& run, const std::string& machine);
// The 200 itself, for a Caller that may answer the Gates `may` allows (docs/serve.md):
// `{status, gates, open}`, `open` how many Gates it may answer are open in the whole run.
Json GateAnswerBody(const std::string& status, const Json& answered,
                    const std::function<bool(const std::string&)>& may);
// The same for a run this host drives, read in place: equal to GateAnswerBody(status,
// AnsweredGates(run, machine), may) (Host.AGateAnswerListsTheGatesOfTheMachineItAnswered).
Json GateAnswerBody(const std::string& status, const Run& run, const std::string& machine,
                    const std::function<bool(const std::string&)>& may);
// The fields of each event a Gate takes, for the lines that show them: `{EVENT: [{name, type,
// required}]}`, the type as the `.jr2` writes it.
Json GateFields(const OpenGate& gate);

// A run as `run`, `send`, `status` and `cancel` print it: the document `--json` prints —
// `{runId, workflow, status, output, reason, gates}`, with `sofar` while a Pool waits and the head
// of its standing workflow when `standing` is given — and `text`, what the lines need beside it:
// `{fields, timer, chain, hold, stopped}` (GateFields of every open Gate; the next timer as
// `{due, underWay}` or null; a standing Pool's chain, "" for another; its held items and live runs
// as `{held, keys}`, or null; the effects that were out when the run was restored).
Json RunView(const Run& run, const Json& standing = nullptr);

// What a save stores for reads (StoredRun::viewText): `{build, menus, report, observe, working}` —
// `report` the RunView of the run as it is stored (its `text.stopped` the effects out at this
// save: what a restore would find out; a journaled Pool's `sofar` without its items, which the
// journal holds: `sofar.journaled` says so), `observe` the observation (Run::observe), `working`
// Run::workOut(), `build` this build's id (BuildId); each Gate of `report` names its Menu in
// `menus` (`menuOf`) rather than carrying it, so one kind of Gate open 64 times stores one Menu.
// SavedViewText writes it, each Menu copied as the text it was written to once; SavedView is that
// text read back. Each open Gate's part is kept with the Gate for its opening
// (Run::GateView::savedView) and copied at later saves; `kept` false writes every part afresh
// and keeps none (what JR2_CHECK_SAVES compares the kept parts with, RunSaver::prepare).
std::string SavedViewText(const Run& run, bool kept = true);
Json SavedView(const Run& run);
// A saved view as readers use it: each Gate given its Menu back, `menus` gone.
void ExpandView(Json& view);
// A Gate as GateJson makes it, but naming its Menu (`menuOf`) in `menus` rather than carrying
// it (the Menu is added to `menus` the first time its kind of Gate is met).
Json GateRef(const OpenGate& gate, Json& menus);
// `doc` as compact JSON text (serve's answers), each Gate in it (an object with a string
// `menuOf`) written with `"menu": MENU` from `menus` in its place, byte for byte what expanding
// and then dumping writes: each kind of Gate's Menu is written out once and copied as text, where
// building 64 Gates each with its own copy of the Menu as JSON was most of the cost of serve's
// answers. Nothing inside a Gate (its `meta`) is expanded; a Gate whose Menu `menus` lacks is
// left as it is.
std::string DumpExpanded(const Json& doc, const Json& menus);
// The saved view of a run as a reader uses it: `report.sofar` given its items and failures from
// the run's `journal` when it was saved without them, and an ended Pool's `report.output` the
// same (its `report.outputInJournal`, then removed: Run::outputInJournal).
void FillFromJournal(Json& view, const std::vector<Json>& journal);
// Whether a saved view left a Pool's items to its run's journal (FillFromJournal fills them).
bool ItemsInJournal(const Json& view);
// This executable's build (its ELF build id, in hex; "" when it has none): a view saved by
// another build may not describe what this one would make of the run, so a reader restores such a
// run once to check that it still fits (RunHost::view).
const std::string& BuildId();

}  // namespace jr2rt
