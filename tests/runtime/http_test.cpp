// `std.http_get` against a loopback server this test runs: what a machine's `on done` and
// `on error` see for each kind of answer, and the whole path through a run. Then https: the same
// server behind TLS, with a CA and certificates this test makes with OpenSSL's API, for the
// client's verification (trusted, untrusted, the wrong name), SNI, a redirect from http, and the
// model harness over it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "effects/http_client.h"
#include "jr2/run.h"
#include "jr2/stdlib.h"
#include "pool.jr2.h"
#include "run/agents.h"

namespace {

using jr2rt::Json;

// Serves canned answers by request path on 127.0.0.1 until destroyed, in plain http, or behind
// TLS with `tls`'s certificate. An answer of "" never answers (the connection is held open until
// the client gives up).
class LoopbackServer {
 public:
  explicit LoopbackServer(std::map<std::string, std::string> answers, SSL_CTX* tls = nullptr)
      : answers_(std::move(answers)), tls_(tls) {
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
  std::string url(const std::string& path, const std::string& host = "127.0.0.1") const {
    return std::string(tls_ != nullptr ? "https://" : "http://") + host + ":" +
           std::to_string(port_) + path;
  }
  int port() const { return port_; }
  std::string lastRequest() const {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }
  // TLS: the name the client gave (SNI) at its last handshake, and the handshakes that failed.
  std::string lastServerName() const {
    std::lock_guard<std::mutex> lock(mu_);
    return serverName_;
  }
  int refusedHandshakes() const { return refused_; }
  int requests() const { return requests_; }

 private:
  void serve() {
    while (!stop_) {
      const int client = accept(fd_, nullptr, nullptr);
      if (client < 0) return;
      SSL* ssl = nullptr;
      if (tls_ != nullptr) {
        ssl = SSL_new(tls_);
        SSL_set_fd(ssl, client);
        if (SSL_accept(ssl) != 1) {  // the client refused the certificate (or broke off)
          ++refused_;
          SSL_free(ssl);
          close(client);
          continue;
        }
        const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
        std::lock_guard<std::mutex> lock(mu_);
        serverName_ = name != nullptr ? name : "";
      }
      auto in = [&](char* buffer, size_t size) -> ssize_t {
        return ssl != nullptr ? SSL_read(ssl, buffer, static_cast<int>(size))
                              : read(client, buffer, size);
      };
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = in(buffer, sizeof buffer);
        if (n <= 0) break;
        request.append(buffer, static_cast<size_t>(n));
      }
      ++requests_;
      {
        std::lock_guard<std::mutex> lock(mu_);
        last_ = request;
      }
      const size_t start = request.find(' ') + 1;
      const std::string path = request.substr(start, request.find(' ', start) - start);
      auto it = answers_.find(path);
      const std::string answer =
          it != answers_.end() ? it->second : Response("404 Not Found", "text/plain", "no such");
      if (answer.empty()) {
        // Hold the connection without answering until the client closes it.
        while (in(buffer, sizeof buffer) > 0) {
        }
      } else if (ssl != nullptr) {
        SSL_write(ssl, answer.data(), static_cast<int>(answer.size()));
        SSL_shutdown(ssl);
      } else {
        (void)!write(client, answer.data(), answer.size());
      }
      if (ssl != nullptr) SSL_free(ssl);
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
  SSL_CTX* tls_ = nullptr;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::string last_;
  std::string serverName_;
  std::atomic<int> refused_{0};
  std::atomic<int> requests_{0};
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
              jr2rt::HttpGet({{"url", "ftp://example.com/"}});
            })
                .reason()
                .find("is not an http:// or https:// URL"),
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

// ---- https
// ----------------------------------------------------------------------------------------

struct Freer {
  void operator()(X509* x) const { X509_free(x); }
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
using Cert = std::unique_ptr<X509, Freer>;
using Key = std::unique_ptr<EVP_PKEY, Freer>;
using TlsContext = std::unique_ptr<SSL_CTX, Freer>;

// A certificate for `name` (its CN), signed by `issuer` (itself when null): a CA, or a server's
// with `sans` (`DNS:localhost,IP:127.0.0.1`). Valid from an hour ago for a day.
Cert MakeCert(EVP_PKEY* key, const std::string& name, X509* issuer, EVP_PKEY* issuerKey, bool ca,
              const std::string& sans = "") {
  static long serial = 1;
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24L * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* subject = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer != nullptr ? issuer : cert.get()));
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, issuer != nullptr ? issuer : cert.get(), cert.get(), nullptr, nullptr, 0);
  auto add = [&](int nid, const std::string& value) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, nid, value.c_str());
    ASSERT_NE(ext, nullptr) << value;
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  };
  add(NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  add(NID_key_usage, ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature");
  if (!ca) add(NID_ext_key_usage, "serverAuth");
  if (!sans.empty()) add(NID_subject_alt_name, sans);
  X509_sign(cert.get(), issuerKey != nullptr ? issuerKey : key, EVP_sha256());
  return cert;
}

Key MakeKey() { return Key(EVP_EC_gen("P-256")); }

// A PEM file of `cert` in the test's temporary folder; its path.
std::string WritePem(X509* cert, const std::string& file) {
  // One file per process: ctest runs each test as a process of its own, two at once, and each
  // makes its own CA (a shared path let one process's CA replace the other's mid-test).
  std::string path = testing::TempDir() + std::to_string(::getpid()) + "-" + file;
  FILE* out = std::fopen(path.c_str(), "w");
  PEM_write_X509(out, cert);
  std::fclose(out);
  return path;
}

// The test's PKI, made once: a CA the client is told to trust, certificates it signed for
// `localhost` (and 127.0.0.1) and for another name, and a CA the client does not trust with a
// certificate for `localhost`.
struct Pki {
  Key caKey = MakeKey(), otherKey = MakeKey(), serverKey = MakeKey();
  Cert ca = MakeCert(caKey.get(), "jr2 test CA", nullptr, nullptr, true);
  Cert other = MakeCert(otherKey.get(), "jr2 untrusted CA", nullptr, nullptr, true);
  Cert localhost = MakeCert(serverKey.get(), "localhost", ca.get(), caKey.get(), false,
                            "DNS:localhost,IP:127.0.0.1");
  Cert elsewhere = MakeCert(serverKey.get(), "elsewhere.test", ca.get(), caKey.get(), false,
                            "DNS:elsewhere.test");
  Cert untrusted = MakeCert(serverKey.get(), "localhost", other.get(), otherKey.get(), false,
                            "DNS:localhost,IP:127.0.0.1");
  std::string caFile = WritePem(ca.get(), "jr2-test-ca.pem");
  std::string otherFile = WritePem(other.get(), "jr2-other-ca.pem");
  Pki() = default;
  Pki(const Pki&) = delete;
  Pki& operator=(const Pki&) = delete;
  // The files go with the process (they were left behind, two a run of each test).
  ~Pki() {
    std::remove(caFile.c_str());
    std::remove(otherFile.c_str());
  }

  // A server context that presents `cert` (with the server's key).
  TlsContext server(X509* cert) const {
    TlsContext context(SSL_CTX_new(TLS_server_method()));
    SSL_CTX_use_certificate(context.get(), cert);
    SSL_CTX_use_PrivateKey(context.get(), serverKey.get());
    return context;
  }
  static const Pki& Get() {
    static const Pki kPki;
    return kPki;
  }
};

// Points the client at `caFile` (SSL_CERT_FILE) for as long as it lives.
struct TrustOnly {
  explicit TrustOnly(const std::string& caFile) {
    setenv("SSL_CERT_FILE", caFile.c_str(), 1);
    unsetenv("SSL_CERT_DIR");
  }
  ~TrustOnly() { unsetenv("SSL_CERT_FILE"); }
};

const std::string kJson = S::Response("200 OK", "application/json", R"({"secure":true})");

TEST(Https, AVerifiedServerIsReadWithItsNameSent) {
  const Pki& pki = Pki::Get();
  TrustOnly trust(pki.caFile);
  auto context = pki.server(pki.localhost.get());
  S server(Answers{{"/alerts", kJson}}, context.get());
  EXPECT_EQ(jr2rt::HttpGet({{"url", server.url("/alerts", "localhost")}}),
            (Json{{"secure", true}}));
  EXPECT_EQ(server.lastServerName(), "localhost") << "SNI names the host";
  EXPECT_NE(server.lastRequest().find("Host: localhost:" + std::to_string(server.port())),
            std::string::npos)
      << server.lastRequest();
  // An address is verified against the certificate's IP names, and is never sent as SNI.
  EXPECT_EQ(jr2rt::HttpGet({{"url", server.url("/alerts", "127.0.0.1")}}),
            (Json{{"secure", true}}));
  EXPECT_EQ(server.lastServerName(), "");
  // The client beside it: a POST (the model harness, `--server`) and a stream.
  const jr2rt::HttpReply reply =
      jr2rt::HttpCall("POST", server.url("/alerts", "localhost"), R"({"a":1})", {}, 5000);
  EXPECT_EQ(reply.status, 200u);
  EXPECT_EQ(reply.body, R"({"secure":true})");
  std::string streamed;
  const jr2rt::HttpReply stream =
      jr2rt::HttpStream(server.url("/alerts", "localhost"), {}, [&](const std::string& piece) {
        streamed += piece;
        return true;
      });
  EXPECT_EQ(stream.status, 200u);
  EXPECT_EQ(streamed, R"({"secure":true})");
}

TEST(Https, ACertificateFromACaNotTrustedIsRefusedAndSaysWhy) {
  const Pki& pki = Pki::Get();
  TrustOnly trust(pki.caFile);
  auto context = pki.server(pki.untrusted.get());
  S server(Answers{{"/alerts", kJson}}, context.get());
  const std::string url = server.url("/alerts", "localhost");
  const auto f = FailureOf([&] { jr2rt::HttpGet({{"url", url}}); });
  EXPECT_EQ(f.reason(),
            "std.http_get: GET " + url + ": certificate verify failed for https://localhost:" +
                std::to_string(server.port()) +
                ": unable to get local issuer certificate: the server's certificate does not "
                "chain to a CA that the CAs of SSL_CERT_FILE=" +
                pki.caFile + " holds; give its CA in SSL_CERT_FILE (a PEM file) or SSL_CERT_DIR");
  EXPECT_EQ(server.requests(), 0) << "nothing is sent to a server that is not verified";
  // The server's thread counts the handshake the client gave up once it reads the client's
  // close: after the client returned, not before (a fresh clone's CI saw 0 here once).
  for (int i = 0; i < 200 && server.refusedHandshakes() < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(server.refusedHandshakes(), 1);
  // The same server with its CA trusted is read.
  TrustOnly theirs(pki.otherFile);
  EXPECT_EQ(jr2rt::HttpGet({{"url", url}}), (Json{{"secure", true}}));
}

TEST(Https, ACertificateForAnotherNameIsRefused) {
  const Pki& pki = Pki::Get();
  TrustOnly trust(pki.caFile);
  auto context = pki.server(pki.elsewhere.get());
  S server(Answers{{"/alerts", kJson}}, context.get());
  const std::string at = "https://localhost:" + std::to_string(server.port());
  const auto f = FailureOf([&] { jr2rt::HttpGet({{"url", server.url("/alerts", "localhost")}}); });
  EXPECT_NE(f.reason().find("certificate verify failed for " + at +
                            ": hostname mismatch: the server's certificate is not for "
                            "`localhost`; use the name the certificate gives"),
            std::string::npos)
      << f.reason();
  // An address the certificate does not list.
  const auto g = FailureOf([&] { jr2rt::HttpGet({{"url", server.url("/alerts", "127.0.0.1")}}); });
  EXPECT_NE(g.reason().find("IP address mismatch"), std::string::npos) << g.reason();
  EXPECT_EQ(server.requests(), 0);
}

TEST(Https, ARedirectFromHttpToHttpsIsFollowed) {
  const Pki& pki = Pki::Get();
  TrustOnly trust(pki.caFile);
  auto context = pki.server(pki.localhost.get());
  S secure(Answers{{"/new", kJson},
                   {"/relative", S::Response("302 Found", "text/plain", "", "Location: /new\r\n")}},
           context.get());
  S plain(
      Answers{{"/old", S::Response("301 Moved Permanently", "text/plain", "",
                                   "Location: " + secure.url("/relative", "localhost") + "\r\n")}});
  EXPECT_EQ(jr2rt::HttpGet({{"url", plain.url("/old")}}), (Json{{"secure", true}}))
      << "http to https, then a relative redirect that stays on https";
  EXPECT_EQ(secure.requests(), 2);
}

// The model harness over https: a hosted API's address is taken, its answer read through TLS;
// a certificate refused is not asked again (four tries would change nothing).
TEST(Https, TheModelHarnessSpeaksHttps) {
  const Pki& pki = Pki::Get();
  TrustOnly trust(pki.caFile);
  setenv("JR2_AGENT_MODEL", "qwen", 1);
  auto context = pki.server(pki.localhost.get());
  const std::string completion =
      R"({"choices": [{"message": {"role": "assistant", "tool_calls": [{"id": "c1",
          "type": "function", "function": {"name": "answer", "arguments": "{\"text\": \"42\"}"}}]}}]})";
  S server(Answers{{"/v1/chat/completions", S::Response("200 OK", "application/json", completion)}},
           context.get());
  setenv("JR2_AGENT_BASE_URL", server.url("/v1", "localhost").c_str(), 1);
  const jr2rt::ModelServer model = jr2rt::ModelServerFromEnv();
  EXPECT_EQ(model.url, server.url("/v1/chat/completions", "localhost"));
  EXPECT_EQ(model.shown, "localhost:" + std::to_string(server.port()));
  const Json pick =
      jr2rt::TryModel(model, R"({"model": "qwen"})", 1, 1000, jr2rt::HttpTransport(model));
  EXPECT_EQ(pick["kind"], "pick") << pick.dump();
  EXPECT_EQ(pick["payload"], (Json{{"text", "42"}}));

  auto wrong = pki.server(pki.untrusted.get());
  S untrusted(Answers{}, wrong.get());
  setenv("JR2_AGENT_BASE_URL", untrusted.url("/v1", "localhost").c_str(), 1);
  const jr2rt::ModelServer refused = jr2rt::ModelServerFromEnv();
  const Json failed =
      jr2rt::TryModel(refused, R"({"model": "qwen"})", 1, 1000, jr2rt::HttpTransport(refused));
  EXPECT_EQ(failed["kind"], "failed") << "not a retry: " << failed.dump();
  EXPECT_NE(
      failed["why"].get<std::string>().find("certificate verify failed for https://localhost"),
      std::string::npos)
      << failed.dump();
  unsetenv("JR2_AGENT_BASE_URL");
  unsetenv("JR2_AGENT_MODEL");
}

}  // namespace
