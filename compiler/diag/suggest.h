// "Did you mean …?": the one helper every phase uses to suggest a close name.
#pragma once

#include <string>
#include <vector>

namespace jr2 {

// The candidate closest to `word` by edit distance, when it is close enough to be a typo (at
// most a third of the word's letters differ, and at least one may); empty otherwise.
std::string ClosestName(const std::string& word, const std::vector<std::string>& candidates);

// The duration literal a person meant by `count` and a spelled-out unit (`5` and `min`): `5m`;
// empty when it is none (runtime/include/jr2/meant.h, which the runner's CLI shares).
std::string DurationMeant(const std::string& count, const std::string& unit);

}  // namespace jr2
