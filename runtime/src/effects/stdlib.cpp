#include "jr2/stdlib.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "core/occupancy.h"
#include "effects/orphans.h"

namespace jr2rt {

struct NextQuery::Index {
  std::once_flag built;
  // Views into the query's own lists, which it keeps alive and which nobody changes while it
  // holds them.
  std::unordered_set<std::string_view> active, settled, failed;
  // The live ids without their holes, made on the first read of active() when there are holes.
  std::once_flag listed;
  std::vector<std::string> live;
};

const Json& NextQuery::Null() {
  static const Json kNull;
  return kNull;
}

NextQuery::NextQuery() : index_(std::make_shared<Index>()) {}

NextQuery::NextQuery(Ids active, Ids settled, Ids failed, std::shared_ptr<const Json> input)
    : input_(std::move(input)),
      active_(std::move(active)),
      settled_(std::move(settled)),
      failed_(std::move(failed)),
      index_(std::make_shared<Index>()) {}

NextQuery NextQuery::OfPool(std::shared_ptr<const LiveIds> live, Ids settled, Ids failed,
                            std::shared_ptr<const Json> input) {
  NextQuery q(nullptr, std::move(settled), std::move(failed), std::move(input));
  q.live_ = std::move(live);
  return q;
}

const std::vector<std::string>& NextQuery::active() const {
  if (!live_) return active_ ? *active_ : Empty();
  if (live_->holes == 0) return live_->slots;
  std::call_once(index_->listed, [this] {
    index_->live.reserve(live_->size());
    for (const std::string& id : live_->slots) {
      if (!id.empty()) index_->live.push_back(id);
    }
  });
  return index_->live;
}

size_t NextQuery::activeCount() const {
  if (live_) return live_->size();
  return active_ ? active_->size() : 0;
}

const std::string* NextQuery::newestActive() const {
  if (live_) return live_->slots.empty() ? nullptr : &live_->slots.back();
  return active_ && !active_->empty() ? &active_->back() : nullptr;
}

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

std::string ValidUtf8(std::string_view text, size_t* replaced) {
  static constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD
  std::string out;
  out.reserve(text.size());
  size_t count = 0;
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char b = s[i];
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    // One U+FFFD replaces each maximal well-formed prefix that does not complete (the Unicode
    // "maximal subpart" practice, which WHATWG and Python follow too), so a truncated sequence
    // costs one replacement, not several.
    const Utf8Step step = Utf8At(text, i);
    const size_t length = step.length, good = step.good;
    if (length != 0 && good == length) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      out.append(kReplacement);
      ++count;
      i += std::max<size_t>(good, 1);
    }
  }
  if (replaced != nullptr) *replaced = count;
  return out;
}

std::string ResolveAgainst(const std::string& home, const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  if (path.empty() || path == ".") return home;
  // "." as the home is the process's own directory: the path is left as written, so messages
  // show what the author wrote.
  if (home.empty() || home == ".") return path;
  return home.back() == '/' ? home + path : home + "/" + path;
}

namespace {

// The id of an item when no `item_id` is given (the one-call forms): a string item is its own
// id, an object's is its `id` field.
std::string FieldId(const Json& item) {
  if (item.is_string()) return item.get<std::string>();
  if (item.is_object()) {
    auto it = item.find("id");
    if (it != item.end() && it->is_string()) return it->get<std::string>();
  }
  throw SchemaError("id", "it has no string `id` field");
}

// Every item's id as `idOf` gives it, in order: a Defect for an item it cannot get one from, or
// for the second of two items with one id (never a silent drop). `where` begins each message
// ("std.queue: ", "std.backlog: in `x.json`, "). Positions in messages count from 1, as a person
// counts the items of a file.
std::vector<std::string> IdsOf(const std::string& where, const Json& list, const ItemIdOf& idOf) {
  std::vector<std::string> ids;
  ids.reserve(list.size());  // never reallocated: `seen` views its strings
  std::unordered_map<std::string_view, uint32_t> seen;
  seen.reserve(list.size());
  for (const Json& item : list) {
    const size_t at = ids.size();
    try {
      ids.push_back(idOf(item));
    } catch (const std::exception& e) {
      throw Defect(
          ValidUtf8(where + "item " + std::to_string(at + 1) + " gives no id: " + ErrorText(e)));
    }
    auto [it, fresh] = seen.emplace(ids.back(), static_cast<uint32_t>(at));
    if (!fresh) {
      throw Defect(ValidUtf8(where + "items " + std::to_string(it->second + 1) + " and " +
                             std::to_string(at + 1) + " have the same id `" + ids.back() +
                             "`; ids must be unique"));
    }
  }
  return ids;
}

// What a standard Source knows of its Pool's query, kept up to date from what changed since the
// last call, so that a call never reads every settled or live id. It relies on how one Pool changes
// its lists (docs/runtime.md#the-pool): `settled` and `failed` only grow at the end (an item that
// fails is appended to both at once), and `active` changes only by the claim of the Source's own
// last answer and by the items that settle. A query that visibly breaks this (shorter lists,
// another id where the last read one was, a live list of another size or end: the first call, a
// caller that is not one Pool) makes the mirror read it whole and say so.
class QueryMirror {
 public:
  struct Changes {
    std::vector<std::string> failed;     // ids that failed since the last call
    std::vector<std::string> settled;    // ids that settled since the last call (failed or not)
    std::optional<std::string> claimed;  // the last answer, claimed and still live
  };

