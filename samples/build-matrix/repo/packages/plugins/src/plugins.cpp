#include "plugins/plugins.h"

#include <utility>

#include "core/core.h"

namespace plugins {

namespace {

std::string normalize(std::string_view name) { return core::to_lower(core::trim(name)); }

}  // namespace

bool Registry::add(std::string_view name, Callback callback) {
  const std::string key = normalize(name);
  if (key.empty() || !callback) return false;
  return callbacks_.emplace(key, std::move(callback)).second;
}

bool Registry::remove(std::string_view name) { return callbacks_.erase(normalize(name)) != 0; }

std::optional<std::string> Registry::run(std::string_view name, std::string_view input) const {
  const auto it = callbacks_.find(normalize(name));
  if (it == callbacks_.end()) return std::nullopt;
  return it->second(input);
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  out.reserve(callbacks_.size());
  for (const auto& entry : callbacks_) out.push_back(entry.first);
  return out;
}

}  // namespace plugins
