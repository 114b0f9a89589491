#include "jr2/stdlib.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_set>

namespace jr2rt {
namespace {

std::string IdOf(const Json& item) {
  if (item.is_string()) return item.get<std::string>();
  if (item.is_object() && item.contains("id") && item["id"].is_string())
    return item["id"].get<std::string>();
  return item.dump();
}

}  // namespace

struct NextQuery::Index {
  std::once_flag built;
  // Views into the query's own lists, which it keeps alive and which nobody changes while it
  // holds them.
  std::unordered_set<std::string_view> active, settled, failed;
};

NextQuery::NextQuery() : index_(std::make_shared<Index>()) {}

NextQuery::NextQuery(Ids active, Ids settled, Ids failed, std::shared_ptr<const Json> input)
    : input_(std::move(input)),
      active_(std::move(active)),
      settled_(std::move(settled)),
      failed_(std::move(failed)),
      index_(std::make_shared<Index>()) {}

const NextQuery::Index& NextQuery::index() const {
  std::call_once(index_->built, [this] {
    index_->active.insert(active().begin(), active().end());
    index_->settled.insert(settled().begin(), settled().end());
    index_->failed.insert(failed().begin(), failed().end());
  });
  return *index_;
}

bool NextQuery::isActive(const std::string& id) const { return index().active.count(id) != 0; }
bool NextQuery::isSettled(const std::string& id) const { return index().settled.count(id) != 0; }
bool NextQuery::isFailed(const std::string& id) const { return index().failed.count(id) != 0; }

namespace {

// A backlog file as parsed: the items, and each item's id and needs. It is parsed again only
// when the file's bytes differ from the last call's (the file is still read at every call, so
// every edit is seen), which keeps a call on a large unchanged backlog from paying for a parse.
struct Backlog {
  std::string bytes;
  Json items;
  std::vector<std::string> ids;
  std::vector<std::vector<std::string>> needs;
};

std::shared_ptr<const Backlog> ParseBacklog(const std::string& path, std::string bytes) {
  auto backlog = std::make_shared<Backlog>();
  try {
    backlog->items = Json::parse(bytes);
  } catch (const Json::parse_error& e) {
    throw Defect("std.backlog: `" + path + "` is not valid JSON: " + ErrorText(e));
  }
  if (!backlog->items.is_array())
    throw Defect("std.backlog: `" + path + "` must hold a JSON list of items");
  for (const Json& item : backlog->items) {
    backlog->ids.push_back(IdOf(item));
    std::vector<std::string> needs;
    if (item.is_object() && item.contains("needs") && !item["needs"].is_null()) {
      const Json& list = item["needs"];
      if (!list.is_array()) {
        throw Defect("std.backlog: in `" + path + "`, the `needs` of item `" + backlog->ids.back() +
                     "` must be a list of ids, not " + list.dump());
      }
      for (const Json& need : list)
        needs.push_back(need.is_string() ? need.get<std::string>() : need.dump());
    }
    backlog->needs.push_back(std::move(needs));
  }
  backlog->bytes = std::move(bytes);
  return backlog;
}

std::shared_ptr<const Backlog> ReadBacklog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Defect("std.backlog: cannot read `" + path + "`: no such file, or it cannot be opened");
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  // The last parse of each path, for the 16 paths read most recently (runs on several threads
  // share it): a process that reads many backlogs keeps only the recent ones.
  struct Entry {
    std::shared_ptr<const Backlog> backlog;
    uint64_t used = 0;
  };
  static std::mutex mutex;
  static std::map<std::string, Entry> parsed;
  static uint64_t clock = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = parsed.find(path);
    if (it != parsed.end() && it->second.backlog->bytes == bytes) {
      it->second.used = ++clock;
      return it->second.backlog;
    }
  }
  auto backlog = ParseBacklog(path, std::move(bytes));
  std::lock_guard<std::mutex> lock(mutex);
  if (parsed.size() >= 16 && parsed.count(path) == 0) {
    parsed.erase(std::min_element(parsed.begin(), parsed.end(), [](const auto& a, const auto& b) {
      return a.second.used < b.second.used;
    }));
  }
  parsed[path] = {backlog, ++clock};
  return backlog;
}

}  // namespace

Json StdBacklog(const Json& args, const NextQuery& query, ItemIdOf, const std::string&) {
  const std::string path = args.value("path", std::string());
  const std::shared_ptr<const Backlog> backlog = ReadBacklog(path);
  const Json* ready = nullptr;
  int64_t open = 0;
  for (size_t i = 0; i < backlog->ids.size(); ++i) {
    const std::string& id = backlog->ids[i];
    if (query.isActive(id) || query.isSettled(id)) continue;
    bool isReady = true;
    for (const std::string& need : backlog->needs[i]) {
      // A need that failed, or that names no item, keeps its dependents from ever being ready.
      if (!query.isSettled(need) || query.isFailed(need)) {
        isReady = false;
        break;
      }
    }
    // `open` counts the items left that are not ready (RUNTIME.md §5).
    if (!isReady) {
      ++open;
    } else if (ready == nullptr) {
      ready = &backlog->items[i];
    }
  }
  return {{"item", ready != nullptr ? *ready : Json(nullptr)}, {"open", open}};
}