  // Reads `query`: true with what changed when it follows from the last one read, false when the
  // mirror had to read it whole (then the Source works everything out again).
  bool follow(const NextQuery& query, Changes& changes) {
    changes = Changes{};
    std::optional<std::string> answered = std::move(answered_);
    answered_.reset();
    if (!started_ || !Grew(query.settled(), settledRead_) || !Grew(query.failed(), failedRead_))
      return restart(query);
    for (size_t i = failedRead_.count; i < query.failed().size(); ++i) {
      const std::string& id = query.failed()[i];
      if (failed_.insert(id).second) changes.failed.push_back(id);
    }
    for (size_t i = settledRead_.count; i < query.settled().size(); ++i) {
      const std::string& id = query.settled()[i];
      if (!settled_.insert(id).second) continue;
      active_.erase(id);
      changes.settled.push_back(id);
    }
    if (answered && settled_.count(*answered) == 0 && active_.insert(*answered).second)
      changes.claimed = std::move(answered);
    // The claimed answer is the newest live worker, at the end of the list; the others are the
    // ones live before, less those that settled.
    const std::string* newest = query.newestActive();
    const bool agrees = query.activeCount() == active_.size() &&
                        (newest == nullptr || active_.count(*newest) != 0) &&
                        (!changes.claimed || (newest != nullptr && *newest == *changes.claimed));
    if (!agrees) return restart(query);
    mark(query);
    return true;
  }

  // The id of the item this call answers (none for null): the next query should show it live.
  void answered(std::optional<std::string> id) { answered_ = std::move(id); }

  bool isActive(const std::string& id) const { return active_.count(id) != 0; }
  bool isSettled(const std::string& id) const { return settled_.count(id) != 0; }
  bool isFailed(const std::string& id) const { return failed_.count(id) != 0; }
  // Active or settled: not to be given again.
  bool isTaken(const std::string& id) const { return isActive(id) || isSettled(id); }

 private:
  struct Read {
    size_t count = 0;
    std::string last;  // the last id read, to see that the list still begins as it did
  };
  static bool Grew(const std::vector<std::string>& list, const Read& read) {
    return list.size() >= read.count && (read.count == 0 || list[read.count - 1] == read.last);
  }
  static void Mark(const std::vector<std::string>& list, Read& read) {
    read.count = list.size();
    read.last = list.empty() ? std::string() : list.back();
  }
  void mark(const NextQuery& query) {
    Mark(query.settled(), settledRead_);
    Mark(query.failed(), failedRead_);
  }
  bool restart(const NextQuery& query) {
    active_ = {query.active().begin(), query.active().end()};
    settled_ = {query.settled().begin(), query.settled().end()};
    failed_ = {query.failed().begin(), query.failed().end()};
    mark(query);
    started_ = true;
    return false;
  }

  bool started_ = false;
  std::unordered_set<std::string> active_, settled_, failed_;
  Read settledRead_, failedRead_;
  std::optional<std::string> answered_;
};

// ---- std.queue ----------------------------------------------------------------------------

const Json& QueueList(const Json& args) {
  static const Json kEmpty = Json::array();
  auto it = args.find("items");
  if (it == args.end()) it = args.find("arg0");
  if (it == args.end()) return kEmpty;
  if (!it->is_array()) throw Defect("std.queue: its argument must be a list, not " + KindOf(*it));
  return *it;
}

// Items from a list, in order, each once. A cursor only moves forward: every item before it is
// active or settled, and an item that a Pool made active only settles, so it is never looked at
// again. A call costs the items the cursor passes, not a pass over the list.
class QueueSource final : public StdNextSource {
 public:
  explicit QueueSource(ItemIdOf idOf) : idOf_(std::move(idOf)) {}

  Json next(const Json& args, const NextQuery& query) override {
    const Json& list = QueueList(args);
    if (!sameList(list)) indexList(list);
    QueryMirror::Changes changes;
    if (!mirror_.follow(query, changes)) cursor_ = 0;
    while (cursor_ < ids_.size() && mirror_.isTaken(ids_[cursor_])) ++cursor_;
    if (cursor_ == ids_.size()) {
      mirror_.answered(std::nullopt);
      return {{"item", nullptr}, {"open", 0}};
    }
    mirror_.answered(ids_[cursor_]);
    return {{"item", list[cursor_]}, {"open", 0}};
  }

