// `jr2c-store waiting LOCATION`: the waiting runs of a store, for `jr2c diff --store`
// (docs/diff.md). jr2c is linked statically and reads a SQLite store's rows itself; a PostgreSQL
// store needs libpq, which this program brings (the runtime's own store, opened read-only: nothing
// is made or written). jr2c runs it from its own folder and reads its output: for each waiting run,
// its workflow, a newline, the snapshot's length in bytes, a newline, the snapshot, a newline, the
// input's length (0 when the snapshot holds it), a newline, the input, a newline.
// Exit 0; 2 with one line on stderr when the store cannot be read: `LOCATION`: why.
#include <cstdio>
#include <exception>
#include <string>

#include "jr2/postgres_store.h"
#include "jr2/store.h"

int main(int argc, char** argv) {
  if (argc != 3 || std::string(argv[1]) != "waiting") {
    std::fprintf(stderr, "usage: jr2c-store waiting LOCATION (run by `jr2c diff --store`)\n");
    return 2;
  }
  try {
    const auto store = jr2rt::OpenStore(argv[2], jr2rt::StoreMode::kReadOnly);
    store->eachWaiting(
        [](const std::string& workflow, const std::string& snapshot, const std::string& input) {
          std::fprintf(stdout, "%s\n%zu\n", workflow.c_str(), snapshot.size());
          std::fwrite(snapshot.data(), 1, snapshot.size(), stdout);
          std::fprintf(stdout, "\n%zu\n", input.size());
          std::fwrite(input.data(), 1, input.size(), stdout);
          std::fputc('\n', stdout);
        });
  } catch (const std::exception& e) {
    // The location as messages name it (a database's without its password), then why.
    const std::string location = argv[2];
    const std::string name =
        jr2rt::IsPostgresLocation(location) ? jr2rt::PostgresLocationName(location) : location;
    std::fprintf(stderr, "`%s`: %s\n", name.c_str(), e.what());
    return 2;
  }
  if (std::fflush(stdout) != 0) return 2;
  return 0;
}
