// tests/codegen/loose.jr2: `json` values in expressions, as generated code computes them through
// the runtime's calls (jr2/json_value.h) — that the file compiles is half the test.
#include <gtest/gtest.h>

#include "loose.jr2.h"
#include "quiet_host.h"

namespace {

using jr2rt::Event;
using jr2rt::Json;

using jr2test::QuietHost;

Json Drive(const Json& data, bool flag) {
  QuietHost host;
  auto m = jr2gen::loose::Make_loose();
  m->start(host, Json{{"data", data}});
  EXPECT_TRUE(m->dispatch({Event::Kind::kExternal, m->eventId("go"), Json{{"flag", flag}}}));
  EXPECT_TRUE(m->isDone());
  return m->output().take();
}

TEST(LooseValues, TwoMembersCompareAsJson) {
  EXPECT_EQ(Drive(Json{{"a", {1, "x"}}, {"b", {1, "x"}}}, true)["same"], true);
  EXPECT_EQ(Drive(Json{{"a", {1, "x"}}, {"b", {1, "y"}}}, true)["same"], false);
  EXPECT_EQ(Drive(Json{{"a", 1}, {"b", 1.0}}, true)["same"], true) << "JSON's equality of numbers";
  EXPECT_EQ(Drive(Json{{"b", nullptr}}, true)["same"], true) << "a missing member reads as null";
}

TEST(LooseValues, AConditionalTakesAMemberOrALiteral) {
  EXPECT_EQ(Drive(Json{{"a", {{"deep", 1}}}}, true)["picked"], (Json{{"deep", 1}}));
  EXPECT_EQ(Drive(Json{{"a", {{"deep", 1}}}}, false)["picked"], "none");
}

TEST(LooseValues, AFloatLiteralStaysAFloat) {
  const Json out = Drive(Json::object(), true);
  ASSERT_TRUE(out["fallback"].is_number_float()) << out.dump();
  EXPECT_EQ(out["fallback"].get<double>(), 1.0);
  EXPECT_EQ(Drive(Json{{"missing", "here"}}, true)["fallback"], "here");
}

}  // namespace
