// The drive locks as flocks on files (docs/runtime.md#the-store, "Drive locks"): a folder of this
// user's that nobody else can write to, opened without following a symlink; a lock file per run,
// 0600 and O_NOFOLLOW, deleted by its holder when it finishes, with the holder's pid in it.
#include "store/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace jr2rt {
namespace {

std::string Quoted(const std::string& path) { return "`" + path + "`"; }

// A lock file is named by its run id, which must then be one plain path component.
bool IsLockName(const std::string& id) {
  return !id.empty() && id != "." && id != ".." && id.find('/') == std::string::npos &&
         id.find('\0') == std::string::npos;
}

// Opens the lock folder without following a symlink, and checks it is a folder of this user's
// that no one else can write to: the lock files in it are trusted by name. -1 when it does not
// exist and `create` is false.
int OpenLockDir(const std::string& dir, bool create) {
  if (create && mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw StoreError("cannot make the lock folder " + Quoted(dir) + ": " + std::strerror(errno));
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    if (!create && error == ENOENT) return -1;
    struct stat st {};
    if (lstat(dir.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      throw StoreError(Quoted(dir) +
                       " is a symbolic link; the lock folder must be a real folder — remove it");
    }
    if (error == ENOTDIR) {
      throw StoreError(Quoted(dir) + " is not a folder; the lock folder must be one — remove it");
    }
    throw StoreError("cannot open the lock folder " + Quoted(dir) + ": " + std::strerror(error));
  }
  struct stat st {};
  std::string why;
  if (fstat(fd, &st) != 0) {
    why = std::strerror(errno);
  } else if (st.st_uid != geteuid()) {
    why = "it belongs to another user (uid " + std::to_string(st.st_uid) +
          "); remove it, or give another path with --store or JR2_STORE";
  } else if ((st.st_mode & 022) != 0) {
    why = "others can write to it; make it private (chmod 700) or remove it";
  }
  if (!why.empty()) {
    ::close(fd);
    throw StoreError("the lock folder " + Quoted(dir) + " cannot be trusted: " + why);
  }
  return fd;
}

// Whether `fd` still is the file named `name` in `dirFd`: a holder that unlinked it meanwhile
// leaves a lock on a file no one else will open.
bool StillAt(int dirFd, const std::string& name, int fd) {
  struct stat byName {};
  struct stat byFd {};
  if (fstatat(dirFd, name.c_str(), &byName, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (fstat(fd, &byFd) != 0) return false;
  return byName.st_ino == byFd.st_ino && byName.st_dev == byFd.st_dev;
}

class FileLock final : public RunLock {
 public:
  FileLock(int dirFd, std::string dir, std::string name,
           const std::function<void(const std::string&)>& onWait)
      : dirFd_(dirFd), dir_(std::move(dir)), name_(std::move(name)) {
    try {
      acquire(&onWait);
    } catch (...) {
      ::close(dirFd_);
      throw;
    }
  }
  ~FileLock() override {
    if (fd_ >= 0) {
      // Unlinked only by a holder of the lock, and only while it still names this file: then
      // no one else holds it, and a waiter finds the name gone and makes a new one.
      if (!held_) held_ = flock(fd_, LOCK_EX | LOCK_NB) == 0;
      if (held_ && StillAt(dirFd_, name_, fd_)) unlinkat(dirFd_, name_.c_str(), 0);
      ::close(fd_);
    }
    ::close(dirFd_);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  void release() override {
    if (fd_ >= 0 && held_) flock(fd_, LOCK_UN);
    held_ = false;
  }

  bool tryTake() override {
    if (held_) return true;
    if (fd_ >= 0) {
      if (flock(fd_, LOCK_EX | LOCK_NB) != 0) return false;
      if (StillAt(dirFd_, name_, fd_)) {
        held_ = true;
        return true;
      }
      // The file was replaced meanwhile (its holder unlinked it): nobody holds that one; the
      // new one is tried, without waiting either.
      flock(fd_, LOCK_UN);
      ::close(fd_);
      fd_ = -1;
    }
    const int fd =
        openat(dirFd_, name_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0) return false;
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || flock(fd, LOCK_EX | LOCK_NB) != 0 ||
        !StillAt(dirFd_, name_, fd)) {
      ::close(fd);
      return false;
    }
    fd_ = fd;
    held_ = true;
    stamp();
    return true;
  }

  void take() override {
    if (held_) return;
    if (fd_ >= 0) {
      wait();
      if (StillAt(dirFd_, name_, fd_)) {
        held_ = true;
        return;
      }
      ::close(fd_);
      fd_ = -1;
    }
    acquire(nullptr);
  }

 private:
  std::string path() const { return dir_ + "/" + name_; }

  void wait() {
    while (flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR)
        throw StoreError("cannot lock " + Quoted(path()) + ": " + std::strerror(errno));
    }
  }

  // Opens (or makes) the lock file and locks it, until the file locked is the one at the path.
  void acquire(const std::function<void(const std::string&)>* onWait) {
    for (;;) {
      fd_ =
          openat(dirFd_, name_.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
      if (fd_ < 0) {
        if (errno == ELOOP) {
          throw StoreError(Quoted(path()) +
                           " is a symbolic link; a lock file must be a plain file — remove it");
        }
        throw StoreError("cannot open the lock file " + Quoted(path()) + ": " +
                         std::strerror(errno));
      }
      struct stat st {};
      if (fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd_);
        fd_ = -1;
        throw StoreError(Quoted(path()) +
                         " is not a plain file; a lock file must be one — remove it");
      }
      if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
          const std::string why = std::strerror(errno);
          ::close(fd_);
          fd_ = -1;
          throw StoreError("cannot lock " + Quoted(path()) + ": " + why);
        }
        if (onWait != nullptr && *onWait) {
          try {
            (*onWait)(holder());  // it may throw: a command that asks the holder instead
          } catch (...) {
            ::close(fd_);
            fd_ = -1;
            throw;
          }
        }
        onWait = nullptr;  // once, however many times the holder's unlink sends us round
        try {
          wait();
        } catch (...) {
          ::close(fd_);
          fd_ = -1;
          throw;
        }
      }
      if (StillAt(dirFd_, name_, fd_)) {
        held_ = true;
        stamp();
        return;
      }
      ::close(fd_);
      fd_ = -1;
    }
  }

  // The holder writes its pid into the lock file, so that a waiter can say who it waits for
  // (a process stopped with Ctrl-Z holds the lock until it goes on or ends).
  void stamp() {
    const std::string pid = std::to_string(::getpid()) + "\n";
    if (ftruncate(fd_, 0) == 0) {
      [[maybe_unused]] const ssize_t n = pwrite(fd_, pid.data(), pid.size(), 0);
    }
  }

  // "pid 1234" of the holder, as it wrote it; "" when the file says nothing readable.
  std::string holder() const {
    char buf[32] = {};
    const ssize_t n = pread(fd_, buf, sizeof buf - 1, 0);
    if (n <= 0) return "";
    std::string text(buf, static_cast<size_t>(n));
    while (!text.empty() && text.back() == '\n') text.pop_back();
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos) return "";
    return "pid " + text;
  }

