// The runtime's HTTP client beside `std.http_get` (http.cpp, where Beast's client and its TLS
// live): what the runner's `--server URL` speaks to a `serve`, and the model harness to its
// server. `http://` and `https://`: a TLS peer is verified against the system's CA store (or
// SSL_CERT_FILE / SSL_CERT_DIR) and its name, TLS 1.2 at least. Private to the runtime and the
// runner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace jr2rt {

struct HttpReply {
  unsigned status = 0;
  std::string body;
  std::string retryAfter;  // the `Retry-After` header, when the server sent one
};

// The most of an answer's body that is read unless a caller says otherwise.
inline constexpr size_t kMaxHttpBodyBytes = size_t{64} << 20;

// Throws Failure (its reason names the URL and what is wrong) unless `url` is
// `http[s]://HOST[:PORT][/PATH]` with a host and a port of digits, as HttpCall takes it.
void CheckHttpUrl(const std::string& url);

// One request (`GET`, `POST`, …) to `url` (`http[s]://HOST[:PORT]/PATH`) with a JSON `body` (none
// for GET) and extra `headers`, under one deadline for the whole exchange, reading at most
// `maxBodyBytes` of the answer's body. Throws Failure when it cannot connect, send or read in
// time, or the body is longer; a certificate refused is a Failure whose detail says
// `certificate: true` (and `verify`, OpenSSL's reason).
HttpReply HttpCall(const std::string& method, const std::string& url, const std::string& body,
                   const std::vector<std::pair<std::string, std::string>>& headers,
                   int64_t timeoutMs, size_t maxBodyBytes = kMaxHttpBodyBytes);

// A GET whose body is a stream (server-sent events): each piece of the body, as it comes, goes to
// `chunk`, until the server ends it or `chunk` gives false. A status other than 200 gives its
// whole body in the reply instead.
HttpReply HttpStream(const std::string& url,
                     const std::vector<std::pair<std::string, std::string>>& headers,
                     const std::function<bool(const std::string&)>& chunk);

}  // namespace jr2rt
