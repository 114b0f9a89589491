// plugins: a registry of named callbacks. Names are compared trimmed and case-insensitively,
// with core's string helpers.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace plugins {

using Callback = std::function<std::string(std::string_view)>;

class Registry {
 public:
  // Registers `callback` under `name`. False, and nothing registered, when the name is blank,
  // already taken, or the callback is empty.
  bool add(std::string_view name, Callback callback);

  // Removes the plugin `name`; false when there is none.
  bool remove(std::string_view name);

  // What the plugin `name` returns for `input`; nothing when there is no such plugin.
  std::optional<std::string> run(std::string_view name, std::string_view input) const;

  // The registered names, normalized, in alphabetical order.
  std::vector<std::string> names() const;

 private:
  std::map<std::string, Callback> callbacks_;
};

}  // namespace plugins
