// maxrss COMMAND [ARG…]: runs COMMAND and prints its peak resident set in bytes on stderr's last
// line ("maxrss BYTES"), exiting with its exit code. compare.py's `check_rss` runs `jr2c check`
// through it: a child's ru_maxrss counts the memory of the process it was forked from until its
// exec, so a child forked from Python (about 17 MB resident) read 17 MB whatever it used; forked
// from this (about 1 MB), it reads its own.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: maxrss COMMAND [ARG...]\n");
    return 2;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("maxrss: fork");
    return 2;
  }
  if (pid == 0) {
    execvp(argv[1], argv + 1);
    std::perror("maxrss: exec");
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) < 0) {
    std::perror("maxrss: wait4");
    return 2;
  }
  std::fprintf(stderr, "maxrss %ld\n", usage.ru_maxrss * 1024L);  // Linux: KiB
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}
