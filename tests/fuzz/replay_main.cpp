// `jr2_fuzz_replay DIR|FILE…`: runs every file of a corpus directory (and any file given) through
// LLVMFuzzerTestOneInput, in name order. Fails when a path is missing or no file was run, so an
// emptied corpus cannot pass silently. A crash of the front end crashes this program, after it
// printed the name of the file that did it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: jr2_fuzz_replay CORPUS_DIR|FILE...\n";
    return 2;
  }
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const fs::path p(argv[i]);
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto& entry : fs::directory_iterator(p, ec)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      if (ec) {
        std::cerr << "jr2_fuzz_replay: cannot list " << p << ": " << ec.message() << "\n";
        return 1;
      }
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      std::cerr << "jr2_fuzz_replay: no such file or directory: " << p << "\n";
      return 1;
    }
  }
  if (files.empty()) {
    std::cerr << "jr2_fuzz_replay: no corpus files found\n";
    return 1;
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      std::cerr << "jr2_fuzz_replay: cannot read " << f << "\n";
      return 1;
    }
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::cout << "replay " << f.filename().string() << " (" << bytes.size() << " bytes)"
              << std::endl;
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::cout << files.size() << " corpus files replayed, no crash" << std::endl;
  return 0;
}
