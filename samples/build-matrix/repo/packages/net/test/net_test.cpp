#include "net/net.h"

#include <iostream>
#include <string>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::cerr << "FAIL: " << what << '\n';
    ++failures;
  }
}

}  // namespace

int main() {
  const auto plain = net::parse_endpoint("example.org:8080");
  check(plain && plain->host == "example.org" && plain->port == 8080, "parse host:port");

  const auto spaced = net::parse_endpoint("  LocalHost : 443 ");
  check(spaced && spaced->host == "localhost" && spaced->port == 443, "parse with spaces and case");
  check(spaced && net::to_string(*spaced) == "localhost:443", "to_string");

  check(!net::parse_endpoint("example.org"), "no port");
  check(!net::parse_endpoint(":80"), "no host");
  check(!net::parse_endpoint("host:"), "empty port");
  check(!net::parse_endpoint("host:http"), "port not a number");
  check(!net::parse_endpoint("host:0"), "port 0");
  check(!net::parse_endpoint("host:65536"), "port too large");
  check(!net::parse_endpoint("host:9999999999999999999999"), "port overflow");
  check(!net::parse_endpoint("a:1:2"), "two colons");

  if (failures != 0) {
    std::cerr << failures << " check(s) failed\n";
    return 1;
  }
  std::cout << "net: all checks passed\n";
  return 0;
}
