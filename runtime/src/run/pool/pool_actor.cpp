// The Pool actor (pool_actor.h, docs/runtime.md#the-pool): its start and end, its workers and
// the ids it knows, a claim, the hand-over of a standing Pool, and what it stores (its snapshot,
// or the run's journal).
#include "run/pool/pool_actor.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/pieces.h"
#include "jr2/stdlib.h"
#include "run/actors/dispatch_actor.h"

namespace jr2rt {

// Empties a JSON value from its leaves up, a few levels deep, before it is destroyed: nlohmann's
// destructor moves the members of an object or list that has any onto a heap vector of its own (a
// malloc, and a realloc as it grows), which was three of a Pool item's mallocs (the Source's
// answer, the worker's input). Below kDepth levels the destructor does the rest as before, so a
// hostile item nested 10,000 deep costs no stack here.
void Dismantle(Json& j, int depth) {
  constexpr int kDepth = 4;
  if (depth >= kDepth || !j.is_structured() || j.empty()) return;
  for (Json& member : j) Dismantle(member, depth + 1);
  j.clear();  // the members are leaves or empty now: no vector is made for them
}

std::string IdProblem(const std::string& id) {
  if (id.empty()) return "is empty";
  // A NUL cannot be passed in a command's arguments: that item's Gates could never be answered.
  if (id.find('\0') != std::string::npos) return "contains a NUL character";
  if (id.find('.') != std::string::npos) return "contains `.` (ids name Gates: `<id>.<state>`)";
  if (id == "source") return "is `source`, the name of the Pool's own Gate";
  return "";
}

namespace {

// A settle of item `id` with `output` as the journal entry's text, `[id, output]`: read as
// `{"output": …, "settled": id}` (store/rows.h, IsShortEntry; 17 bytes fewer than that object,
// which stores from before it hold).
std::string SettleEntry(const std::string& id, const Json& output) {
  std::string entry = "[";
  AppendJsonString(entry, id);
  entry += ',';
  AppendJson(entry, output);
  entry += ']';
  return entry;
}

// A stable fingerprint of a text (64-bit FNV-1a, hex): what a run keeps of an item it skipped.
std::string Fingerprint(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  static const char* hex = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<size_t>(i)] = hex[h & 15];
  return out;
}
}  // namespace

JsonValue PoolActor::ReadInput(const PoolSpec& spec, const Json& given) {
  try {
    return spec.parseInput(given);
  } catch (const SchemaError& e) {
    throw BadInput(std::string("the input of pool `") + spec.name + "` does not fit: " + e.what());
  }
}

void PoolActor::start(const Json& given) { startParsed(ReadInput(spec_, given)); }

void PoolActor::startParsed(JsonValue input) {
  input_ = std::make_shared<const Json>(std::move(input).take());
  keepInputAsRuns();
  // `cap` is read once, at start.
  cap_ = spec_.cap ? spec_.cap(*input_) : 1;
  if (cap_ < 1) {
    throw BadInput("pool `" + spec_.name + "` has `cap` " + std::to_string(cap_) +
                   " for this input, and a Pool needs at least 1");
  }
  if (!spec_.source.wake.empty()) openWakeGate();
  startedMs_ = run_.clock().nowMs();
  if (spec_.standing && run_.carried().is_object()) {
    streak_ = run_.carried().value("streak", int64_t{0});
    takeOver(run_.carried());
  }
  request();
}

Json PoolActor::handOverState() const {
  Json keys = Json::array();
  for (const auto& [k, w] : workers_) {
    if (const auto* d = dynamic_cast<const DispatchActor*>(w.actor.get())) {
      Json key = {{"item", *w.id}, {"run", d->runId()}};
      // One whose run is asked for again (the store away, its key another host's): the next
      // run asks on, with what this one asks with.
      if (Json snap = d->snapshot(); snap.contains("retryInput"))
        key["retryInput"] = std::move(snap["retryInput"]);
      keys.push_back(std::move(key));
    }
  }
  return {{"held", Json(std::vector<Json>(held_.begin(), held_.end()))}, {"keys", keys}};
}