 private:
  // A Pool passes the same list (its arguments are made once and shared) at every call, so the
  // ids are worked out once. The list is known by where it lives, its size and its first and
  // last items: a caller that passes another list at the same address (a temporary reused) is
  // seen in all but contrived cases, at a cost that does not grow with the list.
  bool sameList(const Json& list) const {
    return indexed_ && &list == list_ && list.get_ref<const Json::array_t&>().data() == data_ &&
           list.size() == ids_.size() &&
           (list.empty() || (list.front() == front_ && list.back() == back_));
  }

  void indexList(const Json& list) {
    indexed_ = false;
    ids_ = IdsOf("std.queue: ", list, idOf_);
    list_ = &list;
    data_ = list.get_ref<const Json::array_t&>().data();
    front_ = list.empty() ? Json() : list.front();
    back_ = list.empty() ? Json() : list.back();
    cursor_ = 0;
    indexed_ = true;
  }

  ItemIdOf idOf_;
  QueryMirror mirror_;
  bool indexed_ = false;
  const Json* list_ = nullptr;
  const Json* data_ = nullptr;
  Json front_, back_;
  std::vector<std::string> ids_;
  size_t cursor_ = 0;
};

// ---- std.backlog --------------------------------------------------------------------------

// A backlog file's content as parsed: shared by every Source that reads the same bytes.
struct BacklogFile {
  std::string bytes;
  Json items;
  std::vector<std::vector<std::string>> needs;  // each item's `needs`, as written
};

// The backlog's path as the arguments give it, resolved against the run's home; its name for
// messages, as written; and what a message says when it is not there (where it was looked for,
// when that is not what was written: a run's home is not always where its commands run).
struct BacklogAt {
  BacklogAt(const Json& args, const std::string& home) {
    auto it = args.find("path");
    if (it == args.end()) it = args.find("arg0");
    if (it == args.end() || !it->is_string()) throw Defect("std.backlog: needs a `path` string");
    const auto& given = it->get_ref<const std::string&>();
    path = ResolveAgainst(home, given);
    name = "`" + given + "`";
    absent = path == given ? "does not exist" : "does not exist (looked for `" + path + "`)";
  }
  std::string path, name, absent;
};

[[noreturn]] void Unreadable(const std::string& name, const std::string& why) {
  throw Defect(ValidUtf8("std.backlog: " + name + " " + why));
}

// What stat says of a file: equal stamps mean the same content unless the file was written
// within the filesystem's timestamp granularity of the read that saw it (see LoadBacklog).
struct Stamp {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = -1;
  int64_t mtimeNs = 0;
  int64_t ctimeNs = 0;
  bool operator==(const Stamp& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtimeNs == o.mtimeNs &&
           ctimeNs == o.ctimeNs;
  }
};

Stamp StampOf(const struct stat& st) {
  auto ns = [](const timespec& t) { return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec; };
  return {st.st_dev, st.st_ino, st.st_size, ns(st.st_mtim), ns(st.st_ctim)};
}

void CheckKind(const std::string& name, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) Unreadable(name, "is a directory, not a file");
  if (!S_ISREG(st.st_mode)) Unreadable(name, "is not a regular file");
}

// Reads the file: true when its bytes are `known`'s (then `bytes` is left empty), else false with
// its bytes in `bytes`. The bytes are compared as they come, a chunk at a time, so a file read
// again unchanged costs no copy of it. `stamp` is that of what was read (fstat of the open file,
// so the two belong together even when the path is replaced meanwhile). At most one byte more
// than kMaxExternalBytes is read: ParseExternalJson refuses a longer file.
bool ReadFile(const BacklogAt& at, const std::string* known, Stamp& stamp, std::string& bytes) {
  const std::string& name = at.name;
  // O_NONBLOCK: a FIFO put in the file's place must not hang the run (it is refused below).
  const int fd = open(at.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    Unreadable(name,
               err == ENOENT ? at.absent : "cannot be opened: " + std::string(std::strerror(err)));
  }
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0) Unreadable(name, "cannot be read: " + std::string(std::strerror(errno)));
  CheckKind(name, st);
  stamp = StampOf(st);
  bytes.clear();
  bool matching = known != nullptr;
  size_t offset = 0;
  char buffer[65536];
  while (offset <= kMaxExternalBytes) {
    const ssize_t got = read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) Unreadable(name, "cannot be read: " + std::string(std::strerror(errno)));
    if (got == 0) break;
    const auto n = static_cast<size_t>(got);
    if (matching && (offset + n > known->size() || known->compare(offset, n, buffer, n) != 0)) {
      matching = false;
      bytes.reserve(std::max<size_t>(static_cast<size_t>(st.st_size), offset + n));
      bytes.assign(*known, 0, offset);
    }
    if (!matching) bytes.append(buffer, n);
    offset += n;
  }
  if (matching && offset == known->size()) return true;
  if (matching) bytes.assign(*known, 0, offset);  // the file is a prefix of what it was
  return false;
}

