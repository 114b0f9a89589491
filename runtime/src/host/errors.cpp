// The one table of errors (errors.h).
#include "jr2/errors.h"

#include "jr2/host.h"
#include "jr2/run.h"
#include "jr2/store.h"

namespace jr2rt {

namespace {

constexpr ErrorRule kRules[] = {
    {ErrorKind::kUsage, "usage", 64, 400},       {ErrorKind::kBadInput, "bad-input", 65, 400},
    {ErrorKind::kDenied, "denied", 65, 403},     {ErrorKind::kUnknown, "unknown", 65, 404},
    {ErrorKind::kConflict, "conflict", 65, 409}, {ErrorKind::kDrifted, "drifted", 4, 409},
    {ErrorKind::kBusy, "busy", 4, 503},          {ErrorKind::kFull, "store-full", 65, 503},
    {ErrorKind::kDamaged, "damaged", 65, 500},   {ErrorKind::kInterrupted, "interrupted", 130, 503},
    {ErrorKind::kInternal, "internal", 4, 500},
};

}  // namespace

const ErrorRule& RuleOf(ErrorKind kind) {
  for (const ErrorRule& r : kRules) {
    if (r.kind == kind) return r;
  }
  return kRules[sizeof kRules / sizeof kRules[0] - 1];
}

const ErrorRule* RuleNamed(std::string_view name) {
  for (const ErrorRule& r : kRules) {
    if (name == r.name) return &r;
  }
  return nullptr;
}

ErrorKind KindOfStatus(unsigned status) {
  switch (status) {
    case 401:
    case 403:
      return ErrorKind::kDenied;
    case 404:
      return ErrorKind::kUnknown;
    case 409:
      return ErrorKind::kConflict;
    case 429:
    case 503:
      return ErrorKind::kBusy;
    case 507:
      return ErrorKind::kFull;
    default:
      return status >= 400 && status < 500 ? ErrorKind::kBadInput : ErrorKind::kInternal;
  }
}

ErrorKind KindOf(const std::exception& e) {
  // Most derived first: each of these is also one of the kinds below it.
  if (dynamic_cast<const UsageError*>(&e) != nullptr) return ErrorKind::kUsage;
  if (const auto* g = dynamic_cast<const GateRefused*>(&e))
    return g->why == GateRefused::Why::kNotOpen ? ErrorKind::kUnknown : ErrorKind::kConflict;
  if (dynamic_cast<const RunEnded*>(&e) != nullptr) return ErrorKind::kConflict;
  if (dynamic_cast<const RunDrifted*>(&e) != nullptr) return ErrorKind::kDrifted;
  if (dynamic_cast<const RunBusy*>(&e) != nullptr) return ErrorKind::kBusy;
  if (dynamic_cast<const HostInterrupted*>(&e) != nullptr) return ErrorKind::kInterrupted;
  if (dynamic_cast<const StoreFull*>(&e) != nullptr) return ErrorKind::kFull;
  if (dynamic_cast<const StoreDamaged*>(&e) != nullptr) return ErrorKind::kDamaged;
  // A host that lost its lease: busy for now (503); sent again, the change reaches a host.
  if (dynamic_cast<const StoreFenced*>(&e) != nullptr) return ErrorKind::kBusy;
  // A shared store that cannot be reached now: busy (503, 75); sent again once it answers.
  if (dynamic_cast<const StoreUnreachable*>(&e) != nullptr) return ErrorKind::kBusy;
  if (dynamic_cast<const StoreConflict*>(&e) != nullptr) return ErrorKind::kConflict;
  if (dynamic_cast<const StoreError*>(&e) != nullptr) return ErrorKind::kUnknown;
  if (dynamic_cast<const BadInput*>(&e) != nullptr) return ErrorKind::kBadInput;
  return ErrorKind::kInternal;
}

}  // namespace jr2rt
