#include "compiler/diag/suggest.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/ADT/edit_distance.h>

#include <algorithm>

namespace jr2 {

std::string ClosestName(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  unsigned bestDistance = ~0u;
  const unsigned limit = std::max<unsigned>(1, static_cast<unsigned>(word.size()) / 3);
  for (const std::string& c : candidates) {
    if (c == word) continue;
    const unsigned d =
        llvm::ComputeEditDistance(llvm::ArrayRef<char>(word.data(), word.size()),
                                  llvm::ArrayRef<char>(c.data(), c.size()), true, limit + 1);
    if (d <= limit && d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

}  // namespace jr2
