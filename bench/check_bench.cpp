// Front-end benchmarks on generated programs of 1k, 10k and 100k lines (bench/gen_jr2.h):
//
//   BM_Parse       syntax::Parse of one in-memory file (lexing, the token filter, the bracket
//                  pass, the SLL parse and the AST build).
//   BM_ParseNames  the embedded standard library and the file are parsed into a sema::Program,
//                  then sema::ResolveNames.
//   BM_Check       everything `jr2c check` does after reading the file: BM_ParseNames, then the
//                  type checks, the statechart IR and the load walk (no rendering: the generated
//                  program has no diagnostic).
//
// Each reports `lines_per_second` and bytes/s. Every run checks that the generated program gives
// no diagnostic, so a generator or compiler change that makes it invalid fails loudly.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "bench/gen_jr2.h"
#include "compiler/diag/diagnostics.h"
#include "compiler/driver/driver.h"
#include "compiler/sema/program.h"
#include "compiler/source/source.h"
#include "compiler/syntax/parse.h"

namespace {

struct Input {
  std::string text;
  int64_t lines = 0;
};

// One generated program per size, made once per process.
const Input& InputOf(int approxLines) {
  static std::map<int, Input> cache;
  auto it = cache.find(approxLines);
  if (it == cache.end()) {
    Input in;
    in.text = jr2::bench::GenerateJr2(approxLines, 1);
    for (char c : in.text) in.lines += c == '\n';
    it = cache.emplace(approxLines, std::move(in)).first;
  }
  return it->second;
}

void Report(benchmark::State& state, const Input& in) {
  state.counters["lines_per_second"] =
      benchmark::Counter(static_cast<double>(in.lines) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  state.counters["lines"] = static_cast<double>(in.lines);
  state.SetBytesProcessed(static_cast<int64_t>(in.text.size()) * state.iterations());
}

void BM_Parse(benchmark::State& state) {
  const Input& in = InputOf(static_cast<int>(state.range(0)));
  jr2::SourceManager sm;
  const jr2::SourceFile* file = sm.add("bench.jr2", "", in.text);
  for (auto _ : state) {
    jr2::Diagnostics diags;
    std::unique_ptr<jr2::ast::File> ast = jr2::syntax::Parse(*file, diags);
    benchmark::DoNotOptimize(ast.get());
    if (!diags.all().empty()) {
      state.SkipWithError("the generated program has diagnostics");
      break;
    }
  }
  Report(state, in);
}

jr2::sema::LoadResult LoadInMemory(jr2::SourceManager& sm, const Input& in,
                                   jr2::Diagnostics& diags) {
  return jr2::sema::LoadText(sm, "bench.jr2", in.text, diags, false);
}

void BM_ParseNames(benchmark::State& state) {
  const Input& in = InputOf(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    jr2::SourceManager sm;
    jr2::Diagnostics diags;
    jr2::sema::LoadResult loaded = LoadInMemory(sm, in, diags);
    jr2::sema::ResolveNames(loaded.program, diags);
    benchmark::DoNotOptimize(loaded.program.modules.data());
    if (!diags.all().empty()) {
      state.SkipWithError("the generated program has diagnostics");
      break;
    }
  }
  Report(state, in);
}

void BM_Check(benchmark::State& state) {
  const Input& in = InputOf(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    jr2::SourceManager sm;
    jr2::Diagnostics diags;
    jr2::sema::LoadResult loaded = LoadInMemory(sm, in, diags);
    const jr2::ir::Program charts =
        jr2::driver::Analyze(loaded.program, diags, jr2::sema::Keep::kReports);
    benchmark::DoNotOptimize(&charts);
    if (!diags.all().empty()) {
      state.SkipWithError("the generated program has diagnostics");
      break;
    }
  }
  Report(state, in);
}

BENCHMARK(BM_Parse)->Arg(1'000)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParseNames)->Arg(1'000)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Check)->Arg(1'000)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
