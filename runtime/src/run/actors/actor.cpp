// An actor restored from its snapshot (Actor::Restore): the kind it was, made again, then
// given its state back.
#include "run/actors/actor.h"

#include "run/actors/dispatch_actor.h"
#include "run/actors/machine_actor.h"
#include "run/pool/pool_actor.h"

namespace jr2rt {

std::unique_ptr<Actor> Actor::Restore(Run& run, Actor* parent, const Json& snap) {
  const std::string kind = snap.at("kind").get<std::string>();
  const int key = snap.at("key").get<int>();
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
