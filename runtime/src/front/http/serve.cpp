// `<runner> serve` (docs/runtime.md#serve): one process hosts every live run of its workflows on
// the run host's engine, fires their timers on time, answers the CLI's verbs through the store's
// inbox, and answers HTTP (Boost.Beast) with the routes of docs/serve.md: the open band (the
// observation), the guarded band (a Caller's scope per route), hooks (their HMAC) and the hook
// log (the instance token).
//
// Two threads of its own (docs/runtime.md#two-threads; the commits have a third, host/commit.cpp):
// the connections (accepting, TLS, reading and parsing HTTP, rendering answers' JSON and writing
// them) run on serve's network thread, `jr2-net`, the Server's routes on the engine's. A request
// read whole is handed to the engine as data and routed between two turns (RunHost::queue), after
// the commit of the turn before: what it reads is what is stored, and what it changes is a step of
// the next turn, whose commit comes before its answer (RunHost::afterCommit). The answer is handed
// back to the connection's thread. Nothing here drives the engine.
#include "front/http/serve.h"

#include <linux/filter.h>
#include <openssl/ssl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <unordered_set>

#include "core/occupancy.h"
#include "front/console/console.h"
#include "front/present/report.h"
#include "jr2/auth.h"
#include "jr2/callers.h"
#include "jr2/errors.h"
#include "jr2/verbs.h"
#include "run/engine.h"

namespace jr2rt {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

constexpr size_t kBodyLimit = 1 << 20;  // docs/serve.md#every-request: over 1 MiB, 413
constexpr int64_t kHookLogLimit = 1000;
// A request must arrive whole within this; then it is answered 408.
constexpr auto kReadLimit = std::chrono::seconds(10);
// While serve stops (its drain), a request on its way has this long to arrive whole.
constexpr auto kDrainReadLimit = std::chrono::milliseconds(250);
// A connection is kept alive after an answer (HTTP/1.1's default) for at most this many requests
// (then the answer says `Connection: close` and the client opens another), and is closed when its
// next request has not begun within kReadLimit.
constexpr int kRequestsPerConnection = 1000;
// The feed is sent a page of lines at a time, and the next page only once the client has taken
// the last: a follower that does not read holds one page, not the feed.
constexpr int64_t kFeedPage = 128;
// The engine time that following feeds may take in one pass between turns; the rest waits for
// the next pass, so that a Gate answer never queues behind every follower.
constexpr auto kPumpBudget = std::chrono::milliseconds(4);
// A follower that took nothing of its page for this long is let go.
constexpr auto kStallLimit = std::chrono::seconds(30);
// The open band's event streams (no token): at most this many from one address, and a quarter
// of the connections in all, so that followers without a token can never lock out a Caller.
constexpr int kOpenStreamsPerAddress = 32;

class Session;

// What serve holds open, and its bounds (shared with the sessions, which may outlive the
// Server object by a few handlers). The bounds are set before the threads start; the counts are
// the network thread's and the engine's (the open band's slots, the hooks' verdicts, /metrics):
// each read and written under `mu`.
struct Limits {
  int maxConnections = 1024;
  int maxOpenStreams = 256;
  std::mutex mu;
  int connections = 0;
  int sockets = 0;  // connections whose socket is open still: the drain waits for none
  int openStreams = 0;
  std::map<std::string, int> openByAddress;
  // For GET /metrics: the answers by route (its pattern) and status, the hook verdicts, and the
  // connections sent away.
  std::map<std::pair<std::string, unsigned>, int64_t> answers;
  std::map<std::pair<std::string, std::string>, int64_t> verdicts;
  int64_t evicted = 0;
  int64_t reused = 0;  // requests read on a connection kept alive after an answer
  // Every connection open, for the drain (Session's constructor and destructor keep it).
  std::unordered_set<Session*> open;
  std::atomic<bool> stopping{false};  // SIGTERM came: a request not yet routed is answered 503

  // An answer given, for /metrics (a request that found no route counts as "other").
  void countAnswer(const std::string& route, unsigned status) {
    std::lock_guard<std::mutex> lock(mu);
    ++answers[{route.empty() ? "other" : route, status}];
  }
  int openConnections() {
    std::lock_guard<std::mutex> lock(mu);
    return connections;
  }
  int openSockets() {
    std::lock_guard<std::mutex> lock(mu);
    return sockets;
  }
};

// A refusal with its HTTP status: `{"error": message}`.
struct HttpError {
  unsigned status;
  std::string message;
  int retryAfter = 0;  // seconds, for a 503 that will pass
  // The error's kind (errors.h), named in the body; unset: the status's (KindOfStatus).
  std::optional<ErrorKind> kind = std::nullopt;
};

// Beast's string_view (Boost's) as the standard one.
std::string_view SV(beast::string_view v) { return {v.data(), v.size()}; }

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// `%2E` and the like; a `%` that is not followed by two hex digits is refused.
std::string PercentDecode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const int hi = i + 2 < text.size() ? hex(text[i + 1]) : -1;
    const int lo = i + 2 < text.size() ? hex(text[i + 2]) : -1;
    if (hi < 0 || lo < 0)
      throw HttpError{400, "the path has a `%` that is not followed by two hex digits"};
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

class Server;

// One connection: a request read within 10 s (a client that never finishes is cut off, not a
// stuck server), then one JSON answer, and so on while the client keeps it alive (HTTP/1.1: up
// to kRequestsPerConnection requests; one that sends nothing more for 10 s is closed, silently);
// or an event stream for as long as the run waits, which ends the connection.
//
// Its state is the network thread's. The engine's thread calls only request() and route() (while
// the request is routed: the connection reads nothing more until it is answered), the answers
// (answer, refuse, answerText, answerAsset, stream: each handed to the network thread, which
// renders and writes it; the first one of a request wins) and pumpNow().
class Session : public std::enable_shared_from_this<Session> {
 public:
  // `tls`: the server's TLS context (`--tls-cert`), or null for plain HTTP; `net`: the network
  // thread's context, which the socket is of.
  Session(std::shared_ptr<boost::asio::io_context> net, tcp::socket socket, Server& server,
          std::shared_ptr<Limits> limits, boost::asio::ssl::context* tls);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start(bool over);
  const http::request<http::string_body>& request() const { return parser_->get(); }
  const std::string& address() const { return address_; }
  // Still waiting for its request (an idle connection, the first to go when serve is full).
  bool reading() const { return reading_; }
  // Which of its reads this is: an entry of Server::reading_ stands for one read only.
  uint64_t readNo() const { return readNo_; }
  // Serve is full and this connection has sent no request: it is answered 503 and closed.
  void evict();
  // Serve stops (SIGTERM): a request not yet routed is answered 503 (nothing of it was done),
  // an event stream ends once its last page is taken, an answer under way is sent whole.
  void drain();
  // Closes the connection with no answer: a drain that failed for it (on the network thread).
  void cut() { close(); }
  // Whether its socket was closed (a Session may outlive its socket, held by a handler queued
  // for a turn that never comes once serve stops). Any thread.
  bool closed() const { return closed_.load(); }
  // Takes one of the open band's stream slots; false (nothing taken) when its address or the
  // band is at its bound.
  bool takeOpenSlot();

  // The route's pattern (`GET /runs/:id`), for the metrics; "" until it is known.
  void route(std::string pattern) { route_ = std::move(pattern); }

  // From either thread: the JSON is rendered and written on the network thread.
  void answer(unsigned status, Json body, int retryAfter = 0) {
    onNet([this, status, body = std::move(body), retryAfter] {
      if (answered_) return;  // one answer a connection (a drain may come after a route's)
      if (retryAfter > 0) res_.set(http::field::retry_after, std::to_string(retryAfter));
      respond(status, "application/json", Dump(body) + "\n");
    });
  }
  // The body of every refusal: `{error, kind}`, the kind as the table names it (errors.h), which
  // the `--server` client reads to exit as the local verb does.
  void refuse(const HttpError& e) {
    const ErrorRule& rule = RuleOf(e.kind ? *e.kind : KindOfStatus(e.status));
    Json body = {{"error", e.message}, {"kind", rule.name}};
    if (rule.kind == ErrorKind::kDrifted) body["drifted"] = true;
    answer(e.status, body, e.retryAfter);
  }
  // A text answer (GET /metrics).
  void answerText(unsigned status, std::string body, const char* type) {
    onNet([this, status, body = std::move(body), type]() mutable {
      respond(status, type, std::move(body));
    });
  }
  // One of the web console's assets (GET /ui/…, console.h): the page's policy allows scripts
  // and styles from serve only, never inline, and no frame.
  void answerAsset(const ConsoleAsset& asset) {
    onNet([this, &asset] {
      respond(200, asset.type, std::string(reinterpret_cast<const char*>(asset.bytes), asset.size),
              "no-cache", kConsolePolicy);
    });
  }

  // Turns the connection into an event stream: `pump` is asked for at most a page of what to
  // send, at once, then every 200 ms, and again as soon as the client has taken a page while
  // more waits; it gives the text, whether the stream ends after it, and whether more lines
  // wait now.
  struct Page {
    std::string text;
    bool last = false;
    bool more = false;
  };
  using Pump = std::function<Page(int64_t limit)>;
  // `type`: the body's (a feed's events, or a trace's JSON lines). On the engine's thread: the
  // pump is the engine's, and only ever called there.
  void stream(Pump pump, const char* type = "text/event-stream");
  // One pump, when the client has taken the last page (Server::runPumps, between two turns, on
  // the engine's thread): the page is handed to the network thread.
  void pumpNow();

 private:
  // Runs `fn` on the network thread, after what was handed to it before.
  template <class F>
  void onNet(F&& fn) {
    boost::asio::post(net_, [self = shared_from_this(), fn = std::forward<F>(fn)]() mutable {
      (void)self;  // kept alive until `fn` ran
      fn();
    });
  }
  // Asks the engine for the stream's next page (Server::wantPump, on its thread).
  void askPage();
  // A page the engine pumped, on the network thread.
  void deliver(const Page& page);
  // Every answer but an event stream's, once a connection: counted for the metrics by route and
  // status, with the headers that keep a browser from reading it as something else (its
  // Content-Security-Policy, no sniffing of its type, no referrer, no frame).
  void respond(unsigned status, const char* type, std::string body, const char* cache = "no-store",
               const char* policy = kApiPolicy) {
    if (answered_) return;
    answered_ = true;
    limits_->countAnswer(route_, status);
    res_.version(11);
    res_.result(status);
    res_.set(http::field::content_type, type);
    res_.set(http::field::cache_control, cache);
    res_.set("Content-Security-Policy", policy);
    res_.set("X-Content-Type-Options", "nosniff");
    res_.set("Referrer-Policy", "no-referrer");
    res_.set("X-Frame-Options", "DENY");
    res_.body() = std::move(body);
    write();
  }
  // The connection as TCP (its socket, its deadline), under TLS or not.
  beast::tcp_stream& lowest() { return tls_ ? beast::get_lowest_layer(*tls_) : *plain_; }
  // Calls `fn` with the stream HTTP is read from and written to: TLS's, or the TCP stream.
  template <class F>
  void io(F&& fn) {
    if (tls_)
      fn(*tls_);
    else
      fn(*plain_);
  }
  // After the TLS handshake, if any: start()'s own work.
  void begin(bool over);
  // The request must arrive whole within `limit` (then 408, or 503 while serve stops).
  void armReadLimit(std::chrono::milliseconds limit);
  void read(beast::error_code ec);
  // Writes res_ whole, then reads the next request on the connection, or finishes. The
  // connection stays open when the client asked (HTTP/1.1's default), the request was read whole
  // (keepOpen_), serve is not stopping and the connection has not carried its bound.
  void write() {
    const bool keep = keepOpen_ && parser_ && parser_->is_done() && parser_->get().keep_alive() &&
                      !limits_->stopping && served_ + 1 < kRequestsPerConnection;
    res_.keep_alive(keep);
    // How long the connection waits for the next request, and how many it still carries, said
    // as servers say it (`Keep-Alive`, RFC 2068 19.7.1, named in `Connection` as a hop-by-hop
    // field must be): a client that keeps connections longer (undici's pool) lets this one go
    // before serve closes it, instead of sending on it as it closes. A second less than serve
    // waits, for a client that takes the hint to the letter.
    if (keep) {
      res_.set(http::field::connection, "keep-alive");
      res_.set("Keep-Alive",
               "timeout=" + std::to_string(std::chrono::seconds(kReadLimit).count() - 1) +
                   ", max=" + std::to_string(kRequestsPerConnection - served_ - 1));
    }
    res_.prepare_payload();
    lowest().expires_after(std::chrono::seconds(10));
    io([this, keep](auto& stream) {
      http::async_write(
          stream, res_, [self = shared_from_this(), keep](beast::error_code ec, size_t) {
            if (!ec && keep && !self->limits_->stopping && self->lowest().socket().is_open())
              return self->next();
            self->finish();
          });
    });
  }
  // The answer went out and the connection stays: the next request is read as the first was.
  void next();
  // Whether anything of the request being read has arrived (an idle kept-alive connection has
  // sent nothing, and is closed without an answer when it must go).
  bool begun() const { return buffer_.size() > 0 || (parser_ && parser_->got_some()); }
  // The answer was sent: TLS says close_notify (within 2 s), then the connection closes.
  void finish() {
    if (!tls_ || !lowest().socket().is_open()) return close();
    lowest().expires_after(std::chrono::seconds(2));
    tls_->async_shutdown([self = shared_from_this()](beast::error_code) { self->close(); });
  }
  void tick();
  void send(const std::string& text, bool last);
  void close() {
    beast::error_code ignored;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ignored);
    lowest().socket().close(ignored);
    if (timer_) timer_->cancel();
    readTimer_.cancel();
    if (!closed_.exchange(true)) {
      std::lock_guard<std::mutex> lock(limits_->mu);
      --limits_->sockets;
    }
  }

