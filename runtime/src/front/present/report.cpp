// The runner's printers (report.h): every line a verb prints is made here, from data that the
// local verbs and serve's answers both give.
#include "front/present/report.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "jr2/host.h"
#include "jr2/runner.h"

namespace jr2rt {

// report.h. Neither runs anything nor reaches the terminal raw.
std::string ShellQuote(const std::string& word) {
  if (word.empty()) return "''";
  bool plain = true, control = false;
  for (char ch : word) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) control = true;
    if (!(std::isalnum(c) != 0 || std::strchr("_-./:@%+=,", ch) != nullptr) || c >= 0x80)
      plain = false;
  }
  if (plain) return word;
  if (!control && Printable(word) == word) {
    std::string out = "'";
    for (char ch : word) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return out + "'";
  }
  std::string out = "$'";
  for (char ch : word) {
    const auto c = static_cast<unsigned char>(ch);
    char buf[8];
    if (ch == '\'' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f || c >= 0x80) {
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "'";
}

namespace {

// ` { reason: string, note?: string }`: an event's fields (GateFields) as a person reads them.
std::string FieldsText(const Json& fields) {
  if (!fields.is_array() || fields.empty()) return "";
  std::string out = " {";
  for (size_t i = 0; i < fields.size(); ++i) {
    const Json& f = fields[i];
    // An optional field is marked once: `owner: string?` as the .jr2 writes a nullable type, and
    // `note?: string` for one that may be left out for another reason (a default).
    const std::string type = f.value("type", "");
    const bool nullable = !type.empty() && type.back() == '?';
    out += (i ? ", " : " ") + f.value("name", "") +
           (f.value("required", true) || nullable ? "" : "?") + ": " + type;
  }
  return out + " }";
}

// ` '{"reason":"…"}'`: a payload to paste, with a stand-in for each required field.
std::string ExamplePayload(const Json& fields) {
  Json j = Json::object();
  for (const auto& f : fields.is_array() ? fields : Json::array()) {
    if (!f.value("required", true)) continue;
    const std::string type = f.value("type", "");
    j[f.value("name", "")] = type == "int" || type == "float" ? Json(0)
                             : type == "bool"                 ? Json(false)
                                                              : Json("…");
  }
  return j.empty() ? "" : " " + ShellQuote(j.dump());
}

// Why a deadlocked Pool's items can never start (its output's `blocked` and `cycle`):
// `; a dependency cycle: A → B → A; T-3 waits for T-2 (failed), T-4 waits for T-3 (waiting)`.
std::string DeadlockText(const Json& output) {
  std::string out;
  if (const auto c = output.find("cycle"); c != output.end() && c->is_array()) {
    out += "; a dependency cycle: ";
    bool first = true;
    for (const auto& id : *c) {
      out += (first ? "" : " → ") + Printable(id.is_string() ? id.get<std::string>() : id.dump());
      first = false;
    }
  }
  const auto b = output.find("blocked");
  if (b == output.end() || !b->is_array()) return out;
  for (const auto& item : *b) {
    out += "; " + Printable(item.value("id", "")) + " waits for ";
    bool first = true;
    for (const auto& need : item.value("waitsFor", Json::array())) {
      out +=
          (first ? "" : ", ") + Printable(need.value("id", "")) + " (" + need.value("is", "") + ")";
      first = false;
    }
  }
  if (b->size() == 10) out += "; …";
  return out;
}

// `3 settled, 1 failed, 2 live (T-4, T-5)`: what a waiting Pool has done so far.
std::string SofarText(const Json& sofar) {
  const Json live = sofar.value("live", Json::array());
  // A standing Pool keeps counts, not outputs.
  const int64_t settled = sofar.value(
      "settledCount", static_cast<int64_t>(sofar.value("items", Json::object()).size()));
  const int64_t failed = sofar.value(
      "failedCount", static_cast<int64_t>(sofar.value("failures", Json::object()).size()));
  std::string out = std::to_string(settled) + " settled, " + std::to_string(failed) + " failed, " +
                    std::to_string(live.size()) + " live";
  if (!live.empty()) {
    out += " (";
    size_t shown = 0;
    for (const auto& id : live) {
      if (shown == 8) {
        out += ", …";
        break;
      }
      out += (shown++ ? ", " : "") + Printable(id.get<std::string>());
    }
    out += ")";
  }
  return out;
}

// The head of a standing workflow (RunHost::standingState) in one line.
std::string StandingText(const Json& st, const std::string& runner) {
  const std::string name = "standing Pool `" + runner + "`";
  const std::string state = st.value("state", "");
  const auto n = [&](const char* key) { return std::to_string(st.value(key, int64_t{0})); };
  const std::string holds = n("held") + " held items and " + n("keys") + " live runs";
  const std::string count = n("streak") + " counted runs in a row";
  if (state == "new") return name + " has never run: `" + runner + " serve` starts it";
  if (state == "live")
    return name + ": its live run is " + st.value("run", "") + ", since " +
           LocalTime(st.value("startedMs", int64_t{0})) + ", with " + holds;
  if (state == "paused")
    return name + " is paused (" + st.value("paused", "") + "): " + Printable(st.value("why", "")) +
           "; it keeps " + holds + "; `" + runner +
           " run` resumes it (`--drop-held` without the held items)";
  return name + ": its run " + st.value("run", "") + " ended " + st.value("ended", "") + " (" +
         count + "); a running `serve` starts the next at " +
         LocalTime(st.value("retryAtMs", int64_t{0})) + ", with " + holds;
}

}  // namespace

void PrintJson(const Json& doc) {
  std::cout << doc.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
}

int PrintRun(const Json& view, const PrintOptions& o) {
  const std::string id = view.value("runId", "");
  const std::string status = view.value("status", "");
  const Json text = view.value("text", Json::object());
  const std::string chain = text.value("chain", "");
  const Json hold = text.value("hold", Json(nullptr));
  const Json output = view.value("output", Json(nullptr));
  const std::string reason = Printable(view.value("reason", ""));
  const Json standing = view.value("standing", Json(nullptr));
  std::ostream& err = std::cerr;
  const std::string& w = o.runner;
  const std::string& cmd = o.command.empty() ? o.runner : o.command;
  const std::string tail = o.server.empty() ? "" : " --server " + ShellQuote(o.server);
  if (o.json) {
    Json doc = view;
    doc.erase("text");
    PrintJson(doc);
  }
  if (status == "waiting") {
    const Json gates = view.value("gates", Json::array());
    if (gates.empty()) {
      err << w << ": run " << id << " is waiting, with no Gate open:\n";
    } else {
      err << w << ": run " << id << " is waiting at " << gates.size() << " Gate"
          << (gates.size() == 1 ? "" : "s") << ":\n";
    }
    const Json fields = text.value("fields", Json::object());
    for (const auto& g : gates) {
      const std::string name = g.value("gate", "");
      const Json meta = g.value("meta", Json(nullptr));
      err << "  " << Printable(name);
      if (meta.is_object() && !meta.empty())
        err << "  " << Printable(meta.dump(-1, ' ', false, Json::error_handler_t::replace));
      err << "\n";
      for (const auto& e : g.value("menu", Json::array())) {
        const std::string event = e.value("event", "");
        const std::string description = e.value("description", "");
        const Json f = fields.value(event, Json::array());
        err << "    " << event << FieldsText(f)
            << (description.empty() ? "" : "  — " + Printable(description)) << "\n      " << cmd
            << " send " << id << " " << (name.rfind('-', 0) == 0 ? "-- " : "") << ShellQuote(name)
            << " " << event << ExamplePayload(f) << tail << "\n";
      }
    }
    if (view.contains("sofar")) err << "  so far: " << SofarText(view["sofar"]) << "\n";
    // Work that was out when the run was last stored: its host may be at it still, or was
    // stopped with it (Ctrl-C, a kill), and then nothing goes on until the run is taken up.
    if (const Json stopped = text.value("stopped", Json::array());
        stopped.is_array() && !stopped.empty() && o.server.empty()) {
      err << "  and " << stopped.size() << " effect" << (stopped.size() == 1 ? " was" : "s were")
          << " out when the run was last stored (";
      for (size_t i = 0; i < stopped.size(); ++i)
        err << (i ? ", " : "") << Printable(stopped[i].get<std::string>());
      err << "): a `run` or `serve` driving the run goes on with "
          << (stopped.size() == 1 ? "it" : "them") << "; if none is (it was stopped), `" << cmd
          << " run --resume " << id << "` takes the run up again, and "
          << (stopped.size() == 1 ? "it reads" : "each reads")
          << " `interrupted` (it is not run again by itself)\n";
    }
    if (!chain.empty() && hold.is_object())
      err << "  standing: " << chain << "; " << hold.value("held", 0) << " held, "
          << hold.value("keys", 0) << " live runs\n";
    if (const Json timer = text.value("timer", Json(nullptr)); timer.is_object()) {
      const bool underWay = timer.value("underWay", false);
      const int64_t wait = timer.value("due", int64_t{0}) - SystemClock().nowMs();
      err << "  and a timer" << (underWay ? " of work under way" : "") << ", "
          << (wait > 0 ? "due in " + DurationText(wait) : "due now");
      if (!o.server.empty()) {
        // serve fires every timer of the runs it hosts on time: nobody has to wait for it.
        err << ": serve fires it then\n";
      } else if (gates.empty() || underWay) {
        err << ": a `run` process waiting for it goes on with it; if none is, `" << cmd
            << " run --resume " << id << "` does\n";
      } else {
        err << ": it fires at the next `send`, or wait for it with `" << cmd << " run --resume "
            << id << " --follow`\n";
      }
    }
  } else if (status == "done") {
    err << w << ": run " << id << " ended done\n";
    if (!o.json) PrintJson(output);
  } else if (status == "deadlocked") {
    err << w << ": run " << id
        << " ended deadlocked: no worker is live, and the items left can never start ("
        << output.value("items", Json::object()).size() << " settled)" << DeadlockText(output)
        << "\n";
    if (!o.json) PrintJson(output);
  } else if (status == "failed") {
    err << w << ": run " << id << " ended failed: " << reason << "\n";
    if (!o.json && !output.is_null()) PrintJson(output);
  } else if (status == "error") {
    err << w << ": run " << id << " ended error: " << reason << "\n";
  } else if (status == "cancelled" && !chain.empty()) {
    err << w << ": run " << id << " was cancelled: standing Pool " << chain
        << " is paused, holding " << (hold.is_object() ? hold.value("held", 0) : 0) << " items and "
        << (hold.is_object() ? hold.value("keys", 0) : 0) << " live runs; `" << cmd
        << " run` resumes it (`--drop-held` without the held items)\n";
  } else if (status == "cancelled") {
    err << w << ": run " << id << " was cancelled";
    if (output.is_object()) {
      err << "; what it had done is kept: " << output.value("items", Json::object()).size()
          << " settled, " << output.value("failures", Json::object()).size() << " failed";
    }
    err << "\n";
    if (!o.json && !output.is_null()) PrintJson(output);
  }
  // The head of its standing workflow, unless the lines above said it (this run's cancel).
  const bool itsHead = standing.is_object() && standing.value("run", "") == id;
  if (standing.is_object() && !(itsHead && standing.value("state", "") == "live") &&
      !(itsHead && standing.value("paused", "") == "cancelled"))
    err << StandingText(standing, w) << "\n";
  return ExitCodeOf(RunStatusFrom(status));
}

void PrintGates(const Json& gates, const PrintOptions& o) {
  if (o.json) {
    Json all = Json::array();
    for (Json g : gates) {
      g.erase("fields");
      all.push_back(std::move(g));
    }
    PrintJson(all);
    return;
  }
  for (const auto& g : gates) {
    const Json fields = g.value("fields", Json::object());
    std::cout << g.value("runId", "") << "  " << Printable(g.value("gate", ""));
    for (const auto& e : g.value("accepts", Json::array())) {
      const std::string event = e.get<std::string>();
      std::cout << "  " << event << FieldsText(fields.value(event, Json::array()));
    }
    std::cout << "\n";
  }
}

void PrintRuns(const Json& runs, bool all, const std::string& where, const PrintOptions& o) {
  if (o.json) {
    PrintJson(runs);
    return;
  }
  if (runs.empty()) {
    std::cerr << o.runner << ": no " << (all ? "" : "waiting ") << "runs of `" << o.runner
              << "` in `" << Printable(where) << "`"
              << (all ? "" : "; `runs --all` lists the ended ones too") << "\n";
    return;
  }
  for (const auto& r : runs) {
    // id, status, then when it last changed (local time), padded so the columns line up.
    std::string status = r.value("status", "");
    status.resize(std::max<size_t>(status.size(), 10), ' ');
    std::cout << r.value("runId", "") << "  " << status << "  "
              << LocalTime(r.value("updated", int64_t{0})) << "\n";
  }
}

void PrintFeedLine(const Json& line, bool follow, const PrintOptions& o, Json& all) {
  const Json doc = {{"seq", line.value("seq", int64_t{0})},
                    {"time", line.value("time", int64_t{0})},
                    {"kind", line.value("kind", "")},
                    {"data", line.value("data", Json(nullptr))},
                    {"line", line.value("line", "")}};
  if (o.json && !follow) {
    all.push_back(doc);
  } else if (o.json) {  // --follow --json: one JSON document per line, as they come
    std::cout << doc.dump(-1, ' ', false, Json::error_handler_t::replace) << std::endl;
  } else if (const std::string text = doc["line"].get<std::string>(); !text.empty()) {
    // The events that are only data are for --json.
    std::cout << LocalTime(doc["time"].get<int64_t>()) << "  " << Printable(text) << std::endl;
  }
}

void PrintFeedEnd(const std::string& run, const std::string& status, const PrintOptions& o) {
  std::cerr << o.runner << ": run " << run << " ended " << status << "\n";
}

}  // namespace jr2rt