Json StdQueue(const Json& args, const NextQuery& query, ItemIdOf) {
  Json list = args.contains("items") ? args["items"]
                                     : (args.contains("arg0") ? args["arg0"] : Json::array());
  if (!list.is_array()) throw Defect("std.queue: its argument must be a list");
  for (const Json& item : list) {
    const std::string id = IdOf(item);
    if (!query.isActive(id) && !query.isSettled(id)) return {{"item", item}, {"open", 0}};
  }
  return {{"item", nullptr}, {"open", 0}};
}

namespace {
// A stand-in until the incremental Sources land: a full pass per call.
class PassSource final : public StdNextSource {
 public:
  PassSource(std::string fn, ItemIdOf idOf, std::string home)
      : fn_(std::move(fn)), idOf_(std::move(idOf)), home_(std::move(home)) {}
  Json next(const Json& args, const NextQuery& query) override {
    return fn_ == "std.backlog" ? StdBacklog(args, query, idOf_, home_) : StdQueue(args, query, idOf_);
  }

 private:
  std::string fn_;
  ItemIdOf idOf_;
  std::string home_;
};
}  // namespace

std::unique_ptr<StdNextSource> MakeStdNext(const std::string& function, ItemIdOf idOf,
                                           const std::string& home) {
  if (function != "std.backlog" && function != "std.queue") return nullptr;
  return std::make_unique<PassSource>(function, std::move(idOf), home);
}

namespace {

Json Command(const Json& spec) {
  const auto argv = spec.value("argv", std::vector<std::string>());
  if (argv.empty()) throw Failure("std.command: `argv` is empty");
  const std::string cwd = spec.value("cwd", std::string("."));
  const int64_t timeoutMs = spec.value("timeout", int64_t{300000});
  // posix_spawnp, not fork + exec: a forked child of this multi-threaded process may only make
  // async-signal-safe calls, and a malloc there deadlocks when another thread held the
  // allocator's lock at the fork (seen under ASan, where a build_matrix run hung). The pipes are
  // close-on-exec, so a process started by a concurrent command never holds this one's open.
  std::vector<char*> av;
  av.reserve(argv.size() + 1);
  for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) throw Failure("std.command: cannot make pipes");
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(out[0]);
    close(out[1]);
    throw Failure("std.command: cannot make pipes");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, av[0], &actions, nullptr, av.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    throw Failure("`" + argv[0] + "` cannot be started in `" + cwd + "`: " + std::strerror(spawned),
                  {{"exit", nullptr}, {"stdout", ""}, {"stderr", ""}});
  }
  close(out[1]);
  close(err[1]);
  std::string stdoutText, stderrText;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeoutMs);
  bool timedOut = false;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int openFds = 2;
  while (openFds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timedOut = true;
      kill(pid, SIGKILL);
      break;
    }
    if (poll(fds, 2, static_cast<int>(std::min<int64_t>(left, 1000))) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (auto& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      const ssize_t n = read(f.fd, buf, sizeof buf);
      if (n <= 0) {
        close(f.fd);
        f.fd = -1;
        --openFds;
      } else {
        (f.fd == out[0] ? stdoutText : stderrText).append(buf, static_cast<size_t>(n));
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  // A process that closed its output may still run: it is waited for until the deadline, then
  // killed, never waited for without end.
  int status = 0;
  for (int nap = 1;; nap = std::min(nap * 2, 50)) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) break;
    if (done < 0) continue;
    if (!timedOut && std::chrono::steady_clock::now() >= deadline) {
      timedOut = true;
      kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(nap));
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  Json result = {{"exit", code}, {"stdout", stdoutText}, {"stderr", stderrText}};
  if (timedOut)
    throw Failure("`" + argv[0] + "` timed out after " + std::to_string(timeoutMs) + " ms", result);
  if (code != 0) throw Failure("`" + argv[0] + "` exited " + std::to_string(code), result);
  return result;
}

}  // namespace

Json StdEffect(const std::string& name, const Json& args, const std::string&) {
  if (name == "std.command") {
    const Json spec = args.contains("spec") ? args["spec"] : args.value("arg0", Json::object());
    return Command(spec);
  }
  if (name == "std.http_get") {
    return HttpGet(args.contains("request") ? args["request"] : args.value("arg0", Json::object()));
  }
  throw Failure("`" + name + "` is not available in this runtime");
}

}  // namespace jr2rt
