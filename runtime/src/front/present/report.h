// What the runner's verbs print (docs/runtime.md#the-runner), against the store and through
// `--server` alike: each verb's answer as data, and one printer of it. The local verbs make the
// data from the run they hold; serve's answers carry the same data (docs/serve.md); the
// `--server` client prints them with the same printers, so the two fronts cannot drift apart
// (tests/e2e/server_contract_test.sh holds them to it). Private to the runner.
#pragma once

#include <string>

#include "jr2/views.h"

namespace jr2rt {

// How a front prints: the runner's name (every line on stderr starts with it, and the printed
// commands name it), the serve's URL through `--server` ("" against the store), and `--json`.
struct PrintOptions {
  std::string runner;
  std::string command;  // how the printed commands call the runner; "" for `runner`
  std::string server;
  bool json = false;
};

// One word of a command line for a POSIX shell, to be pasted: plain when it is made only of
// characters no shell treats specially, in single quotes otherwise, and as $'…' with escapes when
// it holds a control character.
std::string ShellQuote(const std::string& word);

// One JSON document on stdout, as every verb's `--json` prints it.
void PrintJson(const Json& doc);

// Prints a RunView: with --json the document on stdout; the lines for a person on stderr; the
// output of an ended run on stdout without --json. Gives the exit code of the run's status.
int PrintRun(const Json& view, const PrintOptions& options);

// `gates`: each entry `{runId, gate, meta, accepts, menu, fields}` (GateJson with its run and
// GateFields); --json prints them without `fields`.
void PrintGates(const Json& gates, const PrintOptions& options);

// `runs`: each entry `{runId, workflow, status, updated}`, oldest change first; `where` (the
// store's path or the serve's URL) is named when there is none.
void PrintRuns(const Json& runs, bool all, const std::string& where, const PrintOptions& options);

// `log`: a feed line `{seq, time, kind, data, line}`. With --json it is kept in `all` (printed
// whole at the end), or printed as one document per line with `follow`.
void PrintFeedLine(const Json& line, bool follow, const PrintOptions& options, Json& all);
// The end of `log --follow`: the run ended `status`.
void PrintFeedEnd(const std::string& run, const std::string& status, const PrintOptions& options);

}  // namespace jr2rt
