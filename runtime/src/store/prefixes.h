// What both stores decide alike about a run named by a prefix of its id (RunRows::find): the run
// when one matched, else the one-line refusal that lists them. Each backend finds the candidates
// its own way (a range of its primary key).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jr2/store.h"

namespace jr2rt {

// `found`: the first (at most 10) runs whose id starts with `prefix`, of `count` in all. Gives
// the one run; throws StoreError(`none`) when there is none, and when there are several a
// StoreError that names them (and how many more) and asks for more of the id.
RunSummary OneRunOf(std::vector<RunSummary>& found, int64_t count, const std::string& prefix,
                    const std::string& none);

}  // namespace jr2rt
