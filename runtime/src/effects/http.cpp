// `std.http_get({ url, timeout })`: an idempotent HTTP GET whose body is JSON
// (docs/runtime.md#stdhttp_get), and the client beside it (http_client.h: the model harness, the
// runner's `--server`), over `http://` and `https://`. Boost.Beast does the protocol and OpenSSL
// (through Beast's ssl_stream) the TLS; both are heavy headers, so they live in this translation
// unit alone.
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "effects/http_client.h"
#include "jr2/stdlib.h"

namespace jr2rt {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

struct Url {
  bool tls = false;
  std::string host;
  std::string port;
  std::string target = "/";

  bool defaultPort() const { return port == (tls ? "443" : "80"); }
  // `https://HOST[:PORT]`: what an error names, and what a relative redirect goes to.
  std::string origin() const {
    return (tls ? "https://" : "http://") + host + (defaultPort() ? "" : ":" + port);
  }
  std::string hostHeader() const { return defaultPort() ? host : host + ":" + port; }
};

Url ParseUrl(const std::string& url) {
  Url out;
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    out.tls = true;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    throw Failure("`" + url + "` is not an http:// or https:// URL");
  }
  out.port = out.tls ? "443" : "80";
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) out.target = rest.substr(slash);
  if (authority.find('@') != std::string::npos)
    throw Failure("`" + url + "` carries credentials, which are not supported");
  const size_t colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']') == std::string::npos) {
    out.port = authority.substr(colon + 1);
    authority = authority.substr(0, colon);
  }
  out.host = authority;
  if (out.host.empty()) throw Failure("`" + url + "` names no host");
  if (out.port.empty() || out.port.find_first_not_of("0123456789") != std::string::npos)
    throw Failure(
        "`" + url + "` has " +
        (out.port.empty() ? std::string("an empty port") : "a bad port `" + out.port + "`"));
  return out;
}

// "64 MiB", "100 bytes": a body limit, as an error says it.
std::string Bytes(size_t n) {
  if (n >= (size_t{1} << 20) && n % (size_t{1} << 20) == 0) return std::to_string(n >> 20) + " MiB";
  return std::to_string(n) + " bytes";
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

// The client's TLS settings (docs/runtime.md, `std.http_get`): the peer verified, against the
// system's CA store as OpenSSL finds it (SSL_CERT_FILE and SSL_CERT_DIR name others), TLS 1.2 at
// least. Made once for each setting of those variables, and shared: loading the CA bundle costs
// more than a handshake, and an SSL_CTX set up is safe to share between threads.
std::shared_ptr<ssl::context> ClientContext() {
  static std::mutex mu;
  static std::shared_ptr<ssl::context> made;
  static std::string madeFor;
  const std::string setting = Env("SSL_CERT_FILE") + '\n' + Env("SSL_CERT_DIR");
  std::lock_guard<std::mutex> lock(mu);
  if (made && madeFor == setting) return made;
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  if (SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION) != 1)
    throw Failure("cannot set up TLS: OpenSSL refuses TLS 1.2 as the lowest version");
  context->set_verify_mode(ssl::verify_peer);
  if (SSL_CTX_set_default_verify_paths(context->native_handle()) != 1)
    throw Failure("cannot set up TLS: OpenSSL cannot load the system's CA certificates");
  made = std::move(context);
  madeFor = setting;
  return made;
}

// Where the CAs came from, for an error that says a certificate is not trusted.
std::string CaStore() {
  const std::string file = Env("SSL_CERT_FILE"), dir = Env("SSL_CERT_DIR");
  if (file.empty() && dir.empty()) return "the system's CA store";
  std::string out = "the CAs of";
  if (!file.empty()) out += " SSL_CERT_FILE=" + file;
  if (!dir.empty()) out += std::string(file.empty() ? "" : " and") + " SSL_CERT_DIR=" + dir;
  return out;
}

// A TLS stream to `url`'s host: SNI set (a name, never an address: RFC 6066), and the peer's
// certificate checked for that name or address (host_name_verification) after its chain. Asio's
// check refuses a certificate without saying why: the error it leaves says so, for TlsWhy.
void Secure(TlsStream& stream, const Url& url) {
  boost::system::error_code notAddress;
  boost::asio::ip::make_address(url.host, notAddress);
  const bool address = !notAddress;
  if (!address && SSL_set_tlsext_host_name(stream.native_handle(), url.host.c_str()) != 1)
    throw Failure("cannot name `" + url.host + "` to the TLS server (SNI)");
  stream.set_verify_callback([check = ssl::host_name_verification(url.host), address](
                                 bool preverified, ssl::verify_context& context) {
    if (check(preverified, context)) return true;
    if (preverified)
      X509_STORE_CTX_set_error(context.native_handle(), address ? X509_V_ERR_IP_ADDRESS_MISMATCH
                                                                : X509_V_ERR_HOSTNAME_MISMATCH);
    return false;
  });
}

