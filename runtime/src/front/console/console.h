// The web console (#34, docs/console.md): its assets, embedded in the runner at build time
// (cmake/EmbedAssets.cmake writes console_assets.cpp from assets/), served by serve at /ui/.
// The console is a page and a script that call serve's own HTTP routes with a Caller's token:
// it has no route, no session and no check of its own.
#pragma once

#include <cstddef>
#include <string_view>

namespace jr2rt {

struct ConsoleAsset {
  const char* path;  // its name under /ui/: `index.html`, `console.js`, …
  const char* type;  // its media type
  const unsigned char* bytes;
  size_t size;
};

extern const ConsoleAsset kConsoleAssets[];
extern const size_t kConsoleAssetCount;

// The asset named `name` (the path after /ui/; "" is the page, index.html), or nullptr.
const ConsoleAsset* FindConsoleAsset(std::string_view name);

// The Content-Security-Policy of the console's answers: scripts, styles and images only from
// serve itself, never inline; requests only to serve; no frame may hold the page; no form
// posts anywhere (the console sends JSON with fetch, its token in a header).
inline constexpr const char* kConsolePolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
// The API's answers are JSON, never a page: nothing in them may run or be framed.
inline constexpr const char* kApiPolicy = "default-src 'none'; frame-ancestors 'none'";

}  // namespace jr2rt
