#include "compiler/driver/driver.h"

#include <fmt/format.h>
#include <pthread.h>

#include <algorithm>
#include <functional>
#include <sstream>

#include "compiler/diag/render.h"
#include "compiler/ir/statechart.h"
#include "compiler/sema/program.h"
#include "compiler/walk/walk.h"

namespace jr2::driver {
namespace {

constexpr const char* kUsage = R"(usage: jr2c <command> [options] [files]

commands:
  check FILE…            check .jr2 files and print diagnostics
  explain CODE           explain a diagnostic code, with an example (`jr2c explain E0100`)
  explain --list         list every diagnostic code

options:
  --diagnostics-format text|json|sarif
                         how to print diagnostics (text on stderr; json and sarif on stdout)
  --Werror               treat warnings as errors
  -h, --help             print this help
  --version              print the version

exit codes: 0 clean (warnings allowed), 1 errors, 2 usage
)";

struct Options {
  std::string command;
  std::vector<std::string> files;
  DiagFormat format = DiagFormat::kText;
  bool werror = false;
};

// Runs `fn` on a thread with a 512 MiB stack: recursive descent over a deeply nested (but
// accepted) file must not overflow the 8 MiB default. The memory is reserved, not touched.
void RunWithLargeStack(const std::function<void()>& fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t{512} << 20);
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

int Usage(std::ostream& err, const std::string& message) {
  err << "jr2c: error: " << message << "\n"
      << "run `jr2c --help` for usage\n";
  return kExitUsage;
}

int Check(const Options& opts, std::ostream& out, std::ostream& err) {
  SourceManager sm;
  Diagnostics diags;
  diags.setWarningsAsErrors(opts.werror);
  std::vector<std::string> fileErrors;
  RunWithLargeStack([&] {
    sema::LoadResult loaded = sema::Load(sm, opts.files, diags);
    fileErrors = std::move(loaded.fileErrors);
    // A file with syntax errors has a partial tree: checking its meaning would only report the
    // echoes of those errors.
    const bool syntaxErrors =
        std::any_of(diags.all().begin(), diags.all().end(), [](const Diagnostic& d) {
          return d.severity == Severity::kError && std::string_view(d.code()) == "E0001";
        });
    if (syntaxErrors) return;
    sema::ResolveNames(loaded.program, diags);
    sema::CheckTypes(loaded.program, diags);
    const ir::Program charts = ir::Build(loaded.program, diags);
    walk::LoadWalk(loaded.program, charts, diags);
  });
  for (const std::string& e : fileErrors) err << "jr2c: error: " << e << "\n";
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
  return diags.hasErrors() || !fileErrors.empty() ? kExitErrors : kExitClean;
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
      return Usage(err, fmt::format("unknown option `{}`", a));
    } else if (opts.command.empty()) {
      opts.command = a;
    } else {
      rest.push_back(a);
    }
  }
  if (opts.command == "check") {
    if (rest.empty()) return Usage(err, "`check` needs at least one `.jr2` file");
    opts.files = rest;
    return Check(opts, out, err);
  }
  if (opts.command == "explain") return Explain(rest, out, err);
  if (opts.command.empty()) return Usage(err, "no command given");
  return Usage(err, fmt::format("unknown command `{}`; the commands are `check` and `explain`",
                                opts.command));
}

}  // namespace jr2::driver
