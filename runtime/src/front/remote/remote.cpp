// The runner's verbs sent to a `serve` (`--server URL`): each verb of verbs.h is a few requests to
// the routes of docs/serve.md, and gives what the same verb gives against the store — the same
// documents, lines and errors — from the data serve's answers carry for them; the runner prints
// both with the same printers. tests/e2e/server_contract_test.sh holds the two fronts to it.
#include "front/remote/remote.h"

#include <chrono>
#include <csignal>
#include <iostream>
#include <limits>
#include <thread>

#include "effects/http_client.h"
#include "jr2/errors.h"
#include "jr2/host.h"
#include "jr2/runner.h"

namespace jr2rt {
namespace {

// How often a verb that waits for the run asks serve again.
constexpr auto kPoll = std::chrono::milliseconds(200);

// SIGINT or SIGTERM while a verb waits for the run: it stops waiting (serve goes on).
volatile std::sig_atomic_t g_stop = 0;

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

// A request serve refused (4xx): its status, and serve's own line.
class Refused : public BadInput {
 public:
  Refused(unsigned status, const std::string& line) : BadInput(line), status_(status) {}
  unsigned status() const { return status_; }

 private:
  unsigned status_;
};

class Client {
 public:
  explicit Client(const RemoteCall& call) : call_(call) {
    base_ = call.server;
    while (!base_.empty() && base_.back() == '/') base_.pop_back();
    if (base_.rfind("http://", 0) != 0 && base_.rfind("https://", 0) != 0)
      throw BadInput(
          "`--server` takes the URL of a serve, such as http://127.0.0.1:8470 or "
          "https://jr2.example.com:8470, not `" +
          Printable(call.server) + "`");
  }

  // One request; a refusal is the serve's own line. A `503` that says when to come back (a run
  // another command drives) is asked again, for up to 30 s.
  Json call(const std::string& method, const std::string& path, const Json& body = nullptr) {
    return check(send(method, path, body));
  }

  // A trace's JSON lines (no bound on their size; ten minutes at most), or the refusal as
  // call()'s; a 503 is asked again as send() does. Whole or nothing: one that does not end with
  // its `end` line was cut short, and is refused.
  std::string trace(const std::string& path) {
    HttpReply reply = send("GET", path, nullptr, 600000, std::numeric_limits<size_t>::max());
    std::string& body = reply.body;
    if (reply.status != 200) {
      check(reply);
      throw BadInput("serve at " + base_ + " answered " + std::to_string(reply.status));
    }
    const size_t last = body.size() < 2 ? 0 : body.rfind('\n', body.size() - 2);
    const size_t from = last == std::string::npos || body.size() < 2 ? 0 : last + 1;
    if (body.empty() || body.back() != '\n' || body.compare(from, 7, "{\"end\":") != 0)
      throw BadInput("the trace from serve at " + base_ +
                     " was cut short (its last line is not its `end`); export it again");
    return std::move(body);
  }

  // A feed as server-sent events: each event's data to `line` until the stream ends, or until
  // `line` gives false.
  void stream(const std::string& path, const std::function<bool(const Json&)>& line) {
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
            if (field.rfind("data: ", 0) == 0 && !line(Json::parse(field.substr(6)))) return false;
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

  HttpReply send(const std::string& method, const std::string& path, const Json& body,
                 int64_t timeoutMs = 60000, size_t maxBodyBytes = kMaxHttpBodyBytes) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      HttpReply reply;
      try {
        reply = HttpCall(method, base_ + path, body.is_null() ? "" : body.dump(), headers(),
                         timeoutMs, maxBodyBytes);
      } catch (const Failure& f) {
        throw BadInput("cannot reach serve at " + base_ + ": " + f.reason());
      }
      if (reply.status == 503 && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        continue;
      }
      return reply;
    }
  }

  // A refusal (4xx) is serve's own line, which names what was refused and why as the local
  // verb's does; anything else says where it came from.
  Json check(const HttpReply& reply) const {
    Json doc = Json::parse(reply.body, nullptr, false);
    if (reply.status >= 200 && reply.status < 300) {
      if (doc.is_discarded())
        throw BadInput("serve at " + base_ + " answered something that is not JSON");
      return doc;
    }
    const bool lined = doc.is_object() && doc.contains("error") && doc["error"].is_string();
    // The kind serve names (errors.h), else its status's: the exit code is the local verb's.
    const ErrorRule* rule = lined && doc.contains("kind") && doc["kind"].is_string()
                                ? RuleNamed(doc["kind"].get<std::string>())
                                : nullptr;
    const ErrorKind kind = rule != nullptr ? rule->kind : KindOfStatus(reply.status);
    if (lined && kind == ErrorKind::kDrifted)
      throw RunDrifted(doc["error"].get<std::string>());  // exit 4, as against the store
    if (lined && reply.status >= 400 && reply.status < 500)
      throw Refused(reply.status, doc["error"].get<std::string>());
    throw BadInput("serve at " + base_ + " answered " + std::to_string(reply.status) + ": " +
                   (lined ? doc["error"].get<std::string>() : "(no error line)"));
  }

