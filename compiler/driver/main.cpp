// `jr2c`: the .jr2 compiler.
#include <iostream>

#include "compiler/driver/driver.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return jr2::driver::Run(args, std::cout, std::cerr);
  } catch (const std::exception& e) {
    // A crash is a bug in jr2c, never the user's fault; say so in one line.
    std::cerr << "jr2c: internal error: " << e.what() << " (please report this with the input)\n";
    return 70;
  } catch (...) {
    std::cerr << "jr2c: internal error: an unknown exception (please report this with the input)\n";
    return 70;
  }
}
