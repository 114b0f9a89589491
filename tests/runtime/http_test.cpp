// `std.http_get` against a loopback server this test runs: what a machine's `on done` and
// `on error` see for each kind of answer, and the whole path through a run.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "jr2/run.h"
#include "jr2/stdlib.h"
#include "pool.jr2.h"

namespace {

using jr2rt::Json;

// Serves canned answers by request path on 127.0.0.1 until destroyed. An answer of "" never
// answers (the connection is held open until the client gives up).
class LoopbackServer {
 public:
  explicit LoopbackServer(std::map<std::string, std::string> answers)
      : answers_(std::move(answers)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd_, 16) != 0)
      throw std::runtime_error("the loopback server cannot listen");
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~LoopbackServer() {
    stop_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::string lastRequest() const { return last_; }

 private:
  void serve() {
    while (!stop_) {
      const int client = accept(fd_, nullptr, nullptr);
      if (client < 0) return;
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = read(client, buffer, sizeof buffer);
        if (n <= 0) break;
        request.append(buffer, static_cast<size_t>(n));
      }
      last_ = request;
      const size_t start = request.find(' ') + 1;
      const std::string path = request.substr(start, request.find(' ', start) - start);
      auto it = answers_.find(path);
      const std::string answer =
          it != answers_.end() ? it->second : Response("404 Not Found", "text/plain", "no such");
      if (answer.empty()) {
        // Hold the connection without answering until the client closes it.
        while (read(client, buffer, sizeof buffer) > 0) {
        }
      } else {
        (void)!write(client, answer.data(), answer.size());
      }
      close(client);
    }
  }

 public:
  static std::string Response(const std::string& status, const std::string& type,
                              const std::string& body, const std::string& extra = "") {
    return "HTTP/1.1 " + status + "\r\nContent-Type: " + type +
           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra +
           "Connection: close\r\n\r\n" + body;
  }

 private:
  std::map<std::string, std::string> answers_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::string last_;
  std::thread thread_;
};

using S = LoopbackServer;
using Answers = std::map<std::string, std::string>;

// The Failure `fn` throws (or a note that it threw none).
jr2rt::Failure FailureOf(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const jr2rt::Failure& f) {
    return f;
  }
  return jr2rt::Failure("no Failure was thrown");
}

TEST(HttpGet, GivesTheJsonBodyOfA200) {
  S server(
      Answers{{"/alerts?open=1", S::Response("200 OK", "application/json", R"([{"id":"A-1"}])")}});
  const Json body = jr2rt::HttpGet({{"url", server.url("/alerts?open=1")}});
  EXPECT_EQ(body, Json::parse(R"([{"id":"A-1"}])"));
  EXPECT_NE(server.lastRequest().find("GET /alerts?open=1 HTTP/1.1"), std::string::npos);
  EXPECT_NE(server.lastRequest().find("Accept: application/json"), std::string::npos);
}

TEST(HttpGet, AStatusOtherThan2xxIsAFailureWithTheStatusAndBody) {
  S server(Answers{{"/down", S::Response("503 Service Unavailable", "text/plain", "maintenance")}});
  const auto f = FailureOf([&] { jr2rt::HttpGet({{"url", server.url("/down")}}); });
  EXPECT_EQ(f.reason(),
            "std.http_get: GET " + server.url("/down") + " answered 503 Service Unavailable");
  EXPECT_EQ(f.detail()["status"], 503);
  EXPECT_EQ(f.detail()["body"], "maintenance");
}

TEST(HttpGet, ABodyThatIsNotJsonIsAFailure) {
  S server(Answers{{"/page", S::Response("200 OK", "text/html", "<html>")}});
  const auto f = FailureOf([&] { jr2rt::HttpGet({{"url", server.url("/page")}}); });
  EXPECT_NE(f.reason().find("is not JSON: at line 1, column 1"), std::string::npos) << f.reason();
  EXPECT_EQ(f.detail()["body"], "<html>");
}

TEST(HttpGet, RedirectsAreFollowed) {
  S server(Answers{
      {"/old", S::Response("301 Moved Permanently", "text/plain", "", "Location: /new\r\n")},
      {"/new", S::Response("200 OK", "application/json", R"({"moved":true})")}});
  EXPECT_EQ(jr2rt::HttpGet({{"url", server.url("/old")}}), (Json{{"moved", true}}));
}

