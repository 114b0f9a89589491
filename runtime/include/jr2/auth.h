// What `serve` checks callers and hook deliveries with
// (docs/runtime.md#callers-and-scopes-for-serve): SHA-256 for tokens (the callers file holds only
// their hashes), HMAC-SHA256 for a hook's signature, and a comparison whose time does not depend on
// where two strings differ. OpenSSL's libcrypto does the hashing (docs/architecture.md says why).
#pragma once

#include <string>
#include <string_view>

namespace jr2rt {

// SHA-256 of `data`, as 64 lowercase hex digits.
std::string Sha256Hex(std::string_view data);

// HMAC-SHA256 of `body` under `secret`, as 64 lowercase hex digits.
std::string HmacSha256Hex(std::string_view secret, std::string_view body);

// Whether `a` and `b` are equal, in time that depends on their lengths only.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// Whether `header` (an `X-Hub-Signature-256` value: `sha256=<hex>`, hex in either case) signs
// `body` under `secret`. Anything else — no header, another algorithm, a wrong length — is false.
bool VerifyHubSignature(std::string_view header, std::string_view secret, std::string_view body);

}  // namespace jr2rt