bool PoolActor::atBound(int64_t nowMs) const {
  return taken_ >= kStandingBoundItems || nowMs - startedMs_ >= kStandingBoundMs;
}

Json PoolActor::standing() const {
  return {{"startedMs", startedMs_}, {"streak", streak_}, {"taken", taken_}, {"ran", ran_}};
}

void PoolActor::takeOver(const Json& carried) {
  for (const auto& k : carried.value("keys", Json::array())) {
    const std::string id = k.value("item", "");
    const std::string runId = k.value("run", "");
    const bool asking = runId.empty() && k.contains("retryInput");
    if (id.empty() || (runId.empty() && !asking) || liveIds_.count(id) != 0) continue;
    const int key = nextKey_++;
    // Named by the Pool's name, as a claimed item's worker is (its `dispatchedBy.pool`).
    auto worker = std::make_unique<DispatchActor>(run_, this, key, Join(prefix_, id), spec_.worker,
                                                  id, spec_.name);
    DispatchActor* raw = worker.get();
    enlist(key, id, std::move(worker));
    raw->restoreFrom(asking ? Json{{"run", ""}, {"retryInput", k["retryInput"]}}
                            : Json{{"run", runId}});
  }
  for (const auto& item : carried.value("held", Json::array())) {
    std::string id;
    try {
      id = spec_.itemId(item, *input_);
    } catch (const std::exception& e) {
      run_.emit("carry-refused", {{"pool", prefix_}, {"item", item}, {"reason", ErrorText(e)}},
                "a held item was dropped at the hand-over: " + ErrorText(e));
      continue;
    }
    if (heldIds_.count(id) != 0 || liveIds_.count(id) != 0) continue;
    held_.push_back(item);
    heldIds_.insert(id);
  }
  // What it took over (`carried`, whole) is an input of the run's first turn: a replay starts
  // the run with it (docs/runtime.md#traces).
  run_.emit(
      "taken-over",
      {{"pool", prefix_}, {"held", held_.size()}, {"keys", workers_.size()}, {"carried", carried}},
      "took over " + std::to_string(held_.size()) + " held items and " +
          std::to_string(workers_.size()) + " live runs");
}

std::shared_ptr<const Payload> PoolActor::check(int, const std::string& event,
                                                const Json& payload) const {
  if (event != spec_.source.wake) {
    throw BadInput("the Gate `" + Join(prefix_, "source") + "` takes only `" + spec_.source.wake +
                   "`");
  }
  // A wake's payload is only checked: nothing reads it.
  if (!spec_.source.checkWake) return nullptr;
  try {
    spec_.source.checkWake(payload.is_null() ? Json::object() : payload);
  } catch (const SchemaError& e) {
    throw BadInput("the payload of `" + event + "` does not fit: " + e.what());
  }
  return nullptr;
}

void PoolActor::deliver(int, const std::string&, const Json&, std::shared_ptr<const Payload>) {
  run_.emit("woken", {{"gate", Join(prefix_, "source")}}, Join(prefix_, "source") + ": woken");
  request();
}

void PoolActor::timer(int) {
  if (!pollArmed_) return;
  pollArmed_ = false;
  request();
}

void PoolActor::childDone(int key, Json output) {
  auto it = workers_.find(key);
  if (it == workers_.end()) return;
  const std::string id = *it->second.id;
  if (journaled()) run_.journal(SettleEntry(id, output));
  items_[id] = std::move(output);
  settle(id, false);
  retire(it);
  if (!run_.heard()) {
  } else if (spec_.dispatch) {
    run_.emit("settled", {{"item", id}, {"pool", prefix_}, {"status", "done"}},
              id + " settled: its run ended done");
  } else {
    mark("settled", id);
  }
  if (spec_.standing) forgetOutput(id);
  source().settled(id, false);
}

