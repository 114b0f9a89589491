// The actor base (docs/runtime.md#a-run): one node of a run's tree — a machine, a Pool, a
// `dispatch` worker — driven on the run's strand, with the helpers every actor's snapshot uses.
// The actors: machine_actor.h, dispatch_actor.h, and the Pool's in run/pool/pool_actor.h.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jr2/run.h"

namespace jr2rt {

// `prefix.name`, or `name` at the top: a worker's Gates, states and effects by their item.
inline std::string Join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// A snapshot is built at every settle that is stored, so its objects are built member by
// member: nlohmann's initializer list makes a two-element array per member and deep-copies every
// lvalue in it (a Pool's workers, a machine's children), which was most of a durable settle's
// cost (#15, docs/performance.md).
class Obj {
 public:
  Obj& operator()(const char* key, Json value) & {
    json_.emplace(key, std::move(value));
    return *this;
  }
  Obj&& operator()(const char* key, Json value) && {
    json_.emplace(key, std::move(value));
    return std::move(*this);
  }
  operator Json() && { return std::move(json_); }  // NOLINT(google-explicit-constructor)

 private:
  Json json_ = Json::object();
};

// Object `base` appended as AppendJson writes it, with member `key` (over base's of that name)
// written by `write` straight into `out`, in its place among base's: JSON's objects keep their
// members by name, so the text is the one dumping the whole would write. A run's snapshot and
// observation are written so at every commit, each Pool worker's part from what it wrote before
// (#33).
void WriteMerged(std::string& out, const Json& base, std::string_view key,
                 const std::function<void(std::string&)>& write);
// The same with several members written so, `written` in the order of their names.
using Written = std::pair<std::string_view, std::function<void(std::string&)>>;
void WriteMerged(std::string& out, const Json& base, std::initializer_list<Written> written);

// One node of the run's tree. Its parent hears its end through childDone / childFailed; the top
// actor's end is the run's.
class Actor {
 public:
  Actor(Run& run, Actor* parent, int key, std::string prefix)
      : run_(run), parent_(parent), prefix_(std::move(prefix)), key_(key) {}
  virtual ~Actor() = default;
  // Where it is in the run: "" the top, a worker's item id, `item.child` below it (Join).
  const std::string& prefix() const { return prefix_; }

  // Posts `fn` to run on this actor later, unless the actor is gone by then (a cancelled child,
  // a settled worker): a task never touches a deleted actor.
  template <typename F>
  void later(F&& fn) {
    std::weak_ptr<int> alive = token();
    run_.post([this, alive, fn = std::forward<F>(fn)]() mutable {
      if (alive.expired()) return;
      touch();
      fn();
    });
  }

  // Marks this actor and every one above it changed. Whatever changes what an actor's snapshot
  // or observation would say calls it (its steps, timers, children's ends, stop): a Pool writes
  // again, at a commit, only the workers whose version moved since it last wrote them (#33).
  // A save checks the written text against the whole snapshot when JR2_CHECK_SAVES is set (the
  // test suite sets it): a change made without touch() is found there.
  void touch() {
    for (Actor* a = this; a != nullptr; a = a->parent_) ++a->version_;
  }
  uint64_t version() const { return version_; }
  // Whether a Pool is this actor or below it. A Pool's own state moves by its Source's answers,
  // which do not touch(): the text of such a worker is never kept, but written each time.
  bool poolBelow() const { return poolBelow_; }

