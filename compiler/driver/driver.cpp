#include "compiler/driver/driver.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <llvm/Support/Casting.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "compiler/codegen/codegen.h"
#include "compiler/diag/render.h"
#include "compiler/diag/suggest.h"
#include "compiler/diff/diff.h"
#include "compiler/fmt/fmt.h"
#include "compiler/graph/graph.h"
#include "compiler/ir/statechart.h"
#include "compiler/lsp/server.h"
#include "compiler/sema/program.h"
#include "compiler/sema/rules.h"
#include "compiler/syntax/parse.h"
#include "compiler/walk/budget.h"
#include "compiler/walk/walk.h"

namespace jr2::driver {
namespace {

constexpr const char* kUsage = R"(usage: jr2c <command> [options] [files]

commands:
  check FILE…            check .jr2 files and print diagnostics
  compile FILE… -o DIR [--depfile F] [--no-fast-path]
                         check, then write DIR/NAME.jr2.h and DIR/NAME.jr2.cpp for
                         each NAME.jr2 (nothing is written when there is an error);
                         --no-fast-path: every machine runs on the table engine alone
  workflows FILE…        list the workflows the files declare, one a line
  graph FILE [--machine M] [--format dot|mermaid]
                         draw a machine's statechart (DOT by default; --machine picks one
                         when the file has several)
  graph FILE -o DIR      write DIR/W.dot for each workflow W the file declares (and
                         DIR/W.worker.dot for a Pool's worker machine)
  explain CODE           explain a diagnostic code, with an example (`jr2c explain E0100`)
  explain --list         list every diagnostic code
  fmt [--check | -d | -w] FILE…
                         lay the files out in jr2's one style: print them formatted, or
                         --check: name those that are not (exit 1), -d: their diffs,
                         -w: write them formatted (comments and tokens are kept)
  diff OLD NEW [--store LOCATION]
                         what a change does to stored runs and to callers: what
                         strands a waiting run (NEW cannot restore it), what refuses a
                         payload or input OLD accepted (exit 100 when either); --store
                         counts the waiting runs of that store each change strands
  lsp [--stdio]          serve an editor: the Language Server Protocol on stdin and
                         stdout (diagnostics, hover, definition, references, rename,
                         completion, outline, folding, formatting, quick fixes)

options:
  --diagnostics-format text|json|sarif
                         how to print diagnostics (text on stderr; json and sarif on stdout)
  --Werror               treat warnings as errors
  -h, --help             print this help
  --version              print the version

exit codes: 0 clean (warnings allowed), 1 errors, 2 usage;
`diff`: 0 compatible (warnings allowed), 100 a change strands or refuses, 1 a version
does not check, 2 usage
)";

struct Options {
  std::string command;
  std::vector<std::string> files;
  std::string outDir;   // compile: -o
  std::string depfile;  // compile: --depfile
  std::string machine;  // graph: --machine
  std::string store;    // diff: --store, the store whose waiting runs are counted
  graph::Format graphFormat = graph::Format::kDot;
  DiagFormat format = DiagFormat::kText;
  bool werror = false;
  bool fastPath = true;  // compile: --no-fast-path turns it off
  // fmt: print the formatted file (""), `--check` (name the files that are not formatted, exit
  // 1), `-d` (their diffs) or `-w` (write them formatted).
  std::string fmtMode;
  bool stdio = false;  // lsp: `--stdio`, what an editor's client passes (stdio is the only way)
};

// Runs `fn` on a thread with an 8 GiB stack: ANTLR's recursive descent over an 8 MiB file of
// nested `?:` or `list<…>` (about a million levels, which no bracket count catches) needs a few
// GiB. The memory is reserved, not touched, until a file that deep asks for it.
void RunWithLargeStack(const std::function<void()>& fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t{8} << 30);
  pthread_t thread;
  auto trampoline = [](void* p) -> void* {
    (*static_cast<const std::function<void()>*>(p))();
    return nullptr;
  };
  if (pthread_create(&thread, &attr, trampoline, const_cast<std::function<void()>*>(&fn)) != 0) {
    fn();  // no thread: run here with the default stack
  } else {
    pthread_join(thread, nullptr);
  }
  pthread_attr_destroy(&attr);
}

