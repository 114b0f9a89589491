// A run's trace, written from its stored feed (trace.h).
#include "host/trace.h"

#include <array>
#include <ostream>
#include <string_view>

#include "jr2/host.h"
#include "jr2/run.h"

namespace jr2rt {

bool IsTraceInput(const std::string& kind, const Json& data) {
  // answered: a Gate's answer (a person's, a Caller's or an Agent's pick: `by` says whose);
  // timer: a timer fired; result: an effect's result or Failure, or how a dispatched run ended;
  // source: a Source's answer to `next` (but std.queue's) or to a read; hook: a delivery.
  static constexpr std::array<std::string_view, 5> kInputs = {"answered", "timer", "result",
                                                              "source", "hook"};
  for (std::string_view k : kInputs) {
    if (kind == k) return true;
  }
  // An Agent's reply that was not an answer (refused, or none left): its pick is spent. A
  // cancel. (An Agent's answer is its `answered`; a run's other ends are what it did.)
  if (kind == "agent") return data.is_object() && !data.value("answered", false);
  if (kind == "ended") return data.is_object() && data.value("status", "") == "cancelled";
  // A standing run's end by its host: handed over to the next run, or ended at its bound.
  return kind == "handed-over" || kind == "bound";
}

void ExportTrace(Store& store, const Registry& registry, const std::string& workflow,
                 const std::string& prefix, std::ostream& out) {
  SystemClock clock;
  RunHost(registry, store, clock).exportTrace(prefix, workflow, out);
}

void RunHost::exportTrace(const std::string& prefix, const std::string& workflow,
                          std::ostream& out) {
  const std::string id = resolve(prefix, workflow);
  const StoredRun run = store_.load(id);
  const Json& snap = run.snapshot;
  const std::vector<FeedLine> feed = this->feed(id, 0);
  out << Json{{"trace", kTraceVersion},
              {"run", id},
              {"workflow", run.workflow},
              {"assembly", snap.value("assembly", "")},
              {"input", snap.value("input", Json(nullptr))},
              {"home", snap.value("home", Json(nullptr))},
              {"time", feed.empty() ? Json(nullptr) : Json(feed.front().timeMs)}}
             .dump(-1, ' ', false, Json::error_handler_t::replace)
      << '\n';
  for (const FeedLine& f : feed) {
    out << Json{{"seq", f.seq},
                {"time", f.timeMs},
                {"kind", f.kind},
                {"data", f.data},
                {"line", f.line}}
               .dump(-1, ' ', false, Json::error_handler_t::replace)
        << '\n';
  }
  out << Json{{"end",
               {{"status", run.status},
                {"output", snap.value("output", Json(nullptr))},
                {"reason", snap.value("reason", "")}}}}
             .dump(-1, ' ', false, Json::error_handler_t::replace)
      << '\n';
}

}  // namespace jr2rt
