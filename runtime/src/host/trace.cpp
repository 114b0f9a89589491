// A run's trace, written from its stored feed (trace.h).
#include "host/trace.h"

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <ostream>
#include <string_view>

#include "jr2/host.h"
#include "jr2/run.h"
#include "jr2/stdlib.h"

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

namespace {

// The `output` lines of each process (by where it ran and stream) that a later `result` may
// have left out of its own text (MachineActor::traceResult): the last ones only.
class ToldLines {
 public:
  void saw(const FeedLine& f) {
    if (f.kind != "output" || !f.data.is_object()) return;
    auto& lines = lines_[{f.data.value("effect", ""), f.data.value("stream", "")}];
    lines.push_back(f.data.value("line", ""));
    if (lines.size() > kKept) lines.pop_front();
  }

  // Puts back into a `result`'s output (or its Failure's detail) the start of each stream that
  // its `told` left out, from those lines; `told` is then dropped. One whose lines are not what
  // it says (never, unless the feed was changed) is left as stored, `told` and all: its replay
  // then shows where.
  void putBack(Json& data) const {
    auto told = data.find("told");
    if (told == data.end() || !told->is_object()) return;
    Json* result = data.contains("output") ? &data["output"]
                   : data.contains("failure") && data["failure"].is_object()
                       ? &data["failure"]["detail"]
                       : nullptr;
    if (result == nullptr || !result->is_object()) return;
    const std::string where = told->value("lines", "");
    Json whole = *result;
    for (const char* stream : {"stdout", "stderr"}) {
      const auto t = told->find(stream);
      if (t == told->end()) continue;
      const auto it = lines_.find({where, stream});
      const size_t of = t->value("of", size_t{0});
      const size_t used = t->value("used", size_t{0});
      const size_t bytes = t->value("bytes", size_t{0});
      if (it == lines_.end() || it->second.size() < of || used > of || !whole.contains(stream) ||
          !whole[stream].is_string())
        return;
      std::string text;
      for (size_t i = it->second.size() - of; i < it->second.size() - of + used; ++i)
        text += it->second[i] + "\n";
      if (text.size() == bytes + 1) text.pop_back();  // its last line had no newline
      if (text.size() != bytes) return;
      whole[stream] = text + whole[stream].get<std::string>();
    }
    *result = std::move(whole);
    data.erase("told");
  }

 private:
  static constexpr size_t kKept = kCommandFeedLines + 1;  // the lines and the "… more" line
  std::map<std::pair<std::string, std::string>, std::deque<std::string>> lines_;
};

}  // namespace

void ExportTrace(Store& store, const Registry& registry, const std::string& workflow,
                 const std::string& prefix, std::ostream& out) {
  SystemClock clock;
  RunHost(registry, store, clock).exportTrace(prefix, workflow, out);
}

void RunHost::exportTrace(const std::string& prefix, const std::string& workflow,
                          std::ostream& out) {
  TraceCursor cursor = openTrace(prefix, workflow);
  std::string text;
  for (bool ended = false; !ended;) {
    text.clear();
    ended = tracePage(cursor, 4096, text);
    out << text;
  }
}

RunHost::TraceCursor RunHost::openTrace(const std::string& prefix, const std::string& workflow) {
  TraceCursor c;
  c.id = resolve(prefix, workflow);
  const StoredRun run = store_.load(c.id);
  const Json& snap = run.snapshot;
  c.header = {{"trace", kTraceVersion},
              {"run", c.id},
              {"workflow", run.workflow},
              {"assembly", snap.value("assembly", "")},
              {"input", snap.value("input", Json(nullptr))},
              {"home", snap.value("home", Json(nullptr))},
              {"time", nullptr}};
  c.told = std::make_shared<ToldLines>();
  return c;
}

bool RunHost::tracePage(TraceCursor& c, int64_t limit, std::string& out) {
  limit = std::max<int64_t>(limit, 1);
  const auto line = [&out](const Json& j) {
    out += j.dump(-1, ' ', false, Json::error_handler_t::replace);
    out += '\n';
  };
  auto& told = *std::static_pointer_cast<ToldLines>(c.told);
  const auto lines = [&](const std::vector<FeedLine>& page) {
    if (!c.headed) {
      if (!page.empty()) c.header["time"] = page.front().timeMs;
      line(c.header);
      c.headed = true;
    }
    for (const FeedLine& f : page) {
      told.saw(f);
      Json data = f.data;
      if (f.kind == "result" && data.is_object()) told.putBack(data);
      line(Json{{"seq", f.seq},
                {"time", f.timeMs},
                {"kind", f.kind},
                {"data", std::move(data)},
                {"line", f.line}});
      c.after = f.seq;
    }
  };
  const std::vector<FeedLine> page = feed(c.id, c.after, limit);
  lines(page);
  if (static_cast<int64_t>(page.size()) >= limit) return false;
  // The last page: how the run stands, read before the lines stored since this page (a run that
  // moves meanwhile, in another process): its end never runs ahead of the lines that led to it.
  const StoredRun run = store_.load(c.id);
  lines(feed(c.id, c.after));
  const Json& snap = run.snapshot;
  line(Json{{"end",
             {{"status", run.status},
              {"output", snap.value("output", Json(nullptr))},
              {"reason", snap.value("reason", "")}}}});
  return true;
}

}  // namespace jr2rt