std::string EscapeDep(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#' || c == '\\') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

int Usage(std::ostream& err, const std::string& message) {
  err << "jr2c: error: " << message << "\n"
      << "run `jr2c --help` for usage\n";
  return kExitUsage;
}

// A file's stem names its generated code (`jr2gen::STEM`, `STEM.jr2.h`), as it names its
// declarations for an importer: `compile` reports E0104 for a file it was given whose stem is not
// an identifier, with the check's other reports, and writes nothing.
void CheckOutputStems(const sema::Program& program, Diagnostics& diags) {
  for (const sema::Module* m : program.roots) {
    const std::string& stem = m->stem;
    if (!sema::IsIdentifier(stem)) {
      diags.emit(diag::OutputStemNotIdent, SourceRange::point(m->source->id(), 0), stem);
    }
  }
}

// Prints the diagnostics in the chosen format.
void Render(const Options& opts, Diagnostics& diags, const SourceManager& sm, std::ostream& out,
            std::ostream& err) {
  diags.sortByLocation();
  switch (opts.format) {
    case DiagFormat::kText:
      RenderText(diags, sm, err);
      break;
    case DiagFormat::kJson:
      RenderJson(diags, sm, out);
      break;
    case DiagFormat::kSarif:
      RenderSarif(diags, sm, Version(), out);
      break;
  }
}

// What a command does with a program that checked clean.
using AfterCheck = std::function<int(const sema::Program&, const ir::Program&)>;

// Loads and checks the files, prints the diagnostics, and, when there is no error, runs `after`
// (on the same large-stack thread, while the program is alive). Returns the exit code.
int Frontend(const Options& opts, std::ostream& out, std::ostream& err, const AfterCheck& after) {
  SourceManager sm;
  Diagnostics diags;
  diags.setWarningsAsErrors(opts.werror);
  int code = kExitClean;
  RunWithLargeStack([&] {
    sema::LoadResult loaded = sema::Load(sm, opts.files, diags);
    // Every file is parsed: the parser's caches are garbage from here on, and the memory they
    // free is what the checks below reuse (it was a tenth of the peak of a check).
    syntax::ReleaseParserCaches();
    // `check` keeps what the checks report from; a command that goes on (`compile`, `graph`,
    // `workflows`) keeps too what code generation reads (sema::Keep).
    const ir::Program charts =
        Analyze(loaded.program, diags, after ? sema::Keep::kCodegen : sema::Keep::kReports);
    if (opts.command == "compile") CheckOutputStems(loaded.program, diags);
    Render(opts, diags, sm, out, err);
    code = diags.hasErrors() ? kExitErrors : kExitClean;
    if (code == kExitClean && after) code = after(loaded.program, charts);
  });
  return code;
}

int Check(const Options& opts, std::ostream& out, std::ostream& err) {
  return Frontend(opts, out, err, nullptr);
}

// The waiting runs of a store that is not a file here (a PostgreSQL database, docs/diff.md), read
// by `jr2c-store` beside this program: it links the runtime's store, which jr2c (static, without
// libpq) cannot. The location goes in its environment (JR2C_STORE_LOCATION), never its command
// line, which every user of the machine can read. Its output is, per run, three fields: the
// workflow, the snapshot and the input, each as its length in bytes, a newline, the bytes and a
// newline; its refusal one line on stderr (`LOCATION`: why, the location without its password),
// which `why` takes.
bool ReadWaitingRunsThroughHelper(const std::string& location, std::vector<diff::WaitingRun>& out,
                                  std::string& why, bool keepValues) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::filesystem::path helper = self.parent_path() / "jr2c-store";
  if (ec || !std::filesystem::exists(helper)) {
    why =
        "is not a file here, and `jr2c-store` (which reads a PostgreSQL store, and is "
        "installed beside jr2c) is not in " +
        self.parent_path().string();
    return false;
  }
  auto cannot = [&why](int error) {
    why = "is read by jr2c-store, which cannot be started: " + std::string(std::strerror(error));
    return false;
  };
  int stdoutPipe[2], stderrPipe[2];
  if (pipe2(stdoutPipe, O_CLOEXEC) != 0) return cannot(errno);
  if (pipe2(stderrPipe, O_CLOEXEC) != 0) {
    const int error = errno;
    close(stdoutPipe[0]);
    close(stdoutPipe[1]);
    return cannot(error);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, stdoutPipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, stderrPipe[1], 2);
  const std::string program = helper.string();
  std::vector<char*> argv = {const_cast<char*>(program.c_str()), const_cast<char*>("waiting"),
                             nullptr};
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "JR2C_STORE_LOCATION=", 20) != 0) env.emplace_back(*e);
  }
  env.push_back("JR2C_STORE_LOCATION=" + location);
  std::vector<char*> envp;
  envp.reserve(env.size() + 1);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int spawned =
      posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(stdoutPipe[1]);
  close(stderrPipe[1]);
  if (spawned != 0) {
    close(stdoutPipe[0]);
    close(stderrPipe[0]);
    return cannot(spawned);
  }
  // Both pipes read as they fill (a helper that writes much to stderr never blocks on it).
  std::string text, message;
  pollfd fds[2] = {{stdoutPipe[0], POLLIN, 0}, {stderrPipe[0], POLLIN, 0}};
  std::string* into[2] = {&text, &message};
  int open = 2;
  while (open > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      char buf[65536];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        into[i]->append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  for (const pollfd& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r'))
      message.pop_back();
    why = message.empty() ? "is read by jr2c-store, which stopped without saying why" : message;
    return false;
  }
  // Per run: the workflow, the snapshot and the input, each as its length \n, bytes \n.
  size_t at = 0;
  auto line = [&](std::string& into) {
    const size_t nl = text.find('\n', at);
    if (nl == std::string::npos) return false;
    into = text.substr(at, nl - at);
    at = nl + 1;
    return true;
  };
  auto sized = [&](std::string_view& into) {
    std::string length;
    if (!line(length) || length.empty()) return false;
    char* end = nullptr;
    const unsigned long long bytes = std::strtoull(length.c_str(), &end, 10);
    if (*end != '\0' || bytes >= text.size() - at + 1 || at + bytes >= text.size() ||
        text[at + bytes] != '\n')
      return false;
    into = std::string_view(text).substr(at, bytes);
    at += bytes + 1;
    return true;
  };
  while (at < text.size()) {
    diff::WaitingRun w;
    std::string_view workflow, snapshot, input;
    if (!sized(workflow) || !sized(snapshot) || !sized(input)) {
      why = "is read by jr2c-store, whose answer was cut short";
      return false;
    }
    if (!diff::ScanSnapshot(snapshot, w, keepValues)) {
      why =
          "holds a waiting run whose snapshot is not JSON, or nests deeper than 2,048 levels (the "
          "store is damaged)";
      return false;
    }
    w.workflow = std::string(workflow);
    if (!input.empty()) w.input = std::string(input);  // stored beside the snapshot
    out.push_back(std::move(w));
  }
  return true;
}

