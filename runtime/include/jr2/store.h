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
  // Bumped by each save. 0: a run not loaded from the store (a new one).
  int64_t revision = 0;
};

// A store that cannot be opened or read: a clear one-line error (the runner exits 65).
class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Another command saved the run since this one loaded it: nothing was written.
class StoreConflict : public StoreError {
 public:
  using StoreError::StoreError;
};

class Store {
 public:
  virtual ~Store() = default;
  // Saves the run in one transaction and gives its new revision. With a `revision` other than 0
  // (the one it was loaded or last saved at) it writes only if the stored run still has that
  // revision, and otherwise throws StoreConflict: two commands on one run never lose each
  // other's steps. With 0 it writes whatever is stored (a new run, a benchmark).
  virtual int64_t save(const StoredRun& run) = 0;
  // The run whose id starts with `prefix` (4 characters or more); throws StoreError when none
  // or several match.
  virtual StoredRun load(const std::string& prefix) = 0;
  virtual std::vector<StoredRun> list(bool includeEnded) = 0;
  // The stored revision of run `id` (its full id), without reading its snapshot; 0 when none.
  virtual int64_t revision(const std::string& id) = 0;
};

// Opens (or creates) the SQLite store at `path`.
std::unique_ptr<Store> OpenSqliteStore(const std::string& path);

}  // namespace jr2rt