// Why a TLS handshake with `url` failed, and what to do. A certificate refused is a Failure whose
// detail says `certificate: true`: asking again changes nothing.
Failure TlsFailure(TlsStream& stream, const Url& url, const beast::error_code& ec) {
  const long verify = SSL_get_verify_result(stream.native_handle());
  const std::string at = url.origin();
  if (verify == X509_V_OK || ec.category() != boost::asio::error::get_ssl_category())
    return Failure("cannot make a TLS connection to " + at + ": " + ec.message(),
                   Json{{"url", at}});
  const std::string why = X509_verify_cert_error_string(verify);
  const Json detail = {{"url", at}, {"certificate", true}, {"verify", why}};
  if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH) {
    return Failure("certificate verify failed for " + at + ": " + why +
                       ": the server's certificate is not for `" + url.host +
                       "`; use the name the certificate gives",
                   detail);
  }
  return Failure("certificate verify failed for " + at + ": " + why +
                     ": the server's certificate does not chain to a CA that " + CaStore() +
                     " holds; give its CA in SSL_CERT_FILE (a PEM file) or SSL_CERT_DIR",
                 detail);
}

template <typename Stream>
constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

struct Answer {
  unsigned status = 0;
  std::string reason;
  std::string location;
  std::string retryAfter;
  std::string body;
};

// One exchange on `stream` (plain or TLS), asynchronous under one deadline for the whole of it
// (name lookup, connect, handshake, send, answer): Beast's stream timeouts apply only to
// asynchronous operations.
template <typename Stream>
Answer Talk(boost::asio::io_context& io, Stream& stream, const Url& url, http::verb method,
            const std::string& body,
            const std::vector<std::pair<std::string, std::string>>& headers,
            std::chrono::milliseconds timeout, size_t maxBody) {
  tcp::resolver resolver(io);
  auto& socket = beast::get_lowest_layer(stream);
  http::request<http::string_body> request{method, url.target, 11};
  request.set(http::field::host, url.hostHeader());
  request.set(http::field::user_agent, "jr2-runtime/" + std::to_string(kRuntimeVersion));
  request.set(http::field::accept, "application/json");
  for (const auto& [name, value] : headers) request.set(name, value);
  if (method != http::verb::get) {
    request.set(http::field::content_type, "application/json");
    request.body() = body;
    request.prepare_payload();
  }
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(std::uint64_t{maxBody});

  std::optional<Failure> failure;  // set by the step that failed
  bool answered = false;
  auto failed = [&](const std::string& what, const beast::error_code& ec) {
    failure = Failure(what + ": " + ec.message());
  };
  auto exchange = [&] {
    http::async_write(stream, request, [&](beast::error_code ec, size_t) {
      if (ec) return failed("cannot send the request", ec);
      http::async_read(stream, buffer, parser, [&](beast::error_code ec, size_t) {
        if (ec == http::error::body_limit) {
          failure = Failure("the answer's body is longer than " + Bytes(maxBody) +
                            ", the most this client reads");
          return;
        }
        if (ec) return failed("cannot read the answer", ec);
        answered = true;
      });
    });
  };
  resolver.async_resolve(
      url.host, url.port, [&](beast::error_code ec, const tcp::resolver::results_type& found) {
        if (ec) return failed("cannot resolve `" + url.host + "`", ec);
        socket.async_connect(found, [&](beast::error_code ec, const tcp::endpoint&) {
          if (ec) return failed("cannot connect to " + url.host + ":" + url.port, ec);
          if constexpr (kTls<Stream>) {
            stream.async_handshake(ssl::stream_base::client, [&](beast::error_code ec) {
              if (ec) {
                failure = TlsFailure(stream, url, ec);
                return;
              }
              exchange();
            });
          } else {
            exchange();
          }
        });
      });
  io.run_for(timeout);
  if (!answered && !failure) {
    // The deadline passed first: cancel what is out and let its handlers finish.
    resolver.cancel();
    beast::error_code ignored;
    socket.socket().close(ignored);
    io.restart();
    io.run();
    throw Failure("no answer within " + std::to_string(timeout.count()) + " ms");
  }
  if (!answered) throw *failure;
  // The answer is whole (its length told, or its chunks ended): the connection is closed without
  // TLS's close_notify, which a server may never answer.
  beast::error_code ignored;
  socket.socket().shutdown(tcp::socket::shutdown_both, ignored);

  const auto& response = parser.get();
  Answer out;
  out.status = response.result_int();
  // The reason phrase goes into a Failure's text, which is stored: it must be UTF-8.
  out.reason = ValidUtf8(std::string(response.reason()));
  if (auto it = response.find(http::field::location); it != response.end())
    out.location = std::string(it->value());
  if (auto it = response.find(http::field::retry_after); it != response.end())
    out.retryAfter = std::string(it->value());
  out.body = response.body();
  return out;
}

