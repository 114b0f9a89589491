// The front-end fuzz target: any bytes, as one `.jr2` file, through everything `jr2c check` does
// after reading the file — the parse, and (as in the driver, only when there is no syntax error)
// name resolution against the standard library, the type checks, the statechart IR and the load
// walk — then the three renderings of the diagnostics. It must never crash, hang or leak,
// whatever the input. Two more checks on the same bytes:
//  - `jr2c fmt` (layout::Format): when it formats the input, the result has the same tokens and
//    formats to itself (idempotent); a breach traps, as a crash would;
//  - `jr2c lsp`'s index (lsp::Analyze, the input as an unsaved buffer of a file that does not
//    exist): every symbol's hover text, and the occurrence and typed expression at every 7th
//    byte, as a client asking everywhere would.
//
// Built two ways (tests/fuzz/CMakeLists.txt): with libFuzzer and sanitizers as
// `jr2_frontend_fuzz` (JR2_BUILD_FUZZ=ON, clang), and always, with replay_main.cpp, as
// `jr2_fuzz_replay`, which runs the corpus in CTest.
#include <cstddef>
#include <cstdint>
#include <map>
#include <ostream>
#include <streambuf>
#include <string>

#include "compiler/diag/diagnostics.h"
#include "compiler/diag/render.h"
#include "compiler/driver/driver.h"
#include "compiler/fmt/fmt.h"
#include "compiler/lsp/index.h"
#include "compiler/sema/program.h"
#include "compiler/source/source.h"

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
  // The input as the one root, imports not followed (the fuzzer must not read the file system),
  // then the driver's pipeline.
  jr2::sema::LoadResult loaded = jr2::sema::LoadText(
      sm, "fuzz.jr2", std::string(reinterpret_cast<const char*>(data), size), diags, false);
  jr2::driver::Analyze(loaded.program, diags);

  diags.sortByLocation();
  NullBuffer buffer;
  std::ostream null(&buffer);
  jr2::RenderText(diags, sm, null);
  jr2::RenderJson(diags, sm, null);
  jr2::RenderSarif(diags, sm, "0.0.0-fuzz", null);

  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const jr2::layout::Formatted once = jr2::layout::Format(text);
  if (once.ok) {
    if (!jr2::layout::SameTokens(text, once.text)) __builtin_trap();  // fmt changed a token
    const jr2::layout::Formatted twice = jr2::layout::Format(once.text);
    if (!twice.ok || twice.text != once.text) __builtin_trap();  // fmt is not idempotent
  }

  // A folder no one has: its imports are not found, and nothing is read.
  const std::string path = "/nonexistent-jr2-fuzz/fuzz.jr2";
  const std::map<std::string, std::string> overlay{{path, std::string(text)}};
  const auto analysis = jr2::lsp::Analyze(path, overlay);
  for (const jr2::lsp::Symbol& s : analysis->symbols) null << jr2::lsp::HoverText(*analysis, s);
  if (analysis->root != nullptr) {
    const jr2::FileId file = analysis->root->id();
    for (uint32_t at = 0; at <= size; at += 7) {
      if (const auto* o = analysis->occurrenceAt(file, at)) null << o->symbol;
      if (const auto* t = analysis->typedAt(file, at)) null << t->range.begin;
    }
  }
  return 0;
}
