// core: the string helpers every other package builds on.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace core {

// `s` without its leading and trailing whitespace.
std::string trim(std::string_view s);

// The parts of `s` between the separators `sep`, empty parts included: split("a,,b", ',') is
// {"a", "", "b"}, and split("", ',') is {""}.
std::vector<std::string> split(std::string_view s, char sep);

// The parts of `s` between runs of whitespace, without empty parts.
std::vector<std::string> split_words(std::string_view s);

// `s` with ASCII letters in lower case.
std::string to_lower(std::string_view s);

// Whether `s` is non-empty and made only of the digits 0-9.
bool is_digits(std::string_view s);

}  // namespace core