std::shared_ptr<const BacklogFile> ParseBacklog(const std::string& name, std::string bytes) {
  auto file = std::make_shared<BacklogFile>();
  try {
    // JSON from outside: bounded in size and depth (a 60,000-level backlog crashed the runner
    // in nlohmann's recursive copy and dump), and UTF-8.
    file->items = ParseExternalJson(bytes, "std.backlog: " + name);
  } catch (const BadInput& e) {
    // A `next` that fails is the run's error, not a refused input
    // (docs/host-functions.md#functions-for-a-source-next-extern).
    throw Defect(ValidUtf8(e.what()));
  }
  if (!file->items.is_array())
    Unreadable(name, "must hold a JSON list of items, not " + KindOf(file->items));
  file->needs.reserve(file->items.size());
  for (const Json& item : file->items) {
    std::vector<std::string> needs;
    auto it = item.is_object() ? item.find("needs") : item.end();
    if (item.is_object() && it != item.end() && !it->is_null()) {
      if (!it->is_array()) {
        Unreadable(name, "has an item (" + std::to_string(file->needs.size() + 1) +
                             ") whose `needs` is not a list of ids: " + it->dump());
      }
      for (const Json& need : *it) {
        // A need that is not a string could never name an id: say so, rather than leave its
        // item waiting for ever (a run that ends `deadlocked` with no reason given).
        if (!need.is_string()) {
          Unreadable(name, "has an item (" + std::to_string(file->needs.size() + 1) +
                               ") whose `needs` holds " + KindOf(need) + " (" + need.dump() +
                               "), not an id");
        }
        needs.push_back(need.get<std::string>());
      }
    }
    file->needs.push_back(std::move(needs));
  }
  file->bytes = std::move(bytes);
  return file;
}

// A backlog file at a call: the last parse of it while its content is the same.
//
// The file is re-read at every call (docs/language.md#the-standard-library) in the sense that every
// edit is seen, but its bytes are read only when stat says they may have changed: another device,
// inode, size, mtime or ctime. Equal stamps still prove nothing for a file written in the same
// timestamp tick as the read that saw it (git's "racy clean" problem: an edit of the same size
// within one tick of a coarse clock keeps every field). So a stamp is trusted only when that read
// began at least kRacyNs after the file's last change; until then each call reads and compares the
// bytes. The parse is kept for the 16 paths read last, across the process (runs share a file's
// parse).
std::shared_ptr<const BacklogFile> LoadBacklog(const BacklogAt& at) {
  const std::string& name = at.name;
  const std::string& path = at.path;
  constexpr int64_t kRacyNs = 2000000000;  // above the coarsest timestamp granularity (FAT: 2 s)
  struct Entry {
    Stamp stamp;
    int64_t readAtNs = 0;
    std::shared_ptr<const BacklogFile> file;
    uint64_t used = 0;
  };
  static std::mutex mutex;
  static std::map<std::string, Entry> cache;
  static uint64_t clock = 0;

  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    Unreadable(name,
               err == ENOENT ? at.absent : "cannot be read: " + std::string(std::strerror(err)));
  }
  CheckKind(name, st);
  const Stamp now = StampOf(st);
  std::shared_ptr<const BacklogFile> known;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(path);
    if (it != cache.end()) {
      Entry& e = it->second;
      e.used = ++clock;
      if (e.stamp == now && e.readAtNs - std::max(now.mtimeNs, now.ctimeNs) >= kRacyNs)
        return e.file;
      known = e.file;
    }
  }
  // Taken before the read: whatever is written after it gets a later timestamp.
  const int64_t readAtNs = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  Stamp stamp;
  std::string bytes;
  std::shared_ptr<const BacklogFile> file =
      ReadFile(at, known ? &known->bytes : nullptr, stamp, bytes)
          ? known
          : ParseBacklog(name, std::move(bytes));
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() >= 16 && cache.count(path) == 0) {
    cache.erase(std::min_element(cache.begin(), cache.end(), [](const auto& a, const auto& b) {
      return a.second.used < b.second.used;
    }));
  }
  cache[path] = {stamp, readAtNs, file, ++clock};
  return file;
}

// The first item in file order that is neither active nor settled and whose needs all settled
// without a Failure. Each item keeps a count of its needs that have not settled and whether one
// failed; the items ready now (and neither active nor settled) are kept in file order. A call
// applies what changed in the query since the last one — each settle releases the items that
// need it, each claim takes one out — and works everything out again only when the file's
// content changed or the query does not follow from the last one.
class BacklogSource final : public StdNextSource {
 public:
  BacklogSource(ItemIdOf idOf, std::string home) : idOf_(std::move(idOf)), home_(std::move(home)) {}

