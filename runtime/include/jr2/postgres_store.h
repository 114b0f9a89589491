// The run store in a PostgreSQL database (docs/scaling.md, #32): what only it has — a location
// that is a libpq connection string or URL, and how that location is named without its password.
// The store itself is a jr2/store.h Store; OpenStore gives it for such a location.
#pragma once

#include <memory>
#include <string>

#include "jr2/store.h"

namespace jr2rt {

// Whether `location` names a PostgreSQL database rather than a SQLite file: a URL
// (`postgresql://…`, `postgres://…`) or a libpq keyword string that starts with one of the
// keywords `host`, `hostaddr`, `port`, `dbname`, `user`, `password` or `service` followed by `=`
// (`host=/run/postgresql dbname=jr2`). Any other text is a path: a file whose name starts so is
// reached as `./host=…`.
bool IsPostgresLocation(const std::string& location);

// `location` as messages name it: its password (a URL's `user:password@`, a `password=` keyword
// or query parameter) left out.
std::string PostgresLocationName(const std::string& location);

// Opens the store in the database at `location`, in the schema its search_path names first (the
// tables are made there, with `jr2_meta` holding their version). A database whose jr2 schema is
// newer than this program knows, or that holds tables of jr2's names without `jr2_meta` (another
// application's), is refused with StoreError and left unchanged; kReadOnly on a database without
// the schema throws StoreMissing and creates nothing. One connection per store.
std::unique_ptr<Store> OpenPostgresStore(const std::string& location,
                                         StoreMode mode = StoreMode::kReadWrite);

}  // namespace jr2rt
