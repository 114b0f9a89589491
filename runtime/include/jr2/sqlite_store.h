// The embedded run store over one SQLite file (docs/runtime.md#the-store): what only it has — a
// path, a backup of the file. The store itself is a jr2/store.h Store; OpenStore gives it for a
// location that is a path.
#pragma once

#include <memory>
#include <string>

#include "jr2/store.h"

namespace jr2rt {

// Opens the SQLite store at `path`. A file that is not a jr2 store (another application's
// database, a file that is not a database) is refused with StoreError and left byte for byte
// unchanged. Its drive locks are files in the folder `<path>.locks`.
std::unique_ptr<Store> OpenSqliteStore(const std::string& path,
                                       StoreMode mode = StoreMode::kReadWrite);

// `<runner> store backup FILE` (docs/operations.md#backups): a copy of the store at `from`,
// consistent as of one instant, made while commands and serve use it (SQLite's online backup, in
// one read transaction: a writer is never blocked). Written beside `to` and renamed to it once
// whole and checked (integrity_check), mode 0600; `to` must not exist. Gives the runs it holds and
// its bytes. StoreMissing without a store; StoreError for a `to` it cannot write.
struct BackupInfo {
  int64_t runs = 0;
  int64_t bytes = 0;
};
BackupInfo BackupSqliteStore(const std::string& from, const std::string& to);

}  // namespace jr2rt