TEST(HttpGet, NoAnswerWithinTheTimeoutIsAFailure) {
  S server(Answers{{"/slow", ""}});
  const auto f = FailureOf([&] {
    jr2rt::HttpGet({{"url", server.url("/slow")}, {"timeout", 100}});
  });
  EXPECT_NE(f.reason().find("no answer within 100 ms"), std::string::npos) << f.reason();
}

TEST(HttpGet, WhatCannotBeReachedOrSpokenIsAFailureThatSaysWhy) {
  int port = 0;
  {
    S closed(Answers{});  // a port that was just free, and is closed again
    port = std::stoi(closed.url("").substr(std::string("http://127.0.0.1:").size()));
  }
  const std::string refused = "http://127.0.0.1:" + std::to_string(port) + "/";
  EXPECT_NE(FailureOf([&] {
              jr2rt::HttpGet({{"url", refused}});
            })
                .reason()
                .find("cannot connect"),
            std::string::npos);
  EXPECT_NE(FailureOf([] {
              jr2rt::HttpGet({{"url", "https://example.com/"}});
            })
                .reason()
                .find("plain http only"),
            std::string::npos);
  EXPECT_NE(FailureOf([] {
              jr2rt::HttpGet({{"url", "ftp://example.com/"}});
            })
                .reason()
                .find("is not an http:// URL"),
            std::string::npos);
  EXPECT_NE(FailureOf([] {
              jr2rt::HttpGet({{"url", "http://127.0.0.1:8x/"}});
            })
                .reason()
                .find("bad port"),
            std::string::npos);
  EXPECT_NE(FailureOf([] { jr2rt::HttpGet(Json::object()); }).reason().find("needs a `url`"),
            std::string::npos);
}

// Through a run: `invoke std.http_get(…)` runs on the thread pool; `on done` sees the body and
// `on error` the Failure.
TEST(HttpGet, AMachineInvokesItAndSeesTheBodyOrTheFailure) {
  S server(Answers{{"/ok", S::Response("200 OK", "application/json", R"({"count":3})")}});
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  jr2rt::ManualClock clock;
  {
    jr2rt::Run run(registry, *registry.workflow("conformance_fetch"), "r1", clock);
    run.start({{"url", server.url("/ok")}});
    EXPECT_EQ(run.status(), jr2rt::RunStatus::kDone) << run.reason();
    EXPECT_EQ(run.output(), (Json{{"count", 3}}));
  }
  {
    jr2rt::Run run(registry, *registry.workflow("conformance_fetch"), "r2", clock);
    run.start({{"url", server.url("/missing")}});
    EXPECT_EQ(run.status(), jr2rt::RunStatus::kFailed);
    EXPECT_EQ(run.reason(), "the read failed: std.http_get: GET " + server.url("/missing") +
                                " answered 404 Not Found");
  }
}

// A read Source whose read is `std.http_get`: the set is read whole, every free slot is claimed
// from one read, and a read that finds only known ids with nothing live drains the Pool. A
// failed read (404) gives no items; with nothing that would read again, the Pool fails.
TEST(HttpGet, AReadSourceReadsTheSetOverHttp) {
  S server(Answers{
      {"/items", S::Response("200 OK", "application/json",
                             R"({"items":[{"id":"A","mode":"done"},{"id":"B","mode":"done"},)"
                             R"({"id":"C","mode":"done"}]})")}});
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  jr2rt::ManualClock clock;
  {
    jr2rt::Run run(registry, *registry.workflow("conformance_http_read"), "r1", clock);
    run.start({{"url", server.url("/items")}});
    ASSERT_EQ(run.status(), jr2rt::RunStatus::kDone) << run.reason();
    EXPECT_EQ(run.output()["items"].size(), 3u);
    EXPECT_EQ(run.output()["status"], "drained");
  }
  {
    jr2rt::Run run(registry, *registry.workflow("conformance_http_read"), "r2", clock);
    std::vector<std::string> failedReads;
    run.onEvent([&](const jr2rt::Run::FeedEvent& e) {
      if (e.kind == "read-failed") failedReads.push_back(e.line);
    });
    run.start({{"url", server.url("/missing")}});
    EXPECT_EQ(run.status(), jr2rt::RunStatus::kFailed);
    ASSERT_EQ(failedReads.size(), 1u);
    EXPECT_NE(failedReads[0].find("answered 404 Not Found"), std::string::npos) << failedReads[0];
  }
}

}  // namespace
