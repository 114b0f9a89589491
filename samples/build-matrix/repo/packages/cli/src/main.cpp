// cli <title> <host:port> [body words...]: prints the report on a document.
#include <iostream>
#include <string>

#include "cli/cli.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: " << argv[0] << " <title> <host:port> [body words...]\n";
    return 2;
  }
  std::string body;
  for (int i = 3; i < argc; ++i) {
    if (i > 3) body += ' ';
    body += argv[i];
  }
  std::cout << cli::format_report(argv[1], body, argv[2]);
  return 0;
}