  // First, so last to go: the context its socket and timers are of outlives them, though the
  // host may hold a Session (a request queued, an answer waiting for a commit) past serve's end.
  std::shared_ptr<boost::asio::io_context> netContext_;
  Server& server_;                    // used by handlers only: they never run once serve returned
  std::shared_ptr<Limits> limits_;    // what serve holds open
  boost::asio::any_io_executor net_;  // the network thread's (the socket's)
  std::optional<beast::tcp_stream> plain_;                   // without TLS
  std::optional<beast::ssl_stream<beast::tcp_stream>> tls_;  // with it
  std::string address_;                                      // the client's IP address
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;  // one per request
  http::response<http::string_body> res_;
  boost::asio::steady_timer readTimer_;
  int served_ = 0;         // the requests answered on this connection
  uint64_t readNo_ = 0;    // begin()'s count
  bool keepOpen_ = false;  // the request was read whole: the connection may carry another
  bool rearmed_ = false;   // the read limit was given once more (armReadLimit)
  bool reading_ = false;
  bool readTimedOut_ = false;
  bool evicted_ = false;
  std::atomic<bool> routed_{false};  // handed to the Server (between two turns)
  std::atomic<bool> closed_{false};
  bool handshook_ = false;  // the TLS handshake is over (or failed)
  bool answered_ = false;   // an answer or a stream began
  bool openSlot_ = false;
  std::string route_;
  // An event stream's state: its pump the engine's, the rest the network thread's.
  Pump pump_;
  bool streaming_ = false;
  bool asked_ = false;  // a page was asked of the engine and has not come
  std::unique_ptr<boost::asio::steady_timer> timer_;
  std::string out_;
  bool writing_ = false;
  bool ending_ = false;
  bool more_ = false;  // lines were waiting when the last page was taken
  std::chrono::steady_clock::time_point writeStarted_;
};

class Server {
 public:
  Server(RunHost& host, const ServeOptions& options, Callers callers,
         std::map<std::string, std::string> secrets)
      : host_(host),
        engine_(host.engine().io()),
        options_(options),
        callers_(std::move(callers)),
        secrets_(std::move(secrets)) {}

  RunHost& host() { return host_; }
  const std::shared_ptr<Limits>& limits() const { return limits_; }

  // From the network thread: `fn` runs on the engine's, at its next poll.
  template <class F>
  void onEngine(F&& fn) {
    boost::asio::post(engine_, std::forward<F>(fn));
  }

  // ---- the network thread's ------------------------------------------------------------------
  // A connection that waits for its request, in the order they came (a kept-alive connection
  // again at each request; its earlier entries stand for reads that are over).
  void reading(const std::shared_ptr<Session>& s) {
    reading_.push_back({s, s->readNo()});
    if (reading_.size() > 2 * static_cast<size_t>(limits_->maxConnections)) {
      std::deque<Waiting> kept;
      for (auto& w : reading_) {
        if (auto live = w.session.lock(); live && live->reading() && live->readNo() == w.readNo)
          kept.push_back(w);
      }
      reading_.swap(kept);
    }
  }
  // Serve is full: the connection that has waited longest without sending its request is let
  // go, so that idle connections never keep a client out. False when none is idle.
  bool evictIdle() {
    while (!reading_.empty()) {
      const Waiting w = reading_.front();
      auto oldest = w.session.lock();
      reading_.pop_front();
      if (oldest && oldest->reading() && oldest->readNo() == w.readNo) {
        oldest->evict();
        std::lock_guard<std::mutex> lock(limits_->mu);
        ++limits_->evicted;
        return true;
      }
    }
    return false;
  }

  // ---- the engine's thread's ------------------------------------------------------------------
  // A follower whose client has taken its last page wants the next: pumped between two turns,
  // within kPumpBudget a pass.
  void wantPump(const std::shared_ptr<Session>& s) {
    pumps_.push_back(s);
    if (pumpsQueued_) return;
    pumpsQueued_ = true;
    host_.queue([this] { runPumps(); });
  }

  // Turns a store's refusal into a text that names no path (the store's location is not the
  // clients' to know).
  std::string withoutPath(std::string text) const {
    const std::string& path = options_.storePath;
    if (path.empty()) return text;
    auto replace = [&text](const std::string& what, const std::string& with) {
      for (size_t at = text.find(what); at != std::string::npos;
           at = text.find(what, at + with.size()))
        text.replace(at, what.size(), with);
    };
    replace("run store `" + path + "`", "run store");
    replace("`" + path + "`", "the store");
    replace(path, "the store");
    return text;
  }

  // Routes a request that has arrived whole (between two turns).
  void route(const std::shared_ptr<Session>& s) {
    try {
      dispatch(s);
    } catch (const HttpError& e) {
      s->refuse(e);
    } catch (const std::exception& e) {
      // Every other error by the one table (errors.h): its status, its kind, when to try again.
      const ErrorKind kind = KindOf(e);
      const ErrorRule& rule = RuleOf(kind);
      const int retry = kind == ErrorKind::kBusy ? 1 : kind == ErrorKind::kFull ? 5 : 0;
      s->refuse({rule.http,
                 kind == ErrorKind::kInternal ? "serve could not answer: " + ErrorText(e)
                                              : withoutPath(e.what()),
                 retry, kind});
    }
  }

 private:
  struct Target {
    std::vector<std::string> segs;
    std::map<std::string, std::string> query;
  };

