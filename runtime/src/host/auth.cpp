#include "jr2/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <array>
#include <stdexcept>

namespace jr2rt {
namespace {

std::string Hex(const unsigned char* bytes, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out(n * 2, '0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  return out;
}

}  // namespace

std::string Sha256Hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), md.data(), &n, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 failed (OpenSSL)");
  return Hex(md.data(), n);
}

std::string HmacSha256Hex(std::string_view secret, std::string_view body) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int n = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
           reinterpret_cast<const unsigned char*>(body.data()), body.size(), md.data(),
           &n) == nullptr)
    throw std::runtime_error("HMAC-SHA256 failed (OpenSSL)");
  return Hex(md.data(), n);
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool VerifyHubSignature(std::string_view header, std::string_view secret, std::string_view body) {
  constexpr std::string_view kPrefix = "sha256=";
  if (header.size() != kPrefix.size() + 64 || header.substr(0, kPrefix.size()) != kPrefix)
    return false;
  std::string given(header.substr(kPrefix.size()));
  for (char& c : given) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  }
  return ConstantTimeEquals(given, HmacSha256Hex(secret, body));
}

}  // namespace jr2rt
