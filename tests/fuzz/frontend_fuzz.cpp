// The front-end fuzz target: any bytes, as one `.jr2` file, through everything `jr2c check` does
// after reading the file — the parse, and (as in the driver, only when there is no syntax error)
// name resolution against the standard library, the type checks, the statechart IR and the load
// walk — then the three renderings of the diagnostics. It must never crash, hang or leak,
// whatever the input.
//
// Built two ways (tests/fuzz/CMakeLists.txt): with libFuzzer and sanitizers as
// `jr2_frontend_fuzz` (JR2_BUILD_FUZZ=ON, clang), and always, with replay_main.cpp, as
// `jr2_fuzz_replay`, which runs the corpus in CTest.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>
#include <utility>

#include "compiler/diag/diagnostics.h"
#include "compiler/diag/render.h"
#include "compiler/ir/statechart.h"
#include "compiler/sema/program.h"
#include "compiler/source/source.h"
#include "compiler/syntax/parse.h"
#include "compiler/walk/walk.h"

namespace {

// Swallows everything, but only after the renderer has formatted it (unlike an ostream with no
// buffer, which skips the formatting).
class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return traits_type::not_eof(c); }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  jr2::SourceManager sm;
  jr2::Diagnostics diags;
  // A program of the standard library alone (what sema::Load gives for no roots), then the
  // input added as its one root, the way sema::Load adds a file read from disk. Imports in the
  // input are not followed: the fuzzer must not read the file system.
  jr2::sema::LoadResult loaded = jr2::sema::Load(sm, {}, diags);
  jr2::sema::Program& program = loaded.program;
  const jr2::SourceFile* file =
      sm.add("fuzz.jr2", "", std::string(reinterpret_cast<const char*>(data), size));
  auto module = std::make_unique<jr2::sema::Module>();
  module->source = file;
  module->stem = "fuzz";
  module->ast = jr2::syntax::Parse(*file, diags);
  program.roots.push_back(module.get());
  program.modules.push_back(std::move(module));

  // The driver's rule (driver.cpp, Check): a file with a syntax error is not checked further.
  const bool syntaxErrors =
      std::any_of(diags.all().begin(), diags.all().end(), [](const jr2::Diagnostic& d) {
        return d.severity == jr2::Severity::kError && std::string_view(d.code()) == "E0001";
      });
  if (!syntaxErrors) {
    jr2::sema::ResolveNames(program, diags);
    jr2::sema::CheckTypes(program, diags);
    const jr2::ir::Program charts = jr2::ir::Build(program, diags);
    jr2::walk::LoadWalk(program, charts, diags);
  }

  diags.sortByLocation();
  NullBuffer buffer;
  std::ostream null(&buffer);
  jr2::RenderText(diags, sm, null);
  jr2::RenderJson(diags, sm, null);
  jr2::RenderSarif(diags, sm, "0.0.0-fuzz", null);
  return 0;
}