  static Target Parse(std::string_view target) {
    Target t;
    std::string_view path = target;
    if (const auto q = target.find('?'); q != std::string_view::npos) {
      path = target.substr(0, q);
      std::string_view rest = target.substr(q + 1);
      while (!rest.empty()) {
        const auto amp = rest.find('&');
        std::string_view pair = rest.substr(0, amp);
        const auto eq = pair.find('=');
        t.query[PercentDecode(pair.substr(0, eq))] =
            eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1));
        if (amp == std::string_view::npos) break;
        rest = rest.substr(amp + 1);
      }
    }
    if (path.empty() || path[0] != '/') throw HttpError{400, "the request target is not a path"};
    path.remove_prefix(1);
    while (!path.empty()) {
      const auto slash = path.find('/');
      t.segs.push_back(PercentDecode(path.substr(0, slash)));
      if (slash == std::string_view::npos) break;
      path = path.substr(slash + 1);
    }
    return t;
  }

  void dispatch(const std::shared_ptr<Session>& s) {
    const auto& req = s->request();
    const Target t = Parse(SV(req.target()));
    const auto& seg = t.segs;
    const http::verb m = req.method();
    auto is = [&](std::initializer_list<const char*> shape) {
      if (shape.size() != seg.size()) return false;
      size_t i = 0;
      for (const char* part : shape) {
        if (part[0] != ':' && seg[i] != part) return false;
        ++i;
      }
      return true;
    };
    auto only = [&](http::verb allowed) {
      if (m != allowed)
        throw HttpError{405, std::string(SV(req.method_string()).substr(0, 20)) +
                                 " is not taken by " +
                                 Printable(std::string(SV(req.target())).substr(0, 200)) +
                                 "; it takes " + std::string(SV(http::to_string(allowed)))};
    };
    // The store's disk is full: what is stored is served, and nothing is changed.
    if (const std::string full = host_.storeFull(); !full.empty() && m == http::verb::post) {
      throw HttpError{503,
                      withoutPath(full) +
                          "; serve answers reads and takes changes again once "
                          "there is space",
                      5};
    }
    const std::string method(SV(http::to_string(m)));
    auto label = [&](const char* pattern) { s->route(method + " " + pattern); };
    if (!seg.empty() && seg[0] == "ui") {
      // The web console (console.h): the page and its assets, open (they hold no data; every
      // read the page makes is a route below, with its token).
      label("/ui/");
      only(http::verb::get);
      const ConsoleAsset* asset =
          seg.size() <= 2 ? FindConsoleAsset(seg.size() == 2 ? seg[1] : "") : nullptr;
      if (asset == nullptr)
        throw HttpError{404, "the console has no " +
                                 Printable(std::string(SV(req.target())).substr(0, 200)) +
                                 "; it is at /ui/"};
      return s->answerAsset(*asset);
    }
    if (is({"healthz"})) {
      label("/healthz");
      only(http::verb::get);
      return s->answer(200, {{"ok", true}});
    }
    if (is({"metrics"})) {
      label("/metrics");
      only(http::verb::get);
      return metrics(s);
    }
    if (is({"workflows", ":name", "picture"})) {
      label("/workflows/:name/picture");
      only(http::verb::get);
      return picture(s, seg[1], t);
    }
    if (is({"workflows", ":name", "runs"})) {
      label("/workflows/:name/runs");
      if (m == http::verb::post) return startRun(s, seg[1], t);
      only(http::verb::get);
      return observeRuns(s, seg[1]);
    }
    if (is({"workflows", ":name", "runs", ":id", "events"})) {
      label("/workflows/:name/runs/:id/events");
      only(http::verb::get);
      return events(s, seg[3], seg[1], t);
    }
    if (is({"runs"})) {
      label("/runs");
      only(http::verb::get);
      return t.query.empty() ? listRuns(s) : pageOfRuns(s, t);
    }
    if (is({"runs", ":id"})) {
      label("/runs/:id");
      only(http::verb::get);
      return showRun(s, seg[1]);
    }
    if (is({"runs", ":id", "events"})) {
      label("/runs/:id/events");
      if (m == http::verb::post) return cancelRun(s, seg[1]);
      only(http::verb::get);
      return events(s, seg[1], "", t);
    }
    if (is({"runs", ":id", "trace"})) {
      label("/runs/:id/trace");
      only(http::verb::get);
      return trace(s, seg[1]);
    }
    if (is({"runs", ":id", "gates", ":gate", "events"})) {
      label("/runs/:id/gates/:gate/events");
      only(http::verb::post);
      return answerGate(s, seg[1], seg[3]);
    }
    if (is({"caller"})) {
      label("/caller");
      only(http::verb::get);
      return whoIs(s);
    }
    if (is({"gates"})) {
      label("/gates");
      only(http::verb::get);
      return listGates(s);
    }
    if (is({"hooks", ":name"})) {
      label("/hooks/:name");
      if (m == http::verb::post) return hook(s, seg[1]);
      only(http::verb::get);
      return hookLog(s, seg[1]);
    }
    throw HttpError{404, "no route " + std::string(SV(req.method_string()).substr(0, 20)) + " " +
                             Printable(std::string(SV(req.target())).substr(0, 200)) +
                             " on this serve (docs/serve.md lists them)"};
  }

  // ---- who asks ------------------------------------------------------------------------------
  const Caller& caller(const std::shared_ptr<Session>& s) const {
    const auto& req = s->request();
    const auto it = req.find(http::field::authorization);
    if (it == req.end())
      throw HttpError{401,
                      "this route needs `Authorization: Bearer <token>` (a Caller's token, "
                      "or the instance token in the store's `.token` file)"};
    std::string_view value = SV(it->value());
    constexpr std::string_view kBearer = "Bearer ";
    if (value.substr(0, kBearer.size()) != kBearer)
      throw HttpError{401, "the Authorization header must be `Bearer <token>`"};
    const Caller* c = callers_.identify(value.substr(kBearer.size()));
    if (c == nullptr) throw HttpError{401, "the token is not one of this serve's Callers"};
    return *c;
  }

  static void Require(const Caller& c, const std::string& workflow, Scope scope,
                      const std::string& gate = "") {
    if (Callers::Allows(c, workflow, scope, gate)) return;
    std::string what = "Caller `" + Printable(c.name) + "` has no `" + ToString(scope) +
                       "` scope on workflow `" + Printable(workflow) + "`";
    if (!gate.empty() && Callers::Allows(c, workflow, scope))
      what = "Caller `" + Printable(c.name) + "` may not answer Gate `" + Printable(gate) +
             "` (its `gates` do not match it)";
    throw HttpError{403, what};
  }

  // Run `prefix`, and in the open band (`workflow` given) only a run of that workflow: a prefix
  // that names another workflow's run, or several runs, says nothing of them.
  RunSummary find(const std::string& prefix, const std::string& workflow = "", bool view = false) {
    RunSummary r;
    try {
      r = host_.summary(prefix, view);
    } catch (const StoreUnreachable&) {
      throw;  // 503 by the error table: the store answers again soon, and the run may be there
    } catch (const StoreError& e) {
      if (workflow.empty()) throw HttpError{404, withoutPath(e.what())};
      r.workflow.clear();
    }
    if (!workflow.empty() && r.workflow != workflow)
      throw HttpError{404, "workflow `" + Printable(workflow) + "` has no run `" +
                               Printable(prefix.substr(0, 100)) +
                               "` (give the whole id, or more of it)"};
    return r;
  }

  void knownWorkflow(const std::string& name) const {
    for (const auto& w : options_.workflows) {
      if (w == name) return;
    }
    throw HttpError{404, "this serve hosts no workflow `" + Printable(name.substr(0, 200)) + "`"};
  }

  // ---- what is told --------------------------------------------------------------------------
  // The Gates of `run` that `c` may answer (every one for a caller whose `answer` names none);
  // with `menus`, each naming its Menu there (views.h GateRef, for DumpExpanded).
  static Json GatesFor(const Run& run, const Caller* c, Json* menus = nullptr) {
    Json out = Json::array();
    for (const auto& g : run.gates()) {
      if (c == nullptr || Callers::Allows(*c, run.workflow().name, Scope::kAnswer, g.name))
        out.push_back(menus != nullptr ? GateRef(g, *menus) : GateJson(g));
    }
    return out;
  }
  // The same from a run's view (RunHost::view): what its last save stored.
  static Json GatesFor(const Json& view, const Caller* c) {
    Json out = Json::array();
    const Json& report = view["report"];
    const std::string workflow = report.value("workflow", "");
    for (const Json& g : report.value("gates", Json::array())) {
      if (c == nullptr || Callers::Allows(*c, workflow, Scope::kAnswer, g.value("gate", "")))
        out.push_back(g);
    }
    return out;
  }

  // The request's body: a JSON object whose fields are among `fields`.
  static Json Body(const std::shared_ptr<Session>& s, std::initializer_list<const char*> fields) {
    const std::string& text = s->request().body();
    if (text.empty()) return Json::object();
    Json body = ParseExternalJson(text, "the request body");
    if (!body.is_object()) throw HttpError{400, "the request body must be a JSON object"};
    for (const auto& [key, value] : body.items()) {
      bool known = false;
      std::string names;
      for (const char* f : fields) {
        known = known || key == f;
        names += std::string(names.empty() ? "`" : ", `") + f + "`";
      }
      if (!known)
        throw HttpError{400, "the request body has no field `" + Printable(key.substr(0, 100)) +
                                 "`; it takes " + names};
    }
    return body;
  }

  // ---- the open band -------------------------------------------------------------------------
  void observeRuns(const std::shared_ptr<Session>& s, const std::string& workflow) {
    knownWorkflow(workflow);
    Json out = Json::array();
    auto all = host_.runs(true, workflow);  // views: from memory for the runs serve hosts
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      try {
        out.push_back(host_.view(*it, /*items=*/false)["observe"]);
      } catch (const std::exception&) {
        // A run that cannot be read (drifted, damaged) is still named, where it is unknown.
        out.push_back({{"runId", it->id},
                       {"workflow", it->workflow},
                       {"status", it->status},
                       {"value", Json::array()},
                       {"children", Json::array()}});
      }
    }
    s->answer(200, std::move(out));
  }

  // The feed as server-sent events: the whole lines (`read`), or only their kinds with the
  // observation (the open band, `workflow` given).
  void events(const std::shared_ptr<Session>& s, const std::string& prefix,
              const std::string& workflow, const Target& t) {
    const bool open = !workflow.empty();
    if (open) knownWorkflow(workflow);
    const Caller* c = open ? nullptr : &caller(s);
    const RunSummary r = find(prefix, workflow);
    if (c != nullptr) Require(*c, r.workflow, Scope::kRead);
    int64_t after = 0;
    std::string from;
    if (const auto it = s->request().find("Last-Event-ID"); it != s->request().end()) {
      from = std::string(SV(it->value()));
    } else if (const auto q = t.query.find("after"); q != t.query.end()) {
      from = q->second;
    }
    if (!from.empty()) {
      char* end = nullptr;
      after = std::strtoll(from.c_str(), &end, 10);
      if (*end != '\0' || after < 0)
        throw HttpError{400, "Last-Event-ID must be a feed line's number, not `" +
                                 Printable(from.substr(0, 40)) + "`"};
    }
    // `?follow=false`: the lines stored so far, then the stream ends (`log RUN --server`).
    const auto followQ = t.query.find("follow");
    const bool follow = followQ == t.query.end() || followQ->second != "false";
    if (open && !s->takeOpenSlot()) {
      throw HttpError{503,
                      "the open band follows at most " + std::to_string(kOpenStreamsPerAddress) +
                          " feeds from one address and " + std::to_string(limits_->maxOpenStreams) +
                          " in all, and is full; try again, or follow "
                          "/runs/:id/events with a Caller's token (`read` scope)",
                      5};
    }
    const std::string id = r.id;
    auto cursor = std::make_shared<int64_t>(after);
    auto lastBeat =
        std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
    RunHost& host = host_;
    s->stream([&host, id, cursor, open, follow, lastBeat, this](int64_t limit) -> Session::Page {
      std::string text;
      const auto lines = host.feed(id, *cursor, limit);
      const bool more = static_cast<int64_t>(lines.size()) >= limit;
      Json observation;
      if (open && !lines.empty()) {
        try {
          observation = host.view(host.summary(id), /*items=*/false)["observe"];
        } catch (const std::exception&) {
          observation = nullptr;
        }
      }
      bool ended = false;
      for (const auto& f : lines) {
        *cursor = f.seq;
        Json data = {{"seq", f.seq}, {"kind", f.kind}, {"time", f.timeMs}};
        if (open) {
          data["observation"] = observation;
        } else {
          data["data"] = f.data;
          data["line"] = f.line;
        }
        text += "id: " + std::to_string(f.seq) + "\nevent: " + f.kind + "\ndata: " + Dump(data) +
                "\n\n";
        if (f.kind == "ended") ended = true;
      }
      if (!ended && lines.empty() && host.storedStatus(id) != "waiting") ended = true;
      if (!follow && !more) ended = true;
      const auto now = std::chrono::steady_clock::now();
      if (text.empty() && now - *lastBeat >= std::chrono::seconds(15)) text = ":\n\n";
      if (!text.empty()) *lastBeat = now;
      return {text, ended, more && !ended};
    });
  }

  // ---- the guarded band ----------------------------------------------------------------------
  void startRun(const std::shared_ptr<Session>& s, const std::string& workflow, const Target& t) {
    const Caller& c = caller(s);
    knownWorkflow(workflow);
    Require(c, workflow, Scope::kStart);
    const Json body = Body(s, {"input"});
    if (const WorkflowInfo* wf = host_.registry().workflow(workflow);
        wf != nullptr && wf->pool != nullptr && wf->pool->standing) {
      // Nobody starts a standing Pool; a paused one is resumed (`?drop-held=true`: without its
      // held items). Live, never run, or in its back-off: 409.
      const auto drop = t.query.find("drop-held");
      const std::string from = host_.standingState(workflow).value("run", "");
      std::string id;
      try {
        id = host_.resume(workflow, drop != t.query.end() && drop->second == "true");
      } catch (const BadInput& e) {
        throw HttpError{409, e.what()};
      }
      committed(s, [s, id, from] {
        s->answer(201, {{"runId", id}, {"resumed", true}, {"from", from}});
      });
      return;
    }
    const Json input = body.contains("input") ? body["input"] : Json::object();
    if (!input.is_object()) throw HttpError{400, "`input` must be a JSON object"};
    // `Idempotency-Key` (#30): a start sent again with its key — after a timeout, a reset, a
    // serve that was stopped — gets the run the first one made, never a second run.
    std::string key;
    const std::string digest = Sha256Hex(Dump(input));
    if (const auto k = s->request().find("Idempotency-Key"); k != s->request().end()) {
      key = std::string(SV(k->value()));
      const bool printable = std::all_of(key.begin(), key.end(), [](char ch) {
        return static_cast<unsigned char>(ch) > 0x20 && static_cast<unsigned char>(ch) < 0x7f;
      });
      if (key.empty() || key.size() > 200 || !printable)
        throw HttpError{400,
                        "`Idempotency-Key` takes 1 to 200 printable ASCII characters, no spaces "
                        "(a UUID, say)"};
      if (const auto first = host_.startKey(c.name, workflow, key)) {
        if (first->digest != digest)
          throw HttpError{422, "`Idempotency-Key` " + Printable(key) + " started run " +
                                   first->run + " with another input; a new start needs a new key"};
        // The run may not be stored: serve stopped before its first commit. Then nothing was
        // started, and this start is the first.
        if (host_.known(first->run)) return answerStart(s, first->run, c, /*again=*/true);
      }
    }
    // A refused input keeps nothing of its key; what the check read, the run starts from.
    JsonValue read = host_.checkStart(workflow, input);
    const std::string id = RunHost::NewId();
    if (!key.empty()) {
      // Kept before the run's first commit: a serve that stops in between finds a key whose run
      // was never stored, and starts anew (above). Serves sharing a store keep a key for the
      // first start only: a start of it under way on another serve is that start.
      const Store::StartKey kept = host_.keepStartKey(c.name, workflow, key, {id, digest});
      if (kept.run != id) {
        if (kept.digest != digest)
          throw HttpError{422, "`Idempotency-Key` " + Printable(key) + " started run " + kept.run +
                                   " with another input; a new start needs a new key"};
        if (host_.known(kept.run)) return answerStart(s, kept.run, c, /*again=*/true);
        throw HttpError{503,
                        "`Idempotency-Key` " + Printable(key) + ": its start (run " + kept.run +
                            ") is under way on another serve sharing the run store; send it "
                            "again to be answered with that run",
                        1};
      }
    }
    if (host_.atCapacity()) {
      // Serves sharing a store: this one drives its --capacity of runs already. The start is
      // stored, not begun, for the first serve with room (this one too, once a run ends).
      if (!host_.fenced().empty()) throw HttpError{503, host_.fenced(), 1};
      host_.queueStart(workflow, input, options_.home, id);
      return s->answer(
          201, {{"runId", id}, {"status", "waiting"}, {"gates", Json::array()}, {"queued", true}});
    }
    host_.begin(workflow, input, options_.home, id, std::move(read));
    answerStart(s, id, c, /*again=*/false);
  }

  // Answers `s` with `fn` once the turn under way is committed; with 503 when it never is (this
  // serve lost its lease on a shared store, and let go of its runs: nothing of the change was
  // kept, and sent again it reaches the run's new host).
  void committed(const std::shared_ptr<Session>& s, std::function<void()> fn) {
    host_.afterCommit(
        std::move(fn),
        [s] {
          s->answer(503,
                    {{"error",
                      "this serve lost its lease on the run store before the change was stored; "
                      "nothing of it was kept: send it again"}},
                    1);
        },
        /*reply=*/true);
  }

  // The answer to a start, after the commit that stores the run: 201, or 200 with
  // `"replayed": true` for a start sent again with its `Idempotency-Key`.
  void answerStart(const std::shared_ptr<Session>& s, const std::string& id, const Caller& c,
                   bool again) {
    const Caller* who = &c;
    committed(s, [this, s, id, who, again] {
      Json out = {{"runId", id}};
      if (host_.hosts(id)) {
        const Run& run = host_.run(id);
        out["status"] = ToString(run.status());
        out["gates"] =
            GatesFor(run, Callers::Allows(*who, run.workflow().name, Scope::kRead) ? nullptr : who);
      } else if (again) {
        const RunSummary r = host_.summary(id, /*view=*/true);
        out["status"] = r.status;
        out["gates"] = GatesFor(host_.view(r, /*items=*/false),
                                Callers::Allows(*who, r.workflow, Scope::kRead) ? nullptr : who);
      } else {
        return s->refuse({500, "run " + id + " was not kept"});
      }
      if (again) out["replayed"] = true;
      s->answer(again ? 200 : 201, std::move(out));
    });
  }

  void listRuns(const std::shared_ptr<Session>& s) {
    const Caller& c = caller(s);
    if (!Callers::HasAnywhere(c, Scope::kRead))
      throw HttpError{403,
                      "Caller `" + Printable(c.name) + "` has no `read` scope on any workflow"};
    Json out = Json::array();
    auto all = host_.runs(true, "");
    for (auto it = all.rbegin(); it != all.rend(); ++it) {
      if (!Callers::Allows(c, it->workflow, Scope::kRead)) continue;
      out.push_back(RunListEntry(*it));
    }
    s->answer(200, std::move(out));
  }

  // A cursor this serve gave (`next`, an event's id): a run's `updated` and its id, as "MS.ID".
  static bool ReadCursor(const std::string& text, int64_t& ms, std::string& id) {
    const auto dot = text.find('.');
    const std::string digits = text.substr(0, dot);
    if (dot == std::string::npos || digits.empty() || digits.size() > 18 ||
        dot + 1 >= text.size() || !AllDigits(digits))
      return false;
    ms = std::stoll(digits);
    id = text.substr(dot + 1);
    return true;
  }
  static bool AllDigits(const std::string& text) {
    return std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  }
  static std::string CursorOf(const RunSummary& r) {
    return std::to_string(r.updatedMs) + "." + r.id;
  }

  // The filters of `GET /runs?…` (limit, after, workflow, status, q), each checked: a 400 that
  // names a bad one, a 403 for a workflow the Caller does not read.
  RunQuery queryOfRuns(const Caller& c, const Target& t) const {
    if (!Callers::HasAnywhere(c, Scope::kRead))
      throw HttpError{403,
                      "Caller `" + Printable(c.name) + "` has no `read` scope on any workflow"};
    static const std::set<std::string> kKnown{"limit",  "after", "workflow",
                                              "status", "q",     "follow"};
    for (const auto& [k, v] : t.query) {
      if (kKnown.count(k) == 0)
        throw HttpError{400, "GET /runs takes no `" + Printable(k.substr(0, 40)) +
                                 "`; it takes limit, after, workflow, status, q and follow"};
      if (v.size() > 200) throw HttpError{400, "`" + k + "` is longer than 200 characters"};
    }
    auto get = [&](const char* k) {
      const auto it = t.query.find(k);
      return it == t.query.end() ? std::string() : it->second;
    };
    RunQuery q;
    q.limit = 50;
    if (const std::string limit = get("limit"); !limit.empty()) {
      q.limit = limit.size() <= 4 && AllDigits(limit) ? std::stoll(limit) : 0;
      if (q.limit < 1 || q.limit > 500)
        throw HttpError{
            400, "`limit` must be a whole number from 1 to 500, not `" + Printable(limit) + "`"};
    }
    if (const std::string after = get("after");
        !after.empty() && !ReadCursor(after, q.beforeMs, q.beforeId))
      throw HttpError{400,
                      "`after` is not a cursor this serve gave; give the `next` of the "
                      "page before, or leave it out for the newest runs"};
    q.status = get("status");
    const auto& statuses = StoredStatuses();
    if (!q.status.empty() &&
        std::find(statuses.begin(), statuses.end(), q.status) == statuses.end()) {
      std::string all;
      for (size_t i = 0; i < statuses.size(); ++i)
        all += (i == 0 ? "" : i + 1 == statuses.size() ? " or " : ", ") + statuses[i];
      throw HttpError{400, "no run is `" + Printable(q.status) + "`; a status is " + all};
    }
    q.text = get("q");
    const std::string only = get("workflow");
    if (!only.empty()) {
      knownWorkflow(only);
      Require(c, only, Scope::kRead);
      q.workflows.push_back(only);
    } else {
      for (const WorkflowInfo& w : host_.registry().workflows())
        if (Callers::Allows(c, w.name, Scope::kRead)) q.workflows.push_back(w.name);
    }
    return q;
  }

  // `GET /runs?limit=N&after=CURSOR&workflow=W&status=S&q=TEXT` (the console, docs/serve.md):
  // one page, newest change first, with the Caller's counts per workflow and status and the
  // cursor of the next page. Every filter is an index's column (Store::page), so the first page
  // costs the same at 100 runs and at 100,000. `&follow=true`: the changes as they come instead.
  void pageOfRuns(const std::shared_ptr<Session>& s, const Target& t) {
    const Caller& c = caller(s);
    RunQuery q = queryOfRuns(c, t);
    if (const auto f = t.query.find("follow"); f != t.query.end()) {
      if (f->second != "true" && f->second != "false")
        throw HttpError{
            400, "`follow` is true or false, not `" + Printable(f->second.substr(0, 40)) + "`"};
      if (f->second == "true") return followRuns(s, std::move(q));
    }
    std::vector<RunSummary> runs = host_.page(q);
    Json next = nullptr;
    if (static_cast<int64_t>(runs.size()) > q.limit) {
      runs.resize(static_cast<size_t>(q.limit));
      next = CursorOf(runs.back());
    }
    Json list = Json::array();
    for (const RunSummary& r : runs) {
      list.push_back(RunListEntry(r));
    }
    // The counts are of every run the Caller may read, whatever the filters: the console's
    // summary line.
    Json counts = Json::object();
    for (const auto& [ws, n] : host_.runCounts())
      if (Callers::Allows(c, ws.first, Scope::kRead)) counts[ws.first][ws.second] = n;
    // The head of each standing workflow the Caller reads (live, backing off until when, paused
    // and why), whatever the filters: what the console's resume acts on.
    Json heads = Json::object();
    for (const std::string& w : q.workflows)
      if (Json head = host_.standingState(w); !head.is_null()) heads[w] = std::move(head);
    s->answer(200, {{"runs", std::move(list)},
                    {"next", std::move(next)},
                    {"counts", counts},
                    {"heads", std::move(heads)}});
  }

  // `GET /runs?follow=true&…` (the console's runs list, docs/serve.md): an event stream with a
  // `changed` event for each run the filters pass that changes from now on (from the cursor in
  // Last-Event-ID, when the client follows again), oldest change first: its summary, as a page
  // lists it. The store is looked at once a second at most, each look one range of runs_summary
  // per status after the cursor (Store::page, RunQuery::sinceMs).
  void followRuns(const std::shared_ptr<Session>& s, RunQuery q) {
    q.limit = kFeedPage;
    q.beforeMs = 0;
    q.beforeId.clear();
    if (const auto it = s->request().find("Last-Event-ID"); it != s->request().end()) {
      if (!ReadCursor(std::string(SV(it->value())), q.sinceMs, q.sinceId))
        throw HttpError{400, "Last-Event-ID must be the id of a `changed` event this serve sent"};
    } else {
      // From now: the newest change the filters pass is where the stream begins.
      RunQuery newest = q;
      newest.limit = 1;
      const std::vector<RunSummary> top = host_.page(newest);
      q.sinceMs = top.empty() ? 0 : top.front().updatedMs;
      q.sinceId = top.empty() ? "" : top.front().id;
    }
    auto query = std::make_shared<RunQuery>(std::move(q));
    auto lastLook = std::make_shared<std::chrono::steady_clock::time_point>();
    auto lastBeat =
        std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
    RunHost& host = host_;
    s->stream([&host, query, lastLook, lastBeat](int64_t limit) -> Session::Page {
      const auto now = std::chrono::steady_clock::now();
      std::string text;
      bool more = false;
      if (now - *lastLook >= std::chrono::seconds(1)) {
        *lastLook = now;
        query->limit = limit;
        std::vector<RunSummary> runs = host.page(*query);
        more = static_cast<int64_t>(runs.size()) > limit;
        if (more) runs.resize(static_cast<size_t>(limit));
        for (const RunSummary& r : runs) {
          text +=
              "id: " + CursorOf(r) + "\nevent: changed\ndata: " + Dump(RunListEntry(r)) + "\n\n";
          query->sinceMs = r.updatedMs;
          query->sinceId = r.id;
        }
        if (more) *lastLook = {};  // the rest goes as soon as the client took this page
      }
      if (text.empty() && now - *lastBeat >= std::chrono::seconds(15)) text = ":\n\n";
      if (!text.empty()) *lastBeat = now;
      return {text, false, more};
    });
  }

  // `GET /workflows/:name/picture` (docs/console.md): the workflow's statechart as SVG, laid out
  // by Graphviz when the runner was built, for a Caller that reads or answers there;
  // `?of=worker`: a Pool's worker machine, on which the console counts the workers by state.
  void picture(const std::shared_ptr<Session>& s, const std::string& workflow, const Target& t) {
    const Caller& c = caller(s);
    knownWorkflow(workflow);
    if (!Callers::Allows(c, workflow, Scope::kAnswer)) Require(c, workflow, Scope::kRead);
    std::string key = workflow;
    for (const auto& [name, value] : t.query) {
      if (name != "of")
        throw HttpError{400,
                        "this route takes only `of`, not `" + Printable(name.substr(0, 40)) + "`"};
      if (value != "worker")
        throw HttpError{400, "`of` takes only `worker` (a Pool's worker machine), not `" +
                                 Printable(value.substr(0, 40)) + "`"};
      key += ".worker";
    }
    const std::string* svg = host_.registry().picture(key);
    if (svg == nullptr && key != workflow)
      throw HttpError{404, "`" + workflow +
                               "` has no worker picture: it is not a Pool whose worker is a "
                               "machine, or this runner was built without Graphviz"};
    if (svg == nullptr)
      throw HttpError{404, "this runner was built without the picture of `" + workflow +
                               "`: Graphviz's `dot` was not found when it was built (install "
                               "graphviz and build it again)"};
    s->answerText(200, *svg, "image/svg+xml");
  }

  // `GET /caller` (docs/serve.md): the token's own Caller — its name, the Gates it may answer,
  // and its scopes on each workflow this serve hosts, with whether that workflow is standing and,
  // where it may start it, the JSON Schema of its input. Any
  // token may ask it of itself; the console shows only what the scopes allow from it, and every
  // route still checks its own scope.
  void whoIs(const std::shared_ptr<Session>& s) {
    const Caller& c = caller(s);
    Json workflows = Json::object();
    for (const WorkflowInfo& w : host_.registry().workflows()) {
      Json scopes = Json::array();
      for (Scope scope : {Scope::kStart, Scope::kRead, Scope::kAnswer, Scope::kCancel})
        if (Callers::Allows(c, w.name, scope)) scopes.push_back(ToString(scope));
      if (scopes.empty()) continue;
      const bool standing = w.pool != nullptr && w.pool->standing;
      // The pictures it has (GET /workflows/:name/picture, `?of=worker`): none without Graphviz.
      Json pictures = Json::array();
      if (host_.registry().picture(w.name) != nullptr) pictures.push_back("workflow");
      if (host_.registry().picture(w.name + ".worker") != nullptr) pictures.push_back("worker");
      Json entry = {{"scopes", scopes}, {"standing", standing}, {"pictures", std::move(pictures)}};
      // The JSON Schema of its input, for a Caller that may start it: the console's start form.
      if (!standing && w.inputSchema != nullptr && Callers::Allows(c, w.name, Scope::kStart))
        entry["input"] = Json::parse(w.inputSchema);
      workflows[w.name] = std::move(entry);
    }
    s->answer(200, {{"name", c.name},
                    {"gates", c.gates.empty() ? Json(nullptr) : Json(c.gates)},
                    {"workflows", std::move(workflows)}});
  }

  // GET /runs/:id/trace: the run's trace as `export` writes it (docs/runtime.md#traces), JSON
  // lines, for a Caller with `read` on its workflow: every input the run took, Gate answers'
  // payloads and effects' outputs among them. Sent as the feed is, a page a pump between turns
  // (a long trace never holds the engine, and a client that does not read holds one page); it
  // ends with its `end` line, so a client knows a trace cut short by one that lacks it.
  void trace(const std::shared_ptr<Session>& s, const std::string& prefix) {
    const Caller& c = caller(s);
    const RunSummary r = find(prefix);
    Require(c, r.workflow, Scope::kRead);
    auto cursor = std::make_shared<RunHost::TraceCursor>(host_.openTrace(r.id, r.workflow));
    RunHost& host = host_;
    s->stream(
        [&host, cursor](int64_t limit) -> Session::Page {
          std::string text;
          bool last = true;
          try {
            last = host.tracePage(*cursor, limit, text);
          } catch (const std::exception&) {
            // the store went away or the run was pruned: the trace ends without its `end`
          }
          return {text, last, !last};
        },
        "application/x-ndjson");
  }

  void showRun(const std::shared_ptr<Session>& s, const std::string& prefix) {
    const Caller& c = caller(s);
    const RunSummary r = find(prefix, "", /*view=*/true);
    const bool read = Callers::Allows(c, r.workflow, Scope::kRead);
    if (!read) Require(c, r.workflow, Scope::kAnswer);  // 403 with neither
    const Json view = host_.view(r, /*items=*/read);
    if (!read) {
      Json out = view["observe"];
      out["gates"] = GatesFor(view, &c);
      out["working"] = view["working"];
      return s->answer(200, std::move(out));
    }
    Json report = view["report"];
    Json items = nullptr;
    Json failures = nullptr;
    const Json& from = report.contains("sofar") ? report["sofar"] : report["output"];
    const WorkflowInfo* wf = host_.registry().workflow(r.workflow);
    if (wf != nullptr && wf->pool != nullptr && from.is_object()) {
      items = from.value("items", Json(nullptr));
      failures = from.value("failures", Json(nullptr));
    }
    if (Json standing = host_.standingState(r.workflow); !standing.is_null())
      report["standing"] = std::move(standing);
    s->answer(200, Json{{"runId", r.id},
                        {"workflow", r.workflow},
                        {"status", report["status"]},
                        {"output", report["output"]},
                        {"reason", report["reason"]},
                        {"items", items},
                        {"failures", failures},
                        {"gates", GatesFor(view, nullptr)},
                        // The active states (the observation's): the console's picture.
                        {"value", view["observe"].value("value", Json::array())},
                        // What it has started and is live (a Pool's workers, a machine's invokes),
                        // each with its active states: the console's children.
                        {"children", view["observe"].value("children", Json::array())},
                        // What the runner's verbs print (report.h), for `--server`.
                        {"working", view["working"]},
                        {"seq", host_.lastSeq(r.id)},
                        {"report", std::move(report)}});
  }

  void answerGate(const std::shared_ptr<Session>& s, const std::string& prefix,
                  const std::string& gate) {
    const Caller& c = caller(s);
    // A run this serve drives, named by its whole id, is not looked up in the store: an answer
    // is the route a Pool's reviewers hit most (#33). Any other: the one read of the store.
    std::optional<RunSummary> driven = host_.hostedSummary(prefix);
    const RunSummary r = driven ? std::move(*driven) : find(prefix);
    Require(c, r.workflow, Scope::kAnswer, gate);
    const Json body = Body(s, {"event", "payload"});
    if (!body.contains("event") || !body["event"].is_string())
      throw HttpError{400, "the request body needs `event`: the name of the event to deliver"};
    const Json payload = body.contains("payload") ? body["payload"] : Json::object();
    const std::string& id = r.id;
    try {
      host_.answerAt(r, gate, body["event"].get<std::string>(), payload, c.name);
    } catch (const RunBusy& e) {
      if (e.holder.rfind("host ", 0) != 0) throw;  // a runner command drives it: 503
      // Another serve sharing the store drives it: the answer goes to that serve.
      return forward(
          s, r, "send",
          {{"gate", gate}, {"event", body["event"]}, {"payload", payload}, {"by", c.name}}, &c,
          gate);
    } catch (const GateRefused& e) {
      const std::string& run = r.id;
      const std::string name = Printable(gate.substr(0, 200));
      if (e.why == GateRefused::Why::kEnded) throw HttpError{409, e.what()};
      if (e.why == GateRefused::Why::kTaken) {
        // Two answers to one Gate in one turn: the first was taken; this one is late, as one
        // sent after the Gate closed is.
        throw HttpError{409, "run " + run + " has closed its Gate `" + name +
                                 "` (another answer to it was taken first)"};
      }
      // A Gate that was open once was answered (or its state was left): 409, so that a client
      // that sends its answer again knows it was taken, where a Gate never there is 404. The
      // store is read for this only when the answer is refused.
      const bool was = host_.hadGate(run, gate);
      throw HttpError{was ? 409u : 404u,
                      "run " + run + (was ? " has closed its Gate `" : " has no open Gate `") +
                          name + "`" + (was ? " (it was answered, or its state was left)" : "") +
                          (e.open.empty() ? "" : "; its open Gates are " + Printable(e.open))};
    }  // any other error by the table: no run 404, ended 409, busy 503, a payload refused 400
    const Caller* who = &c;
    // The machine whose Gate this answers (a Pool's worker, or the run's own): its Gates are
    // the ones the answer lists.
    std::string machine = host_.run(id).gateMachine(gate).value_or("");
    committed(s, [this, s, id, who, machine = std::move(machine)] {
      if (!host_.hosts(id)) return s->refuse({500, "run " + id + " is no longer hosted"});
      const Run& now = host_.run(id);
      if (now.status() == RunStatus::kCancelled)
        return s->refuse({409, "run " + id + " was cancelled before this answer was delivered"});
      s->answer(200, GateAnswerBody(ToString(now.status()), now, machine,
                                    MayAnswer(*who, now.workflow().name)));
    });
  }

  // What the 200 of a Gate answer needs (#33): the run's status, the Gates open now of the
  // machine whose Gate was answered (what comes next for that item) that `who` may answer, each
  // with the events it takes and without its Menu, and how many Gates it may answer are open in
  // the whole run. A Pool with many Gates open made every answer list them all (3.8 KB with 64);
  // GET /runs/:id and GET /gates list them, with their Menus.
  static std::function<bool(const std::string&)> MayAnswer(const Caller& who,
                                                           const std::string& workflow) {
    return [&who, workflow](const std::string& gate) {
      return Callers::Allows(who, workflow, Scope::kAnswer, gate);
    };
  }

  void listGates(const std::shared_ptr<Session>& s) {
    const Caller& c = caller(s);
    if (!Callers::HasAnywhere(c, Scope::kAnswer))
      throw HttpError{403,
                      "Caller `" + Printable(c.name) + "` has no `answer` scope on any workflow"};
    std::vector<RunSummary> runs;
    for (auto& r : host_.runs(false, "")) {  // views: as observeRuns
      if (Callers::Allows(c, r.workflow, Scope::kAnswer)) runs.push_back(std::move(r));
    }
    // A run that cannot be read has no Gate anybody can answer: it is left out.
    GateList found = ReadGates(
        host_, runs,
        [&c](const std::string& workflow, const std::string& gate) {
          return Callers::Allows(c, workflow, Scope::kAnswer, gate);
        },
        /*throwUnreadable=*/false, /*menuOf=*/true);
    s->answerText(200, DumpExpanded(found.gates, found.menus) + "\n", "application/json");
  }

  void cancelRun(const std::shared_ptr<Session>& s, const std::string& prefix) {
    const Caller& c = caller(s);
    const RunSummary r = find(prefix);
    Require(c, r.workflow, Scope::kCancel);
    const Json body = Body(s, {"type"});
    if (!body.contains("type") || body["type"] != "CANCEL")
      throw HttpError{400, "this route takes {\"type\":\"CANCEL\"}"};
    try {
      host_.changeable(r, /*cancel=*/true);  // RunEnded 409, RunBusy 503
    } catch (const RunBusy& e) {
      if (e.holder.rfind("host ", 0) != 0) throw;
      return forward(s, r, "cancel", Json::object(), nullptr, "");
    }
    host_.cancelHosted(r.id);  // stored at once
    s->answer(200, {{"status", ToString(host_.run(r.id).status())}});
  }

  // Run `r` is driven by another serve sharing the store: `verb` (`send` or `cancel`) is handed
  // to that serve through the store's inbox (RunHost::forward), and answered with what it said:
  // for `send` the run's status and the Gates `who` may answer, read from the view that serve's
  // commit stored; its refusal by the error table (a Gate it no longer has: 409 when it was open
  // once, as here); 503 when no serve took it within 10 s (nothing of it was done).
  void forward(const std::shared_ptr<Session>& s, const RunSummary& r, const std::string& verb,
               const Json& body, const Caller* who, const std::string& gate) {
    const std::string id = r.id;
    const std::string workflow = r.workflow;
    host_.forward(id, verb, body, 10000,
                  [this, s, id, workflow, verb, who, gate](const std::optional<Json>& answer) {
                    if (!answer) {
                      return s->answer(503,
                                       {{"error", "the serve that drives run " + id +
                                                      " took nothing within 10 s; nothing of "
                                                      "the " +
                                                      verb + " was done: send it again"}},
                                       1);
                    }
                    if (answer->contains("error")) {
                      const ErrorRule* rule = RuleNamed(answer->value("kind", ""));
                      unsigned status = rule != nullptr ? rule->http : 409;
                      if (status == 404 && !gate.empty() && host_.hadGate(id, gate)) status = 409;
                      return s->refuse({status, answer->value("error", "")});
                    }
                    if (verb == "cancel")
                      return s->answer(200, {{"status", answer->value("status", "")}});
                    // As serve's own answer: the serve that drives the run made `answered`.
                    s->answer(200, GateAnswerBody(answer->value("status", ""),
                                                  answer->value("answered", Json::object()),
                                                  MayAnswer(*who, workflow)));
                  });
  }

  // ---- hooks ---------------------------------------------------------------------------------
  void hook(const std::shared_ptr<Session>& s, const std::string& name) {
    const auto secret = secrets_.find(name);
    if (secret == secrets_.end())
      throw HttpError{404, "this serve has no hook `" + Printable(name.substr(0, 100)) +
                               "` (the callers file's `hooks` names them)"};
    const auto& req = s->request();
    const auto sig = req.find("X-Hub-Signature-256");
    if (sig == req.end())
      throw HttpError{401, "a delivery to hook `" + Printable(name) +
                               "` needs `X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body>`"};
    if (!VerifyHubSignature(SV(sig->value()), secret->second, req.body()))
      throw HttpError{401, "the signature of this delivery to hook `" + Printable(name) +
                               "` does not match its secret"};
    Json payload =
        req.body().empty() ? Json::object() : ParseExternalJson(req.body(), "the delivery's body");
    std::string key;
    if (const auto e = req.find("X-Jr2-Event"); e != req.end()) {
      key = std::string(SV(e->value()));
    } else if (const auto g = req.find("X-GitHub-Event"); g != req.end()) {
      key = std::string(SV(g->value()));
      if (payload.is_object() && payload.contains("action") && payload["action"].is_string())
        key += "." + payload["action"].get<std::string>();
    } else {
      throw HttpError{400,
                      "a delivery needs its event key: `X-Jr2-Event`, or `X-GitHub-Event` "
                      "(with the body's `action`)"};
    }
    std::string delivery;
    if (const auto d = req.find("X-Jr2-Delivery"); d != req.end()) {
      delivery = std::string(SV(d->value()));
    } else if (const auto gd = req.find("X-GitHub-Delivery"); gd != req.end()) {
      delivery = std::string(SV(gd->value()));
    }
    if (delivery.size() > 200 || key.size() > 200)
      throw HttpError{400, "a delivery id or event key is at most 200 characters"};
    const Json verdict = host_.deliverHook(name, key, delivery, payload, /*drive=*/false);
    const std::shared_ptr<Limits> limits = limits_;
    if (verdict.contains("forwardTo") && verdict["forwardTo"].is_string()) {
      // The Pool that hears it is driven by another serve sharing the store: the delivery is
      // handed to that serve, and answered with its verdict (503 when none took it).
      const std::string id = verdict["forwardTo"].get<std::string>();
      return host_.forward(
          id, "hook",
          {{"hook", name}, {"event", key}, {"delivery", delivery}, {"payload", payload}}, 10000,
          [s, name, limits, id](const std::optional<Json>& answer) {
            if (!answer) {
              return s->answer(503,
                               {{"error", "the serve that drives run " + id +
                                              " took nothing within 10 s; nothing of the "
                                              "delivery was done: send it again"}},
                               1);
            }
            if (answer->contains("error")) {
              const ErrorRule* rule = RuleNamed(answer->value("kind", ""));
              return s->refuse({rule != nullptr ? rule->http : 503u, answer->value("error", "")});
            }
            AnswerVerdict(s, name, limits, answer->value("verdict", Json::object()));
          });
    }
    committed(s, [s, verdict, name, limits] { AnswerVerdict(s, name, limits, verdict); });
  }

  // A hook delivery's answer by its verdict: above the Pool's `hold` 429, and the delivery is not
  // kept (a resend is heard); a Pool paused, in its back-off or busy 503.
  static void AnswerVerdict(const std::shared_ptr<Session>& s, const std::string& name,
                            const std::shared_ptr<Limits>& limits, Json verdict) {
    verdict.erase("forwardTo");
    const std::string v = verdict.value("verdict", "");
    {
      std::lock_guard<std::mutex> lock(limits->mu);
      ++limits->verdicts[{name, v}];
    }
    if (v == "paused" || v == "backoff" || v == "busy")
      return s->answer(503, verdict, static_cast<int>(verdict.value("retryAfter", int64_t{0})));
    if (v == "hold-full") return s->answer(429, verdict, 1);
    s->answer(200, std::move(verdict));
  }

  // GET /metrics (#30): the Prometheus text format (0.0.4), for the instance token or a Caller
  // with the `metrics` scope.
  void metrics(const std::shared_ptr<Session>& s) {
    const Caller& c = caller(s);
    if (!Callers::HasAnywhere(c, Scope::kMetrics))
      throw HttpError{403, "Caller `" + Printable(c.name) +
                               "` has no `metrics` scope (give it `\"*\": [\"metrics\"]` in the "
                               "callers file)"};
    std::string out;
    auto family = [&out](const char* name, const char* type, const char* help) {
      out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
    };
    auto labels = [](std::initializer_list<std::pair<const char*, std::string>> ls) {
      std::string text = "{";
      for (const auto& [k, v] : ls) {
        if (text.size() > 1) text += ",";
        text += std::string(k) + "=\"";
        for (char ch : v) {
          if (ch == '\\' || ch == '"') text += '\\';
          if (ch == '\n') {
            text += "\\n";
            continue;
          }
          text += ch;
        }
        text += "\"";
      }
      return text + "}";
    };
    auto num = [](double v) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.9g", v);
      return std::string(buf);
    };
    const RunHost::Metrics& m = host_.metrics();
    family("jr2_runs", "gauge", "Runs in the store, by workflow and status.");
    for (const auto& [key, n] : host_.runCounts())
      out += "jr2_runs" + labels({{"workflow", key.first}, {"status", key.second}}) + " " +
             std::to_string(n) + "\n";
    auto eventCount = [&](const char* kind) {
      const auto it = m.events.find(kind);
      return it == m.events.end() ? int64_t{0} : it->second;
    };
    family("jr2_items_settled_total", "counter", "Pool items settled since serve started.");
    out += "jr2_items_settled_total " + std::to_string(eventCount("settled")) + "\n";
    family("jr2_items_failed_total", "counter", "Pool items failed since serve started.");
    out += "jr2_items_failed_total " + std::to_string(eventCount("failed")) + "\n";
    family("jr2_gates_opened_total", "counter", "Gates opened since serve started.");
    out += "jr2_gates_opened_total " + std::to_string(eventCount("gate-opened")) + "\n";
    family("jr2_gates_open", "gauge", "Gates open now (of the runs serve hosts).");
    out += "jr2_gates_open " + std::to_string(m.gateOpened.size()) + "\n";
    // What is live at once (core/occupancy.h), beside what jr2c worked out each workflow can
    // have (docs/checks.md#e0412): an operator sees how close the runs come to it.
    const std::pair<Live, const char*> kinds[] = {
        {Live::kWorker, "workers"}, {Live::kProcess, "processes"}, {Live::kRun, "runs"}};
    family("jr2_live", "gauge", "Pool workers, processes and dispatched runs live now.");
    for (const auto& [kind, name] : kinds)
      out +=
          "jr2_live" + labels({{"kind", name}}) + " " + std::to_string(Occupancy(kind).now) + "\n";
    family("jr2_live_peak", "gauge", "The most of each live at once since serve started.");
    for (const auto& [kind, name] : kinds)
      out += "jr2_live_peak" + labels({{"kind", name}}) + " " +
             std::to_string(Occupancy(kind).peak) + "\n";
    family("jr2_concurrency_figure", "gauge",
           "What jr2c check worked out a run of each workflow can have live at once (none where "
           "it is unbounded).");
    for (const WorkflowInfo& w : host_.registry().workflows()) {
      if (w.concurrency == nullptr) continue;
      const Json figures = Json::parse(w.concurrency);
      for (const auto& [kind, name] : kinds) {
        (void)kind;  // the figures are by name
        const Json& f = figures.at(name);
        if (f.is_number_integer())
          out += "jr2_concurrency_figure" + labels({{"workflow", w.name}, {"kind", name}}) + " " +
                 std::to_string(f.get<int64_t>()) + "\n";
      }
    }
    auto histogram = [&](const char* name, const char* help, const RunHost::Histogram& h) {
      family(name, "histogram", help);
      int64_t cumulative = 0;
      for (size_t i = 0; i <= h.bounds.size(); ++i) {
        cumulative += i < h.counts.size() ? h.counts[i] : 0;
        out += std::string(name) + "_bucket" +
               labels({{"le", i < h.bounds.size() ? num(h.bounds[i]) : "+Inf"}}) + " " +
               std::to_string(cumulative) + "\n";
      }
      out += std::string(name) + "_sum " + num(h.sum) + "\n";
      out += std::string(name) + "_count " + std::to_string(h.count) + "\n";
    };
    histogram("jr2_gate_wait_seconds", "How long a Gate was open, from opened to closed.",
              m.gateWait);
    histogram("jr2_commit_seconds", "How long a turn's group commit took.", m.commit);
    family("jr2_commits_failed_total", "counter", "Group commits the store's disk refused.");
    out += "jr2_commits_failed_total " + std::to_string(m.commitsFailed) + "\n";
    // Hosts sharing a PostgreSQL store (docs/scaling.md#several-hosts): 0 on a SQLite store.
    family("jr2_lease_lost_total", "counter",
           "Times this serve lost its lease and let go of its runs (then joined again).");
    out += "jr2_lease_lost_total " + std::to_string(m.fences) + "\n";
    family("jr2_runs_claimed_total", "counter", "Runs this serve claimed from a shared store.");
    out += "jr2_runs_claimed_total " + std::to_string(m.claimed) + "\n";
    family("jr2_starts_queued_total", "counter",
           "Starts this serve queued for another, being at its --capacity.");
    out += "jr2_starts_queued_total " + std::to_string(m.queued) + "\n";
    family("jr2_hosts_reaped_total", "counter",
           "Hosts this serve found past their lease and released.");
    out += "jr2_hosts_reaped_total " + std::to_string(m.reaped) + "\n";
    const Hosts::Keeper::Counts kept = host_.keeperCounts();
    family("jr2_heartbeats_total", "counter",
           "Heartbeats of this serve's lease that went through.");
    out += "jr2_heartbeats_total " + std::to_string(kept.beats) + "\n";
    family("jr2_fence_kills_total", "counter",
           "Process groups killed the moment this serve's lease was judged lost.");
    out += "jr2_fence_kills_total " + std::to_string(m.killedOnFence) + "\n";
    family("jr2_listening", "gauge",
           "1 while the other serves' NOTIFYs reach this one (0 with --poll-only).");
    out += std::string("jr2_listening ") + (host_.listening() ? "1" : "0") + "\n";
    family("jr2_notifies_received_total", "counter",
           "NOTIFYs of other serves and runners this serve's keeper received.");
    out += "jr2_notifies_received_total " + std::to_string(kept.notifies) + "\n";
    family("jr2_wakeups_total", "counter",
           "Wake-ups those NOTIFYs brought, by what was looked at.");
    out += "jr2_wakeups_total{kind=\"inbox\"} " + std::to_string(m.wokenInbox) + "\n";
    out += "jr2_wakeups_total{kind=\"answers\"} " + std::to_string(m.wokenAnswers) + "\n";
    out += "jr2_wakeups_total{kind=\"runs\"} " + std::to_string(m.wokenRuns) + "\n";
    family("jr2_notifies_sent_total", "counter",
           "NOTIFYs this serve's store sent (at most one per channel a transaction).");
    out += "jr2_notifies_sent_total " +
           std::to_string(host_.storeHosts() != nullptr ? host_.storeHosts()->notifies() : 0) +
           "\n";
    family("jr2_store_full", "gauge", "1 while the store's disk is full.");
    out += std::string("jr2_store_full ") + (host_.storeFull().empty() ? "0" : "1") + "\n";
    family("jr2_effects_running", "gauge", "Processes, host functions and waits out now.");
    out += "jr2_effects_running " + std::to_string(host_.effectsOut()) + "\n";
    family("jr2_hook_deliveries_total", "counter", "Hook deliveries by hook and verdict.");
    std::lock_guard<std::mutex> lock(limits_->mu);  // the network thread counts too
    for (const auto& [key, n] : limits_->verdicts)
      out += "jr2_hook_deliveries_total" + labels({{"hook", key.first}, {"verdict", key.second}}) +
             " " + std::to_string(n) + "\n";
    family("jr2_http_requests_total", "counter", "HTTP answers by route and status.");
    for (const auto& [key, n] : limits_->answers)
      out += "jr2_http_requests_total" +
             labels({{"route", key.first}, {"status", std::to_string(key.second)}}) + " " +
             std::to_string(n) + "\n";
    family("jr2_http_connections", "gauge", "HTTP connections open now.");
    out += "jr2_http_connections " + std::to_string(limits_->connections) + "\n";
    family("jr2_http_open_streams", "gauge", "Event streams of the open band now.");
    out += "jr2_http_open_streams " + std::to_string(limits_->openStreams) + "\n";
    family("jr2_http_evicted_total", "counter", "Idle connections sent away when serve was full.");
    out += "jr2_http_evicted_total " + std::to_string(limits_->evicted) + "\n";
    family("jr2_http_kept_alive_total", "counter",
           "Reads of a further request on a connection kept alive after an answer.");
    out += "jr2_http_kept_alive_total " + std::to_string(limits_->reused) + "\n";
    family("jr2_model_requests_total", "counter", "An Agent's asks of its model.");
    out += "jr2_model_requests_total " + std::to_string(m.modelRequests) + "\n";
    family("jr2_model_retries_total", "counter", "Tries again after a model's failed answer.");
    out += "jr2_model_retries_total " + std::to_string(m.modelRetries) + "\n";
    s->answerText(200, out, "text/plain; version=0.0.4; charset=utf-8");
  }

  void hookLog(const std::shared_ptr<Session>& s, const std::string& name) {
    const Caller& c = caller(s);
    if (!c.instance)
      throw HttpError{403,
                      "the hook log is the instance token's alone (it can hold a "
                      "delivery's fields)"};
    if (secrets_.count(name) == 0)
      throw HttpError{404, "this serve has no hook `" + Printable(name.substr(0, 100)) + "`"};
    s->answer(200, host_.hookLog(name, kHookLogLimit));
  }

  RunHost& host_;
  boost::asio::io_context& engine_;  // the engine's: its thread routes and pumps
  const ServeOptions& options_;
  Callers callers_;
  std::map<std::string, std::string> secrets_;
  std::shared_ptr<Limits> limits_ = std::make_shared<Limits>();
  struct Waiting {
    std::weak_ptr<Session> session;
    uint64_t readNo;  // the read it waits in
  };
  std::deque<Waiting> reading_;  // connections waiting for their request
  // Followers whose next page is due, held: nothing else may hold a follower meanwhile.
  std::deque<std::shared_ptr<Session>> pumps_;
  bool pumpsQueued_ = false;

  void runPumps() {
    pumpsQueued_ = false;
    const auto until = std::chrono::steady_clock::now() + kPumpBudget;
    while (!pumps_.empty() && std::chrono::steady_clock::now() < until) {
      auto s = std::move(pumps_.front());
      pumps_.pop_front();
      s->pumpNow();
    }
    if (!pumps_.empty()) {
      pumpsQueued_ = true;
      host_.queue([this] { runPumps(); });
    }
  }
};

