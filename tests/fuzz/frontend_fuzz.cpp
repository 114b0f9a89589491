// The front-end fuzz target: any bytes, as one `.jr2` file, through everything `jr2c check` does
// after reading the file — the parse, and (as in the driver, only when there is no syntax error)
// name resolution against the standard library, the type checks, the statechart IR and the load
// walk — then the three renderings of the diagnostics. It must never crash, hang or leak,
// whatever the input.
//
// Built two ways (tests/fuzz/CMakeLists.txt): with libFuzzer and sanitizers as
// `jr2_frontend_fuzz` (JR2_BUILD_FUZZ=ON, clang), and always, with replay_main.cpp, as
// `jr2_fuzz_replay`, which runs the corpus in CTest.
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <streambuf>
#include <string>

#include "compiler/diag/diagnostics.h"
#include "compiler/diag/render.h"
#include "compiler/driver/driver.h"
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
  return 0;
}