// A stored snapshot with its kept parts put back. The runtime owns the format
// (runtime/src/core/pieces.h, store/sqlite/parts.cpp): a Pool worker's part is named in the row
// as the byte 0x1E, its id in digits, the byte 0x1D, and its text is the row of table `parts`
// (run, id). Bytes no JSON text holds raw. False when a part is missing.
bool WholeSnapshot(sqlite3* db, const std::string& run, std::string_view skeleton,
                   std::string& out) {
  std::unordered_map<std::string, std::string> parts;
  sqlite3_stmt* p = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT id, text FROM parts WHERE run = ?", -1, &p, nullptr) !=
      SQLITE_OK)
    return false;
  sqlite3_bind_text(p, 1, run.data(), static_cast<int>(run.size()), SQLITE_TRANSIENT);
  while (sqlite3_step(p) == SQLITE_ROW) {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(p, 1));
    parts[std::to_string(sqlite3_column_int64(p, 0))] =
        text != nullptr ? std::string(text, static_cast<size_t>(sqlite3_column_bytes(p, 1))) : "";
  }
  sqlite3_finalize(p);
  out.clear();
  size_t at = 0;
  while (at < skeleton.size()) {
    const size_t open = skeleton.find('\x1E', at);
    if (open == std::string_view::npos) {
      out.append(skeleton, at);
      break;
    }
    const size_t close = skeleton.find('\x1D', open);
    if (close == std::string_view::npos) return false;
    const auto part = parts.find(std::string(skeleton.substr(open + 1, close - open - 1)));
    if (part == parts.end()) return false;
    out.append(skeleton, at, open - at);
    out += part->second;
    at = close + 1;
  }
  return true;
}

