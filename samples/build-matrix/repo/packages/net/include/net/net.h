// net: network endpoints written as "host:port", parsed with core's string helpers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace net {

struct Endpoint {
  std::string host;
  std::uint16_t port = 0;
};

// The endpoint that "host:port" names, surrounding whitespace ignored; the host is lower-cased.
// Nothing when there is no host, no port, more than one ':', or a port outside 1-65535.
std::optional<Endpoint> parse_endpoint(std::string_view s);

// "host:port".
std::string to_string(const Endpoint& endpoint);

}  // namespace net
