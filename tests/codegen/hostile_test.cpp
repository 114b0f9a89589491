// tests/codegen/hostile.jr2: the text a user writes reaches the running machine byte for byte —
// through the codegen Printer (a `$` is not a substitution), the line wrapper (a long literal
// splits into two), CppString (`??` is escaped, so -Wtrigraphs is quiet under -Werror) and
// CommentText (a description ending in a backslash or holding a newline stays a comment). That
// the file compiles at all is half the test.
#include <gtest/gtest.h>

#include "hostile.jr2.h"
#include "quiet_host.h"

namespace {

using jr2rt::Event;
using jr2rt::Json;

using jr2test::QuietHost;

TEST(HostileText, StringsReachTheMachineAsWritten) {
  QuietHost host;
  auto m = jr2gen::hostile::Make_hostile();
  // (`?\?` in this file for the same reason: no `??` in a C++ literal.)
  m->start(host, {{"item", {{"id", "$id$ ?\?="}}}});
  ASSERT_TRUE(m->dispatch({Event::Kind::kExternal, m->eventId("go_"), Json{{"note", "?\?/ $n$"}}}));
  ASSERT_TRUE(m->isDone());
  EXPECT_EQ(m->output(), Json("start $$ a\\tb \"q\" $x$ ?\?= ?\?\?/ | ?\?/ $n$ \\\\ ?\?/ ?"));
}

TEST(HostileText, DescriptionsReachTheGateAsWritten) {
  auto m = jr2gen::hostile::Make_hostile();
  const std::vector<jr2rt::EventSpec> specs = m->eventSpecs();
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0].description, "Go on, $now$ \\");
  ASSERT_EQ(specs[0].fields.size(), 1u);
  EXPECT_EQ(specs[0].fields[0].description, "end \\");
}

TEST(HostileText, AKeywordFieldKeepsItsJsonName) {
  jr2gen::hostile::Item item;
  EXPECT_EQ(item.class_, "a\\tb \"q\" $x$ ?\?= ?\?\?/") << "the field's default";
  const Json j = item;
  EXPECT_TRUE(j.contains("class"));
}

}  // namespace
