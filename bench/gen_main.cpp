// `jr2_gen LINES [SEED] > out.jr2`: writes a valid `.jr2` program of about LINES lines.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "bench/gen_jr2.h"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: jr2_gen LINES [SEED] > out.jr2\n";
    return 2;
  }
  char* end = nullptr;
  const long lines = std::strtol(argv[1], &end, 10);
  if (*end != '\0' || lines < 1 || lines > 10'000'000) {
    std::cerr << "jr2_gen: LINES must be a number from 1 to 10000000\n";
    return 2;
  }
  unsigned long seed = 1;
  if (argc == 3) {
    seed = std::strtoul(argv[2], &end, 10);
    if (*end != '\0') {
      std::cerr << "jr2_gen: SEED must be a number\n";
      return 2;
    }
  }
  const std::string text =
      jr2::bench::GenerateJr2(static_cast<int>(lines), static_cast<unsigned>(seed));
  std::fwrite(text.data(), 1, text.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}
