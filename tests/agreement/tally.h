// What both agreement tests count of `jr2c diff` against the runtime's restore (agreement_test.cpp,
// samples_agreement_test.cpp; docs/diff.md#the-agreement-test): each restore checked, whether the
// runtime refused it and whether diff flagged it, and each kind of disagreement once, with the
// first pair and run that showed it.
#pragma once

#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace jr2agr {

struct Tally {
  size_t checked = 0, refused = 0, flagged = 0, disagree = 0;
  std::map<std::string, size_t> byCode;  // the restores each code of diff flagged
  // Each kind of disagreement: how many restores, and the first one's pair and run.
  std::map<std::string, std::pair<size_t, std::string>> kinds;

  // One restore: `why` the runtime refused it ("" when it restored), `codes` what diff said
  // strands it (none when it passes it), `example` names the pair and the run. True when they
  // agree.
  bool add(const std::string& why, const std::vector<std::string>& codes,
           const std::function<std::string()>& example) {
    ++checked;
    const bool isRefused = !why.empty();
    const bool isFlagged = !codes.empty();
    refused += isRefused ? 1 : 0;
    flagged += isFlagged ? 1 : 0;
    for (const std::string& code : codes) ++byCode[code];
    if (isRefused == isFlagged) return true;
    ++disagree;
    std::string kind = isFlagged ? "diff says" : "diff passes it";
    for (const std::string& code : codes) kind += " " + code;
    kind += isRefused ? "; the runtime refuses it: " + why : "; the runtime restores it";
    auto& [n, first] = kinds[kind];
    if (n++ == 0) first = example();
    return false;
  }

  // Every kind of disagreement, for the test's failure message.
  std::string report() const {
    std::ostringstream out;
    for (const auto& [kind, seen] : kinds)
      out << "  " << seen.first << " restores: " << kind << "\n    e.g. " << seen.second << "\n";
    return out.str();
  }
};

}  // namespace jr2agr