void PoolActor::childFailed(int key, const Failure& f) {
  auto it = workers_.find(key);
  if (it == workers_.end()) return;
  const std::string id = *it->second.id;
  // A worker's Failure ends only its item.
  failures_[id] = {{"reason", f.reason()}, {"detail", f.detail()}};
  if (journaled()) {
    std::string entry;
    AppendJson(entry, Json{{"failed", id}, {"failure", failures_[id]}});
    run_.journal(std::move(entry));
  }
  settle(id, true);
  retire(it);
  if (spec_.dispatch) {
    // A Pool of runs: the run's end (or a start refused) fails the item, never the Pool.
    const std::string mark =
        f.detail().is_object() ? f.detail().value("mark", "settled") : std::string("settled");
    run_.emit(mark,
              {{"item", id},
               {"pool", prefix_},
               {"status",
                f.detail().is_object() ? f.detail().value("status", Json(nullptr)) : Json(nullptr)},
               {"reason", f.reason()}},
              id + " " + (mark == "settled" ? "settled" : mark) + ": " + f.reason());
  } else {
    run_.emit("failed", {{"item", id}, {"pool", prefix_}, {"reason", f.reason()}},
              id + " failed: " + f.reason());
  }
  if (spec_.standing) forgetOutput(id);
  source().settled(id, true);
}

void PoolActor::mark(const char* kind, const std::string& id) {
  std::string line = id;
  line.append(" ").append(kind);
  // A top Pool's, told short: its data ({"item": id, "pool": ""}) is made when read (FeedForm).
  if (prefix_.empty()) return run_.emitShort(FeedForm::kTopMark, kind, std::move(line));
  std::string data;
  data.reserve(24 + id.size() + prefix_.size());
  AppendItemMark(data, id, prefix_);
  run_.emitText(kind, std::move(data), std::move(line));
}

void PoolActor::traceSource(const char* call, const char* key, const Json& value) {
  if (!run_.heard()) return;
  if (prefix_.empty() && std::strcmp(call, "next") == 0 && std::strcmp(key, "answer") == 0 &&
      (argsTold_ || !args_) && (value.is_object() || value.is_array())) {
    // A top Pool's answer of `next` once its args were told: told short, the answer's text alone
    // ({"answer": A, "call": "next", "pool": ""} made when read, FeedForm).
    argsTold_ = true;
    std::string text;
    AppendJson(text, value);
    return run_.emitShort(FeedForm::kTopAnswer, "source", "", std::move(text));
  }
  // {key, args (once), call, pool} in the order a dump of the object writes its members.
  std::string text = "{";
  const auto member = [&text](const char* name) {
    if (text.size() > 1) text += ',';
    AppendJsonString(text, name);
    text += ':';
  };
  bool keyed = false;
  const auto keyBefore = [&](const char* next) {
    if (keyed || std::strcmp(key, next) > 0) return;
    member(key);
    AppendJson(text, value);
    keyed = true;
  };
  // What it was called with, once in the Pool's life (its input's, the same at every call): a
  // replay whose build calls it with others says so at that turn.
  keyBefore("args");
  if (!argsTold_ && args_) {
    member("args");
    AppendJson(text, *args_);
  }
  argsTold_ = true;
  keyBefore("call");
  member("call");
  AppendJsonString(text, call);
  keyBefore("pool");
  member("pool");
  AppendJsonString(text, prefix_);
  keyBefore("~");  // after every name
  text += '}';
  run_.emitText("source", std::move(text), "");
}

void PoolActor::forgetOutput(const std::string& id) {
  items_.erase(id);
  failures_.erase(id);
}

void PoolActor::stop() {
  for (auto& [k, w] : workers_) w.actor->stop();
  if (wakeOpen_) run_.closeGate(Join(prefix_, "source"));
  wakeOpen_ = false;
  if (pollArmed_) run_.unschedule(this, 0);
  pollArmed_ = false;
}

void PoolActor::keepInputAsRuns() {
  const Json& run = run_.input();
  const Json& input = *input_;
  if (parent() != nullptr || !run.is_object() || !input.is_object()) return;
  Json over = Json::object();
  for (const auto& [key, value] : run.items()) {
    if (!input.contains(key)) return;  // a member the Pool dropped: kept whole
  }
  for (const auto& [key, value] : input.items()) {
    const auto it = run.find(key);
    if (it == run.end() || *it != value) over[key] = value;
  }
  inputFromRun_ = true;
  inputOver_ = std::move(over);
}

