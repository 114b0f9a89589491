// text: counting and naming things in prose, on top of core's string helpers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace text {

// How many whitespace-separated words `s` has.
std::size_t word_count(std::string_view s);

// `s` as a URL slug: lower case ASCII letters and digits, runs of anything else turned into a
// single '-', none at either end. slugify("  Hello, World! ") is "hello-world".
std::string slugify(std::string_view s);

}  // namespace text
