// `null` for an optional (tests/codegen/nulls.jr2): a default, a `var`'s initial value, a call's
// argument and an output compile (-Wall -Wextra -Werror, as every generated file) and are absent:
// std::nullopt inside the machine, JSON's null outside it. A machine with no transitions compiles
// too: its dispatch() does not read its event.
#include <gtest/gtest.h>

#include "nulls.jr2.h"

namespace {

using jr2rt::Event;
using jr2rt::Json;

struct QuietHost : jr2rt::MachineHost {
  std::map<int, jr2rt::InvokeSpec> invokes;
  void startTimer(int, jr2rt::Duration) override {}
  void cancelTimer(int) override {}
  void startInvoke(const jr2rt::InvokeSpec& spec) override { invokes[spec.id] = spec; }
  void cancelInvoke(int id) override { invokes.erase(id); }
  void log(const Json&) override {}
};

const Json kTicket = {{"id", "T-1"}};

Json Seen(Json rounds, Json note, Json prior) {
  return {{"rounds", std::move(rounds)},
          {"note", std::move(note)},
          {"prior", std::move(prior)},
          {"last", nullptr},
          {"count", nullptr},
          {"ticketRounds", nullptr}};
}

Json RunReviewer(const Json& input) {
  QuietHost host;
  auto m = jr2gen::nulls::Make_reviewer();
  m->start(host, input);
  EXPECT_EQ(host.invokes.size(), 1u);
  if (!host.invokes.empty()) {
    EXPECT_EQ(host.invokes.begin()->second.input, (Json{{"title", nullptr}}));
  }
  EXPECT_TRUE(m->dispatch({Event::Kind::kExternal, m->eventId("poke"), Json::object()}));
  EXPECT_TRUE(m->isDone());
  return m->output();
}

TEST(NullDefaults, AnAbsentParameterTakesItsNullDefault) {
  EXPECT_EQ(RunReviewer({{"ticket", kTicket}}), Seen(nullptr, nullptr, nullptr));
  EXPECT_EQ(RunReviewer({{"ticket", kTicket}, {"reviewRounds", nullptr}, {"note", nullptr}}),
            Seen(nullptr, nullptr, nullptr));
}

TEST(NullDefaults, AGivenValueReplacesTheNullDefault) {
  const Json prior = {{"id", "T-0"}, {"rounds", 2}};
  EXPECT_EQ(
      RunReviewer({{"ticket", kTicket}, {"reviewRounds", 3}, {"note", "x"}, {"prior", prior}}),
      Seen(3, "x", prior));
}

TEST(NullDefaults, ARecordFieldDefaultsToNull) {
  const auto t = jr2rt::FromJson<jr2gen::nulls::Ticket>(kTicket, "nulls.jr2:1:1");
  EXPECT_FALSE(t.rounds.has_value());
  EXPECT_FALSE(jr2gen::nulls::Ticket{}.rounds.has_value());
}

TEST(NullDefaults, ANullArgumentAndANullOutputAreJsonNull) {
  QuietHost host;
  auto m = jr2gen::nulls::Make_parent();
  m->start(host, {{"ticket", kTicket}});
  ASSERT_EQ(host.invokes.size(), 1u);
  const auto child = host.invokes.begin()->second;
  const Json ticket = {{"id", "T-1"}, {"rounds", nullptr}};
  EXPECT_EQ(child.input, (Json{{"ticket", ticket}, {"reviewRounds", nullptr}, {"note", nullptr}}));
  EXPECT_TRUE(m->dispatch({Event::Kind::kDone, child.id, Json::object()}));
  EXPECT_TRUE(m->isDone());
  EXPECT_EQ(m->output(), nullptr);
}

TEST(NullDefaults, APoolsNullDefaultsAreJsonNull) {
  jr2rt::Registry r;
  jr2gen::nulls::RegisterWorkflows(r);
  const auto* wf = r.workflow("reviewers");
  ASSERT_NE(wf, nullptr);
  ASSERT_NE(wf->pool, nullptr);
  const Json input = wf->pool->parseInput(nullptr);
  EXPECT_EQ(input, (Json{{"file", "tickets.json"},
                         {"reviewRounds", nullptr},
                         {"note", nullptr},
                         {"prior", nullptr}}));
  EXPECT_EQ(wf->pool->parseInput(Json{{"reviewRounds", 4}})["reviewRounds"], 4);
  EXPECT_THROW(wf->pool->parseInput(Json{{"reviewRounds", "four"}}), jr2rt::SchemaError);
}

// `x == null` and `x != null` (nulls.jr2's `compare`): an optional is null when absent, in
// either order of the operands, whatever its type; a json is null when it holds JSON's null.
Json Compare(const Json& input) {
  QuietHost host;
  auto m = jr2gen::nulls::Make_compare();
  m->start(host, input);
  EXPECT_TRUE(m->isDone());
  Json out = m->output();  // not `return {…}`: a braced Json of one value is an array
  return out;
}

TEST(NullComparisons, AnAbsentOptionalIsNullAndAPresentOneIsNot) {
  EXPECT_EQ(Compare(Json::object()), (Json{{"count", true},
                                           {"countSet", false},
                                           {"ticket", true},
                                           {"ticketReversed", false},
                                           {"note", true},
                                           {"rounds", false},
                                           {"loose", true},
                                           {"looseSet", false}}));
  // Present values that JSON would call empty or false are still present: 0, "", a record
  // whose fields are all null; and a json that holds something other than null is not null.
  EXPECT_EQ(Compare({{"count", 0},
                     {"ticket", {{"id", "T-1"}, {"rounds", nullptr}}},
                     {"note", ""},
                     {"loose", Json::array()}}),
            (Json{{"count", false},
                  {"countSet", true},
                  {"ticket", false},
                  {"ticketReversed", true},
                  {"note", false},
                  {"rounds", true},
                  {"loose", false},
                  {"looseSet", true}}));
  EXPECT_EQ(Compare({{"ticket", {{"id", "T-1"}, {"rounds", 2}}}, {"loose", 0}})["rounds"], false);
  // JSON's null given for a json is null; given for an optional, it is absent.
  EXPECT_EQ(Compare({{"count", nullptr}, {"loose", nullptr}})["count"], true);
  EXPECT_EQ(Compare({{"count", nullptr}, {"loose", nullptr}})["loose"], true);
}

TEST(NoTransitions, AMachineWithNoTransitionsIsDoneAtOnce) {
  QuietHost host;
  auto m = jr2gen::nulls::Make_idle();
  m->start(host, Json::object());
  EXPECT_TRUE(m->isDone());
  EXPECT_EQ(m->activeStates(), std::vector<std::string>{"finished"});
  EXPECT_FALSE(m->dispatch({Event::Kind::kExternal, 0, Json::object()}));
}

}  // namespace