Json PoolActor::snapshotBase() const {
  Json skipped = Json::array();
  for (const auto& s : skipped_) skipped.push_back(s);
  Json held = Json::array();
  for (const auto& h : held_) held.push_back(h);
  Json out = Obj()("kind", "pool")("name", spec_.name)("key", key_)("prefix", prefix_)("cap", cap_)(
      "settled", journaled() ? Json::array() : Json(*settled_))(
      "failed", journaled() ? Json::array() : Json(*failed_))(
      "items", journaled() ? Json::object() : items_)("failures",
                                                      journaled() ? Json::object() : failures_)(
      "journaled", journaled() ? Json(settled_->size()) : Json(nullptr))("open", lastOpen_)(
      "nextKey", nextKey_)("ended", ended_)("calling", inFlight_ || latch_)(
      "skipped", std::move(skipped))("held", std::move(held))("taken", taken_)("ran", ran_)(
      "streak", streak_)("startedMs", startedMs_)("argsTold", argsTold_)(
      "pollDue", pollArmed_ ? Json(pollDue_) : Json(nullptr));
  if (inputFromRun_) {
    out["inputOver"] = inputOver_;
  } else {
    out["input"] = *input_;
  }
  return out;
}

Json PoolActor::snapshot() const {
  Json workers = Json::array();
  for (const auto& [k, w] : workers_) {
    workers.push_back(Obj()("key", k)("id", *w.id)("actor", w.actor->snapshot()));
  }
  Json out = snapshotBase();
  out["workers"] = std::move(workers);
  return out;
}

void PoolActor::Kept(std::string& out, const Actor& a, uint64_t& at, std::string& text,
                     uint64_t& piece, const std::function<void(std::string&)>& write) {
  if (a.poolBelow()) return write(out);
  if (text.empty() || at != a.version()) {
    text.clear();
    write(text);
    at = a.version();
    piece = 0;  // other bytes: another piece
  }
  AppendPiece(out, piece, text);
}

void PoolActor::snapshotText(std::string& out) const {
  WriteMerged(out, snapshotBase(), "workers", [this](std::string& to) {
    to += '[';
    for (const auto& [k, w] : workers_) {
      if (to.back() != '[') to += ',';
      if (!w.written) w.written = std::make_unique<Written>();
      const int key = k;
      const Worker& worker = w;
      Kept(to, *w.actor, w.written->snapshotAt, w.written->snapshot, w.written->snapshotPiece,
           [&](std::string& part) {
             part += "{\"actor\":";  // {actor, id, key}, by name
             worker.actor->snapshotText(part);
             part += ",\"id\":";
             AppendJson(part, Json(*worker.id));
             part += ",\"key\":";
             part += std::to_string(key);
             part += '}';
           });
    }
    to += ']';
  });
}

void PoolActor::effectsOut(std::vector<std::string>& out) const {
  for (const auto& [key, w] : workers_) w.actor->effectsOut(out);
}

Json PoolActor::observe() const {
  Json children = Json::array();
  for (const auto& [key, w] : workers_) {
    Json child = w.actor->observe();
    child["id"] = *w.id;
    children.push_back(std::move(child));
  }
  return {{"kind", "pool"}, {"value", Json::array()}, {"children", children}};
}

void PoolActor::observeText(std::string& out, const Json& over) const {
  WriteMerged(out, Over({{"kind", "pool"}, {"value", Json::array()}}, over), "children",
              [this](std::string& to) {
                to += '[';
                for (const auto& [key, w] : workers_) {
                  if (to.back() != '[') to += ',';
                  if (!w.written) w.written = std::make_unique<Written>();
                  const Worker& worker = w;
                  Kept(to, *w.actor, w.written->observeAt, w.written->observe,
                       w.written->observePiece, [&](std::string& part) {
                         worker.actor->observeText(part, {{"id", *worker.id}});
                       });
                }
                to += ']';
              });
}

