// The durable step of bench/pg/pg_items.jr2: the same trivial work as the peers' step (a value
// computed from the item), as host functions (docs/host-functions.md).
#include "pg_items.jr2.h"

jr2rt::Json jr2gen::pg_items::compute(const jr2rt::Json& args) {
  return args.at("n").get<long long>() * 2 + 1;
}

jr2rt::Json jr2gen::pg_items::compute_again(const jr2rt::Json& args) {
  return args.at("n").get<long long>() * 2 + 1;
}
