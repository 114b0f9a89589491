// tests/codegen/least.jr2: the built-in `min` (#36) as generated code computes it.
#include <gtest/gtest.h>

#include "least.jr2.h"
#include "quiet_host.h"

namespace {

using jr2rt::Event;
using jr2rt::Json;

Json Drive(int64_t a, int64_t b, double x) {
  jr2test::QuietHost host;
  auto m = jr2gen::least::Make_least();
  m->start(host, Json{{"a", a}, {"b", b}, {"x", x}});
  EXPECT_TRUE(m->dispatch({Event::Kind::kExternal, m->eventId("compute"), Json::object()}));
  EXPECT_TRUE(m->isDone());
  return m->output().take();
}

TEST(LeastValues, TheSmallerOfTwoIntsIsAnInt) {
  const Json out = Drive(8, 3, 100.0);
  ASSERT_TRUE(out["ints"].is_number_integer()) << out.dump();
  EXPECT_EQ(out["ints"], 3);
  EXPECT_EQ(Drive(-5, 3, 0.0)["ints"], -5);
  EXPECT_EQ(Drive(4, 4, 0.0)["ints"], 4);
}

TEST(LeastValues, AFloatOnEitherSideMakesAFloat) {
  const Json out = Drive(2, 9, 2.5);
  ASSERT_TRUE(out["mixed"].is_number_float()) << out.dump();
  EXPECT_EQ(out["mixed"].get<double>(), 2.0);
  EXPECT_EQ(Drive(7, 9, 1.5)["mixed"].get<double>(), 1.5);
}

TEST(LeastValues, NestedAndNegative) {
  EXPECT_EQ(Drive(8, 3, 0.0)["nested"], -1);
  EXPECT_EQ(Drive(-8, 3, 0.0)["nested"], -8);
}

}  // namespace