Json PoolActor::sofar(bool items) const {
  Json live = Json::array();
  for (const auto& id : live_->slots) {
    if (!id.empty()) live.push_back(id);
  }
  Json out = {{"live", live}, {"open", lastOpen_}};
  if (items) {
    out["items"] = items_;
    out["failures"] = failures_;
  }
  if (spec_.standing) {
    // A standing Pool forgets each item's output once it settled (forgetOutput): its counts
    // are kept instead, for `status`'s `so far`.
    const auto failed = static_cast<int64_t>(failed_->size());
    out["settledCount"] = static_cast<int64_t>(settled_->size()) - failed;
    out["failedCount"] = failed;
  }
  return out;
}

void PoolActor::restoreFrom(const Json& snap) {
  if (snap.contains("inputOver")) {
    // The run's input, with what the Pool's differs by.
    inputFromRun_ = true;
    inputOver_ = snap.at("inputOver");
    Json input = run_.input();
    for (const auto& [key, value] : inputOver_.items()) input[key] = value;
    input_ = std::make_shared<const Json>(std::move(input));
  } else {
    input_ = std::make_shared<const Json>(snap.at("input"));
  }
  // The stored input, read by another build's parameters as a restore reads (leniently: a
  // field they no longer have is ignored): an input they no longer read cannot go on, and is
  // refused here rather than fault later (`jr2c diff`'s D0704). The build that stored it read it
  // at start: not read again (a Pool's input may hold 10,000 items, and the runner restores at
  // every command).
  if (run_.assembly().empty() || run_.assembly() != run_.registry().assembly()) {
    try {
      LenientFields lenient;
      (void)spec_.parseInput(*input_);
    } catch (const std::exception& e) {
      throw NoLongerFits("the saved run of pool `" + spec_.name +
                         "` has an input this build's parameters no longer read: " + ErrorText(e));
    }
  }
  cap_ = snap.at("cap").get<int64_t>();
  settled_ = std::make_shared<std::vector<std::string>>(
      snap.at("settled").get<std::vector<std::string>>());
  failed_ =
      std::make_shared<std::vector<std::string>>(snap.at("failed").get<std::vector<std::string>>());
  settledSet_.insert(settled_->begin(), settled_->end());
  items_ = snap.at("items");
  failures_ = snap.at("failures");
  lastOpen_ = snap.at("open").get<int64_t>();
  if (snap.contains("skipped")) {
    for (const auto& k : snap.at("skipped")) skipped_.insert(k.get<std::string>());
  }
  nextKey_ = snap.at("nextKey").get<int>();
  ended_ = snap.at("ended").get<bool>();
  taken_ = snap.value("taken", int64_t{0});
  ran_ = snap.value("ran", int64_t{0});
  streak_ = snap.value("streak", int64_t{0});
  startedMs_ = snap.value("startedMs", int64_t{0});
  argsTold_ = snap.value("argsTold", false);
  if (snap.contains("held")) {
    for (const auto& item : snap.at("held")) {
      held_.push_back(item);
      heldIds_.insert(spec_.itemId(item, *input_));
    }
  }
  for (const auto& w : snap.at("workers")) {
    // A live worker is a run of the Pool's worker as this build has it: another machine (or
    // workflow) would give the Pool outputs of another type (`jr2c diff` says so as D0707).
    const Json& actor = w.at("actor");
    const std::string was = actor.at("name").get<std::string>();
    if (was != spec_.worker ||
        (actor.at("kind").get<std::string>() == "dispatch") != spec_.dispatch)
      throw NoLongerFits(
          "the saved run of pool `" + spec_.name + "` has a worker of " +
          (actor.at("kind").get<std::string>() == "dispatch" ? "workflow `" : "machine `") + was +
          "` live, and this build's pool runs " + (spec_.dispatch ? "workflow `" : "machine `") +
          spec_.worker + "`");
    enlist(w.at("key").get<int>(), w.at("id").get<std::string>(),
           Actor::Restore(run_, this, actor));
  }
  // After the live workers: an entry that settles a live item is damage.
  if (snap.contains("journaled") && !snap.at("journaled").is_null()) readJournal(snap);
  if (spec_.standing) {
    // A standing Pool keeps no output (forgetOutput): only the ids, known for its run's life.
    items_ = Json::object();
    failures_ = Json::object();
  }
  if (!ended_ && !spec_.source.wake.empty()) openWakeGate();
  // A call that was out when the run was saved is made again (it is never lost).
  if (snap.value("calling", false) && !ended_) later([this] { request(); });
  if (!snap.at("pollDue").is_null()) {
    pollArmed_ = true;
    pollDue_ = snap.at("pollDue").get<int64_t>();
    run_.schedule(this, 0, pollDue_);
  }
}

