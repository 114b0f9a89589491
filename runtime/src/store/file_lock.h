// The drive locks of a store on one machine: a flock on a file per run, in one folder that is
// never reached through a symlink (docs/runtime.md#the-store, "Drive locks"). The SQLite store's
// RunLocks; a store shared by several machines needs locks of its own.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "jr2/store.h"

namespace jr2rt {

class FileLocks final : public RunLocks {
 public:
  // The locks in folder `dir`, made (0700) by the first lock.
  explicit FileLocks(std::string dir) : dir_(std::move(dir)) {}
  // The lock folder beside the file at `path` (`<path>.locks`), however its path is spelled (a
  // symlink, `./`): two commands on one run always lock the same file.
  static std::string FolderBeside(const std::string& path);

  std::unique_ptr<RunLock> lock(const std::string& id,
                                const std::function<void(const std::string&)>& onWait) override;
  // Removes the lock files of runs `ids` (pruned), each unless someone holds it (then its holder
  // does). A folder that is missing or not to be trusted is left alone.
  void remove(const std::vector<std::string>& ids);

 private:
  std::string dir_;
};

}  // namespace jr2rt