Session::Session(std::shared_ptr<boost::asio::io_context> net, tcp::socket socket, Server& server,
                 std::shared_ptr<Limits> limits, boost::asio::ssl::context* tls)
    : netContext_(std::move(net)),
      server_(server),
      limits_(std::move(limits)),
      net_(socket.get_executor()),
      readTimer_(socket.get_executor()) {
  // An answer is written whole at once, and a kept-alive connection's next answer must not wait
  // for the client's delayed ACK of the last (Nagle's algorithm holds a short last segment while
  // data is unacknowledged).
  beast::error_code nodelay;
  socket.set_option(tcp::no_delay(true), nodelay);
  if (tls != nullptr)
    tls_.emplace(std::move(socket), *tls);
  else
    plain_.emplace(std::move(socket));
  {
    std::lock_guard<std::mutex> lock(limits_->mu);
    ++limits_->connections;
    ++limits_->sockets;
    limits_->open.insert(this);
  }
  beast::error_code ec;
  const auto peer = lowest().socket().remote_endpoint(ec);
  if (!ec) address_ = peer.address().to_string();
}

Session::~Session() {
  // On whichever thread let go of it last.
  std::lock_guard<std::mutex> lock(limits_->mu);
  --limits_->connections;
  if (!closed_) --limits_->sockets;
  limits_->open.erase(this);
  if (openSlot_) {
    --limits_->openStreams;
    if (--limits_->openByAddress[address_] <= 0) limits_->openByAddress.erase(address_);
  }
}

