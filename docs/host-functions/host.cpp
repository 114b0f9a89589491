// The host function that shout.jr2 declares: `extern shout(words: Words, loud: bool) -> string`.
#include <cctype>
#include <string>

#include "shout.jr2.h"  // declares jr2gen::shout::shout and the struct Words

namespace jr2gen::shout {

::jr2rt::Json shout(const ::jr2rt::Json& args) {
  const Words words = args.at("words").get<Words>();  // the generated struct, from its JSON
  const bool loud = args.at("loud").get<bool>();
  if (words.text.empty()) {
    // A Failure: the invoking machine hears it as `on error` (error.reason, error.detail).
    throw ::jr2rt::Failure("nothing to shout", args.at("words"));
  }
  std::string out;
  for (int64_t n = 0; n < words.times; ++n) {
    for (char c : words.text) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out + (loud ? "!" : "");  // the result, as JSON: here a string, as `-> string` says
}

}  // namespace jr2gen::shout
