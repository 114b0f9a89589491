// Moving in (docs/scaling.md#moving-in, #32): a SQLite run store copied into a PostgreSQL one,
// `<runner> store copy --to LOCATION [--onto-nonempty]`.
#pragma once

#include <cstdint>
#include <string>

namespace jr2rt {

struct StoreCopyOptions {
  // Copy onto a target that already holds runs (or a feed, a journal, heads, start keys, hook
  // deliveries): refused on any run id, standing workflow's head, start key or live dispatch key
  // both hold; a hook delivery both logged keeps the target's answer.
  bool ontoNonempty = false;
};

// What a copy wrote, per table of the target.
struct StoreCopyCounts {
  int64_t runs = 0;
  int64_t waiting = 0;       // of `runs`
  int64_t feed = 0;          // feed lines
  int64_t journal = 0;       // journal entries
  int64_t heads = 0;         // heads of standing workflows
  int64_t starts = 0;        // start keys (serve's Idempotency-Key)
  int64_t hooks = 0;         // hook deliveries logged
  int64_t hooksKept = 0;     // deliveries the target had logged already (its answer kept)
  int64_t requestsLeft = 0;  // the source's inbox, not copied
};

// Copies the SQLite store at `from` into the PostgreSQL database at `to` (a URL or a libpq
// keyword string, jr2/postgres_store.h): every run (its row: snapshot, revision, summary, view,
// dispatch key) with its feed and journal, the heads of standing workflows, the start keys and the
// hook log. The source is read in one read transaction (a snapshot of one instant, safe while a
// serve or a command writes it; nothing is written to it); the target is written in one
// transaction (all of it or nothing). Copied runs and heads are owned by nobody: any serve on the
// target claims them. The inbox is not copied (its requests belong to commands waiting on the
// source). Throws StoreMissing when `from` holds no store, StoreError when `from` is not a SQLite
// store or `to` not a PostgreSQL one, StoreConflict when the target holds runs already (without
// `ontoNonempty`) or a key both hold — each in one line, with nothing written.
StoreCopyCounts CopySqliteToPostgres(const std::string& from, const std::string& to,
                                     const StoreCopyOptions& options = {});

}  // namespace jr2rt