  const RemoteCall& call_;
  std::string base_;
};

class ServerVerbs final : public Verbs {
 public:
  ServerVerbs(RemoteCall call, VerbTell tell)
      : call_(std::move(call)), client_(call_), tell_(std::move(tell)) {
    if (call_.command.empty()) call_.command = call_.workflow;
  }

  std::string where() const override { return call_.server; }

  Changed start(const Json& input, bool follow, bool dropHeld) override {
    const std::string query = dropHeld ? "?drop-held=true" : "";
    const Json answer = client_.call(
        "POST", "/workflows/" + Segment(call_.workflow) + "/runs" + query, {{"input", input}});
    if (answer.value("resumed", false))  // a standing Pool's, as RunHost::resume tells it
      note(ResumedText(call_.workflow, answer.value("runId", ""), answer.value("from", ""),
                       dropHeld));
    // As the local `run`: until it ends or waits for somebody; with --follow, every timer.
    const std::string id = answer.value("runId", "");
    try {
      return {view(await(id, 0, /*underWay=*/true, follow)), false, ""};
    } catch (const Refused& e) {
      // A Caller that may start runs and neither read nor answer them: the run as the start's
      // answer tells it, and why no more is told.
      if (e.status() != 403) throw;
      Json start = answer;
      start["workflow"] = call_.workflow;
      return {
          view(start), false,
          std::string(e.what()) + ": a token with `read` there sees what run " + id + " does next"};
    }
  }

  Json resume(const std::string&, bool) override {
    throw UsageError("`run --resume` works on the store; serve takes its runs up itself");
  }

  Changed send(const std::string& prefix, const std::string& gate, const std::string& event,
               const Json& payload, bool follow) override {
    const Json before = get(prefix);
    const std::string id = before.value("runId", prefix);
    client_.call("POST", "/runs/" + Segment(id) + "/gates/" + Segment(gate) + "/events",
                 {{"event", event}, {"payload", payload}});
    // As the local `send`: until what the answer started is done (the work under way waited for
    // only with --follow).
    return {view(await(id, before.value("seq", int64_t{0}), /*underWay=*/follow, follow)), false,
            ""};
  }

  Changed cancel(const std::string& prefix) override {
    const Json before = get(prefix);
    const std::string id = before.value("runId", "");
    client_.call("POST", "/runs/" + Segment(id) + "/events", {{"type", "CANCEL"}});
    const Json now = client_.call("GET", "/runs/" + Segment(id));
    tell(id, before.value("seq", int64_t{0}), now);
    return {view(now), false, ""};
  }

  Json status(const std::string& prefix) override { return view(get(prefix), /*standing=*/true); }

  GateList gates(const std::string& prefix) override {
    std::string run;
    if (!prefix.empty()) run = get(prefix).value("runId", "");
    GateList out;
    for (const auto& g : client_.call("GET", "/gates")) {
      if (g.value("workflow", "") != call_.workflow) continue;
      if (!run.empty() && g.value("runId", "") != run) continue;
      out.gates.push_back({{"runId", g.value("runId", "")},
                           {"gate", g.value("gate", "")},
                           {"meta", g.value("meta", Json(nullptr))},
                           {"accepts", g.value("accepts", Json::array())},
                           {"menu", g.value("menu", Json::array())},
                           {"fields", g.value("fields", Json::object())}});
    }
    return out;
  }

  Json runs(bool all) override {
    Json list = Json::array();
    const Json found = client_.call("GET", "/runs");
    // The serve lists newest first; the store's `runs`, oldest change first.
    for (auto it = found.rbegin(); it != found.rend(); ++it) {
      const Json& r = *it;
      if (r.value("workflow", "") != call_.workflow) continue;
      if (!all && r.value("status", "") != "waiting") continue;
      list.push_back({{"runId", r.value("runId", "")},
                      {"workflow", r.value("workflow", "")},
                      {"status", r.value("status", "")},
                      {"updated", r.value("updated", int64_t{0})}});
    }
    return list;
  }

  std::string log(const std::string& prefix, bool follow,
                  const std::function<void(const Json&)>& line, std::string* idOut) override {
    const std::string id = get(prefix).value("runId", "");
    if (idOut != nullptr) *idOut = id;
    std::string ended;
    client_.stream(
        "/runs/" + Segment(id) + "/events" + (follow ? "" : "?follow=false"), [&](const Json& f) {
          line(f);
          if (f.value("kind", "") == "ended" && f.contains("data") && f["data"].is_object())
            ended = f["data"].value("status", "");
          return true;
        });
    if (!follow) return "";
    if (ended.empty()) ended = client_.call("GET", "/runs/" + Segment(id)).value("status", "");
    return ended;
  }

  std::string trace(const std::string& prefix) override {
    const std::string id = get(prefix).value("runId", "");
    return client_.trace("/runs/" + Segment(id) + "/trace");
  }

