// The runner's verbs sent to a `serve` (`--server URL`): each verb is one or two requests to the
// routes of docs/serve.md, and prints what the same verb prints against the store, with the
// same `--json` shapes and exit codes.
#include "remote.h"

#include <chrono>
#include <iostream>
#include <thread>

#include "http_client.h"
#include "jr2/host.h"
#include "jr2/runner.h"

namespace jr2rt {
namespace {

// A path segment as it goes in a URL: every byte but the unreserved ones percent-encoded.
std::string Segment(const std::string& text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

void PrintJson(const Json& j) {
  std::cout << j.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
}

class Client {
 public:
  explicit Client(const RemoteCall& call) : call_(call) {
    base_ = call.server;
    while (!base_.empty() && base_.back() == '/') base_.pop_back();
    if (base_.rfind("http://", 0) != 0)
      throw BadInput(
          "`--server` takes the URL of a serve, such as http://127.0.0.1:8470, not `" +
          Printable(call.server) + "`" +
          (base_.rfind("https://", 0) == 0 ? " (serve speaks plain http on loopback)" : ""));
  }

  // One request; a refusal is the serve's own line. A `503` that says when to come back (a run
  // another command drives) is asked again, for up to 30 s.
  Json call(const std::string& method, const std::string& path, const Json& body = nullptr) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      HttpReply reply;
      try {
        reply = HttpCall(method, base_ + path, body.is_null() ? "" : body.dump(), headers(), 60000);
      } catch (const Failure& f) {
        throw BadInput("cannot reach serve at " + base_ + ": " + f.reason());
      }
      if (reply.status == 503 && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        continue;
      }
      return check(reply);
    }
  }

  // A feed as server-sent events: each event's data to `line`, until the stream ends.
  void stream(const std::string& path, const std::function<void(const Json&)>& line) {
    std::string pending;
    HttpReply reply;
    try {
      reply = HttpStream(base_ + path, headers(), [&](const std::string& piece) {
        pending += piece;
        for (size_t end; (end = pending.find("\n\n")) != std::string::npos;) {
          const std::string event = pending.substr(0, end);
          pending.erase(0, end + 2);
          size_t at = 0;
          while (at < event.size()) {
            size_t eol = event.find('\n', at);
            if (eol == std::string::npos) eol = event.size();
            const std::string field = event.substr(at, eol - at);
            if (field.rfind("data: ", 0) == 0) line(Json::parse(field.substr(6)));
            at = eol + 1;
          }
        }
        return true;
      });
    } catch (const Failure& f) {
      throw BadInput("cannot follow the feed at " + base_ + ": " + f.reason());
    }
    if (reply.status != 200) check(reply);
  }

 private:
  std::vector<std::pair<std::string, std::string>> headers() const {
    return {{"Authorization", "Bearer " + call_.token}};
  }

  Json check(const HttpReply& reply) const {
    Json doc = Json::parse(reply.body, nullptr, false);
    if (reply.status >= 200 && reply.status < 300) {
      if (doc.is_discarded())
        throw BadInput("serve at " + base_ + " answered something that is not JSON");
      return doc;
    }
    std::string error = doc.is_object() && doc.contains("error") && doc["error"].is_string()
                            ? doc["error"].get<std::string>()
                            : "(no error line)";
    throw BadInput("serve answered " + std::to_string(reply.status) + ": " + error);
  }

  const RemoteCall& call_;
  std::string base_;
};

// The local verbs' shapes: a Gate `{name, meta, accepts, menu}` (and `run` in a list of them).
Json LocalGate(const Json& g) {
  return {{"name", g.value("gate", "")},
          {"meta", g.value("meta", Json(nullptr))},
          {"accepts", g.value("accepts", Json::array())},
          {"menu", g.value("menu", Json::array())}};
}

class Verbs {
 public:
  Verbs(const RemoteCall& call, const std::function<void(const std::string&)>& say)
      : call_(call), say_(say), client_(call) {}

  int main() {
    const std::string& v = call_.verb;
    const auto& p = call_.positional;
    if (v == "run") return run();
    if (v == "send") {
      if (p.size() < 3 || p.size() > 4) throw BadInput("`send` takes RUN GATE EVENT [JSON]");
      const Json payload = p.size() == 4 ? ParseExternalJson(p[3], "the payload") : Json::object();
      const Json answer =
          client_.call("POST", "/runs/" + Segment(p[0]) + "/gates/" + Segment(p[1]) + "/events",
                       {{"event", p[2]}, {"payload", payload}});
      return report(p[0], answer);
    }
    if (v == "status") {
      if (p.size() != 1) throw BadInput("`status` takes RUN");
      return report(p[0], client_.call("GET", "/runs/" + Segment(p[0])));
    }
    if (v == "gates") return gates();
    if (v == "runs") return runs();
    if (v == "cancel") {
      if (p.size() != 1) throw BadInput("`cancel` takes RUN");
      const Json answer =
          client_.call("POST", "/runs/" + Segment(p[0]) + "/events", {{"type", "CANCEL"}});
      if (call_.json) PrintJson({{"run", p[0]}, {"status", answer.value("status", "")}});
      say_("run " + Printable(p[0]) + " was cancelled");
      return kExitDone;
    }
    if (v == "log") return log();
    throw BadInput("`" + Printable(v) + "` works on the store itself, not through `--server`: " +
                   "run it where the store is");
  }

