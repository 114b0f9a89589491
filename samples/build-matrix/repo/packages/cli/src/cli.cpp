#include "cli/cli.h"

#include "net/net.h"
#include "text/text.h"

namespace cli {

std::string format_report(std::string_view title, std::string_view body,
                          std::string_view endpoint) {
  std::string report = "report: " + text::slugify(title) + "\n";
  report += "words: " + std::to_string(text::word_count(body)) + "\n";
  if (const auto parsed = net::parse_endpoint(endpoint)) {
    report += "server: " + net::to_string(*parsed) + "\n";
  } else {
    report += "server: invalid (" + std::string(endpoint) + ")\n";
  }
  return report;
}

}  // namespace cli
