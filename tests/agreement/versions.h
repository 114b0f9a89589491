// The versions of the agreement test's files (tests/agreement/CMakeLists.txt, edits.py): each
// compiled into its own namespace, so each registers into a Registry of its own.
#pragma once

#include <cstddef>
#include <vector>

namespace jr2rt {
class Registry;
}

namespace jr2agr {

struct FileVersion {
  const char* file;  // the file edited, from the source tree's root (`samples/tickets/tickets.jr2`)
  const char* stem;  // `tickets`: its versions are `agr_tickets_vKK.jr2`
  int version;       // 0: the file as it is
  void (*registerWorkflows)(jr2rt::Registry& registry);
};

// In the order of the files, then of their versions.
const std::vector<FileVersion>& Versions();
// How many files were edited (JR2_AGREEMENT_FILES).
size_t FileCount();

}  // namespace jr2agr
