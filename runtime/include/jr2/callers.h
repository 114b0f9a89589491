// Callers and their scopes (docs/runtime.md#callers-and-scopes-for-serve): who may do what over
// `serve`'s HTTP. The callers file holds only the SHA-256 of each token; a request's bearer token
// is hashed and compared with every caller's in constant time. `serve` also writes an instance
// token, with every scope, to `<store>.token` (mode 0600).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "jr2/value.h"

namespace jr2rt {

// kMetrics: `GET /metrics` (#30), given under any workflow's name (`"*": ["metrics"]`).
enum class Scope { kStart, kRead, kAnswer, kCancel, kMetrics };
const char* ToString(Scope s);

struct Caller {
  std::string name;
  std::string tokenSha256;  // 64 lowercase hex digits
  // Workflow name (or `*`, every workflow) to the scopes the caller has there.
  std::map<std::string, std::set<Scope>> scopes;
  // For `answer`: the Gates it may answer (`*` matches any run of characters, `*.review`); empty:
  // every Gate.
  std::vector<std::string> gates;
  bool instance = false;  // the instance token: every scope on every workflow
};

// A hook's verifier: the environment variable that holds its HMAC secret.
struct HookConfig {
  std::string secretEnv;
};

class Callers {
 public:
  // The callers file's JSON: `{ "callers": [ {name, token_sha256, scopes, gates?} ], "hooks":
  // { NAME: { "secret_env": VAR } } }`. Throws BadInput naming the field and the fix (`where`
  // names the file); an unknown field is refused with the closest name.
  static Callers Parse(const Json& doc, const std::string& where);
  static Callers Load(const std::string& path);

  // Adds the instance token (every scope, every workflow).
  void addInstance(const std::string& token);

  enum class Decision { kAllowed, kUnauthorized, kForbidden };
  // May the bearer of `token` use `scope` on `workflow` (and, for `answer` by a caller limited
  // to some Gates, Gate `gate`)? 401 without a known token, 403 without the scope.
  Decision authorize(std::string_view token, const std::string& workflow, Scope scope,
                     const std::string& gate = "") const;
  // The caller whose token is `token`, or null. Every caller's hash is compared, equal or not.
  const Caller* identify(std::string_view token) const;
  // Whether `caller` may answer Gate `gate` (its `gates` patterns; none: every Gate).
  static bool MayAnswerGate(const Caller& caller, const std::string& gate);
  // authorize()'s decision for a caller already identified: `scope` on `workflow` (and, for
  // `answer` with a `gate`, that Gate).
  static bool Allows(const Caller& caller, const std::string& workflow, Scope scope,
                     const std::string& gate = "");
  // Whether `caller` has `scope` on some workflow (`GET /runs` refuses only one with none).
  static bool HasAnywhere(const Caller& caller, Scope scope);

  const std::vector<Caller>& callers() const { return callers_; }
  const std::map<std::string, HookConfig>& hooks() const { return hooks_; }

 private:
  std::vector<Caller> callers_;
  std::map<std::string, HookConfig> hooks_;
};

// A new token: 32 random bytes, as 64 lowercase hex digits.
std::string NewToken();

// `<runner> callers add NAME --scope WORKFLOW=SCOPE,… [--gates PATTERN,…] --callers FILE`
// (#30): adds a Caller to the callers file at `path` (made, mode 0600, when there is none) and
// gives its token, which is stored nowhere (the file keeps its SHA-256). `scopes` is what the
// file's `scopes` holds (workflow to scope names); `gates` its `gates`. The file as it would be is
// checked whole (Callers::Parse) before it replaces the old one (written beside, renamed over):
// a refused Caller changes nothing. BadInput names what is wrong.
std::string AddCaller(const std::string& path, const std::string& name, const Json& scopes,
                      const std::vector<std::string>& gates);

// `*` as any run of characters (none included); every other character as itself.
bool GlobMatches(std::string_view pattern, std::string_view text);

// The instance token of the store at `storePath`: read from `<storePath>.token`, or made (32
// random bytes, hex) and written there with mode 0600 when the file does not exist. A token file
// that is a symbolic link, not a plain file, readable by others, or not a token is refused
// (StoreError-like BadInput), never followed or overwritten.
std::string InstanceToken(const std::string& storePath);
// The same, with `make` false: read only (the CLI's `--server`); BadInput when there is none.
std::string InstanceToken(const std::string& storePath, bool make);

}  // namespace jr2rt
