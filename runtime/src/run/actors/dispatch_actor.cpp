// The `dispatch` worker (dispatch_actor.h): the run of its item, asked of the host's door, and
// followed until the host says it ended.
#include "run/actors/dispatch_actor.h"

namespace jr2rt {

void DispatchActor::start(const Json& input) {
  touch();
  Dispatcher* door = run_.dispatcher();
  if (door == nullptr) {
    return refuse("dispatch-error",
                  "nothing here starts runs of `" + workflow_ +
                      "`: a Pool of runs runs under a run host (`serve`, or the runner)");
  }
  Dispatched got;
  try {
    got = door->dispatch(workflow_, item_, input,
                         {{"run", run_.id()}, {"pool", pool_}, {"key", item_}});
  } catch (const StoreUnreachable& e) {
    // A shared store that cannot be reached now: nothing was started (a run the host began is
    // stored only by the commit that follows). Tried again a second later, never failed for it.
    return again(input, "the run store cannot be reached (" + ErrorText(e) + ")");
  } catch (const DispatchPending& e) {
    return again(input, e.what());
  } catch (const BadInput& e) {
    return refuse("start-refused", e.what());
  } catch (const Failure& f) {
    return refuse("dispatch-error", f.reason());
  } catch (const std::runtime_error& e) {
    return refuse("dispatch-error", ErrorText(e));
  }
  run_id_ = got.run;
  retrying_ = false;
  input_ = nullptr;
  if (parent_ != nullptr) parent_->itemGotRun();
  run_.emit("dispatched",
            {{"item", item_}, {"pool", pool_}, {"run", run_id_}, {"existing", got.existing}},
            item_ + ": run " + run_id_ + " of " + workflow_ +
                (got.existing ? " holds its key already" : " started"));
  follow(got);
}

void DispatchActor::ended(const std::string& status, const Json& output,
                          const std::string& reason) {
  touch();
  run_.unawait(run_id_);
  // How the dispatched run ended is an input of this run's turn (docs/runtime.md#traces).
  if (run_.heard()) {
    run_.emit("result",
              {{"run", run_id_},
               {"item", item_},
               {"status", status},
               {"output", output},
               {"reason", reason}},
              "");
  }
  if (status == "done") return complete(output);
  fail(Failure("run " + run_id_ + " of " + workflow_ + " ended " + status +
                   (reason.empty() ? "" : ": " + reason),
               Json{{"run", run_id_}, {"status", status}, {"mark", "settled"}}));
}

void DispatchActor::stop() {
  touch();
  if (!run_id_.empty()) run_.unawait(run_id_);
  // Gone while it asked for its run again: what a try of it left reserved is let go.
  if (run_id_.empty() && retrying_) {
    if (Dispatcher* door = run_.dispatcher()) door->forget(workflow_, item_);
  }
}

std::shared_ptr<const Payload> DispatchActor::check(int, const std::string& event,
                                                    const Json&) const {
  throw BadInput("the worker of item " + item_ + " is a run of its own; it takes no `" + event +
                 "` here");
}

void DispatchActor::timer(int id) {
  touch();
  if (id == kRetry && retrying_ && run_id_.empty()) start(input_);
}

Json DispatchActor::snapshot() const {
  Json out = Obj()("kind", "dispatch")("key", key_)("prefix", prefix_)("name", workflow_)(
      "item", item_)("pool", pool_)("run", run_id_);
  // Waiting to ask again for its run: what it asks with, so that a restore asks again.
  if (retrying_) out["retryInput"] = input_;
  return out;
}

void DispatchActor::restoreFrom(const Json& snap) {
  run_id_ = snap.value("run", "");
  if (run_id_.empty() && snap.contains("retryInput")) {
    // Stored while the store could not be reached: asked again now.
    retrying_ = true;
    input_ = snap["retryInput"];
    later([this] {
      if (retrying_ && run_id_.empty()) start(input_);
    });
    return;
  }
  if (run_id_.empty()) return;
  // Where the run is now (it may have ended while nobody hosted this one).
  run_.await(run_id_, this);
  later([this] {
    Dispatcher* door = run_.dispatcher();
    if (door == nullptr) return;
    if (auto got = door->find(workflow_, item_); got && got->run == run_id_) follow(*got);
  });
}

Json DispatchActor::observe() const {
  // Its run's id once the host gave one (the console links it); null while it is asked for.
  return {{"kind", "run"},
          {"run", run_id_.empty() ? Json(nullptr) : Json(run_id_)},
          {"value", Json::array()},
          {"children", Json::array()}};
}

void DispatchActor::follow(const Dispatched& got) {
  if (got.status == "waiting") {
    run_.await(run_id_, this);
    return;
  }
  const Dispatched copy = got;
  later([this, copy] { ended(copy.status, copy.output, copy.reason); });
}

void DispatchActor::again(const Json& input, const std::string& why) {
  // Said once, as an `asking` line of its own (a replay answers the same tries by it).
  if (!retrying_) {
    run_.emit("asking", {{"item", item_}, {"pool", pool_}, {"why", why}},
              item_ + ": " + why + "; its run is asked for again every second");
  }
  retrying_ = true;
  input_ = input;
  run_.schedule(this, kRetry, run_.clock().nowMs() + 1000);
}

void DispatchActor::refuse(const std::string& mark, const std::string& why) {
  fail(Failure(mark + ": " + why, Json{{"run", nullptr}, {"status", nullptr}, {"mark", mark}}));
}

}  // namespace jr2rt
