// Every way a verb can fail, in one table (docs/runtime.md#errors): its kind, the runner's exit
// code, serve's HTTP status and the `kind` serve's error body names. The runner's main, serve's
// router and the `--server` client all read it, so a verb fails the same way against the store
// and through serve.
#pragma once

#include <exception>
#include <stdexcept>
#include <string_view>

namespace jr2rt {

enum class ErrorKind {
  kUsage,        // the command line is wrong: 64; HTTP 400
  kBadInput,     // a value, payload or request refused before anything changed: 65; 400
  kDenied,       // no token, or a token without the scope: 65; 401/403
  kUnknown,      // no such run, Gate, workflow or route: 65; 404
  kConflict,     // the run has ended, the Gate was answered, another command saved first: 65; 409
  kDrifted,      // the stored run no longer fits this build: 4; 409
  kBusy,         // another command drives the run, or serve is full now: try again: 4; 503
  kFull,         // the store's disk is full: nothing was stored: 65; 503
  kDamaged,      // the stored run cannot be read: 65; 500
  kInterrupted,  // a signal stopped the command at the end of a turn: 130; 503
  kInternal,     // anything else (a defect): 4; 500
};

struct ErrorRule {
  ErrorKind kind;
  const char* name;  // `kind` in serve's error body
  int exit;
  unsigned http;
};

const ErrorRule& RuleOf(ErrorKind kind);
// The rule serve's error body names (`kind`), for the `--server` client; null for a name it does
// not know (a newer serve), which the client then reads by the status alone.
const ErrorRule* RuleNamed(std::string_view name);
// The kind of an HTTP status that serve gives without a kind (a refusal made by the HTTP layer
// itself: 401, 413, 429, …).
ErrorKind KindOfStatus(unsigned status);
// The kind of an exception a verb threw, by its type.
ErrorKind KindOf(const std::exception& e);

// A command line the runner cannot read (64).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Another command drives the run now (it holds the run's drive lock): serve answers 503 and takes
// the run up when that command lets it go. `holder` is the lock holder as it wrote itself (`pid
// 4242`; "" when unknown).
class RunBusy : public std::runtime_error {
 public:
  RunBusy(const std::string& message, std::string holder)
      : std::runtime_error(message), holder(std::move(holder)) {}
  std::string holder;
};

}  // namespace jr2rt