  int64_t prune(int64_t) override {
    throw UsageError("`prune` works on the store itself, not through `--server`");
  }

 private:
  void note(const std::string& text) const {
    if (tell_) tell_("", "note", text);
  }

  // GET /runs/:id of one of this workflow's runs (a prefix resolved by serve), refused as the
  // store refuses another workflow's run.
  Json get(const std::string& prefix) {
    Json doc = client_.call("GET", "/runs/" + Segment(prefix));
    const std::string workflow = doc.value("workflow", "");
    if (workflow != call_.workflow)
      throw BadInput("run " + doc.value("runId", prefix) + " is a run of `" + Printable(workflow) +
                     "`, not `" + Printable(call_.workflow) + "`");
    return doc;
  }

  // Asks for run `id` until it ended, or waits with no work out (and no timer of work under way
  // with `underWay`, no timer at all with `follow`); tells the feed's lines after `seq` as they
  // come. Gives the run's last answer.
  Json await(const std::string& id, int64_t seq, bool underWay, bool follow) {
    struct sigaction sa {};
    sa.sa_handler = [](int sig) { g_stop = sig; };
    sigemptyset(&sa.sa_mask);
    for (int sig : {SIGINT, SIGTERM}) sigaction(sig, &sa, nullptr);
    bool told = false;
    for (;;) {
      if (g_stop != 0) {
        // As the local verb stopped by a signal says which run to take up, this says where the
        // run goes on.
        std::string text = "stopped waiting for run " + id + "; serve goes on with it (`";
        text += call_.command;
        text += " status ";
        text += id;
        text += " --server ";
        text += call_.server;
        text += "` shows it)";
        note(text);
        std::_Exit(128 + g_stop);
      }
      Json now = client_.call("GET", "/runs/" + Segment(id));
      seq = tell(id, seq, now);
      if (now.value("status", "") != "waiting") return now;
      const Json timer = now.value("report", Json::object())
                             .value("text", Json::object())
                             .value("timer", Json(nullptr));
      const bool forTimer =
          timer.is_object() && (follow || (underWay && timer.value("underWay", false)));
      if (!now.value("working", false) && !forTimer) return now;
      if (forTimer && !told) {
        // What the local verb says when it waits for a timer (RunHost::follow).
        const int64_t wait = timer.value("due", int64_t{0}) - SystemClock().nowMs();
        note("run " + id + " has a timer due in " + DurationText(std::max<int64_t>(wait, 0)) +
             (follow ? "; waiting for it (--follow)"
                     : " for work under way; waiting for it (Ctrl-C stops the wait; serve goes "
                       "on with the run)"));
        told = true;
      }
      std::this_thread::sleep_for(kPoll);
    }
  }

  // Tells the lines of run `id`'s feed after `seq`, up to the last one stored when `now` was
  // read (what the local verb tells as each step is stored); gives the last one told.
  int64_t tell(const std::string& id, int64_t seq, const Json& now) {
    const int64_t last = now.value("seq", int64_t{0});
    if (last <= seq) return seq;
    client_.stream("/runs/" + Segment(id) + "/events?follow=false&after=" + std::to_string(seq),
                   [&](const Json& f) {
                     const int64_t at = f.value("seq", int64_t{0});
                     if (at > last) return false;
                     seq = at;
                     const std::string line = f.value("line", "");
                     if (!line.empty() && tell_) tell_(id, f.value("kind", ""), line);
                     return true;
                   });
    return seq;
  }

  // The run as the local verb gives it, from serve's answer; `standing`: the head of its
  // standing workflow, which only `status` shows.
  static Json view(const Json& doc, bool standing = false) {
    Json view = doc.contains("report") ? doc["report"] : Fallback(doc);
    if (!standing) view.erase("standing");
    return view;
  }

  // The view of a Caller that may answer and not read (GET /runs/:id without `report`): the
  // status and the Gates it may answer.
  static Json Fallback(const Json& doc) {
    Json gates = Json::array();
    Json fields = Json::object();
    for (const auto& g : doc.value("gates", Json::array())) {
      gates.push_back({{"gate", g.value("gate", "")},
                       {"meta", g.value("meta", Json(nullptr))},
                       {"accepts", g.value("accepts", Json::array())},
                       {"menu", g.value("menu", Json::array())}});
    }
    return {{"runId", doc.value("runId", "")},
            {"workflow", doc.value("workflow", "")},
            {"status", doc.value("status", "")},
            {"output", nullptr},
            {"reason", ""},
            {"gates", gates},
            {"text", {{"fields", fields}, {"timer", nullptr}, {"chain", ""}, {"hold", nullptr}}}};
  }

  RemoteCall call_;
  Client client_;
  VerbTell tell_;
};

}  // namespace

std::unique_ptr<Verbs> OpenServerVerbs(const RemoteCall& call, VerbTell tell) {
  return std::make_unique<ServerVerbs>(call, std::move(tell));
}

}  // namespace jr2rt