  int dirFd_;
  std::string dir_;
  std::string name_;
  int fd_ = -1;
  bool held_ = false;
};

// Removes the lock file of a pruned run, unless someone holds it (then its holder does).
void RemoveLockFile(int dirFd, const std::string& name) {
  const int fd = openat(dirFd, name.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return;
  struct stat st {};
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
      StillAt(dirFd, name, fd)) {
    unlinkat(dirFd, name.c_str(), 0);
  }
  ::close(fd);
}

}  // namespace

std::string FileLocks::FolderBeside(const std::string& path) {
  std::string real = path;
  if (char* resolved = realpath(path.c_str(), nullptr)) {
    real = resolved;
    std::free(resolved);
  }
  return real + ".locks";
}

std::unique_ptr<RunLock> FileLocks::lock(const std::string& id,
                                         const std::function<void(const std::string&)>& onWait) {
  if (!IsLockName(id)) {
    throw StoreError("`" + id + "` is not a run id that can name a lock file");
  }
  return std::make_unique<FileLock>(OpenLockDir(dir_, true), dir_, id, onWait);
}

void FileLocks::remove(const std::vector<std::string>& ids) {
  if (ids.empty()) return;
  int dirFd = -1;
  try {
    dirFd = OpenLockDir(dir_, false);
  } catch (const StoreError&) {
    return;
  }
  if (dirFd < 0) return;
  for (const std::string& id : ids) {
    if (IsLockName(id)) RemoveLockFile(dirFd, id);
  }
  ::close(dirFd);
}

}  // namespace jr2rt