bool ReadWaitingRuns(const std::string& location, std::vector<diff::WaitingRun>& out,
                     std::string& why, bool keepValues) {
  // A file here is a SQLite store, read directly (the fast way); anything else is a location
  // only the runtime's store can open (a PostgreSQL database, or a store that is not there),
  // read by jr2c-store, which decides by the runtime's own rule (OpenStore).
  std::error_code exists;
  if (!std::filesystem::exists(location, exists))
    return ReadWaitingRunsThroughHelper(location, out, why, keepValues);
  sqlite3* db = nullptr;
  const int opened = sqlite3_open_v2(location.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  auto fail = [&](const std::string& text) {
    why = "`" + location + "`: " + text;
    sqlite3_close(db);
    return false;
  };
  if (opened != SQLITE_OK) return fail(db != nullptr ? sqlite3_errmsg(db) : "it cannot be opened");
  sqlite3_busy_timeout(db, 5000);
  constexpr int kJr2AppId = 0x6A723243;  // runtime/src/store/sqlite/db.h
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, "PRAGMA application_id", -1, &s, nullptr) != SQLITE_OK)
    return fail(sqlite3_errmsg(db));
  const bool ours = sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) == kJr2AppId;
  sqlite3_finalize(s);
  if (!ours) return fail("not a jr2 store (its application id is not jr2's)");
  // The input is stored apart from the snapshot (NULL in rows saved before it, whose snapshots
  // hold it): in the table `inputs`, or in the run's row in a store from before that table; a
  // store older than that column has none.
  if (sqlite3_prepare_v2(db,
                         "SELECT workflow, snapshot, coalesce(runs.input, (SELECT i.input FROM"
                         " inputs i WHERE i.run = runs.id)), id FROM runs"
                         " WHERE status = 'waiting'",
                         -1, &s, nullptr) != SQLITE_OK &&
      sqlite3_prepare_v2(db,
                         "SELECT workflow, snapshot, input, id FROM runs WHERE status = 'waiting'",
                         -1, &s, nullptr) != SQLITE_OK &&
      sqlite3_prepare_v2(db,
                         "SELECT workflow, snapshot, NULL, id FROM runs WHERE status = 'waiting'",
                         -1, &s, nullptr) != SQLITE_OK)
    return fail(sqlite3_errmsg(db));
  int rc = SQLITE_OK;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    diff::WaitingRun w;
    const auto* workflow = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    const auto* snapshot = reinterpret_cast<const char*>(sqlite3_column_text(s, 1));
    w.workflow = workflow != nullptr ? workflow : "";
    const int bytes = sqlite3_column_bytes(s, 1);
    std::string_view text = snapshot != nullptr
                                ? std::string_view(snapshot, static_cast<size_t>(bytes))
                                : std::string_view("null");
    std::string whole;  // a Pool's workers are kept in rows of their own
    if (text.find('\x1E') != std::string_view::npos) {
      const auto* id = reinterpret_cast<const char*>(sqlite3_column_text(s, 3));
      if (WholeSnapshot(db, id != nullptr ? id : "", text, whole)) text = whole;
    }
    if (!diff::ScanSnapshot(text, w, keepValues)) {
      sqlite3_finalize(s);
      return fail(
          "a waiting run's snapshot is not JSON, or nests deeper than 2,048 levels (the store "
          "is damaged)");
    }
    if (const auto* input = reinterpret_cast<const char*>(sqlite3_column_text(s, 2)))
      w.input.assign(input, static_cast<size_t>(sqlite3_column_bytes(s, 2)));
    out.push_back(std::move(w));
  }
  sqlite3_finalize(s);
  if (rc != SQLITE_DONE) return fail(sqlite3_errmsg(db));
  sqlite3_close(db);
  return true;
}

// `jr2c diff OLD NEW` (compiler/diff/diff.h, docs/diff.md): both versions checked, each a
// program of its own (its imports read beside it), then compared. Exit codes as `buf breaking`
// gives them: 0 compatible, 100 breaking, 1 a version that does not check, 2 usage.
int Diff(const Options& opts, std::ostream& out, std::ostream& err) {
  SourceManager sm;
  Diagnostics diags;
  int code = kExitClean;
  // A SQLite store is read on a thread of its own while both versions are checked (they take
  // about as long: docs/performance.md, `diff_10k`), without the snapshots' text, which a second
  // read keeps when a change's count reads stored values. A location jr2c-store reads is read
  // after the checks, as before: a version that does not check never waits for a database.
  struct StoreRead {
    std::vector<diff::WaitingRun> waiting;
    std::string why;
    bool ok = false;
  } read;
  std::thread reader;
  struct Joined {  // on every way out, an exception's too
    std::thread& t;
    ~Joined() {
      if (t.joinable()) t.join();
    }
  } joined{reader};
  std::error_code isFile;
  if (!opts.store.empty() && std::filesystem::is_regular_file(opts.store, isFile)) {
    reader = std::thread([&read, &opts] {
      read.ok = ReadWaitingRuns(opts.store, read.waiting, read.why, /*keepValues=*/false);
    });
  }
  RunWithLargeStack([&] {
    sema::LoadResult before = sema::Load(sm, {opts.files[0]}, diags);
    sema::LoadResult after = sema::Load(sm, {opts.files[1]}, diags);
    syntax::ReleaseParserCaches();
    const ir::Program beforeCharts = Analyze(before.program, diags, sema::Keep::kReports);
    const ir::Program afterCharts = Analyze(after.program, diags, sema::Keep::kReports);
    if (diags.hasErrors()) {
      Render(opts, diags, sm, out, err);
      code = kExitErrors;
      return;
    }
    std::vector<diff::WaitingRun> waiting;
    if (!opts.store.empty()) {
      Diagnostics unstored;
      diff::Compare({before.program, beforeCharts}, {after.program, afterCharts}, unstored);
      const bool values = diff::CountsReadValues(unstored);
      bool readNow = true;
      if (reader.joinable()) {
        reader.join();
        readNow = read.ok && values;  // read, but without the values a count needs
      }
      if (readNow) {
        read.waiting.clear();
        read.ok = ReadWaitingRuns(opts.store, read.waiting, read.why, values);
      }
      if (!read.ok) {
        err << "jr2c: error: --store " << read.why << "\n";
        code = kExitUsage;
        return;
      }
      waiting = std::move(read.waiting);
    }
    Diagnostics changes;
    diff::Compare({before.program, beforeCharts}, {after.program, afterCharts}, changes,
                  opts.store.empty() ? nullptr : &waiting);
    Render(opts, changes, sm, out, err);
    code = changes.hasErrors() ? kExitBreaking : kExitClean;
    if (opts.format == DiagFormat::kText && code == kExitClean) {
      err << "jr2c diff: no stored run is stranded and nothing accepted before is refused\n";
    }
  });
  return code;  // (a version that did not check: `joined` waits for the read it did not need)
}