bool Session::takeOpenSlot() {
  if (openSlot_) return true;
  std::lock_guard<std::mutex> lock(limits_->mu);
  int& mine = limits_->openByAddress[address_];
  if (mine >= kOpenStreamsPerAddress || limits_->openStreams >= limits_->maxOpenStreams) {
    if (mine == 0) limits_->openByAddress.erase(address_);
    return false;
  }
  ++mine;
  ++limits_->openStreams;
  openSlot_ = true;
  return true;
}

void Session::start(bool over) {
  if (!tls_) return begin(over);
  // The handshake first, under the read's deadline: a client that never finishes it (or speaks
  // plain HTTP to a TLS port) is let go.
  readTimer_.expires_after(kReadLimit);
  readTimer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || self->handshook_) return;
    self->close();
  });
  tls_->async_handshake(boost::asio::ssl::stream_base::server,
                        [self = shared_from_this(), over](beast::error_code ec) {
                          self->handshook_ = true;
                          self->readTimer_.cancel();
                          if (ec) return self->close();  // not TLS, or a certificate refused
                          self->begin(over);
                        });
}

void Session::begin(bool over) {
  if (over && !server_.evictIdle()) {
    // Full of connections that are all at work: refused at once, read or not.
    answer(503,
           {{"error", "serve has " + std::to_string(limits_->maxConnections) +
                          " connections open, none of them idle; try again"}},
           1);
    return;
  }
  parser_.emplace();
  parser_->body_limit(kBodyLimit);
  parser_->header_limit(16 * 1024);
  keepOpen_ = false;
  rearmed_ = false;
  reading_ = true;
  ++readNo_;
  server_.reading(shared_from_this());
  // The read's own deadline, not the stream's: the stream's closes the socket when it expires,
  // and a slow client is owed its 408. While serve stops, a moment to finish what it sends.
  armReadLimit(limits_->stopping ? kDrainReadLimit : kReadLimit);
  io([this](auto& stream) {
    http::async_read(stream, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->read(ec); });
  });
}

