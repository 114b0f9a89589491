#include <string_view>

#include "compiler/diag/diagnostics.h"

namespace jr2 {
namespace {

struct Explained {
  std::string_view code;
  std::string_view text;
};

// The long explanations live in explanations.def, one per code: a first line that sums the
// code up (SARIF's shortDescription), then why jr2 refuses it, the fix, and an example.
constexpr Explained kExplanations[] = {
#define JR2_EXPLAIN(Code, Text) {#Code, Text},
#include "compiler/diag/explanations.def"
#undef JR2_EXPLAIN
};

}  // namespace

std::string_view Explanation(std::string_view code) {
  for (const auto& e : kExplanations) {
    if (e.code == code) return e.text;
  }
  return {};
}

}  // namespace jr2