// Writes `text` to `path` through a temporary file and a rename, and only when it changed, so a
// build system sees a new time stamp only on a real change.
bool WriteIfChanged(const std::string& path, const std::string& text, std::ostream& err) {
  {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::ostringstream old;
      old << in.rdbuf();
      if (old.str() == text) return true;
    }
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) {
      err << "jr2c: error: cannot write `" << tmp << "`\n";
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    err << "jr2c: error: cannot write `" << path << "`: " << ec.message() << "\n";
    return false;
  }
  return true;
}

int Compile(const Options& opts, std::ostream& out, std::ostream& err) {
  if (opts.outDir.empty()) return Usage(err, "`compile` needs an output folder: `-o DIR`");
  return Frontend(opts, out, err, [&](const sema::Program& program, const ir::Program& charts) {
    std::error_code ec;
    std::filesystem::create_directories(opts.outDir, ec);
    if (ec) {
      err << "jr2c: error: cannot create `" << opts.outDir << "`: " << ec.message() << "\n";
      return kExitErrors;
    }
    // Generate everything first: nothing is written unless all of it could be made.
    std::vector<std::pair<std::string, std::string>> files;
    std::vector<std::string> outputs;
    for (const sema::Module* m : program.roots) {
      codegen::Options generate;
      generate.fastPath = opts.fastPath;
      const codegen::Output o = codegen::Generate(program, *m, charts, Version(), generate);
      const auto dir = std::filesystem::path(opts.outDir);
      files.emplace_back((dir / o.headerName).string(), o.header);
      files.emplace_back((dir / o.sourceName).string(), o.source);
      outputs.push_back((dir / o.headerName).string());
      outputs.push_back((dir / o.sourceName).string());
    }
    for (const auto& [path, text] : files) {
      if (!WriteIfChanged(path, text, err)) return kExitErrors;
    }
    if (!opts.depfile.empty()) {
      // Make syntax: every output depends on every file it was made from, imports included.
      std::string deps;
      for (const auto& m : program.modules) {
        if (m->isStd) continue;
        deps += " " +
                EscapeDep(std::filesystem::absolute(m->source->name()).lexically_normal().string());
      }
      std::string text;
      for (size_t i = 0; i < outputs.size(); ++i) {
        text += (i == 0 ? "" : " ") +
                EscapeDep(std::filesystem::absolute(outputs[i]).lexically_normal().string());
      }
      text += ":" + deps + "\n";
      if (!WriteIfChanged(opts.depfile, text, err)) return kExitErrors;
    }
    return kExitClean;
  });
}

// The caption of a picture of `drawn`: its workflow's concurrency (walk/budget.h), when a
// workflow names it; "" otherwise.
std::string Caption(const ast::Decl* drawn, const sema::Program& program,
                    const ir::Program& charts) {
  for (const walk::WorkflowConcurrency& wc : walk::WorkOutConcurrency(program, charts)) {
    if (wc.workflow->target.resolved == drawn)
      return fmt::format("workflow {}, at most at once: {}", wc.workflow->name.text,
                         walk::Describe(wc.most));
  }
  return "";
}

