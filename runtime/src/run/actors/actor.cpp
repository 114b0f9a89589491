// An actor restored from its snapshot (Actor::Restore): the kind it was, made again, then
// given its state back.
#include "run/actors/actor.h"

#include "run/actors/dispatch_actor.h"
#include "run/actors/machine_actor.h"
#include "run/pool/pool_actor.h"

namespace jr2rt {

// Every worker of a Pool is an actor: a word more here is up to 16 bytes a parked worker (#33's
// `parked_memory`, at most 1 KB a worker, docs/performance.md). On LP64 with libstdc++: the
// vtable pointer, run_, parent_, prefix_ (32), key_ with the two flags, alive_ (16), version_.
static_assert(sizeof(void*) != 8 || sizeof(std::string) != 32 || sizeof(Actor) <= 88,
              "Actor grew: keep key_, ended_ and poolBelow_ in one word");

namespace {

void AppendKey(std::string& out, std::string_view key) {
  // The members named here are the runtime's own (`actor`, `children`, …): plain ASCII.
  for (const char c : key) {
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20 ||
        static_cast<unsigned char>(c) >= 0x80) {
      AppendJson(out, Json(std::string(key)));
      out += ':';
      return;
    }
  }
  out += '"';
  out += key;
  out += "\":";
}

}  // namespace

void WriteMerged(std::string& out, const Json& base, std::string_view key,
                 const std::function<void(std::string&)>& write) {
  WriteMerged(out, base, {{key, write}});
}

void WriteMerged(std::string& out, const Json& base, std::initializer_list<Written> written) {
  out += '{';
  auto next = written.begin();
  auto put = [&] {
    if (out.back() != '{') out += ',';
    AppendKey(out, next->first);
    next->second(out);
    ++next;
  };
  for (const auto& [name, value] : base.items()) {
    while (next != written.end() && next->first <= std::string_view(name)) put();
    bool replaced = false;  // written by its writer instead
    for (const Written& w : written) replaced = replaced || w.first == std::string_view(name);
    if (replaced) continue;
    if (out.back() != '{') out += ',';
    AppendKey(out, name);
    AppendJson(out, value);
  }
  while (next != written.end()) put();
  out += '}';
}

Json Actor::Over(Json base, const Json& over) {
  for (const auto& [key, value] : over.items()) {
    if (value.is_null()) {
      base.erase(key);
    } else {
      base[key] = value;
    }
  }
  return base;
}

void Actor::observeText(std::string& out, const Json& over) const {
  AppendJson(out, Over(observe(), over));
}

std::unique_ptr<Actor> Actor::Restore(Run& run, Actor* parent, const Json& snap, int keyNow) {
  const std::string kind = snap.at("kind").get<std::string>();
  const int key = keyNow >= 0 ? keyNow : snap.at("key").get<int>();
  const std::string prefix = snap.at("prefix").get<std::string>();
  const std::string name = snap.at("name").get<std::string>();
  if (kind == "dispatch") {
    auto a = std::make_unique<DispatchActor>(run, parent, key, prefix, name, snap.value("item", ""),
                                             snap.value("pool", ""));
    a->restoreFrom(snap);
    return a;
  }
  if (kind == "pool") {
    const PoolSpec* spec = run.registry().pool(name);
    if (spec == nullptr)
      throw NoLongerFits("the stored run names a pool `" + name + "` this runner lacks");
    auto a = std::make_unique<PoolActor>(run, parent, key, prefix, *spec);
    a->restoreFrom(snap);
    return a;
  }
  auto a = std::make_unique<MachineActor>(run, parent, key, prefix, name);
  a->restoreFrom(snap);
  return a;
}

}  // namespace jr2rt
