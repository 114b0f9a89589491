// The web console's assets by name (console.h).
#include "front/console/console.h"

namespace jr2rt {

const ConsoleAsset* FindConsoleAsset(std::string_view name) {
  if (name.empty()) name = "index.html";
  for (size_t i = 0; i < kConsoleAssetCount; ++i) {
    if (name == kConsoleAssets[i].path) return &kConsoleAssets[i];
  }
  return nullptr;
}

}  // namespace jr2rt