  virtual void start(const Json& input) = 0;
  // `typed` is what check() returned for this payload (null: read it from `payload`).
  virtual void deliver(int invokeId, const std::string& event, const Json& payload,
                       std::shared_ptr<const Payload> typed) = 0;
  virtual void timer(int id) = 0;
  virtual void childDone(int key, Json output) = 0;  // by value: a Pool keeps it
  virtual void childFailed(int key, const Failure& failure) = 0;
  virtual void stop() = 0;
  virtual Json snapshot() const = 0;
  // snapshot() appended to `out` as text (AppendJson's), written without building it where an
  // actor keeps parts of it as text (a Pool's workers).
  virtual void snapshotText(std::string& out) const { AppendJson(out, snapshot()); }
  // What the actor has done so far, for `status` and a cancel: a Pool's settled items, its
  // failures and live workers; null for a machine. `items` false: without the items and
  // failures themselves (a journaling Pool's saved view, whose journal holds them).
  virtual Json sofar(bool items = true) const {
    (void)items;
    return nullptr;
  }
  // What a cancel keeps of the actor: a Pool's sofar() (its settled items, failures and live
  // workers); a machine's children that kept anything, at every depth, as `{"children": {NAME:
  // kept}}` (NAME the invoke's `as` name, else its state's path); null when nothing was done.
  virtual Json kept() const {
    Json out = sofar();
    if (out.is_object()) out.erase("open");
    return out;
  }
  // Where the actor is, for the observation (Run::observe): `{kind, value, children}`, never
  // its context, input or output.
  virtual Json observe() const = 0;
  // observe() appended to `out` as text, with `over`'s members over its own (a null member
  // removes that member): a Pool's worker with its `id`, the run's top without its `kind`.
  virtual void observeText(std::string& out, const Json& over) const;
  // Appends the effects of this actor and those below it that are out now and would not be run
  // again by a restore (not idempotent), each as resumeEffect names them (Run::effectsOut).
  virtual void effectsOut(std::vector<std::string>& out) const { (void)out; }
  // Checks an event and its payload before delivery (throws BadInput); returns the payload read
  // as its type, for deliver() (null when the event has none).
  virtual std::shared_ptr<const Payload> check(int invokeId, const std::string& event,
                                               const Json& payload) const = 0;
  // Checks an input as start() would read it, changing nothing (throws SchemaError).
  virtual void checkInput(const Json& input) const = 0;

  // The actor a snapshot describes. `key` (≥ 0) replaces the stored key: the id this build gives
  // the invoke that made it (Machine::invokeIdNow).
  static std::unique_ptr<Actor> Restore(Run& run, Actor* parent, const Json& snap, int key = -1);

  // A `dispatch` worker of this Pool got a run for an item the Pool took (started it, or found
  // it under its key): a standing Pool's hand-over counts on it
  // (docs/runtime.md#standing-pools-of-runs-over-push-sources-12).
  virtual void itemGotRun() {}

  const Actor* parent() const { return parent_; }
  int key() const { return key_; }
  // The path of the state that started timer `id` or invoke `id` ("" for the actor as a whole:
  // a Pool, a machine's body).
  virtual std::string timerState(int id) const {
    (void)id;
    return {};
  }
  virtual std::string invokeState(int id) const {
    (void)id;
    return {};
  }
  // The invoke `id` of this actor (a Gate's meta and Agent slot), or null.
  virtual const InvokeSpec* invokeSpec(int id) const {
    (void)id;
    return nullptr;
  }

 protected:
  // Runs one step of this actor: its Failure ends it, and its parent (or the run) hears of it.
  void step(const std::function<void()>& fn) {
    touch();
    if (ended_) return;
    try {
      fn();
    } catch (const Failure& f) {
      fail(f);
    }
  }
  void complete(Json output) {
    touch();
    if (ended_) return;
    ended_ = true;
    stop();
    if (parent_ != nullptr) {
      Actor* parent = parent_;
      const int key = key_;
      parent->later([parent, key, output = std::move(output)]() mutable {
        parent->childDone(key, std::move(output));
      });
    } else {
      run_.finish(RunStatus::kDone, std::move(output), "");
    }
  }
  void fail(const Failure& f) {
    touch();
    if (ended_) return;
    ended_ = true;
    stop();
    if (parent_ != nullptr) {
      Actor* parent = parent_;
      const int key = key_;
      parent->later([parent, key, copy = f] { parent->childFailed(key, copy); });
    } else {
      run_.finish(RunStatus::kFailed, f.detail(), f.reason());
    }
  }

  Run& run_;
  Actor* parent_;
  // In this order, with poolBelow_ next: the int and the two flags share one word (a parked
  // worker is an actor: 16 bytes a worker, docs/performance.md).
  std::string prefix_;
  int key_;
  bool ended_ = false;
  // The liveness token that tasks posted for this actor hold weakly: made when one is first
  // posted (a worker that finishes at once never needs one), gone with the actor.
  std::weak_ptr<int> token() {
    if (!alive_) alive_ = std::make_shared<int>(0);
    return alive_;
  }
  // A Pool made here: it and every actor above it are poolBelow().
  void markPool() {
    for (Actor* a = this; a != nullptr; a = a->parent_) a->poolBelow_ = true;
  }
  // `observe()`'s members, with `over`'s over them (a null one removes that member).
  static Json Over(Json base, const Json& over);
  friend class Run;

 private:
  bool poolBelow_ = false;
  std::shared_ptr<int> alive_;
  uint64_t version_ = 0;
};

}  // namespace jr2rt