void Session::next() {
  ++served_;
  {
    std::lock_guard<std::mutex> lock(limits_->mu);
    ++limits_->reused;
  }
  res_ = {};
  answered_ = false;
  routed_ = false;
  route_.clear();
  begin(false);
}

void Session::evict() {
  if (!reading_) return;
  evicted_ = true;
  beast::error_code ignored;
  lowest().socket().cancel(ignored);
}

void Session::armReadLimit(std::chrono::milliseconds limit) {
  readTimer_.expires_after(limit);
  readTimer_.async_wait([self = shared_from_this()](beast::error_code ec) {
    if (ec || !self->reading_) return;
    if (self->served_ > 0 && self->begun() && !self->rearmed_ && !self->limits_->stopping) {
      // A kept-alive connection whose request began late in its idle time: that request has
      // its own kReadLimit to arrive whole.
      self->rearmed_ = true;
      return self->armReadLimit(kReadLimit);
    }
    self->readTimedOut_ = true;
    beast::error_code ignored;
    self->lowest().socket().cancel(ignored);
  });
}

void Session::drain() {
  if (tls_ && !handshook_) return;  // begin() reads under the drain's short limit
  if (reading_ && served_ > 0 && !begun()) {
    // A kept-alive connection with no request on its way: closed now, nothing to answer.
    beast::error_code ignored;
    lowest().socket().cancel(ignored);
    return;
  }
  if (reading_) {
    // A request on its way has a moment to arrive whole (then read() answers 503, having read
    // it: a close with unread bytes would reset the connection before the client reads the
    // answer); one that does not arrive is answered 503 then.
    armReadLimit(kDrainReadLimit);
    return;
  }
  if (streaming_) {
    // An event stream ends now, between two events or in a page the client has not taken: a
    // follower takes the feed up from the next serve with Last-Event-ID, and one that reads
    // nothing holds up no stop.
    ending_ = true;
    close();
    return;
  }
  if (!answered_) {
    answer(
        503,
        {{"error", routed_ ? "serve stopped before this request was done; what it stored is kept "
                             "(`GET` the run to see it); send the request again when serve is "
                             "back (a start with the same Idempotency-Key is answered with its run)"
                           : "serve is stopping and did not take this request; nothing of it "
                             "was done; send it again when serve is back"}},
        5);
  }
}

