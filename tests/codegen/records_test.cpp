// tests/codegen/records.jr2: record literals and chains of `+` as generated code builds them — a
// record made at once when written in its fields' order, filled field by field when not, each
// field left out its declared default; a chain of `+` one call; a literal with a NUL in it whole.
#include <gtest/gtest.h>

#include "quiet_host.h"
#include "records.jr2.h"

namespace {

using jr2rt::Event;
using jr2rt::Json;

Json Drive(const std::string& first, const std::string& who) {
  jr2test::QuietHost host;
  auto m = jr2gen::records::Make_shapes();
  m->start(host, Json{{"first", first}});
  EXPECT_TRUE(m->dispatch({Event::Kind::kExternal, m->eventId("go"), Json{{"who", who}}}));
  EXPECT_TRUE(m->isDone());
  return m->output().take();
}

TEST(RecordLiterals, InTheFieldsOrderEveryFieldAsWritten) {
  const Json out = Drive("f", "w");
  EXPECT_EQ(out["ordered"], (Json{{"name", "f"},
                                  {"size", 1},
                                  {"note", "n"},
                                  {"inner", {{"n", 2}, {"tag", "t"}}},
                                  {"ratio", 1.5},
                                  {"flags", Json::array()}}))
      << out.dump();
}

TEST(RecordLiterals, FieldsLeftOutTakeTheirDefaults) {
  const Json out = Drive("f", "w");
  // `size` and `flags` declared with defaults, `note` and `inner` optional: null.
  EXPECT_EQ(out["gaps"], (Json{{"name", "g"},
                               {"size", 3},
                               {"note", nullptr},
                               {"inner", nullptr},
                               {"ratio", 0.25},
                               {"flags", {"x"}}}))
      << out.dump();
}

TEST(RecordLiterals, WrittenInAnotherOrderTheSameRecord) {
  const Json out = Drive("f", "w");
  EXPECT_EQ(out["reversed"], (Json{{"name", "w"},
                                   {"size", 3},
                                   {"note", nullptr},
                                   {"inner", {{"n", 7}, {"tag", "r"}}},
                                   {"ratio", 2.5},
                                   {"flags", {"x"}}}))
      << out.dump();
}

TEST(StringChains, OneCallInOrder) {
  EXPECT_EQ(Drive("ab", "cd")["text"], "<ab|cd>(ab)");
  EXPECT_EQ(Drive("", "")["text"], "<|>()");
}

TEST(StringChains, ALiteralWithANulIsWhole) {
  const Json out = Drive("z", "w");
  EXPECT_EQ(out["zero"].get<std::string>(), std::string("a\0bz", 4));
}

}  // namespace
