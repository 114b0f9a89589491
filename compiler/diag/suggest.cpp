#include "compiler/diag/suggest.h"

#include <algorithm>

#include "runtime/include/jr2/meant.h"

namespace jr2 {

std::string ClosestName(const std::string& word, const std::vector<std::string>& candidates) {
  return meant::Name(word, candidates);
}

std::string DurationMeant(const std::string& count, const std::string& unit) {
  return meant::Duration(count, unit);
}

}  // namespace jr2
