// The run store (RUNTIME.md §1): an interface, and the embedded default over one SQLite file.
// A run is saved whole, in one transaction, after each step that changed it and before anything
// about that step is printed or answered.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jr2/value.h"

namespace jr2rt {

struct StoredRun {
  std::string id;
  std::string workflow;
  std::string status;
  int64_t updatedMs = 0;
  Json snapshot;
};

// A store that cannot be opened or read: a clear one-line error (the runner exits 65).
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Store {
 public:
  virtual ~Store() = default;
  virtual void save(const StoredRun& run) = 0;
  // The run whose id starts with `prefix` (4 characters or more); throws StoreError when none
  // or several match.
  virtual StoredRun load(const std::string& prefix) = 0;
  virtual std::vector<StoredRun> list(bool includeEnded) = 0;
};

// Opens (or creates) the SQLite store at `path`.
std::unique_ptr<Store> OpenSqliteStore(const std::string& path);

}  // namespace jr2rt