void PoolActor::openWakeGate() {
  OpenGate g;
  g.name = Join(prefix_, "source");
  g.kind = OpenGate::Kind::kSource;
  EventSpec wake = spec_.source.wakeSpec;
  if (wake.name.empty()) {
    wake.name = spec_.source.wake;
    wake.audience = EventSpec::Audience::kExternal;
  }
  run_.openGate(std::move(g), std::make_shared<const std::vector<EventSpec>>(1, wake), this, -1);
  wakeOpen_ = true;
}

void PoolActor::request() {
  if (ended_) return;
  if (inFlight_) {
    latch_ = true;
    return;
  }
  if (static_cast<int64_t>(workers_.size()) >= cap_) return;
  source().claim();
}

bool PoolActor::hears(const std::string& service) const {
  for (const HookSpec& h : spec_.source.hooks) {
    if (h.service == service) return true;
  }
  return false;
}

HookVerdict PoolActor::hook(const std::string& service, const std::string& key,
                            const Json& payload) {
  if (ended_) return Skipped("pool `" + spec_.name + "` has ended");
  for (const HookSpec& h : spec_.source.hooks) {
    if (h.service != service || h.eventKey != key) continue;
    if (h.verdict != HookSpec::Verdict::kSkip) return source().hook(h, service, key, payload);
    try {
      const Json params =
          spec_.source.params ? spec_.source.params(*input_).take() : Json::object();
      const Json reason = h.value ? h.value(payload, params).take() : Json("");
      return Skipped(reason.is_string() ? reason.get<std::string>() : reason.dump());
    } catch (const std::exception& e) {
      return Skipped("the hook's `skip` failed: " + ErrorText(e));  // a throw is a skip
    }
  }
  HookVerdict none =
      Skipped("source `" + spec_.source.name + "` has no hook for " + service + " `" + key + "`");
  none.heard = false;  // weaker than any other skip (RunHost::deliverHook)
  return none;
}

void PoolActor::skip(const Json& item, const std::string& why) {
  const std::string key = Fingerprint(item.dump(-1, ' ', false, Json::error_handler_t::replace));
  if (!skipped_.insert(key).second) return;
  std::string shown = item.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (shown.size() > 120) shown = shown.substr(0, 117) + "...";
  run_.emit("skipped", {{"pool", prefix_}, {"item", item}, {"reason", why}},
            "source `" + spec_.source.name + "` skipped an item: " + why + ": " + shown);
}