void Session::read(beast::error_code ec) {
  reading_ = false;
  readTimer_.cancel();
  // A kept-alive connection that sent nothing more: closed when it idles too long, when serve
  // is full or stops, or when the client closes it (none of these is owed an answer).
  if (ec && served_ > 0 && !begun()) return close();
  if (limits_->stopping && (!ec || ec == boost::asio::error::operation_aborted || readTimedOut_)) {
    return answer(503,
                  {{"error",
                    "serve is stopping and did not take this request; nothing of it was "
                    "done; send it again when serve is back"}},
                  5);
  }
  if (evicted_) {
    return answer(
        503, {{"error", "serve is full and this connection sent no request; send it again"}}, 1);
  }
  if (readTimedOut_) {
    return answer(408,
                  {{"error", "the request did not arrive whole within " +
                                 std::to_string(std::chrono::seconds(kReadLimit).count()) + " s"}});
  }
  if (ec == http::error::body_limit) return answer(413, {{"error", "the body is over 1 MiB"}});
  if (ec == http::error::header_limit)
    return answer(431, {{"error", "the request's headers are over 16 KiB"}});
  if (ec) {
    if (ec == http::error::end_of_stream || ec == http::error::partial_message ||
        ec.category() != http::make_error_code(http::error::bad_target).category())
      return close();  // the client went away
    return answer(400, {{"error", "this is not an HTTP/1.1 request: " + ec.message()}});
  }
  keepOpen_ = true;  // read whole: after its answer the connection may carry another
  // Handed to the engine's thread, and routed there between two turns: the connection reads
  // nothing more until the answer comes back.
  auto self = shared_from_this();
  server_.onEngine([self] {
    self->server_.host().queue([self] {
      self->routed_ = true;
      self->server_.route(self);
    });
  });
}

void Session::stream(Pump pump, const char* type) {
  // On the engine's thread: the pump stays here; the head goes out on the network thread.
  pump_ = std::move(pump);
  onNet([this, type] {
    if (answered_ || closed_) return;  // a drain answered first
    answered_ = true;
    streaming_ = true;
    limits_->countAnswer(route_, 200);
    timer_ = std::make_unique<boost::asio::steady_timer>(net_);
    lowest().expires_never();  // a stream lives as long as its run waits; stalls are tick()'s
    // The guard headers every other answer carries (respond), on the stream's head too.
    send(std::string("HTTP/1.1 200 OK\r\nContent-Type: ") + type +
             "\r\nCache-Control: no-store\r\n"
             "Content-Security-Policy: " +
             kApiPolicy +
             "\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n"
             "X-Frame-Options: DENY\r\nConnection: close\r\n\r\n",
         false);
    askPage();  // the first page goes behind the head
  });
}

void Session::askPage() {
  if (asked_ || closed_ || ending_) return;
  asked_ = true;
  server_.onEngine([self = shared_from_this()] { self->server_.wantPump(self); });
}

void Session::tick() {
  if (closed_) return;
  if (writing_) {
    // The client has not taken its last page yet: nothing more is read for it (a client that
    // never reads holds one page), and one that takes nothing for kStallLimit is let go.
    if (std::chrono::steady_clock::now() - writeStarted_ >= kStallLimit) return close();
    timer_->expires_after(std::chrono::milliseconds(200));
    timer_->async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->tick();
    });
    return;
  }
  askPage();
}

void Session::pumpNow() {
  if (closed_) return;
  // What the feed has now, read between two turns (what is stored), a page at most: asked for
  // only when the client has taken the last (askPage), so a follower holds one page at most.
  Page page = pump_(kFeedPage);
  onNet([this, page = std::move(page)] { deliver(page); });
}

void Session::deliver(const Page& page) {
  asked_ = false;
  if (closed_ || ending_) return;
  more_ = page.more;
  if (!page.text.empty() || page.last) send(page.text, page.last);
  if (page.last) return;
  if (more_ && writing_) return;  // the next page is asked for as soon as the client took this
  if (more_) return askPage();
  timer_->expires_after(std::chrono::milliseconds(200));
  timer_->async_wait([self = shared_from_this()](beast::error_code ec) {
    if (!ec) self->tick();
  });
}

void Session::send(const std::string& text, bool last) {
  out_ += text;
  ending_ = ending_ || last;
  if (writing_) return;
  if (out_.empty()) {
    if (ending_) finish();
    return;
  }
  writing_ = true;
  writeStarted_ = std::chrono::steady_clock::now();
  auto chunk = std::make_shared<std::string>(std::move(out_));
  out_.clear();
  io([this, chunk](auto& stream) {
    boost::asio::async_write(
        stream, boost::asio::buffer(*chunk),
        [self = shared_from_this(), chunk](beast::error_code ec, size_t) {
          self->writing_ = false;
          if (ec) return self->close();  // the client went away
          self->send("", false);
          // Taken: a page that was waiting behind it goes now.
          if (!self->writing_ && self->more_ && !self->ending_ && self->streaming_) self->askPage();
        });
  });
}

class Listener {
 public:
  // `fd`: a socket that listens already (serve --supervise's, kept across restarts), or -1.
  // `io`: the network thread's; `say`: what it has to say, said on the engine's thread.
  Listener(std::shared_ptr<boost::asio::io_context> io, const tcp::endpoint& at, int fd,
           Server& server, boost::asio::ssl::context* tls,
           std::function<void(const std::string&)> say)
      : io_(std::move(io)),
        owned_(fd < 0),
        acceptor_(*io_),
        pause_(*io_),
        server_(server),
        tls_(tls),
        say_(std::move(say)) {
    if (fd >= 0) {
      acceptor_.assign(at.protocol(), fd);
    } else {
      acceptor_.open(at.protocol());
      acceptor_.set_option(boost::asio::socket_base::reuse_address(true));
      acceptor_.bind(at);
      acceptor_.listen();
    }
    accept();
  }
  void close() {
    beast::error_code ignored;
    acceptor_.close(ignored);
    pause_.cancel();
  }
  // Serve stops: the kernel begins no more handshakes on this listener (a filter that drops a
  // SYN, a packet whose flags are SYN without ACK: its client is refused once the listener is
  // closed), so that what takeWaiting() takes is every connection made by then (up to the
  // connection bound) but those whose handshakes were under way then and complete after it (a
  // round trip wide: the close resets those).
  // What else comes passes (a handshake's last ACK, and anything on a connection made from it,
  // which keeps the filter). Not on a socket serve was given (--supervise's: it goes on
  // listening for the next serve).
  void refuseNew() {
    if (!owned_) return;
    // A TCP socket's filter reads the segment from its TCP header: its flags are byte 13.
    std::array<sock_filter, 5> code{{
        {BPF_LD | BPF_B | BPF_ABS, 0, 0, 13},
        {BPF_ALU | BPF_AND | BPF_K, 0, 0, 0x12},  // SYN | ACK
        {BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0x02},  // SYN alone: dropped
        {BPF_RET | BPF_K, 0, 0, 0},               // dropped
        {BPF_RET | BPF_K, 0, 0, 0xffffffffU},     // kept whole
    }};
    sock_fprog program{static_cast<unsigned short>(code.size()), code.data()};
    // Failing, the close may reset a connection that came in that moment, as it did before.
    (void)setsockopt(acceptor_.native_handle(), SOL_SOCKET, SO_ATTACH_FILTER, &program,
                     sizeof program);
  }
  // Serve stops: the connections waiting in the kernel's queue are taken now (and answered 503
  // by the drain, having done nothing), not reset by the close that follows.
  void takeWaiting() {
    beast::error_code ec;
    acceptor_.non_blocking(true, ec);
    if (ec) return;
    const auto& limits = server_.limits();
    for (int taken = 0; taken < limits->maxConnections; ++taken) {
      tcp::socket socket(acceptor_.get_executor());
      acceptor_.accept(socket, ec);
      if (ec) return;  // would block: the queue is empty
      std::make_shared<Session>(io_, std::move(socket), server_, limits, tls_)->start(false);
    }
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  void accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      // Closed by the drain, with nothing taken.
      if (ec == boost::asio::error::operation_aborted) return;
      if (ec) {
        if (!acceptor_.is_open()) return;
        // Out of file descriptors (or of memory): accepting again at once would fail again at
        // once, for ever, and starve the engine; the connections waiting in the kernel's queue
        // are taken when some close. Said once a spell.
        if (!pausing_) {
          say_("cannot accept connections: " + ec.message() + " (" +
               std::to_string(server_.limits()->openConnections()) +
               " open); trying again every 100 ms (raise `ulimit -n`)");
        }
        pausing_ = true;
        pause_.expires_after(std::chrono::milliseconds(100));
        pause_.async_wait([this](beast::error_code wec) {
          if (!wec) accept();
        });
        return;
      }
      if (pausing_) say_("accepting connections again");
      pausing_ = false;
      // A connection taken is answered, even one whose accept completed as the drain closed the
      // listener: its Session reads under the drain's short limit and answers 503 (dropping its
      // socket here would reset a client that sent its request).
      const auto& limits = server_.limits();
      const bool over = limits->openConnections() >= limits->maxConnections;
      std::make_shared<Session>(io_, std::move(socket), server_, limits, tls_)->start(over);
      if (acceptor_.is_open()) accept();  // not armed again once the drain closed it
    });
  }
  std::shared_ptr<boost::asio::io_context> io_;
  bool owned_;  // made here, not given (--supervise's socket)
  tcp::acceptor acceptor_;
  boost::asio::steady_timer pause_;
  Server& server_;
  boost::asio::ssl::context* tls_;
  std::function<void(const std::string&)> say_;
  bool pausing_ = false;
};

