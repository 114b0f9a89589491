#include "store/prefixes.h"

#include <string>
#include <utility>
#include <vector>

namespace jr2rt {

RunSummary OneRunOf(std::vector<RunSummary>& found, int64_t count, const std::string& prefix,
                    const std::string& none) {
  if (count == 0) throw StoreError(none);
  if (count == 1) return std::move(found.front());
  std::string names;
  for (const RunSummary& r : found) {
    names.append(names.empty() ? "" : ", ").append(r.id).append(" (").append(r.status).append(")");
  }
  if (count > static_cast<int64_t>(found.size())) {
    names += ", and " + std::to_string(count - static_cast<int64_t>(found.size())) + " more";
  }
  throw StoreError("`" + prefix + "` names " + std::to_string(count) + " runs: " + names +
                   "; give more of the id");
}

}  // namespace jr2rt
