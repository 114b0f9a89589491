// The guard of a host's process groups (orphans.h). Why a process of its own: a host killed with
// SIGKILL runs no code, and PR_SET_PDEATHSIG reaches only a command's own process, not the
// processes it started (`sh -c "make; sleep 30"`). The guard is forked from the host at its
// first command and holds one end of a socket pair whose other end only the host holds
// (close-on-exec, so no command inherits it): the host tells it each group as it starts and
// ends, and when the host is gone, however it went, the guard reads the end of the stream and
// kills every group it still holds. A command that leaves its process group (`setsid`) is not
// reached; docs/operations.md says how a supervisor's cgroup closes that gap.
//
// The guard is forked from a process that may run threads, so from the fork on it makes only
// async-signal-safe calls: no allocation, no locks, no C++ library.
#include "effects/orphans.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <mutex>
#include <unordered_set>

namespace jr2rt {
namespace {

// The groups the guard can hold at once; past it a group is unguarded (the host still kills it
// on every stop it handles). Far above any Pool's cap a host runs.
constexpr int kMaxGroups = 16384;
int32_t g_groups[kMaxGroups];  // the guard's table: written only in the forked guard

[[noreturn]] void GuardMain(int fd, long maxFd) {
  // Its own session: a terminal's Ctrl-C or hang-up never reaches it, only the host's end does.
  setsid();
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM})
    sigaction(sig, &ignore, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // It holds nothing of the host's: not its terminal, its pipes, its store or its sockets.
  if (fd != 3) {
    dup2(fd, 3);
    close(fd);
  }
  const int devnull = open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    for (int std = 0; std < 3; ++std) {
      if (devnull != std) dup2(devnull, std);
    }
  }
  if (syscall(SYS_close_range, 4U, ~0U, 0U) != 0) {
    for (long other = 4; other < maxFd; ++other) close(static_cast<int>(other));
  }
  prctl(PR_SET_NAME, "jr2-guard", 0, 0, 0);
  int n = 0;
  for (;;) {
    int32_t msg = 0;
    const ssize_t got = recv(3, &msg, sizeof msg, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // the host is gone
    if (got != static_cast<ssize_t>(sizeof msg) || msg == 0) continue;
    if (msg > 0) {
      if (n < kMaxGroups) g_groups[n++] = msg;
      continue;
    }
    for (int i = 0; i < n; ++i) {
      if (g_groups[i] == -msg) {
        g_groups[i] = g_groups[--n];
        break;
      }
    }
  }
  for (int i = 0; i < n; ++i) kill(-g_groups[i], SIGKILL);
  _exit(0);
}

class Guard {
 public:
  void add(int pgid) {
    std::lock_guard<std::mutex> lock(mutex_);
    // Processes held (the host's lease is lost): a group started after the kill dies at once,
    // under the same lock, so none outlives the kill however the threads interleave.
    if (held_) ::kill(-pgid, SIGKILL);
    groups_.insert(pgid);
    if (!start()) return;
    if (!tell(pgid)) restart();
  }

  void end(int pgid) {
    // Whatever the leader left running in its group dies with it (kill reaches an empty group
    // as ESRCH, harmlessly: the group's id is not given to a new process while a member lives).
    ::kill(-pgid, SIGKILL);
    std::lock_guard<std::mutex> lock(mutex_);
    if (groups_.erase(pgid) == 0 || fd_ < 0) return;
    if (!tell(-pgid)) restart();
  }

  int pid() {
    std::lock_guard<std::mutex> lock(mutex_);
    return pid_;
  }

  int killAll() {
    std::lock_guard<std::mutex> lock(mutex_);
    held_ = true;
    for (const int g : groups_) ::kill(-g, SIGKILL);
    return static_cast<int>(groups_.size());
  }

  void letStart() {
    std::lock_guard<std::mutex> lock(mutex_);
    held_ = false;
  }

 private:
  // Starts the guard when none runs. False when it cannot be had.
  bool start() {
    if (fd_ >= 0) return true;
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return false;
    long maxFd = sysconf(_SC_OPEN_MAX);
    if (maxFd < 0 || maxFd > 65536) maxFd = 65536;
    const pid_t pid = fork();
    if (pid < 0) {
      close(pair[0]);
      close(pair[1]);
      return false;
    }
    if (pid == 0) GuardMain(pair[1], maxFd);
    close(pair[1]);
    fd_ = pair[0];
    pid_ = pid;
    // A guard started again (the last one was killed) is told every group there is.
    for (const int g : groups_) {
      if (!tell(g)) return false;
    }
    return true;
  }

  bool tell(int32_t msg) {
    for (;;) {
      if (send(fd_, &msg, sizeof msg, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof msg))
        return true;
      if (errno != EINTR) return false;
    }
  }

  // The guard went away (somebody killed it): reap it and start another.
  void restart() {
    close(fd_);
    fd_ = -1;
    if (pid_ > 0) waitpid(pid_, nullptr, WNOHANG);
    pid_ = -1;
    start();
  }

  std::mutex mutex_;
  std::unordered_set<int> groups_;
  bool held_ = false;
  int fd_ = -1;
  pid_t pid_ = -1;
};

Guard& TheGuard() {
  static auto* guard = new Guard;  // never destroyed: commands may end during exit
  return *guard;
}

}  // namespace

void GuardGroup(int pgid) {
  if (pgid > 0) TheGuard().add(pgid);
}

void EndGroup(int pgid) {
  if (pgid > 0) TheGuard().end(pgid);
}

int GuardPid() { return TheGuard().pid(); }

int KillGroupsAndHold() { return TheGuard().killAll(); }

void LetGroupsStart() { TheGuard().letStart(); }

}  // namespace jr2rt