  Json next(const Json& args, const NextQuery& query) override {
    QueryMirror::Changes changes;
    if (!mirror_.follow(query, changes)) stale_ = true;
    // Applied to the file as last indexed; undone by a rebuild below if the file changed.
    if (!stale_) apply(changes);

    const BacklogAt at(args, home_);
    std::shared_ptr<const BacklogFile> file = LoadBacklog(at);
    if (file != file_) {
      if (!file_ || file_->bytes != file->bytes) {
        indexFile(at.name, *file);  // throws before it changes anything
        stale_ = true;
      }
      file_ = std::move(file);
    }
    if (stale_) rebuild();

    if (ready_.empty()) return {{"item", nullptr}, {"open", available_}};
    const uint32_t first = *ready_.begin();
    mirror_.answered(ids_[first]);
    // `open` counts the items left that are not ready
    // (docs/host-functions.md#functions-for-a-source-next-extern).
    return {{"item", file_->items[first]},
            {"open", available_ - static_cast<int64_t>(ready_.size())}};
  }

 private:
  enum class State : uint8_t { kFree, kActive, kSettled };

  void indexFile(const std::string& name, const BacklogFile& file) {
    std::vector<std::string> ids = IdsOf("std.backlog: in " + name + ", ", file.items, idOf_);
    std::unordered_map<std::string, uint32_t> position;
    position.reserve(ids.size());
    for (uint32_t i = 0; i < ids.size(); ++i) position.emplace(ids[i], i);
    std::unordered_map<std::string, std::vector<uint32_t>> dependents;
    for (uint32_t i = 0; i < file.needs.size(); ++i) {
      for (const std::string& need : file.needs[i]) dependents[need].push_back(i);
    }
    ids_ = std::move(ids);
    position_ = std::move(position);
    dependents_ = std::move(dependents);
  }

  void rebuild() {
    const size_t n = ids_.size();
    state_.assign(n, State::kFree);
    unmet_.assign(n, 0);
    blocked_.assign(n, false);
    ready_.clear();
    available_ = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const std::string& id = ids_[i];
      state_[i] = mirror_.isSettled(id)  ? State::kSettled
                  : mirror_.isActive(id) ? State::kActive
                                         : State::kFree;
      for (const std::string& need : file_->needs[i]) {
        // A need that failed, or that names no item (it never settles), keeps the item from
        // ever being ready.
        if (mirror_.isFailed(need)) blocked_[i] = true;
        if (!mirror_.isSettled(need)) ++unmet_[i];
      }
      if (state_[i] == State::kFree) ++available_;
      consider(i);
    }
    stale_ = false;
  }

  void apply(const QueryMirror::Changes& changes) {
    // A failure read after its settle (a caller that is not one Pool) blocks items that were
    // ready already: they leave the ready set.
    for (const std::string& id : changes.failed) {
      for (uint32_t d : dependentsOf(id)) {
        blocked_[d] = true;
        ready_.erase(d);
      }
    }
    for (const std::string& id : changes.settled) {
      if (auto it = position_.find(id); it != position_.end()) take(it->second, State::kSettled);
      for (uint32_t d : dependentsOf(id)) {
        --unmet_[d];
        consider(d);
      }
    }
    if (changes.claimed) {
      if (auto it = position_.find(*changes.claimed); it != position_.end())
        take(it->second, State::kActive);
    }
  }

  // Item `i` becomes active or settled: it is no longer available.
  void take(uint32_t i, State state) {
    if (state_[i] == State::kFree) {
      --available_;
      ready_.erase(i);
    }
    state_[i] = state;
  }

  void consider(uint32_t i) {
    if (state_[i] == State::kFree && !blocked_[i] && unmet_[i] == 0) ready_.insert(i);
  }

  const std::vector<uint32_t>& dependentsOf(const std::string& id) const {
    static const std::vector<uint32_t> kNone;
    auto it = dependents_.find(id);
    return it == dependents_.end() ? kNone : it->second;
  }

  ItemIdOf idOf_;
  std::string home_;
  QueryMirror mirror_;
  std::shared_ptr<const BacklogFile> file_;  // the content indexed below
  // From the file and `idOf`: each item's id, each id's position, and the items needing an id
  // (once per need, as often as an item names it).
  std::vector<std::string> ids_;
  std::unordered_map<std::string, uint32_t> position_;
  std::unordered_map<std::string, std::vector<uint32_t>> dependents_;
  // From the file and the query.
  bool stale_ = true;  // the state below does not match the file and the mirror
  std::vector<State> state_;
  std::vector<uint32_t> unmet_;  // needs that have not settled
  std::vector<bool> blocked_;    // a need failed
  std::set<uint32_t> ready_;     // ready and free, in file order
  int64_t available_ = 0;        // free items (neither active nor settled)
};

}  // namespace