 private:
  int run() {
    if (!call_.positional.empty())
      throw BadInput("`run` takes no positional arguments; give the input with --input");
    Json answer = client_.call("POST", "/workflows/" + Segment(call_.workflow) + "/runs",
                               {{"input", call_.input}});
    const std::string id = answer.value("runId", "");
    say_("run " + id + " started on serve");
    // As the local `run`: until it ends, or (without --follow) until it waits for a person.
    for (;;) {
      Json now = client_.call("GET", "/runs/" + Segment(id));
      const std::string status = now.value("status", "");
      const bool waitsForPerson = now.contains("gates") && !now["gates"].empty();
      if (status != "waiting" || (waitsForPerson && !call_.follow)) return report(id, now);
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }

  // What `status` prints: the run's status and Gates; its output once it ended.
  int report(const std::string& run, const Json& doc) {
    const std::string status = doc.value("status", "");
    const std::string id = doc.value("runId", run);
    Json gates = Json::array();
    for (const auto& g : doc.value("gates", Json::array())) gates.push_back(LocalGate(g));
    if (call_.json) {
      Json out = {{"run", id}, {"status", status}, {"gates", gates}};
      for (const char* key : {"workflow", "output", "reason", "items", "failures"}) {
        if (doc.contains(key)) out[key] = doc[key];
      }
      PrintJson(out);
    }
    if (status == "waiting") {
      say_("run " + Printable(id) + " is waiting at " + std::to_string(gates.size()) + " Gate" +
           (gates.size() == 1 ? "" : "s") + (gates.empty() ? ", with no Gate open" : ":"));
      for (const auto& g : gates) {
        std::string accepts;
        for (const auto& e : g["accepts"]) accepts += "  " + e.get<std::string>();
        say_("  " + Printable(g["name"].get<std::string>()) + accepts);
      }
    } else {
      say_("run " + Printable(id) + " ended " + status +
           (doc.value("reason", "").empty() ? "" : ": " + Printable(doc.value("reason", ""))));
      if (!call_.json && doc.contains("output") && !doc["output"].is_null())
        PrintJson(doc["output"]);
    }
    return ExitCodeOf(RunStatusFrom(status));
  }

  int gates() {
    if (call_.positional.size() > 1) throw BadInput("`gates` takes at most RUN");
    const std::string prefix = call_.positional.empty() ? "" : call_.positional[0];
    Json all = Json::array();
    for (const auto& g : client_.call("GET", "/gates")) {
      const std::string run = g.value("runId", "");
      if (run.rfind(prefix, 0) != 0 || g.value("workflow", "") != call_.workflow) continue;
      if (call_.json) {
        Json gate = LocalGate(g);
        gate["run"] = run;
        all.push_back(std::move(gate));
        continue;
      }
      std::cout << run << "  " << Printable(g.value("gate", ""));
      for (const auto& e : g.value("accepts", Json::array()))
        std::cout << "  " << e.get<std::string>();
      std::cout << "\n";
    }
    if (call_.json) PrintJson(all);
    return kExitDone;
  }

  int runs() {
    if (!call_.positional.empty()) throw BadInput("`runs` takes no run; `status RUN` shows one");
    Json list = Json::array();
    const Json found = client_.call("GET", "/runs");
    // The serve lists newest first; the store's `runs`, oldest change first.
    for (auto it = found.rbegin(); it != found.rend(); ++it) {
      const Json& r = *it;
      if (r.value("workflow", "") != call_.workflow) continue;
      if (!call_.all && r.value("status", "") != "waiting") continue;
      if (call_.json) {
        list.push_back({{"run", r.value("runId", "")},
                        {"workflow", r.value("workflow", "")},
                        {"status", r.value("status", "")},
                        {"updated", r.value("updated", int64_t{0})}});
        continue;
      }
      std::string status = r.value("status", "");
      status.resize(std::max<size_t>(status.size(), 10), ' ');
      std::cout << r.value("runId", "") << "  " << status << "  "
                << LocalTime(r.value("updated", int64_t{0})) << "\n";
    }
    if (call_.json) PrintJson(list);
    return kExitDone;
  }

  int log() {
    if (call_.positional.size() != 1) throw BadInput("`log` takes RUN");
    Json all = Json::array();
    client_.stream(
        "/runs/" + Segment(call_.positional[0]) + "/events" + (call_.follow ? "" : "?follow=false"),
        [&](const Json& f) {
          const Json doc = {{"seq", f.value("seq", int64_t{0})},
                            {"time", f.value("time", int64_t{0})},
                            {"kind", f.value("kind", "")},
                            {"data", f.value("data", Json(nullptr))},
                            {"line", f.value("line", "")}};
          if (call_.json && !call_.follow) {
            all.push_back(doc);
          } else if (call_.json) {
            std::cout << doc.dump(-1, ' ', false, Json::error_handler_t::replace) << std::endl;
          } else if (!doc["line"].get<std::string>().empty()) {
            std::cout << LocalTime(doc["time"].get<int64_t>()) << "  "
                      << Printable(doc["line"].get<std::string>()) << std::endl;
          }
        });
    if (call_.json && !call_.follow) PrintJson(all);
    return kExitDone;
  }

  const RemoteCall& call_;
  const std::function<void(const std::string&)>& say_;
  Client client_;
};

}  // namespace

int Remote(const RemoteCall& call, const std::function<void(const std::string&)>& say) {
  return Verbs(call, say).main();
}

}  // namespace jr2rt