Answer Exchange(const Url& url, http::verb method, const std::string& body,
                const std::vector<std::pair<std::string, std::string>>& headers,
                std::chrono::milliseconds timeout, size_t maxBody = kMaxHttpBodyBytes) {
  boost::asio::io_context io;
  if (!url.tls) {
    beast::tcp_stream stream(io);
    return Talk(io, stream, url, method, body, headers, timeout, maxBody);
  }
  const std::shared_ptr<ssl::context> context = ClientContext();
  TlsStream stream(io, *context);
  Secure(stream, url);
  return Talk(io, stream, url, method, body, headers, timeout, maxBody);
}

Answer Get(const Url& url, std::chrono::milliseconds timeout) {
  return Exchange(url, http::verb::get, "", {}, timeout);
}

// A redirect's target, absolute or relative to the URL it came from.
std::string Resolve(const std::string& from, const std::string& location) {
  if (location.rfind("http://", 0) == 0 || location.rfind("https://", 0) == 0) return location;
  const Url base = ParseUrl(from);
  const std::string origin = base.origin();
  if (!location.empty() && location[0] == '/') return origin + location;
  const std::string dir = base.target.substr(0, base.target.rfind('/') + 1);
  return origin + dir + location;
}

// The first 2,000 bytes of a body, for a Failure's detail, cut where a character begins. The
// detail is stored with the run, so bytes that are not UTF-8 are replaced by U+FFFD (counted in
// `replaced`).
std::string Excerpt(const std::string& body, size_t* replaced) {
  if (body.size() <= 2000) return ValidUtf8(body, replaced);
  size_t cut = 2000;
  for (int back = 0; back < 3 && (static_cast<unsigned char>(body[cut]) & 0xC0) == 0x80; ++back)
    --cut;
  return ValidUtf8(std::string_view(body).substr(0, cut), replaced) + "…";
}

// A body nested deeper than kMaxExternalDepth is refused while it is parsed: a deeper value
// would overflow the stack when the run is copied or saved (nlohmann's copy and dump recurse).
// Not ParseExternalJson: a body is a Failure of the item with this file's wording, and its size
// is bounded by the parser's body limit already.
struct TooDeep {};
Json ParseBody(const std::string& text) {
  return Json::parse(text, [](int depth, Json::parse_event_t event, Json&) {
    const bool opens =
        event == Json::parse_event_t::object_start || event == Json::parse_event_t::array_start;
    if (opens && depth >= kMaxExternalDepth) throw TooDeep{};
    return true;
  });
}

}  // namespace

void CheckHttpUrl(const std::string& url) { (void)ParseUrl(url); }

HttpReply HttpCall(const std::string& method, const std::string& url, const std::string& body,
                   const std::vector<std::pair<std::string, std::string>>& headers,
                   int64_t timeoutMs, size_t maxBodyBytes) {
  const http::verb verb = http::string_to_verb(method);
  if (verb == http::verb::unknown) throw Failure("no HTTP method `" + method + "`");
  const Answer a = Exchange(ParseUrl(url), verb, body, headers,
                            std::chrono::milliseconds(timeoutMs), maxBodyBytes);
  return {a.status, a.body, a.retryAfter};
}

namespace {

// A GET whose body is read as it comes (HttpStream), on `stream` (plain or TLS), connected.
template <typename Stream>
HttpReply StreamOn(Stream& stream, const Url& u,
                   const std::vector<std::pair<std::string, std::string>>& headers,
                   const std::function<bool(const std::string&)>& chunk) {
  beast::error_code ec;
  http::request<http::empty_body> request{http::verb::get, u.target, 11};
  request.set(http::field::host, u.hostHeader());
  request.set(http::field::user_agent, "jr2-runtime/" + std::to_string(kRuntimeVersion));
  request.set(http::field::accept, "text/event-stream");
  for (const auto& [name, value] : headers) request.set(name, value);
  http::write(stream, request, ec);
  if (ec) throw Failure("cannot send the request: " + ec.message());
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  // No limit on a stream. Not boost::none: Boost 1.74's parser compares a Content-Length with
  // the optional itself, and none is less than every length ("body limit exceeded" for any
  // answer with a length, such as serve's JSON errors).
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  http::read_header(stream, buffer, parser, ec);
  if (ec) throw Failure("cannot read the answer: " + ec.message());
  HttpReply reply{parser.get().result_int(), {}, {}};
  char buf[8192];
  while (!parser.is_done()) {
    parser.get().body().data = buf;
    parser.get().body().size = sizeof buf;
    http::read(stream, buffer, parser, ec);
    if (ec == http::error::need_buffer) ec = {};
    // A TLS server that closes without close_notify ends the stream as a plain one does.
    if (ec == http::error::end_of_stream || ec == boost::asio::error::eof ||
        ec == ssl::error::stream_truncated)
      break;
    if (ec) throw Failure("the stream broke off: " + ec.message());
    const std::string piece(buf, sizeof buf - parser.get().body().size);
    if (reply.status != 200) {
      reply.body += piece;  // an error's JSON, kept whole
    } else if (!piece.empty() && !chunk(piece)) {
      break;
    }
  }
  beast::error_code ignored;
  beast::get_lowest_layer(stream).socket().shutdown(tcp::socket::shutdown_both, ignored);
  return reply;
}

}  // namespace