// The one-call forms are the plain full pass (docs/language.md#the-standard-library) over the
// query's own lookups, which keep no state: the tests hold the incremental Sources against them.
Json StdBacklog(const Json& args, const NextQuery& query, ItemIdOf idOf, const std::string& home) {
  if (!idOf) idOf = FieldId;
  const BacklogAt at(args, home);
  const std::shared_ptr<const BacklogFile> file = LoadBacklog(at);
  const std::vector<std::string> ids =
      IdsOf("std.backlog: in " + at.name + ", ", file->items, idOf);
  const Json* ready = nullptr;
  int64_t open = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (query.isActive(ids[i]) || query.isSettled(ids[i])) continue;
    // A need that failed, or that names no item, keeps the item from ever being ready.
    const auto& needs = file->needs[i];
    const bool isReady = std::all_of(needs.begin(), needs.end(), [&](const std::string& need) {
      return query.isSettled(need) && !query.isFailed(need);
    });
    // `open` counts the items left that are not ready.
    if (!isReady) {
      ++open;
    } else if (ready == nullptr) {
      ready = &file->items[i];
    }
  }
  return {{"item", ready != nullptr ? *ready : Json(nullptr)}, {"open", open}};
}

Json ExplainBacklog(const Json& args, const NextQuery& query, ItemIdOf idOf,
                    const std::string& home) {
  if (!idOf) idOf = FieldId;
  const BacklogAt at(args, home);
  const std::shared_ptr<const BacklogFile> file = LoadBacklog(at);
  const std::vector<std::string> ids =
      IdsOf("std.backlog: in " + at.name + ", ", file->items, idOf);
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < ids.size(); ++i) index.emplace(ids[i], i);
  auto left = [&](const std::string& id) { return !query.isActive(id) && !query.isSettled(id); };
  constexpr size_t kShown = 10;
  Json blocked = Json::array();
  int64_t count = 0;
  // Each item left, the needs it waits for (a need that failed, that names no item, or that is
  // left too), and the edges between items left, for a cycle.
  std::vector<std::vector<size_t>> waitsOn(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!left(ids[i])) continue;
    Json waits = Json::array();
    for (const std::string& need : file->needs[i]) {
      const auto found = index.find(need);
      const char* is = found == index.end()   ? "missing"
                       : query.isFailed(need) ? "failed"
                       : left(need)           ? "waiting"
                                              : nullptr;
      if (is == nullptr) continue;
      if (found != index.end() && left(need)) waitsOn[i].push_back(found->second);
      waits.push_back({{"id", need}, {"is", is}});
    }
    if (waits.empty()) continue;
    ++count;
    if (blocked.size() < kShown)
      blocked.push_back({{"id", ids[i]}, {"waitsFor", std::move(waits)}});
  }
  // A cycle among the items left: a depth-first walk (its own stack: a chain of 100,000 items is
  // no deeper on the thread's), the path kept, until an edge meets the path.
  Json cycle = nullptr;
  std::vector<int> mark(ids.size(), 0);          // 0 unseen, 1 on the path, 2 done
  std::vector<std::pair<size_t, size_t>> stack;  // (item, next edge to follow)
  for (size_t start = 0; start < ids.size() && cycle.is_null(); ++start) {
    if (mark[start] != 0 || waitsOn[start].empty()) continue;
    stack.emplace_back(start, 0);
    mark[start] = 1;
    while (!stack.empty() && cycle.is_null()) {
      auto& [i, edge] = stack.back();
      if (edge == waitsOn[i].size()) {
        mark[i] = 2;
        stack.pop_back();
        continue;
      }
      const size_t next = waitsOn[i][edge++];
      if (mark[next] == 1) {
        cycle = Json::array();
        bool on = false;
        for (const auto& frame : stack) {
          on = on || frame.first == next;
          if (on) cycle.push_back(ids[frame.first]);
        }
        cycle.push_back(ids[next]);
      } else if (mark[next] == 0) {
        mark[next] = 1;
        stack.emplace_back(next, 0);
      }
    }
    stack.clear();
  }
  Json out = {{"blocked", std::move(blocked)}, {"count", count}};
  if (!cycle.is_null()) out["cycle"] = std::move(cycle);
  return out;
}

Json StdQueue(const Json& args, const NextQuery& query, ItemIdOf idOf) {
  if (!idOf) idOf = FieldId;
  const Json& list = QueueList(args);
  const std::vector<std::string> ids = IdsOf("std.queue: ", list, idOf);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!query.isActive(ids[i]) && !query.isSettled(ids[i]))
      return {{"item", list[i]}, {"open", 0}};
  }
  return {{"item", nullptr}, {"open", 0}};
}