// `jr2c graph FILE -o DIR`: DIR/W.dot (or .mmd) for each workflow W the file declares — its
// machine's statechart, or its Pool — and, for a Pool whose worker is a machine (or a Pool),
// DIR/W.worker.dot: the worker's own picture, on which the console counts the workers in each
// state. For the web console's pictures (cmake/Jr2Pictures.cmake).
int GraphWorkflows(const Options& opts, const sema::Program& program, const ir::Program& charts,
                   std::ostream& err) {
  std::error_code ec;
  std::filesystem::create_directories(opts.outDir, ec);
  // The picture of a declaration a workflow or a worker names: "" when it did not resolve
  // (check reported it) or names a workflow (a dispatched run has its own picture).
  auto draw = [&](const ast::Decl* target) -> std::string {
    if (const auto* pool = llvm::dyn_cast_or_null<ast::PoolDecl>(target))
      return graph::RenderPool(*pool, opts.graphFormat);
    for (const ir::Machine& m : charts.machines)
      if (m.decl == target) return graph::Render(m, opts.graphFormat);
    return {};
  };
  auto write = [&](const std::string& stem, const std::string& text) {
    const std::string path =
        opts.outDir + "/" + stem + (opts.graphFormat == graph::Format::kDot ? ".dot" : ".mmd");
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file << text;
    if (file.flush()) return true;
    err << "jr2c: error: cannot write `" << path << "`\n";
    return false;
  };
  for (const auto& d : program.roots.front()->ast->decls) {
    if (d->kind != ast::Decl::Kind::kWorkflow) continue;
    const auto& w = llvm::cast<ast::WorkflowDecl>(*d);
    const std::string drawn = draw(w.target.resolved);
    if (drawn.empty()) continue;
    // The same caption as `jr2c graph --machine` gives it: the two pictures are one.
    const std::string text =
        graph::WithCaption(drawn, Caption(w.target.resolved, program, charts), opts.graphFormat);
    if (!write(w.name.text, text)) return kExitErrors;
    const auto* pool = llvm::dyn_cast_or_null<ast::PoolDecl>(w.target.resolved);
    if (pool == nullptr || pool->worker.dispatch) continue;
    if (const std::string worker = draw(pool->worker.target.resolved); !worker.empty()) {
      if (!write(w.name.text + ".worker", worker)) return kExitErrors;
    }
  }
  return kExitClean;
}

// `jr2c fmt [--check | -d | -w] FILE…` (docs/editors.md#jr2c-fmt). A file that does not parse
// is not formatted (its syntax errors are said as `check` says them); every file formatted is
// held to have the same tokens as before it is printed or written.
int Fmt(const Options& opts, std::ostream& out, std::ostream& err) {
  int code = kExitClean;
  for (const std::string& path : opts.files) {
    SourceManager sm;
    Diagnostics diags;
    LoadError why = LoadError::kNotFound;
    const SourceFile* file = sm.load(path, path, &why);
    if (file == nullptr) {
      err << fmt::format("jr2c: error: cannot read `{}`: {}\n", path,
                         why == LoadError::kNotFound      ? "no such file"
                         : why == LoadError::kIsDirectory ? "it is a directory"
                         : why == LoadError::kTooLarge    ? "it is larger than 8 MiB"
                                                          : "it cannot be read");
      code = kExitErrors;
      continue;
    }
    RunWithLargeStack([&] { syntax::Parse(*file, diags); });
    if (diags.hasErrors()) {
      diags.sortByLocation();
      RenderText(diags, sm, err);
      err << fmt::format("jr2c: `{}` has syntax errors and was not formatted\n", path);
      code = kExitErrors;
      continue;
    }
    const jr2::layout::Formatted f = jr2::layout::Format(file->text());
    if (!f.ok) {
      err << fmt::format("jr2c: error: `{}`: {}\n", path, f.why);
      code = kExitErrors;
      continue;
    }
    if (!jr2::layout::SameTokens(file->text(), f.text)) {
      err << fmt::format(
          "jr2c: internal error: formatting `{}` would change its tokens; nothing was written "
          "(please report it with the file)\n",
          path);
      code = kExitErrors;
      continue;
    }
    const bool changed = f.text != file->text();
    if (opts.fmtMode.empty()) {
      out << f.text;
    } else if (opts.fmtMode == "--check") {
      if (changed) {
        out << path << "\n";
        code = kExitErrors;
      }
    } else if (opts.fmtMode == "-d") {
      if (changed) out << jr2::layout::UnifiedDiff(path, file->text(), f.text);
    } else if (changed && !WriteIfChanged(path, f.text, err)) {
      code = kExitErrors;
    }
  }
  return code;
}

