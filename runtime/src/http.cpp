// `std.http_get({ url, timeout })`: an idempotent HTTP GET whose body is JSON (RUNTIME.md §5).
// Boost.Beast does the protocol; it is heavy, so it lives in this translation unit alone. Only
// `http://` is spoken: the runtime has no TLS library (docs/runtime.md says why).
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "http_client.h"
#include "jr2/stdlib.h"

namespace jr2rt {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

struct Url {
  std::string host;
  std::string port = "80";
  std::string target = "/";
};

Url ParseUrl(const std::string& url) {
  const std::string scheme = "http://";
  if (url.rfind("https://", 0) == 0) {
    throw Failure("std.http_get: `" + url +
                  "` is https, and this runtime speaks plain http only (it has no TLS library); "
                  "read it through a host function (`extern`) instead");
  }
  if (url.rfind(scheme, 0) != 0) throw Failure("std.http_get: `" + url + "` is not an http:// URL");
  Url out;
  const std::string rest = url.substr(scheme.size());
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) out.target = rest.substr(slash);
  if (authority.find('@') != std::string::npos)
    throw Failure("std.http_get: `" + url + "` carries credentials, which are not supported");
  const size_t colon = authority.rfind(':');
  if (colon != std::string::npos && authority.find(']') == std::string::npos) {
    out.port = authority.substr(colon + 1);
    authority = authority.substr(0, colon);
  }
  out.host = authority;
  if (out.host.empty()) throw Failure("std.http_get: `" + url + "` names no host");
  if (out.port.empty() || out.port.find_first_not_of("0123456789") != std::string::npos)
    throw Failure("std.http_get: `" + url + "` has a bad port `" + out.port + "`");
  return out;
}

// "64 MiB", "100 bytes": a body limit, as an error says it.
std::string Bytes(size_t n) {
  if (n >= (size_t{1} << 20) && n % (size_t{1} << 20) == 0) return std::to_string(n >> 20) + " MiB";
  return std::to_string(n) + " bytes";
}

struct Answer {
  unsigned status = 0;
  std::string reason;
  std::string location;
  std::string retryAfter;
  std::string body;
};

// One exchange, asynchronous under one deadline for the whole of it (name lookup, connect,
// send, answer): Beast's stream timeouts apply only to asynchronous operations.
Answer Exchange(const Url& url, http::verb method, const std::string& body,
                const std::vector<std::pair<std::string, std::string>>& headers,
                std::chrono::milliseconds timeout, size_t maxBody = kMaxHttpBodyBytes) {
  boost::asio::io_context io;
  tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  http::request<http::string_body> request{method, url.target, 11};
  request.set(http::field::host, url.port == "80" ? url.host : url.host + ":" + url.port);
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

  std::string failure;  // set by the step that failed
  bool answered = false;
  auto failed = [&](const std::string& what, const beast::error_code& ec) {
    failure = what + ": " + ec.message();
  };
  resolver.async_resolve(
      url.host, url.port, [&](beast::error_code ec, const tcp::resolver::results_type& found) {
        if (ec) return failed("cannot resolve `" + url.host + "`", ec);
        stream.async_connect(found, [&](beast::error_code ec, const tcp::endpoint&) {
          if (ec) return failed("cannot connect to " + url.host + ":" + url.port, ec);
          http::async_write(stream, request, [&](beast::error_code ec, size_t) {
            if (ec) return failed("cannot send the request", ec);
            http::async_read(stream, buffer, parser, [&](beast::error_code ec, size_t) {
              if (ec == http::error::body_limit) {
                failure = "the answer's body is longer than " + Bytes(maxBody) +
                          ", the most this client reads";
                return;
              }
              if (ec) return failed("cannot read the answer", ec);
              answered = true;
            });
          });
        });
      });
  io.run_for(timeout);
  if (!answered && failure.empty()) {
    // The deadline passed first: cancel what is out and let its handlers finish.
    resolver.cancel();
    beast::error_code ignored;
    stream.socket().close(ignored);
    io.restart();
    io.run();
    throw Failure("no answer within " + std::to_string(timeout.count()) + " ms");
  }
  if (!answered) throw Failure(failure);
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);

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

