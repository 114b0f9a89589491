// `jr2c-store waiting LOCATION`: the waiting runs of a store, for `jr2c diff --store`
// (docs/diff.md). jr2c is linked statically and reads a SQLite store's rows itself; a PostgreSQL
// store needs libpq, which this program brings (the runtime's own store, opened read-only: nothing
// is made or written). jr2c runs it from its own folder and reads its output: for each waiting run,
// its workflow, a newline, the snapshot's length in bytes, a newline, the snapshot, a newline, the
// input's length (0 when the snapshot holds it), a newline, the input, a newline.
// Exit 0; 2 with one line on stderr when the store cannot be read: `LOCATION`: why.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "jr2/postgres_store.h"
#include "jr2/store.h"

// Every occurrence of `secret` in `text` replaced by `by`.
std::string Replaced(std::string text, const std::string& secret, const std::string& by) {
  if (secret.empty() || secret == by) return text;
  for (size_t at = text.find(secret); at != std::string::npos;
       at = text.find(secret, at + by.size()))
    text.replace(at, secret.size(), by);
  return text;
}

void Field(const std::string& bytes) {
  std::fprintf(stdout, "%zu\n", bytes.size());
  std::fwrite(bytes.data(), 1, bytes.size(), stdout);
  std::fputc('\n', stdout);
}

int main(int argc, char** argv) {
  const char* given = std::getenv("JR2C_STORE_LOCATION");
  if (argc != 2 || std::string(argv[1]) != "waiting" || given == nullptr) {
    std::fprintf(stderr,
                 "usage: JR2C_STORE_LOCATION=LOCATION jr2c-store waiting (run by `jr2c diff "
                 "--store`)\n");
    return 2;
  }
  const std::string location = given;
  try {
    const auto store = jr2rt::OpenStore(location, jr2rt::StoreMode::kReadOnly);
    store->eachWaiting(
        [](const std::string& workflow, const std::string& snapshot, const std::string& input) {
          Field(workflow);
          Field(snapshot);
          Field(input);
        });
  } catch (const std::exception& e) {
    // The location as messages name it: without its password, however it is written (a
    // keyword string the runtime takes for a file's path is named whole in its message).
    const bool database = jr2rt::IsPostgresLocation(location) ||
                          location.find('=') != std::string::npos ||
                          location.find("://") != std::string::npos;
    const std::string name = database ? jr2rt::PostgresLocationName(location) : location;
    std::fprintf(stderr, "`%s`: %s\n", name.c_str(), Replaced(e.what(), location, name).c_str());
    return 2;
  }
  if (std::fflush(stdout) != 0) return 2;
  return 0;
}