HttpReply HttpStream(const std::string& url,
                     const std::vector<std::pair<std::string, std::string>>& headers,
                     const std::function<bool(const std::string&)>& chunk) {
  const Url u = ParseUrl(url);
  boost::asio::io_context io;
  tcp::resolver resolver(io);
  beast::error_code ec;
  const auto found = resolver.resolve(u.host, u.port, ec);
  if (ec) throw Failure("cannot resolve `" + u.host + "`: " + ec.message());
  auto connect = [&](beast::tcp_stream& socket) {
    socket.connect(found, ec);
    if (ec) throw Failure("cannot connect to " + u.host + ":" + u.port + ": " + ec.message());
  };
  if (!u.tls) {
    beast::tcp_stream stream(io);
    connect(stream);
    return StreamOn(stream, u, headers, chunk);
  }
  const std::shared_ptr<ssl::context> context = ClientContext();
  TlsStream stream(io, *context);
  Secure(stream, u);
  connect(beast::get_lowest_layer(stream));
  stream.handshake(ssl::stream_base::client, ec);
  if (ec) throw TlsFailure(stream, u, ec);
  return StreamOn(stream, u, headers, chunk);
}

Json HttpGet(const Json& request) {
  if (!request.is_object() || !request.contains("url") || !request["url"].is_string())
    throw Failure("std.http_get: the request needs a `url` string");
  std::string url = request["url"].get<std::string>();
  const int64_t timeoutMs = request.value("timeout", int64_t{30000});
  const auto timeout = std::chrono::milliseconds(timeoutMs > 0 ? timeoutMs : 30000);
  for (int redirects = 0;; ++redirects) {
    // A redirect's Location may carry any bytes: the URL is shown (in texts that are stored)
    // with the bad ones replaced, and requested as it is.
    const std::string shown = ValidUtf8(url);
    Url parsed;
    try {
      parsed = ParseUrl(url);
    } catch (const Failure& f) {
      // ParseUrl's texts quote the URL, which a redirect may have filled with any bytes.
      throw Failure(ValidUtf8("std.http_get: " + f.reason()), f.detail());
    }
    Answer answer;
    try {
      answer = Get(parsed, timeout);
    } catch (const Failure& f) {
      throw Failure(ValidUtf8("std.http_get: GET " + shown + ": " + f.reason()),
                    Json{{"url", shown}});
    }
    const bool redirect = answer.status == 301 || answer.status == 302 || answer.status == 303 ||
                          answer.status == 307 || answer.status == 308;
    if (redirect && !answer.location.empty()) {
      if (redirects == 5)
        throw Failure("std.http_get: GET " + shown + ": more than 5 redirects",
                      Json{{"url", shown}});
      url = Resolve(url, answer.location);
      continue;
    }
    size_t replaced = 0;
    Json detail = {
        {"url", shown}, {"status", answer.status}, {"body", Excerpt(answer.body, &replaced)}};
    if (replaced > 0) detail["replaced"] = {{"body", replaced}};
    if (answer.status < 200 || answer.status >= 300) {
      throw Failure("std.http_get: GET " + shown + " answered " + std::to_string(answer.status) +
                        (answer.reason.empty() ? "" : " " + answer.reason),
                    detail);
    }
    try {
      return ParseBody(answer.body);
    } catch (const Json::parse_error& e) {
      // The parser's message quotes the bytes it stopped at, which may not be UTF-8.
      throw Failure(
          ValidUtf8("std.http_get: the body of GET " + shown + " is not JSON: " + ErrorText(e)),
          detail);
    } catch (const TooDeep&) {
      throw Failure("std.http_get: the body of GET " + shown + " nests deeper than " +
                        std::to_string(kMaxExternalDepth) + " levels",
                    detail);
    }
  }
}

}  // namespace jr2rt