Answer Get(const Url& url, std::chrono::milliseconds timeout) {
  return Exchange(url, http::verb::get, "", {}, timeout);
}

// A redirect's target, absolute or relative to the URL it came from.
std::string Resolve(const std::string& from, const std::string& location) {
  if (location.rfind("http://", 0) == 0 || location.rfind("https://", 0) == 0) return location;
  const Url base = ParseUrl(from);
  const std::string origin = "http://" + base.host + (base.port == "80" ? "" : ":" + base.port);
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

HttpReply HttpCall(const std::string& method, const std::string& url, const std::string& body,
                   const std::vector<std::pair<std::string, std::string>>& headers,
                   int64_t timeoutMs, size_t maxBodyBytes) {
  const http::verb verb = http::string_to_verb(method);
  if (verb == http::verb::unknown) throw Failure("no HTTP method `" + method + "`");
  const Answer a = Exchange(ParseUrl(url), verb, body, headers,
                            std::chrono::milliseconds(timeoutMs), maxBodyBytes);
  return {a.status, a.body, a.retryAfter};
}

HttpReply HttpStream(const std::string& url,
                     const std::vector<std::pair<std::string, std::string>>& headers,
                     const std::function<bool(const std::string&)>& chunk) {
  const Url u = ParseUrl(url);
  boost::asio::io_context io;
  tcp::resolver resolver(io);
  beast::tcp_stream stream(io);
  beast::error_code ec;
  const auto found = resolver.resolve(u.host, u.port, ec);
  if (ec) throw Failure("cannot resolve `" + u.host + "`: " + ec.message());
  stream.connect(found, ec);
  if (ec) throw Failure("cannot connect to " + u.host + ":" + u.port + ": " + ec.message());
  http::request<http::empty_body> request{http::verb::get, u.target, 11};
  request.set(http::field::host, u.port == "80" ? u.host : u.host + ":" + u.port);
  request.set(http::field::user_agent, "jr2-runtime/" + std::to_string(kRuntimeVersion));
  request.set(http::field::accept, "text/event-stream");
  for (const auto& [name, value] : headers) request.set(name, value);
  http::write(stream, request, ec);
  if (ec) throw Failure("cannot send the request: " + ec.message());
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(boost::none);
  http::read_header(stream, buffer, parser, ec);
  if (ec) throw Failure("cannot read the answer: " + ec.message());
  HttpReply reply{parser.get().result_int(), {}, {}};
  char buf[8192];
  while (!parser.is_done()) {
    parser.get().body().data = buf;
    parser.get().body().size = sizeof buf;
    http::read(stream, buffer, parser, ec);
    if (ec == http::error::need_buffer) ec = {};
    if (ec == http::error::end_of_stream || ec == boost::asio::error::eof) break;
    if (ec) throw Failure("the stream broke off: " + ec.message());
    const std::string piece(buf, sizeof buf - parser.get().body().size);
    if (reply.status != 200) {
      reply.body += piece;  // an error's JSON, kept whole
    } else if (!piece.empty() && !chunk(piece)) {
      break;
    }
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  return reply;
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
    Answer answer;
    try {
      answer = Get(ParseUrl(url), timeout);
    } catch (const Failure& f) {
      // ParseUrl's texts quote the URL, which a redirect may have filled with any bytes.
      if (f.reason().rfind("std.http_get", 0) == 0)
        throw Failure(ValidUtf8(f.reason()), f.detail());
      throw Failure(ValidUtf8("std.http_get: GET " + shown + ": " + f.reason()), {{"url", shown}});
    }
    const bool redirect = answer.status == 301 || answer.status == 302 || answer.status == 303 ||
                          answer.status == 307 || answer.status == 308;
    if (redirect && !answer.location.empty()) {
      if (redirects == 5)
        throw Failure("std.http_get: GET " + shown + ": more than 5 redirects", {{"url", shown}});
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
