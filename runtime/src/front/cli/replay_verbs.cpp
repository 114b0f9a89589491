// The runner's replay verbs (replay_verbs.h).
#include "front/cli/replay_verbs.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <vector>

#include "host/replay.h"
#include "jr2/runner.h"

namespace jr2rt {
namespace {

std::string Compact(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Read as every file from outside is (ReadExternalFile): a missing file, a folder, one over
// 1 GiB refused, each said as it is.
std::istringstream OpenTrace(const std::string& file) {
  try {
    return std::istringstream(ReadExternalFile(file, "the trace", size_t{1} << 30));
  } catch (const BadInput& e) {
    throw BadInput(std::string(e.what()) + " (a run's trace is written by `export RUN > FILE`)");
  }
}

std::string Count(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string Summary(const ReplayResult& r) {
  return Count(r.turns, "turn", "turns") + ", " + Count(r.inputs, "input", "inputs") + ", " +
         Count(r.held, "effect or Source call", "effects and Source calls") +
         " answered from the trace, none run";
}

// Refused unless the trace is of the runner's workflow.
void SameWorkflow(const ReadTrace& trace, const std::string& workflow, const std::string& name) {
  if (trace.workflow() != workflow)
    throw BadInput(name + ": a trace of workflow `" + Printable(trace.workflow()) +
                   "`; this runner replays `" + workflow + "` (replay it with `" +
                   Printable(trace.workflow()) + "`'s runner)");
}

}  // namespace

int ReplayVerb(const Registry& registry, const std::string& workflow, const std::string& file,
               bool json) {
  std::istringstream in = OpenTrace(file);
  const ReadTrace trace(in, Printable(file));
  SameWorkflow(trace, workflow, Printable(file));
  const ReplayResult r = Replay(registry, trace, [json](const std::string& line) {
    if (!json) std::cerr << Printable(line) << "\n";
  });
  if (json) {
    std::cout << r.json().dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
  } else if (r.identical) {
    std::cerr << "replay: run " << Printable(r.run) << " of " << Printable(r.workflow)
              << " is the same under this build: " << Summary(r) << "; it ends " << r.status
              << "\n";
    std::cout << Compact(r.output) << "\n";
  } else {
    std::cout << "diverged: " << Printable(r.message) << "\n";
  }
  std::cout << std::flush;
  return r.identical ? kExitDone : kExitDiverged;
}

int TestTracesVerb(const Registry& registry, const std::string& workflow, const std::string& dir,
                   bool json) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw BadInput("`" + Printable(dir) +
                   "` is not a folder: `test --traces DIR` replays the "
                   "*.jsonl traces of one");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() == ".jsonl" && entry.is_regular_file(ec))
      files.push_back(entry.path());
  }
  if (ec) throw BadInput("cannot list `" + Printable(dir) + "`: " + ec.message());
  if (files.empty())
    throw BadInput("`" + Printable(dir) +
                   "` holds no *.jsonl trace (write them with `export RUN > DIR/NAME.jsonl`)");
  std::sort(files.begin(), files.end());
  int diverged = 0;
  int unreadable = 0;
  int skipped = 0;
  Json all = Json::array();
  for (const auto& path : files) {
    const std::string name = Printable(path.filename().string());
    try {
      std::istringstream in = OpenTrace(path.string());
      const ReadTrace trace(in, name);
      if (trace.workflow() != workflow) {
        ++skipped;
        all.push_back({{"file", name}, {"skipped", Printable(trace.workflow())}});
        if (!json)
          std::cout << "skipped   " << name << "  (of workflow " << Printable(trace.workflow())
                    << ")\n";
        continue;
      }
      const ReplayResult r = Replay(registry, trace);
      Json one = r.json();
      one["file"] = name;
      all.push_back(std::move(one));
      if (r.identical) {
        if (!json) std::cout << "ok        " << name << "  (" << Summary(r) << ")\n";
      } else {
        ++diverged;
        if (!json) std::cout << "DIVERGED  " << name << ": " << Printable(r.message) << "\n";
      }
    } catch (const std::exception& e) {
      // Not a trace this runner reads (BadInput), or one that broke it: said, and the others go on.
      ++unreadable;
      all.push_back({{"file", name}, {"error", Printable(ErrorText(e))}});
      if (!json) std::cout << "UNREADABLE " << name << ": " << Printable(ErrorText(e)) << "\n";
    }
  }
  const int total = static_cast<int>(files.size()) - skipped;
  if (total == 0)
    throw BadInput("`" + Printable(dir) + "` holds no trace of `" + workflow + "` (" +
                   std::to_string(skipped) + " of other workflows)");
  if (json) {
    std::cout << Json{{"traces", total},      {"identical", total - diverged - unreadable},
                      {"diverged", diverged}, {"unreadable", unreadable},
                      {"skipped", skipped},   {"results", all}}
                     .dump(2, ' ', false, Json::error_handler_t::replace)
              << "\n";
  } else {
    std::cout << total - diverged - unreadable << " of " << total
              << " traces replay identically under this build";
    if (diverged > 0) std::cout << "; " << diverged << " diverged";
    if (unreadable > 0) std::cout << "; " << unreadable << " cannot be read";
    if (skipped > 0) std::cout << "; " << skipped << " of other workflows skipped";
    std::cout << "\n";
  }
  std::cout << std::flush;
  if (diverged > 0) return kExitDiverged;
  return unreadable > 0 ? kExitBadInput : kExitDone;
}

}  // namespace jr2rt