// serve's network thread: runs `io` from its making until stop() (or its end), and goes on past a
// handler that threw (a connection's failure, said, costs that connection only).
class NetThread {
 public:
  NetThread(boost::asio::io_context& io, std::function<void(const std::string&)> tell)
      : io_(io), work_(io.get_executor()), tell_(std::move(tell)), thread_([this] { run(); }) {}
  ~NetThread() { stop(); }
  NetThread(const NetThread&) = delete;
  NetThread& operator=(const NetThread&) = delete;
  void stop() {
    if (!thread_.joinable()) return;
    work_.reset();
    io_.stop();
    thread_.join();
  }

 private:
  void run() {
    prctl(PR_SET_NAME, "jr2-net", 0, 0, 0);  // as `top -H` and the bench name it
    for (;;) {
      try {
        io_.run();
        return;
      } catch (const std::exception& e) {
        tell_(std::string("serve's network thread: a connection failed: ") + e.what());
      }
    }
  }
  boost::asio::io_context& io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::function<void(const std::string&)> tell_;
  std::thread thread_;  // last: it starts once the rest is made
};

// `--listen HOST:PORT` as an endpoint (loopback when HOST is left out); BadInput for one that
// is not an IP address and a port.
tcp::endpoint ListenAddress(const std::string& listen, std::string* hostPart) {
  *hostPart = "127.0.0.1";
  std::string portPart = listen;
  if (const auto colon = listen.rfind(':'); colon != std::string::npos) {
    *hostPart = listen.substr(0, colon);
    portPart = listen.substr(colon + 1);
  }
  beast::error_code ec;
  const auto address = boost::asio::ip::make_address(*hostPart, ec);
  char* end = nullptr;
  const long port = std::strtol(portPart.c_str(), &end, 10);
  if (ec || portPart.empty() || *end != '\0' || port < 0 || port > 65535) {
    throw BadInput("`--listen` takes HOST:PORT with an IP address, such as 127.0.0.1:8470, not `" +
                   Printable(listen) + "`");
  }
  return {address, static_cast<uint16_t>(port)};
}

}  // namespace

int ListenOn(const std::string& listen) {
  std::string hostPart;
  const tcp::endpoint at = ListenAddress(listen, &hostPart);
  boost::asio::io_context io;
  tcp::acceptor acceptor(io);
  try {
    acceptor.open(at.protocol());
    acceptor.set_option(boost::asio::socket_base::reuse_address(true));
    acceptor.bind(at);
    acceptor.listen();
  } catch (const boost::system::system_error& e) {
    throw BadInput("cannot listen on " + listen + ": " + e.code().message());
  }
  return acceptor.release();
}

int Serve(RunHost& host, const ServeOptions& options,
          const std::function<void(const std::string&)>& say) {
  // What the network thread has to say (the listener's trouble, a connection's failure) is said
  // on the engine's thread, where everything else serve says is: the runner's printer is its.
  boost::asio::io_context& engineIo = host.engine().io();
  const std::function<void(const std::string&)> tell = [&engineIo, &say](const std::string& line) {
    boost::asio::post(engineIo, [&say, line] { say(line); });
  };
  // HOST:PORT, loopback by default.
  std::string hostPart;
  const tcp::endpoint endpoint = ListenAddress(options.listen, &hostPart);
  const auto address = endpoint.address();
  // TLS: a certificate and its key, read now (a file that cannot be used is said before serve
  // listens); without them, plain HTTP only on loopback unless told --insecure-http.
  std::unique_ptr<boost::asio::ssl::context> tls;
  if (options.tlsCert.empty() != options.tlsKey.empty())
    throw BadInput(
        "`--tls-cert` and `--tls-key` go together: give the certificate (its chain, "
        "PEM) and its private key (PEM)");
  if (!options.tlsCert.empty()) {
    namespace ssl = boost::asio::ssl;
    tls = std::make_unique<ssl::context>(ssl::context::tls_server);
    tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                     ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1 |
                     ssl::context::single_dh_use);
    auto load = [&](const char* flag, const std::string& file, auto&& fn) {
      beast::error_code lec;
      fn(lec);
      if (lec) {
        throw BadInput("cannot use " + std::string(flag) + " `" + Printable(file) +
                       "`: " + lec.message() + " (give a PEM file that this user can read)");
      }
    };
    // The key first: a certificate that is not the key's then fails the check below, which
    // names both files (the other order gives OpenSSL's "key values mismatch").
    load("--tls-key", options.tlsKey, [&](beast::error_code& e) {
      tls->use_private_key_file(options.tlsKey, ssl::context::pem, e);
    });
    load("--tls-cert", options.tlsCert,
         [&](beast::error_code& e) { tls->use_certificate_chain_file(options.tlsCert, e); });
    if (SSL_CTX_check_private_key(tls->native_handle()) != 1) {
      throw BadInput("`--tls-key` `" + Printable(options.tlsKey) +
                     "` is not the private key of the certificate in `--tls-cert` `" +
                     Printable(options.tlsCert) + "`");
    }
  } else if (!address.is_loopback() && !options.insecureHttp) {
    throw BadInput("serve would listen on " + Printable(options.listen) +
                   " in plain HTTP, and every token would cross the network readable; give "
                   "`--tls-cert FILE --tls-key FILE`, or `--insecure-http` when a proxy in front "
                   "of serve speaks TLS for it");
  }
  // The Callers: the file's, and the instance token (every scope), made on first start.
  Callers callers;
  if (!options.callersFile.empty()) callers = Callers::Load(options.callersFile);
  // A store shared by hosts keeps its instance token itself (every host accepts the one token);
  // a SQLite store's is the file beside it.
  Hosts* const shared = host.storeHosts();
  if (shared == nullptr && (!options.hostName.empty() || options.pollOnly)) {
    throw BadInput(std::string("`") + (options.pollOnly ? "--poll-only" : "--host-name") +
                   "` is for serves sharing a PostgreSQL store, and " +
                   Printable(options.storePath) +
                   " is a SQLite store (one serve drives it): leave it out, or give "
                   "--store postgresql://… (docs/scaling.md#several-hosts)");
  }
  callers.addInstance(shared != nullptr ? shared->instanceToken()
                                        : InstanceToken(options.storePath));
  // Each hook's secret, from its variable: a hook that could verify nothing is refused now.
  std::map<std::string, std::string> secrets;
  for (const auto& [name, config] : callers.hooks()) {
    const char* value = std::getenv(config.secretEnv.c_str());
    if (value == nullptr || *value == '\0') {
      throw BadInput("hook `" + Printable(name) + "` takes its secret from $" +
                     Printable(config.secretEnv) +
                     ", which is not set; set it (the secret the "
                     "forge signs with) and start serve again");
    }
    secrets[name] = value;
  }
  Server server(host, options, std::move(callers), std::move(secrets));
  // File descriptors: the soft limit raised to the hard one (1,024 is a shell's usual soft
  // limit), and the connections bounded below it, leaving room for the store, the processes'
  // pipes and the hooks' reads.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
    getrlimit(RLIMIT_NOFILE, &files);
  }
  const int64_t fds =
      files.rlim_cur == RLIM_INFINITY ? 65536 : static_cast<int64_t>(files.rlim_cur);
  server.limits()->maxConnections =
      options.maxConnections > 0
          ? options.maxConnections
          : static_cast<int>(std::clamp<int64_t>(fds * 3 / 4 - 64, 16, 16384));
  server.limits()->maxOpenStreams = std::max(1, server.limits()->maxConnections / 4);
  // The network thread's (docs/runtime.md#two-threads): the listener and every connection, from
  // the moment serve serves (NetThread below) until the drain is over.
  // Shared with every connection, so that it outlives them (Session::netContext_).
  const auto net = std::make_shared<boost::asio::io_context>(1);
  std::unique_ptr<Listener> listener;
  try {
    listener = std::make_unique<Listener>(net, endpoint, options.listenFd, server, tls.get(), tell);
  } catch (const boost::system::system_error& e) {
    throw BadInput("cannot listen on " + options.listen + ": " + e.code().message());
  }
  for (const auto& line : StandingNotes(host.registry(), options.workflows)) say(line);
  if (shared != nullptr) {
    // Hosts sharing the store: this one joins under its name (the machine's and the port by
    // default), and owns the runs it claims from then on.
    std::string name = options.hostName;
    if (name.empty()) {
      char machine[256] = {};
      gethostname(machine, sizeof machine - 1);
      name = std::string(machine) + ":" + std::to_string(listener->port());
    }
    host.joinHosts(name, options.leaseTtlMs, options.capacity, options.pollOnly);
  }
  int taken = host.takeLive(options.workflows);
  // A standing run of an older build is handed over to one of this build (its held items and
  // live keys go with it); a standing workflow with no live run gets one.
  taken += static_cast<int>(host.handOverDue().size());
  taken += static_cast<int>(host.standUp(options.workflows).size());
  say("serving " + std::to_string(taken) + " waiting run" + (taken == 1 ? "" : "s") + " on " +
      (tls ? "https://" : "http://") + hostPart + ":" + std::to_string(listener->port()) +
      (shared != nullptr
           ? std::string(
                 " (the instance token is kept in the run store; SIGTERM or Ctrl-C stops it)")
           : " (the instance token is in " + options.storePath +
                 ".token; SIGTERM or Ctrl-C stops it)"));
  const auto takeMore = [&] {
    if (const int more = host.takeLive(options.workflows); more > 0) {
      say("took up " + std::to_string(more) + " more run" + (more == 1 ? "" : "s"));
    }
  };
  NetThread netThread(*net, tell);
  host.serve(
      [&] {
        if (shared != nullptr) host.hearEnds();
        host.releaseEnded();
        host.handOverDue();
        host.standUp(options.workflows);
        takeMore();
      },
      [&] {
        host.releaseEnded();
        takeMore();
      });
  // Hosts sharing the store: its runs and heads let go at once, for the other hosts (before the
  // drain, which may last longer than the lease; what the drain answers was decided already).
  host.leaveHosts();
  // The drain: every connection is answered or ended, within the bound; then serve exits. (A
  // Session may outlive its socket, held by a handler queued for a turn that never comes: what
  // counts is the sockets still open.) The connections are the network thread's: it takes the
  // kernel's waiting ones (answered 503 by the drain), closes the listener and drains each.
  const std::shared_ptr<Limits>& limits = server.limits();
  limits->stopping = true;
  std::promise<size_t> begun;
  boost::asio::post(*net, [&] {
    std::vector<std::shared_ptr<Session>> all;
    try {
      listener->refuseNew();
      listener->takeWaiting();
      listener->close();
      {
        std::lock_guard<std::mutex> lock(limits->mu);
        for (Session* s : limits->open) {
          // One whose last owner is letting go of it now (its destructor waits for the lock) is
          // passed over. None is let go here: a destructor takes the lock.
          if (auto live = s->weak_from_this().lock()) all.push_back(std::move(live));
        }
      }
      all.erase(std::remove_if(all.begin(), all.end(),
                               [](const std::shared_ptr<Session>& s) { return s->closed(); }),
                all.end());
    } catch (...) {
      begun.set_value(0);  // the drain below waits for what is open, told or not
      throw;
    }
    // Told after what this thread had queued before runs: an accept that completed as the
    // listener closed makes its Session then, and the wait below counts its socket. Posted
    // first, so that a drain that throws cannot keep it from being told.
    boost::asio::post(*net, [&begun, n = all.size()] { begun.set_value(n); });
    for (auto& s : all) {
      try {
        s->drain();
      } catch (const std::exception&) {
        s->cut();  // this connection only (out of memory for its answer, say)
      }
    }
  });
  const size_t open = begun.get_future().get();
  if (open > 0) {
    say("draining " + std::to_string(open) + " connection" + (open == 1 ? "" : "s") + " (at most " +
        std::to_string(options.drainMs / 1000) + " s)");
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options.drainMs);
  // The engine's own handlers meanwhile (what the network thread hands it is let go: no turn
  // comes any more).
  host.engine().handleUntil([&limits] { return limits->openSockets() == 0; }, deadline);
  const size_t cut = std::min(open, static_cast<size_t>(limits->openSockets()));
  netThread.stop();
  if (open > 0) {
    say("drained: " + std::to_string(open - cut) + " connection" + (open - cut == 1 ? "" : "s") +
        " answered or ended" +
        (cut > 0 ? ", " + std::to_string(cut) + " cut at the bound (their clients took nothing)"
                 : std::string()));
  }
  say("stopped: every step under way is stored" +
      (host.stoppedEffects() > 0
           ? "; " + std::to_string(host.stoppedEffects()) +
                 " processes were stopped (they read `interrupted` when the runs go on)"
           : std::string()));
  if (host.engine().out() > 0) {
    // A blocking host function still runs on a thread: it is not waited for (its run reads
    // `interrupted` when it goes on), as a stopped `run` does not wait for one.
    say("a host function still running is not waited for");
    std::fflush(stdout);
    std::_Exit(0);
  }
  return 0;
}

}  // namespace jr2rt
