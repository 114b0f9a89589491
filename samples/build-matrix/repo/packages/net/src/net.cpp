#include "net/net.h"

#include "core/core.h"

namespace net {

std::optional<Endpoint> parse_endpoint(std::string_view s) {
  const auto parts = core::split(core::trim(s), ':');
  if (parts.size() != 2) return std::nullopt;
  const std::string host = core::trim(parts[0]);
  const std::string port = core::trim(parts[1]);
  if (host.empty() || !core::is_digits(port) || port.size() > 5) return std::nullopt;
  const unsigned long value = std::stoul(port);
  if (value == 0 || value > 65535) return std::nullopt;
  return Endpoint{core::to_lower(host), static_cast<std::uint16_t>(value)};
}

std::string to_string(const Endpoint& endpoint) {
  return endpoint.host + ":" + std::to_string(endpoint.port);
}

}  // namespace net
