// The embedded run store over one SQLite file (docs/runtime.md#the-store): every interface of
// jr2/store.h on one connection (db.h), its drive locks as files beside it (file_lock.h). Its
// methods are defined by concern: the schema and the open in schema.cpp, the runs in runs.cpp,
// the feed and journal in feed.cpp, the inbox in inbox.cpp, the hook log, heads and start keys in
// hooks.cpp; the backup in backup.cpp.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "jr2/store.h"
#include "store/file_lock.h"
#include "store/sqlite/db.h"

namespace jr2rt::sqlite {

// What a row of the feed or the journal adds to its text besides the run's id, as PageFit
// (db.h) reckons a row's payload: a header of a byte per column (three for a text of many kB),
// `seq` and `time` as integers of up to 6 bytes, a feed row's kind "lines" and empty line.
inline constexpr size_t kFeedRecord = 24;
inline constexpr size_t kJournalRecord = 10;

class SqliteStore final : public Store {
 public:
  explicit SqliteStore(std::unique_ptr<Db> db)
      : db_(std::move(db)), path_(db_->path()), locks_(FileLocks::FolderBeside(path_)) {}

  int64_t statements() const override { return db_->statements(); }
  // The same file opened again: WAL lets this connection read while that one commits.
  std::unique_ptr<RunRows> commitConnection() override {
    return std::make_unique<SqliteStore>(OpenDbAgain(path_));
  }

  // RunRows (runs.cpp)
  int64_t save(const StoredRun& run, const std::vector<FeedLine>& feed) override;
  std::vector<int64_t> saveAll(const std::vector<Save>& batch) override;
  StoredRun load(const std::string& prefix) override;
  std::string resolve(const std::string& prefix) override;
  std::vector<RunSummary> list(bool includeEnded, bool views) override;
  void eachWaiting(const EachWaiting& fn) override;
  RunSummary find(const std::string& prefix, bool view) override;
  std::optional<RunSummary> summary(const std::string& id) override;
  int64_t revision(const std::string& id) override;
  std::optional<RunSummary> byKey(const std::string& workflow, const std::string& key) override;
  std::vector<RunSummary> page(const RunQuery& q) override;
  std::map<std::pair<std::string, std::string>, int64_t> runCounts() override;
  int64_t prune(int64_t beforeMs, const std::string& workflow) override;

  // FeedLog, Journal (feed.cpp)
  std::vector<FeedLine> feed(const std::string& id, int64_t afterSeq) override;
  std::vector<FeedLine> feedPage(const std::string& id, int64_t afterSeq, int64_t limit) override;
  int64_t lastSeq(const std::string& id) override;
  std::vector<std::string> gatesOpened(const std::string& id) override;
  bool gateOpened(const std::string& id, const std::string& gate) override;
  std::vector<Json> journal(const std::string& id) override;

  // Inbox (inbox.cpp)
  int64_t ask(const std::string& id, const std::string& verb, const Json& body) override;
  std::vector<Request> asked() override;
  bool takeRequest(int64_t seq) override;
  void answer(int64_t seq, const Json& answer) override;
  std::optional<Json> answerOf(int64_t seq) override;
  bool withdraw(int64_t seq) override;
  bool taken(int64_t seq) override;

  // HookLog, Heads, StartKeys (hooks.cpp)
  std::optional<Json> hookAnswer(const std::string& hook, const std::string& delivery) override;
  void logHooks(const std::vector<HookEntry>& entries) override;
  std::vector<Json> hookLog(const std::string& hook, int64_t limit) override;
  std::optional<Head> head(const std::string& workflow) override;
  std::vector<Head> heads() override;
  std::optional<StartKey> startKey(const std::string& caller, const std::string& workflow,
                                   const std::string& key) override;
  StartKey keepStartKey(const std::string& caller, const std::string& workflow,
                        const std::string& key, const StartKey& start) override;

  // RunLocks: files beside the store.
  std::unique_ptr<RunLock> lock(const std::string& id,
                                const std::function<void(const std::string&)>& onWait) override {
    return locks_.lock(id, onWait);
  }

 private:
  // One run's save, inside the caller's transaction (runs.cpp).
  int64_t write(const StoredRun& run, const std::vector<FeedLine>& feed);
  // The run's kept parts (parts.cpp): the pieces of the marked `snapshot` and `view` written to
  // `parts` unless its rows hold them, those no longer named deleted, each text's skeleton given
  // for its column ("" for a text without marks: stored as given); gives the ids the rows now
  // hold. `fresh`: whatever the rows hold is not ours.
  std::vector<uint64_t> writeParts(const StoredRun& run, bool fresh, const std::string& snapshot,
                                   const std::string& view, std::string& snapshotSkeleton,
                                   std::string& viewSkeleton);
  // After a commit: what write() recorded in heldNext_ becomes what the runs' rows hold.
  void committed();
  // `text` whole: each piece a skeleton names put back from `parts` (parts.cpp).
  std::string whole(const std::string& run, std::string text);
  // A head's row, inside the caller's transaction; the heads of `workflow` ("" every one)
  // (hooks.cpp).
  void writeHead(const Head& h);
  std::vector<Head> readHeads(const std::string& workflow);
  // Hook deliveries, inside the caller's transaction (hooks.cpp).
  void writeHooks(const std::vector<HookEntry>& entries);

  std::unique_ptr<Db> db_;
  std::string path_;
  FileLocks locks_;
  // The piece ids each run's parts rows hold, at the revision this object last wrote it
  // (parts.cpp); and what the transaction in progress wrote, kept at its commit.
  struct Held {
    int64_t revision = 0;
    std::vector<uint64_t> ids;
    bool keep = true;  // false: the run ended, forget it
  };
  std::unordered_map<std::string, Held> held_;
  std::vector<std::pair<std::string, Held>> heldNext_;
};

// `text` of run `run` read from `db` whole: each piece its skeleton names put back from table
// `parts` (parts.cpp); a text without marks as it is. Throws StoreDamaged for a missing piece.
std::string WholeText(Db& db, const std::string& run, std::string text, const std::string& store);

}  // namespace jr2rt::sqlite
