// cli: the report the `cli` program prints, made with text and net.
#pragma once

#include <string>
#include <string_view>

namespace cli {

// A report on a document sent to a server:
//
//   report: <slug of title>
//   words: <words in body>
//   server: <host:port>            (or "server: invalid (<endpoint as given>)")
std::string format_report(std::string_view title, std::string_view body, std::string_view endpoint);

}  // namespace cli
