#include "text/text.h"

#include "core/core.h"

namespace text {

std::size_t word_count(std::string_view s) { return core::split_words(s).size(); }

std::string slugify(std::string_view s) {
  const std::string lower = core::to_lower(core::trim(s));
  std::string slug;
  bool pending_dash = false;
  for (char c : lower) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!keep) {
      pending_dash = true;
      continue;
    }
    if (pending_dash && !slug.empty()) slug += '-';
    pending_dash = false;
    slug += c;
  }
  return slug;
}

}  // namespace text
