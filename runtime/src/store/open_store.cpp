// Opening a store by its location (docs/runtime.md#the-store): the one place that reads a
// location and picks the backend that serves it.
#include <memory>
#include <string>

#include "jr2/sqlite_store.h"
#include "jr2/store.h"

namespace jr2rt {

std::unique_ptr<Store> OpenStore(const std::string& location, StoreMode mode) {
  // Every location is a SQLite file's path today; a store reached by URL (a server shared by
  // several hosts) is told apart here, by its scheme.
  return OpenSqliteStore(location, mode);
}

}  // namespace jr2rt