std::unique_ptr<StdNextSource> MakeStdNext(const std::string& function, ItemIdOf idOf,
                                           const std::string& home) {
  if (!idOf) idOf = FieldId;
  if (function == "std.backlog") return std::make_unique<BacklogSource>(std::move(idOf), home);
  if (function == "std.queue") return std::make_unique<QueueSource>(std::move(idOf));
  return nullptr;
}

namespace {

// Text that goes into a Failure is stored with the run, so it must be valid UTF-8 (a path or a
// program name may not be).
[[noreturn]] void Fail(const std::string& reason, Json detail = nullptr) {
  throw Failure(ValidUtf8(reason), std::move(detail));
}

}  // namespace

SpawnedCommand SpawnCommand(const Json& spec, const std::string& home) {
  SpawnedCommand c;
  const auto argv = spec.value("argv", std::vector<std::string>());
  if (argv.empty()) throw Failure("std.command: `argv` is empty");
  c.program = argv[0];
  const std::string given = spec.value("cwd", std::string("."));
  // A relative directory is the run's home's (docs/runtime.md#a-run), whatever the process's is.
  const std::string cwd = ResolveAgainst(home, given);
  c.timeoutMs = spec.value("timeout", int64_t{300000});
  // `env`: the host's environment with these added (a name it has is replaced). A name that
  // cannot be one (empty, or with `=` or a NUL in it) is a Failure that names it, before anything
  // starts; so is a NUL in a value, which would end it early.
  std::vector<std::string> envText;
  std::vector<char*> envp;
  const Json added = spec.value("env", Json::object());
  if (!added.is_object()) Fail("std.command: `env` is not an object of names to strings");
  if (!added.empty()) {
    for (const auto& [name, value] : added.items()) {
      if (name.empty() || name.find('=') != std::string::npos ||
          name.find('\0') != std::string::npos) {
        Fail("std.command: `" + name +
             "` cannot be an environment variable's name (no `=`, no NUL, not empty)");
      }
      if (!value.is_string()) Fail("std.command: the value of `env." + name + "` is not a string");
      if (value.get<std::string>().find('\0') != std::string::npos)
        Fail("std.command: the value of `env." + name + "` holds a NUL");
      envText.push_back(name + "=" + value.get<std::string>());
    }
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view entry(*e);
      const std::string name(entry.substr(0, entry.find('=')));
      if (!added.contains(name)) envText.emplace_back(entry);
    }
    for (auto& e : envText) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
  // posix_spawnp, not fork + exec: a forked child of this multi-threaded process may only make
  // async-signal-safe calls, and a malloc there deadlocks when another thread held the
  // allocator's lock at the fork (seen under ASan, where a build_matrix run hung). The pipes are
  // close-on-exec, so a process started by a concurrent command never holds this one's open.
  std::vector<char*> av;
  av.reserve(argv.size() + 1);
  for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
  av.push_back(nullptr);
  int out[2], err[2];
  // Out of file descriptors, say: a Failure of this item that names why (`on error` may retry).
  if (pipe2(out, O_CLOEXEC) != 0) {
    Fail("std.command: cannot make pipes for `" + argv[0] + "`: " + std::strerror(errno));
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    const int why = errno;
    close(out[0]);
    close(out[1]);
    Fail("std.command: cannot make pipes for `" + argv[0] + "`: " + std::strerror(why));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  // Its own process group: a kill (a timeout, a cancel, the host stopping) reaches the processes
  // it started too (`sh -c "…; sleep 30"`), and none of them is left running, or holding its
  // pipes open, after it.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  const int spawned =
      posix_spawnp(&c.pid, av[0], &actions, &attr, av.data(), envp.empty() ? environ : envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    const std::string where = cwd == given ? "`" + given + "`" : "`" + given + "` (`" + cwd + "`)";
    Fail("`" + argv[0] + "` cannot be started in " + where + ": " + std::strerror(spawned),
         {{"exit", nullptr}, {"stdout", ""}, {"stderr", ""}});
  }
  close(out[1]);
  close(err[1]);
  c.out = out[0];
  c.err = err[0];
  GuardGroup(c.pid);       // killed with its group if the host dies before it ends (orphans.h)
  Occupy(Live::kProcess);  // until it is reaped (AwaitCommand, or process.cpp's exited)
  return c;
}

void KillCommand(int pid) {
  if (pid <= 0) return;
  if (::kill(-pid, SIGKILL) != 0) ::kill(pid, SIGKILL);
}

void KeepOutput(std::string& into, const char* data, size_t n, size_t& dropped) {
  into.append(data, n);
  // Trimmed in halves, not at every append: amortized, each byte is moved at most twice.
  if (into.size() >= 2 * kCommandOutputKept) {
    const size_t cut = into.size() - kCommandOutputKept;
    into.erase(0, cut);
    dropped += cut;
  }
}

Json CommandResult(const SpawnedCommand& c, int status, bool timedOut, std::string out,
                   std::string err, size_t outDropped, size_t errDropped) {
  // The last kCommandOutputKept bytes of each.
  if (out.size() > kCommandOutputKept) {
    outDropped += out.size() - kCommandOutputKept;
    out.erase(0, out.size() - kCommandOutputKept);
  }
  if (err.size() > kCommandOutputKept) {
    errDropped += err.size() - kCommandOutputKept;
    err.erase(0, err.size() - kCommandOutputKept);
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  // A process may print anything (a Latin-1 compiler message, raw bytes): what is stored is
  // valid UTF-8, each bad sequence replaced by U+FFFD, and the result says how many were.
  size_t outReplaced = 0, errReplaced = 0;
  Json result = {{"exit", code},
                 {"stdout", ValidUtf8(out, &outReplaced)},
                 {"stderr", ValidUtf8(err, &errReplaced)}};
  if (outReplaced + errReplaced > 0) {
    Json replaced = Json::object();
    if (outReplaced > 0) replaced["stdout"] = outReplaced;
    if (errReplaced > 0) replaced["stderr"] = errReplaced;
    result["replaced"] = std::move(replaced);
  }
  if (outDropped + errDropped > 0) {
    Json truncated = Json::object();
    if (outDropped > 0) truncated["stdout"] = outDropped;
    if (errDropped > 0) truncated["stderr"] = errDropped;
    result["truncated"] = std::move(truncated);
  }
  if (timedOut)
    Fail("`" + c.program + "` timed out after " + std::to_string(c.timeoutMs) + " ms", result);
  if (code != 0) Fail("`" + c.program + "` exited " + std::to_string(code), result);
  return result;
}

namespace {

Json Command(const Json& spec, const std::string& home) {
  return AwaitCommand(SpawnCommand(spec, home));
}

}  // namespace

// std.command on the calling thread: poll the pipes, then wait for the process (the host's
// executor awaits processes asynchronously instead: runtime/src/effects/process.cpp). The command
// is over when its process ends: what it left running in its group is killed then (EndGroup), so a
// `sh -c "server & echo started"` ends when `sh` does, and holds no pipe open after it.
Json AwaitCommand(const SpawnedCommand& c) {
  const pid_t pid = c.pid;
  std::string stdoutText, stderrText;
  size_t outDropped = 0, errDropped = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(c.timeoutMs);
  bool timedOut = false;
  bool reaped = false;
  int status = 0;
  // Reaps the process if it has ended, and then ends its group.
  auto reap = [&](int flags) {
    if (reaped) return;
    for (;;) {
      const pid_t done = waitpid(pid, &status, flags);
      if (done < 0 && errno == EINTR) continue;
      if (done == pid || done < 0) {
        reaped = true;
        Vacate(Live::kProcess);
        EndGroup(pid);
      }
      return;
    }
  };
  pollfd fds[2] = {{c.out, POLLIN, 0}, {c.err, POLLIN, 0}};
  int openFds = 2;
  while (openFds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timedOut = true;
      KillCommand(pid);
      break;
    }
    // Woken at least every 50 ms to see whether the process ended while a child of its own
    // holds a pipe open.
    if (poll(fds, 2, static_cast<int>(std::min<int64_t>(left, 50))) < 0) {
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
        const bool isOut = f.fd == c.out;
        KeepOutput(isOut ? stdoutText : stderrText, buf, static_cast<size_t>(n),
                   isOut ? outDropped : errDropped);
      }
    }
    reap(WNOHANG);
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  // A process that closed its output may still run: it is waited for until the deadline, then
  // killed, never waited for without end.
  for (int nap = 1; !reaped; nap = std::min(nap * 2, 50)) {
    reap(WNOHANG);
    if (reaped) break;
    if (!timedOut && std::chrono::steady_clock::now() >= deadline) {
      timedOut = true;
      KillCommand(pid);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(nap));
  }
  return CommandResult(c, status, timedOut, std::move(stdoutText), std::move(stderrText),
                       outDropped, errDropped);
}

namespace {}  // namespace

Json StdEffect(const std::string& name, const Json& args, const std::string& home) {
  if (name == "std.command") {
    const Json spec = args.contains("spec") ? args["spec"] : args.value("arg0", Json::object());
    return Command(spec, home);
  }
  if (name == "std.http_get") {
    return HttpGet(args.contains("request") ? args["request"] : args.value("arg0", Json::object()));
  }
  throw Failure("`" + name + "` is not available in this runtime");
}

void EffectControl::cancel() {
  cancelled = true;
  const int p = pid.load();
  if (p > 0 && !reaped.load()) KillCommand(p);
}

}  // namespace jr2rt
