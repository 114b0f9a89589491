// Opening a store by its location (docs/runtime.md#the-store): the one place that reads a
// location and picks the backend that serves it.
#include <memory>
#include <string>

#include "jr2/postgres_store.h"
#include "jr2/sqlite_store.h"
#include "jr2/store.h"

namespace jr2rt {

std::unique_ptr<Store> OpenStore(const std::string& location, StoreMode mode) {
  // A PostgreSQL database (a URL, or a libpq keyword string: IsPostgresLocation's rule, which
  // no ordinary path meets) is shared by several hosts (docs/scaling.md); anything else is a
  // SQLite file's path.
  if (IsPostgresLocation(location)) return OpenPostgresStore(location, mode);
  return OpenSqliteStore(location, mode);
}

}  // namespace jr2rt