// `jr2c graph FILE [--machine M] [--format dot|mermaid]`.
int Graph(const Options& opts, std::ostream& out, std::ostream& err) {
  if (opts.files.size() != 1) return Usage(err, "`graph` takes one `.jr2` file");
  return Frontend(opts, out, err, [&](const sema::Program& program, const ir::Program& charts) {
    if (!opts.outDir.empty()) return GraphWorkflows(opts, program, charts, err);
    const FileId root = program.roots.front()->source->id();
    std::vector<const ir::Machine*> mine;
    for (const ir::Machine& m : charts.machines) {
      if (m.decl->range.file == root) mine.push_back(&m);
    }
    // A Pool is a machine to the language, with no states of its own: drawn as its Source, the
    // Pool and its worker, when named with --machine.
    std::vector<const ast::PoolDecl*> pools;
    for (const auto& d : program.roots.front()->ast->decls) {
      if (const auto* p = llvm::dyn_cast<ast::PoolDecl>(d.get())) pools.push_back(p);
    }
    std::string names;
    for (const ir::Machine* m : mine) names += (names.empty() ? "" : ", ") + m->decl->name.text;
    for (const ast::PoolDecl* p : pools) {
      names += (names.empty() ? "pool " : ", pool ") + p->name.text;
    }
    if (!opts.machine.empty()) {
      for (const ast::PoolDecl* p : pools) {
        if (p->name.text != opts.machine) continue;
        out << graph::WithCaption(graph::RenderPool(*p, opts.graphFormat),
                                  Caption(p, program, charts), opts.graphFormat);
        return kExitClean;
      }
    }
    if (mine.empty() && opts.machine.empty() && pools.size() == 1) {
      out << graph::WithCaption(graph::RenderPool(*pools.front(), opts.graphFormat),
                                Caption(pools.front(), program, charts), opts.graphFormat);
      return kExitClean;
    }
    if (mine.empty() && pools.empty()) {
      err << "jr2c: error: `" << opts.files.front() << "` declares no machine to draw\n";
      return kExitErrors;
    }
    const ir::Machine* chosen = nullptr;
    if (opts.machine.empty()) {
      // One machine is drawn without --machine (its Pool, if any, is asked for by name).
      if (mine.size() != 1) {
        err << "jr2c: error: `" << opts.files.front() << "` has several machines; choose one with "
            << "`--machine NAME`: " << names << "\n";
        return kExitUsage;
      }
      chosen = mine.front();
    } else {
      for (const ir::Machine* m : mine) {
        if (m->decl->name.text == opts.machine) chosen = m;
      }
      if (chosen == nullptr) {
        err << "jr2c: error: `" << opts.files.front() << "` has no machine `" << opts.machine
            << "`; its machines are: " << names << "\n";
        return kExitUsage;
      }
    }
    out << graph::WithCaption(graph::Render(*chosen, opts.graphFormat),
                              Caption(chosen->decl, program, charts), opts.graphFormat);
    return kExitClean;
  });
}

// `jr2c workflows FILE…`: the workflow names, one a line (what the CMake function reads at
// configure time to make one runner each).
int Workflows(const Options& opts, std::ostream& out, std::ostream& err) {
  return Frontend(opts, out, err, [&](const sema::Program& program, const ir::Program&) {
    for (const sema::Module* m : program.roots) {
      for (const auto& d : m->ast->decls) {
        if (d->kind == ast::Decl::Kind::kWorkflow) out << d->name.text << "\n";
      }
    }
    return kExitClean;
  });
}

int Explain(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.size() != 1) return Usage(err, "`explain` takes one code, such as `jr2c explain E0100`");
  if (args[0] == "--list") {
    for (const std::string& code : diag::AllCodes()) {
      const std::string_view text = Explanation(code);
      out << code << "  " << text.substr(0, text.find('\n')) << "\n";
    }
    return kExitClean;
  }
  std::string code = args[0];
  for (char& c : code) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::string_view text = Explanation(code);
  if (text.empty()) {
    return Usage(err, fmt::format("`{}` is not a jr2c diagnostic code; `jr2c explain --list` "
                                  "lists them",
                                  args[0]));
  }
  out << code << ": " << text << "\n";
  return kExitClean;
}

}  // namespace

const char* Version() { return JR2C_VERSION; }