void PoolActor::claim(Json item) {
  std::string id;
  try {
    id = spec_.itemId(item, *input_);
  } catch (const std::exception& e) {
    throw Defect("source `" + spec_.source.name + "` gave an item with no id: " + e.what());
  }
  // The id rules: each broken rule is a defect of the Source.
  auto defect = [&](const std::string& rule) {
    // The id as text that survives every channel: a NUL would end the message where it stands
    // (what() is a C string), so it is written `\0`.
    std::string shown;
    for (char ch : id) shown += ch == '\0' ? std::string("\\0") : std::string(1, ch);
    throw Defect("source `" + spec_.source.name + "` gave the item id `" + shown + "`, which " +
                 rule);
  };
  if (const std::string why = IdProblem(id); !why.empty()) defect(why);
  if (liveIds_.count(id) != 0) defect("a live worker holds");
  if (settledSet_.count(id) != 0) {
    defect("a worker already finished in this run");
  }
  const int key = nextKey_++;
  ++taken_;
  // A worker is a machine, or a Pool (a Pool of Pools: each item runs a Pool of its own).
  std::unique_ptr<Actor> worker;
  if (spec_.dispatch) {
    worker = std::make_unique<DispatchActor>(run_, this, key, Join(prefix_, id), spec_.worker, id,
                                             spec_.name);
  } else if (innerPool_ != nullptr) {
    worker = std::make_unique<PoolActor>(run_, this, key, Join(prefix_, id), *innerPool_);
  } else {
    // The worker's class, looked up once per Pool rather than by name per item.
    if (workerClass_.make == nullptr) workerClass_ = MachineActor::Resolve(run_, spec_.worker);
    worker = std::make_unique<MachineActor>(run_, this, key, Join(prefix_, id), workerClass_);
  }
  Actor* raw = worker.get();
  enlist(key, id, std::move(worker));
  if (run_.heard()) mark("started", id);
  try {
    Json workerInput = spec_.itemInput(std::move(item), *input_);
    // A backlog file is written by people for its Pool: its items are read strictly, so a
    // misspelled `neds` is that item's Failure (with did-you-mean), not a need silently
    // dropped. Items from an `extern` Source keep width subtyping: extra fields are ignored.
    if (strictItems_) {
      StrictFields strict;
      raw->checkInput(workerInput);
    }
    raw->start(workerInput);
    Dismantle(workerInput);
  } catch (const std::exception& e) {
    // The item does not fit the worker (a SchemaError, or a worker Pool's BadInput): a
    // Failure of that item, not of the run. It is reported as a later step, so this answer
    // still makes exactly one more call. Anything else is a defect, as everywhere.
    if (dynamic_cast<const SchemaError*>(&e) == nullptr &&
        dynamic_cast<const BadInput*>(&e) == nullptr) {
      throw;
    }
    raw->stop();
    const Failure f(std::string("the item does not fit the worker: ") + e.what());
    later([this, key, f] { childFailed(key, f); });
  }
}

void PoolActor::armPoll() {
  if (spec_.source.pollEveryMs <= 0 || pollArmed_) return;
  pollArmed_ = true;
  pollDue_ = run_.clock().nowMs() + spec_.source.pollEveryMs;
  run_.schedule(this, 0, pollDue_);
}

void PoolActor::explainDeadlock(Json& output) {
  if (spec_.source.function != "std.backlog" || !args_) return;
  try {
    const PoolSpec& spec = spec_;
    const std::shared_ptr<const Json> input = input_;
    Json why = ExplainBacklog(
        *args_, query(), [&spec, input](const Json& item) { return spec.itemId(item, *input); },
        run_.home());
    output["blocked"] = std::move(why["blocked"]);
    if (why.contains("cycle")) output["cycle"] = std::move(why["cycle"]);
  } catch (const std::exception&) {
    // The backlog changed or went since the last call: the deadlock stands unexplained.
  }
}

void PoolActor::end() {
  if (spec_.standing) return armPoll();
  const bool deadlocked = lastOpen_ > 0;
  const size_t failed = failures_.size();
  // The top Pool's items become the run's output, which nothing reads them from again (an
  // ended run has no snapshot of its Pool, no `sofar`): moved, not copied. A nested Pool's
  // stay: its parent may be saved before it hears of the end.
  const bool top = parent_ == nullptr;
  Json output = Obj()("status", deadlocked ? "deadlocked" : "drained")(
      "items", top ? std::move(items_) : Json(items_))(
      "failures", top ? std::move(failures_) : Json(failures_));
  if (deadlocked) explainDeadlock(output);
  if (failed != 0 && !spec_.reportFailures) {
    fail(Failure(
        std::to_string(failed) + " of " + std::to_string(settled_->size()) + " items failed",
        std::move(output)));
    return;
  }
  // With `failures: report` and a failure, the Pool ends `done` at either end
  // (docs/runtime.md#failures-report-and-a-deadlock): the items that never became ready are usually
  // the failed item's dependents, and the output's `status` still says `deadlocked`. Without a
  // failure, a deadlock ends the run so.
  // The journal holds every item's output and failure: the run's stored output need not.
  if (top && journaled()) run_.keepOutputInJournal();
  if (top && deadlocked && failed == 0) {
    ended_ = true;
    stop();
    run_.finish(RunStatus::kDeadlocked, std::move(output), "");
    return;
  }
  complete(std::move(output));
}

LiveIds& PoolActor::ownLive(bool compact) {
  const bool shared = live_.use_count() > 1;
  if (!shared && !(compact && live_->holes > 0)) return *live_;
  auto fresh = std::make_shared<LiveIds>();
  fresh->slots.reserve(live_->size());
  std::vector<int> keys;
  keys.reserve(live_->size());
  for (size_t i = 0; i < live_->slots.size(); ++i) {
    if (live_->slots[i].empty()) continue;
    fresh->slots.push_back(shared ? live_->slots[i] : std::move(live_->slots[i]));
    keys.push_back(liveKeys_[i]);
  }
  live_ = std::move(fresh);
  liveKeys_ = std::move(keys);
  return *live_;
}

void PoolActor::enlist(int key, const std::string& id, std::unique_ptr<Actor> actor) {
  LiveIds& live = ownLive(false);
  if (!liveKeys_.empty() && key < liveKeys_.back()) {
    // Not the newest (a restore given workers out of order): placed by its key.
    ownLive(true);
    const auto at = std::lower_bound(liveKeys_.begin(), liveKeys_.end(), key);
    live_->slots.insert(live_->slots.begin() + (at - liveKeys_.begin()), id);
    liveKeys_.insert(at, key);
  } else {
    live.slots.push_back(id);
    liveKeys_.push_back(key);
  }
  const auto at = liveIds_.emplace(id, key).first;
  workers_.emplace(key, Worker{&at->first, std::move(actor), nullptr,
                               LiveOne(spec_.dispatch ? Live::kRun : Live::kWorker)});
}

void PoolActor::retire(std::map<int, Worker>::iterator it) {
  LiveIds& live = ownLive(false);
  const auto at = std::lower_bound(liveKeys_.begin(), liveKeys_.end(), it->first);
  if (at != liveKeys_.end() && *at == it->first) {
    live.slots[static_cast<size_t>(at - liveKeys_.begin())].clear();
    ++live.holes;
    while (!live.slots.empty() && live.slots.back().empty()) {
      live.slots.pop_back();
      liveKeys_.pop_back();
      --live.holes;
    }
    if (live.holes > live.size()) ownLive(true);
  }
  liveIds_.erase(liveIds_.find(*it->second.id));  // by node: the id is that node's key
  workers_.erase(it);
}

void PoolActor::readJournal(const Json& snap) {
  const std::vector<Json>* journal = run_.restoringJournal();
  const auto want = snap.at("journaled").get<size_t>();
  if (journal == nullptr) {
    throw NoLongerFits(
        "the stored run keeps its items in the store's journal, and "
        "none was given to restore it");
  }
  if (journal->size() != want) {
    throw StoreDamaged("run " + run_.id() + " is damaged: it settled " + std::to_string(want) +
                       " items, and its journal has " + std::to_string(journal->size()) +
                       "; it cannot go on, the other runs are unaffected");
  }
  // The journal is what the store says was settled: an entry that is not one this runtime
  // wrote, or an id settled twice or both settled and live, is damage, never taken as is.
  size_t n = 0;
  for (const Json& e : *journal) {
    ++n;
    auto damaged = [&](const std::string& why) {
      return StoreDamaged("run " + run_.id() + "'s journal entry " + std::to_string(n) +
                          " is damaged: " + why +
                          "; it cannot go on, the other runs are unaffected");
    };
    JournalEntry entry;
    if (!ReadJournalEntry(e, entry)) throw damaged("it is not a settled or failed item");
    const std::string& id = *entry.item;
    if (settledSet_.count(id) != 0) throw damaged("item " + id + " is settled twice");
    if (liveIds_.count(id) != 0) throw damaged("item " + id + " is settled and live");
    (entry.failed ? failures_ : items_)[id] = *entry.value;
    settle(id, entry.failed);
  }
}

void PoolActor::settle(const std::string& id, bool failed) {
  auto append = [&](std::shared_ptr<std::vector<std::string>>& list) {
    if (list.use_count() > 1) list = std::make_shared<std::vector<std::string>>(*list);
    list->push_back(id);
  };
  append(settled_);
  if (failed) append(failed_);
  settledSet_.insert(id);
}

PoolSource& PoolActor::source() {
  if (!source_) source_ = MakePoolSource(*this);
  return *source_;
}

}  // namespace jr2rt