int Run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.empty()) {
    err << kUsage;
    return kExitUsage;
  }
  Options opts;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help" || a == "help") {
      out << kUsage;
      return kExitClean;
    }
    if (a == "--version") {
      out << "jr2c " << Version() << "\n";
      return kExitClean;
    }
    if (a == "--Werror") {
      opts.werror = true;
    } else if (a == "--stdio") {
      opts.stdio = true;
    } else if (a == "--check" || a == "-d" || a == "-w") {
      if (!opts.fmtMode.empty() && opts.fmtMode != a)
        return Usage(err,
                     fmt::format("`{}` and `{}` cannot go together; give one", opts.fmtMode, a));
      opts.fmtMode = a;
    } else if (a == "--no-fast-path") {
      opts.fastPath = false;
    } else if (a == "--store") {
      if (i + 1 >= args.size())
        return Usage(err, "`--store` needs a store: a SQLite file or a postgresql:// URL");
      opts.store = args[++i];
    } else if (a == "--machine") {
      if (i + 1 >= args.size()) return Usage(err, "`--machine` needs a machine's name");
      opts.machine = args[++i];
    } else if (a == "--format") {
      if (i + 1 >= args.size()) return Usage(err, "`--format` needs a value: dot or mermaid");
      const std::string& f = args[++i];
      if (f == "dot")
        opts.graphFormat = graph::Format::kDot;
      else if (f == "mermaid")
        opts.graphFormat = graph::Format::kMermaid;
      else
        return Usage(err, fmt::format("unknown graph format `{}`; use dot or mermaid", f));
    } else if (a == "-o" || a == "--depfile") {
      if (i + 1 >= args.size()) return Usage(err, fmt::format("`{}` needs a value", a));
      (a == "-o" ? opts.outDir : opts.depfile) = args[++i];
    } else if (a == "--diagnostics-format" || a.rfind("--diagnostics-format=", 0) == 0) {
      std::string value;
      if (a == "--diagnostics-format") {
        if (i + 1 >= args.size())
          return Usage(err, "`--diagnostics-format` needs a value: text, json or sarif");
        value = args[++i];
      } else {
        value = a.substr(a.find('=') + 1);
      }
      if (value == "text")
        opts.format = DiagFormat::kText;
      else if (value == "json")
        opts.format = DiagFormat::kJson;
      else if (value == "sarif")
        opts.format = DiagFormat::kSarif;
      else
        return Usage(
            err, fmt::format("unknown diagnostics format `{}`; use text, json or sarif", value));
    } else if (a.size() > 1 && a[0] == '-' && a != "--list") {
      const std::string guess = ClosestName(
          a, {"--help", "--version", "--Werror", "--no-fast-path", "--machine", "--format",
              "--depfile", "--diagnostics-format", "--list", "--check", "--stdio", "--store"});
      return Usage(err, guess.empty()
                            ? fmt::format("unknown option `{}`", a)
                            : fmt::format("unknown option `{}`; did you mean `{}`?", a, guess));
    } else if (opts.command.empty()) {
      opts.command = a;
    } else {
      rest.push_back(a);
    }
  }
  if (!opts.fmtMode.empty() && opts.command != "fmt")
    return Usage(err, fmt::format("`{}` goes with `fmt`", opts.fmtMode));
  if (opts.stdio && opts.command != "lsp") return Usage(err, "`--stdio` goes with `lsp`");
  if (!opts.store.empty() && opts.command != "diff")
    return Usage(err, "`--store` goes with `diff`");
  // Every command but `lsp` is one short process that builds and frees a program's tokens, parse
  // trees and AST a declaration at a time (tens of MB for a large file). glibc's heap, grown by
  // 128 kB at a time and given back as soon as its top is free, then moves its break hundreds of
  // times; grown by 16 MB, a cold `jr2c check` of 10,000 lines takes 9-10 % less time for the
  // same resident memory (untouched pages are not resident; docs/performance.md, #33 goal 4).
  // `lsp` lives long and keeps glibc's defaults, so that what it frees goes back.
  if (opts.command != "lsp") mallopt(M_TOP_PAD, 16 << 20);
  if (opts.command == "lsp") {
    if (!rest.empty())
      return Usage(err, fmt::format("`lsp` takes no files (`{}`); the editor sends them", rest[0]));
    int code = 1;
    RunWithLargeStack([&] {
      auto in = lsp::FdChannel(0);
      code = lsp::Serve(*in, out, err, lsp::Options{Version(), ""});
    });
    return code;
  }
  if (opts.command == "check") {
    if (rest.empty()) return Usage(err, "`check` needs at least one `.jr2` file");
    opts.files = rest;
    return Check(opts, out, err);
  }
  if (opts.command == "compile" || opts.command == "workflows") {
    if (rest.empty())
      return Usage(err, fmt::format("`{}` needs at least one `.jr2` file", opts.command));
    opts.files = rest;
    return opts.command == "compile" ? Compile(opts, out, err) : Workflows(opts, out, err);
  }
  if (opts.command == "graph") {
    opts.files = rest;
    return Graph(opts, out, err);
  }
  if (opts.command == "explain") return Explain(rest, out, err);
  if (opts.command == "diff") {
    if (rest.size() != 2)
      return Usage(err, "`diff` takes two `.jr2` files: the old version, then the new one");
    opts.files = rest;
    return Diff(opts, out, err);
  }
  if (opts.command == "fmt") {
    if (rest.empty()) return Usage(err, "`fmt` needs at least one `.jr2` file");
    opts.files = rest;
    return Fmt(opts, out, err);
  }
  if (opts.command.empty()) return Usage(err, "no command given");
  const std::string guess = ClosestName(
      opts.command, {"check", "compile", "workflows", "graph", "explain", "fmt", "lsp", "diff"});
  if (!guess.empty())
    return Usage(err, fmt::format("unknown command `{}`; did you mean `{}`?", opts.command, guess));
  return Usage(err, fmt::format("unknown command `{}`; the commands are `check`, `compile`, "
                                "`workflows`, `graph`, `explain`, `fmt`, `diff` and `lsp`",
                                opts.command));
}

}  // namespace jr2::driver
