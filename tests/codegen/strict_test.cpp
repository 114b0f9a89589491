// What comes from outside is read strictly by the generated code (tests/codegen/strict.jr2): under
// a StrictFields scope a record refuses a field it does not have, at any depth, with the path and
// the closest field; outside one it is lenient. An `int` takes only a whole number in 64 bits,
// wherever it sits, with or without a scope.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "strict.jr2.h"

namespace {

using jr2rt::Json;

// A machine started with no run around it: its timers and children go nowhere.
struct NoHost : jr2rt::MachineHost {
  void startTimer(int, jr2rt::Duration) override {}
  void cancelTimer(int) override {}
  void startInvoke(const jr2rt::InvokeSpec&) override {}
  void cancelInvoke(int) override {}
  void log(const Json&) override {}
};

// What `fn` throws as a SchemaError, or "nothing thrown".
std::string Refusal(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const jr2rt::SchemaError& e) {
    return e.what();
  }
  return "nothing thrown";
}

const char* const kRange = "between -9223372036854775808 and 9223372036854775807";
const Json kReview = {{"id", "R-1"}, {"rounds", 2}};

Json With(Json base, const Json::json_pointer& at, Json value) {
  base[at] = std::move(value);
  return base;
}

std::string InputRefusal(const Json& input) {
  auto m = jr2gen::strict::Make_reviewer();
  return Refusal([&] { m->checkInput(input); });
}

// ---- unknown fields -----------------------------------------------------------------------------

TEST(StrictFields, AnUnknownParameterIsRefusedWithTheClosestName) {
  jr2rt::StrictFields strict;
  EXPECT_EQ(InputRefusal({{"review", kReview}, {"rouns", 2}}),
            "`input of reviewer` has no field `rouns`; did you mean `rounds`? Its fields are "
            "review, rounds, note");
  EXPECT_EQ(InputRefusal({{"review", kReview}, {"zzzzzzz", 2}}),
            "`input of reviewer` has no field `zzzzzzz`; its fields are review, rounds, note");
  EXPECT_EQ(InputRefusal({{"review", kReview}, {"rounds", 4}, {"note", "x"}}), "nothing thrown");
}

TEST(StrictFields, NestedRecordsNameTheirPath) {
  jr2rt::StrictFields strict;
  EXPECT_EQ(InputRefusal({{"review", With(kReview, "/chek"_json_pointer, nullptr)}}),
            "`input of reviewer.review` has no field `chek`; did you mean `check`? Its fields are "
            "id, rounds, scores, weights, limit, ratio, wait, check, checks");
  const Json checks = {{{"name", "a"}, {"passed", true}}, {{"name", "b"}, {"pased", true}}};
  EXPECT_EQ(InputRefusal({{"review", With(kReview, "/checks"_json_pointer, checks)}}),
            "`input of reviewer.review.checks[1]` has no field `pased`; did you mean `passed`? "
            "Its fields are name, passed");
  const Json check = {{"name", "a"}, {"passed", true}, {"nmae", "b"}};
  EXPECT_EQ(InputRefusal({{"review", With(kReview, "/check"_json_pointer, check)}}),
            "`input of reviewer.review.check` has no field `nmae`; did you mean `name`? Its "
            "fields are name, passed");
}

TEST(StrictFields, ASchemaErrorCarriesThePathOfTheFieldItIsAbout) {
  jr2rt::StrictFields strict;
  auto m = jr2gen::strict::Make_reviewer();
  const Json checks = {{{"name", "a"}, {"passed", true}}, {{"name", "b"}, {"pased", true}}};
  try {
    m->checkInput({{"review", With(kReview, "/checks"_json_pointer, checks)}});
    FAIL() << "a misspelled field must be refused";
  } catch (const jr2rt::SchemaError& e) {
    EXPECT_EQ(e.path(), "input of reviewer.review.checks[1]");
  }
  try {
    m->checkInput({{"review", With(kReview, "/rounds"_json_pointer, "two")}});
    FAIL() << "a string where a number goes must be refused";
  } catch (const jr2rt::SchemaError& e) {
    EXPECT_EQ(e.path(), "input of reviewer.review.rounds");
  }
}

TEST(StrictFields, OutsideTheScopeExtraFieldsAreIgnored) {
  const Json extra = {{"review", With(kReview, "/chek"_json_pointer, 1)}, {"rouns", 2}};
  EXPECT_FALSE(jr2rt::StrictFields::active());
  EXPECT_EQ(InputRefusal(extra), "nothing thrown");
  {
    jr2rt::StrictFields strict;
    EXPECT_TRUE(jr2rt::StrictFields::active());
    {
      jr2rt::LenientFields lenient;  // suspends the enclosing scope
      EXPECT_FALSE(jr2rt::StrictFields::active());
      EXPECT_EQ(InputRefusal(extra), "nothing thrown");
    }
    EXPECT_NE(InputRefusal(extra), "nothing thrown");
    // `json` → record inside expressions is lenient whatever the scope (width subtyping).
    EXPECT_EQ(jr2rt::FromJson<jr2gen::strict::Review>(With(kReview, "/extra"_json_pointer, 1),
                                                      "strict.jr2:1:1")
                  .rounds,
              2);
    EXPECT_TRUE(jr2rt::StrictFields::active()) << "FromJson restores the scope it suspended";
  }
  EXPECT_FALSE(jr2rt::StrictFields::active());
  // A started machine reads the same input leniently: a Pool's worker gets items with more fields.
  NoHost host;
  auto m = jr2gen::strict::Make_reviewer();
  m->start(host, extra);
  EXPECT_EQ(m->activeStates(), std::vector<std::string>{"counting"});
  // Even under a scope: start() and restore() read leniently (checkInput is the strict check).
  jr2rt::StrictFields strict;
  auto worker = jr2gen::strict::Make_reviewer();
  worker->start(host, extra);
  EXPECT_EQ(worker->activeStates(), std::vector<std::string>{"counting"});
  Json saved = worker->snapshot();
  saved["context"]["review"]["dropped"] = "a field an older version had";
  auto restored = jr2gen::strict::Make_reviewer();
  restored->restore(host, saved);
  EXPECT_EQ(restored->activeStates(), std::vector<std::string>{"counting"});
  EXPECT_TRUE(jr2rt::StrictFields::active());
}

TEST(StrictFields, PayloadsAreCheckedAtTheirEvent) {
  auto m = jr2gen::strict::Make_reviewer();
  const int tick = m->eventId("tick");
  EXPECT_EQ(Refusal([&] { m->checkPayload(tick, {{"count", 1}, {"cont", 2}}); }), "nothing thrown");
  jr2rt::StrictFields strict;
  EXPECT_EQ(Refusal([&] {
              m->checkPayload(tick, {{"count", 1}, {"cont", 2}});
            }),
            "`event tick` has no field `cont`; did you mean `count`? Its fields are count, note");
  EXPECT_EQ(Refusal([&] {
              m->checkPayload(tick, {{"count", 1.5}});
            }),
            std::string("`event tick.count` must be a whole number ") + kRange + ", not 1.5");
  EXPECT_EQ(Refusal([&] {
              m->checkPayload(tick, {{"note", "x"}});
            }),
            "`event tick` needs the field `count`");
  EXPECT_EQ(Refusal([&] {
              m->checkPayload(tick, {{"count", 3.0}, {"note", nullptr}});
            }),
            "nothing thrown");
}

// ---- integers -----------------------------------------------------------------------------------

TEST(StrictInts, OutOfRangeOrFractionalNumbersAreRefusedWithTheirPath) {
  // Not under a scope: integers are checked everywhere.
  const std::string want =
      std::string("`input of reviewer.rounds` must be a whole number ") + kRange + ", not ";
  EXPECT_EQ(InputRefusal({{"review", kReview}, {"rounds", 1.5}}), want + "1.5");
  EXPECT_EQ(InputRefusal({{"review", kReview}, {"rounds", 1e308}}), want + "1e+308");
  EXPECT_EQ(InputRefusal(Json::parse(R"({"review": {"id": "R", "rounds": 1},
                                         "rounds": 18446744073709551616})")),
            want + "1.8446744073709552e+19");
  EXPECT_EQ(InputRefusal(Json::parse(R"({"review": {"id": "R", "rounds": 1},
                                         "rounds": 9223372036854775808})")),
            want + "9223372036854775808");
  // From 2^53 on, a number with a fraction or an exponent may not be the integer written:
  // -9223372036854775809 parses as the double -2^63, 9007199254740993.0 as 2^53.
  const std::string hint =
      " (from 2^53 on, write a whole number without a fraction or an exponent)";
  EXPECT_EQ(InputRefusal(Json::parse(R"({"review": {"id": "R", "rounds": 1},
                                         "rounds": -9223372036854775809})")),
            want + "-9.223372036854776e+18" + hint);
  EXPECT_EQ(InputRefusal(Json::parse(R"({"review": {"id": "R", "rounds": 1},
                                         "rounds": 9007199254740993.0})")),
            want + "9.007199254740992e+15" + hint);
  EXPECT_EQ(InputRefusal({{"review", kReview}, {"rounds", "3"}}),
            "`input of reviewer.rounds` must be a whole number, not a string");
  EXPECT_EQ(InputRefusal({{"review", kReview}, {"rounds", true}}),
            "`input of reviewer.rounds` must be a whole number, not a boolean");
}

TEST(StrictInts, WholeNumbersInRangeAreTaken) {
  NoHost host;
  auto rounds = [&](const char* text) {
    auto m = jr2gen::strict::Make_reviewer();
    m->start(host, Json::parse(std::string(R"({"review": {"id": "R", "rounds": 1}, "rounds": )") +
                               text + "}"));
    return static_cast<const jr2gen::strict::reviewer_machine&>(*m).context().rounds;
  };
  EXPECT_EQ(rounds("3.0"), 3);
  EXPECT_EQ(rounds("1e2"), 100);
  EXPECT_EQ(rounds("-0.0"), 0);
  EXPECT_EQ(rounds("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(rounds("9007199254740991.0"), (int64_t{1} << 53) - 1);
  EXPECT_EQ(rounds("-9.007199254740991e15"), 1 - (int64_t{1} << 53));
  EXPECT_EQ(rounds("9007199254740993"), (int64_t{1} << 53) + 1) << "an integer is exact";
  EXPECT_EQ(rounds("9223372036854775807"), INT64_MAX);
  // A float field takes an integer.
  auto m = jr2gen::strict::Make_reviewer();
  m->start(host, {{"review", With(kReview, "/ratio"_json_pointer, 2)}});
  EXPECT_EQ(static_cast<const jr2gen::strict::reviewer_machine&>(*m).context().review.ratio, 2.0);
}

TEST(StrictInts, ElementsOfListsMapsOptionalsAndDurations) {
  auto review = [](const char* pointer, Json value) {
    return Json{{"review", With(kReview, Json::json_pointer(pointer), std::move(value))}};
  };
  const std::string tail = std::string(" must be a whole number ") + kRange + ", not ";
  EXPECT_EQ(InputRefusal(review("/scores", {1, 2, 2.5})),
            "`input of reviewer.review.scores[2]`" + tail + "2.5");
  EXPECT_EQ(InputRefusal(review("/scores", {1, nullptr})),
            "`input of reviewer.review.scores[1]` must be a whole number, not null");
  EXPECT_EQ(InputRefusal(review("/scores", "1, 2")),
            "`input of reviewer.review.scores` must be a list, not a string");
  EXPECT_EQ(InputRefusal(review("/weights", {{"a", 1}, {"b", 1e308}})),
            "`input of reviewer.review.weights[\"b\"]`" + tail + "1e+308");
  EXPECT_EQ(InputRefusal(review("/limit", Json::parse("9223372036854775808"))),
            "`input of reviewer.review.limit`" + tail + "9223372036854775808");
  EXPECT_EQ(InputRefusal(review("/wait", 1.5)), "`input of reviewer.review.wait`" + tail + "1.5");
  EXPECT_EQ(InputRefusal(review("/wait", "1s")),
            "`input of reviewer.review.wait` must be a whole number of milliseconds, not a string");
  EXPECT_EQ(InputRefusal(review("/checks", {{{"name", "a"}, {"passed", 1}}})),
            "`input of reviewer.review.checks[0].passed` must be a boolean, not a number");
  EXPECT_EQ(InputRefusal(review("/check", "ok")),
            "`input of reviewer.review.check` must be an object, not a string");
  EXPECT_EQ(InputRefusal(review("/scores", {1, 2.0, -3})), "nothing thrown");
  // In expressions: a `json` that does not fit is a defect naming where.
  EXPECT_THROW(jr2rt::FromJson<int64_t>(Json(1.5), "strict.jr2:1:1"), jr2rt::Defect);
  EXPECT_THROW(jr2rt::FromJson<std::vector<int64_t>>(Json{1, 1e300}, "strict.jr2:1:1"),
               jr2rt::Defect);
  EXPECT_EQ(jr2rt::FromJson<int64_t>(Json(4.0), "strict.jr2:1:1"), 4);
  try {
    jr2rt::FromJson<std::map<std::string, int64_t>>(Json{{"a", 0.5}}, "strict.jr2:7:3");
    FAIL();
  } catch (const jr2rt::Defect& d) {
    EXPECT_EQ(std::string(d.what()), std::string("a value does not fit its type at strict.jr2:7:3: "
                                                 "`value[\"a\"]` must be a whole number ") +
                                         kRange + ", not 0.5");
  }
}

// ---- checkInput ---------------------------------------------------------------------------------

TEST(CheckInput, RefusesWhatStartRefusesAndChangesNothing) {
  struct CountingHost : jr2rt::MachineHost {
    int calls = 0;
    void startTimer(int, jr2rt::Duration) override { ++calls; }
    void cancelTimer(int) override { ++calls; }
    void startInvoke(const jr2rt::InvokeSpec&) override { ++calls; }
    void cancelInvoke(int) override { ++calls; }
    void log(const Json&) override { ++calls; }
  };
  const std::vector<Json> bad = {
      Json::array(),
      Json::object(),
      {{"review", "R-1"}},
      {{"review", {{"id", "R-1"}}}},
      {{"review", kReview}, {"rounds", 1.5}},
      {{"review", kReview}, {"note", 5}},
      {{"review", With(kReview, "/scores"_json_pointer, {1e19})}},
  };
  for (const Json& input : bad) {
    auto checked = jr2gen::strict::Make_reviewer();
    const std::string byCheck = Refusal([&] { checked->checkInput(input); });
    EXPECT_NE(byCheck, "nothing thrown") << input.dump();
    EXPECT_TRUE(checked->activeStates().empty()) << "checkInput does not start the machine";
    CountingHost host;
    auto started = jr2gen::strict::Make_reviewer();
    EXPECT_EQ(Refusal([&] { started->start(host, input); }), byCheck) << input.dump();
  }
  EXPECT_EQ(InputRefusal(Json::array()), "the input of `reviewer` must be an object");
  EXPECT_EQ(InputRefusal(Json::object()), "`input of reviewer` needs the field `review`");
  EXPECT_EQ(InputRefusal({{"review", {{"id", "R-1"}}}}),
            "`input of reviewer.review` needs the field `rounds`");

  // A running machine's context is untouched by a check of another input.
  CountingHost host;
  auto m = jr2gen::strict::Make_reviewer();
  m->start(host, {{"review", kReview}, {"rounds", 7}});
  const int calls = host.calls;
  const Json before = m->snapshot();
  m->checkInput({{"review", With(kReview, "/id"_json_pointer, "R-2")}, {"note", "other"}});
  EXPECT_EQ(m->snapshot(), before);
  EXPECT_EQ(host.calls, calls) << "checkInput asks nothing of a host";
}

// ---- the Pool's input and its Source's wake event -----------------------------------------------

TEST(PoolInput, UnknownFieldsBadIntsAndDefaults) {
  const jr2rt::PoolSpec& pool = jr2gen::strict::review_pool_pool();
  EXPECT_EQ(pool.cap(pool.parseInput(Json::object())), 2);
  EXPECT_EQ(pool.cap(pool.parseInput({{"jobs", nullptr}})), 2) << "null takes the default";
  EXPECT_EQ(pool.cap(pool.parseInput({{"jobs", 3.0}})), 3);
  EXPECT_EQ(
      Refusal([&] {
        pool.parseInput({{"jobs", 1e308}});
      }),
      std::string("`input of review_pool.jobs` must be a whole number ") + kRange + ", not 1e+308");
  EXPECT_EQ(Refusal([&] { pool.parseInput(Json::parse(R"({"jobs": 18446744073709551616})")); }),
            std::string("`input of review_pool.jobs` must be a whole number ") + kRange +
                ", not 1.8446744073709552e+19");
  EXPECT_EQ(Refusal([&] { pool.parseInput({{"jbos", 3}}); }), "nothing thrown");
  jr2rt::StrictFields strict;
  EXPECT_EQ(Refusal([&] {
              pool.parseInput({{"jbos", 3}});
            }),
            "`input of review_pool` has no field `jbos`; did you mean `jobs`? Its fields are "
            "file, jobs");
}

TEST(PoolInput, TheWakeEventIsListedAndChecked) {
  const jr2rt::SourceSpec& source = jr2gen::strict::review_pool_pool().source;
  EXPECT_EQ(source.wake, "refill");
  EXPECT_EQ(source.wakeSpec.name, "refill");
  EXPECT_EQ(source.wakeSpec.audience, jr2rt::EventSpec::Audience::kExternal);
  EXPECT_EQ(source.wakeSpec.description, "More reviews are ready.");
  ASSERT_EQ(source.wakeSpec.fields.size(), 1u);
  EXPECT_EQ(source.wakeSpec.fields[0].name, "review");
  EXPECT_EQ(source.wakeSpec.fields[0].type, "Review");
  EXPECT_TRUE(source.wakeSpec.fields[0].required);
  ASSERT_TRUE(source.checkWake);
  EXPECT_EQ(Refusal([&] { source.checkWake({{"review", kReview}}); }), "nothing thrown");
  EXPECT_EQ(Refusal([&] { source.checkWake(Json::object()); }),
            "`event refill` needs the field `review`");
  EXPECT_EQ(
      Refusal([&] {
        source.checkWake({{"review", With(kReview, "/rounds"_json_pointer, 0.5)}});
      }),
      std::string("`event refill.review.rounds` must be a whole number ") + kRange + ", not 0.5");
  EXPECT_EQ(Refusal([&] {
              source.checkWake({{"review", kReview}, {"why", 1}});
            }),
            "nothing thrown");
  jr2rt::StrictFields strict;
  EXPECT_EQ(Refusal([&] {
              source.checkWake({{"review", kReview}, {"why", 1}});
            }),
            "`event refill` has no field `why`; its fields are review");
  EXPECT_EQ(Refusal([&] {
              source.checkWake({{"review", With(kReview, "/idd"_json_pointer, 1)}});
            }),
            "`event refill.review` has no field `idd`; did you mean `id`? Its fields are id, "
            "rounds, scores, weights, limit, ratio, wait, check, checks");
}

// ---- a check that keeps nothing (CheckValue, CheckField: a Pool's parameters, #33) -------------

// CheckValue<T> refuses `j` exactly as reading it into a T refuses it (or takes it, as reading
// does).
template <typename T>
void ChecksAsItReads(const Json& j) {
  const std::string read = Refusal([&] {
    T v{};
    jr2rt::ReadValue(j, v, "input of p.x");
  });
  EXPECT_EQ(Refusal([&] { jr2rt::CheckValue<T>(j, "input of p.x"); }), read) << j.dump();
}

void ChecksEveryShapeAsItReads() {
  using jr2gen::strict::Review;
  using jr2rt::JsonValue;
  const std::vector<Json> values = {
      1,
      1.5,
      "text",
      nullptr,
      Json::array(),
      Json::object(),
      {1, 2.5},
      {1, nullptr},
      Json::parse(R"([[1], [2, "x"]])"),
      Json::parse(R"([[1], 2])"),
      {{"a", 1}},
      Json::parse(R"({"a": [1, "b"]})"),
      Json::parse(R"({"a": null})"),
      Json::array({kReview, kReview}),
      Json::array({kReview, With(kReview, "/oops"_json_pointer, 1)}),
      Json::array({kReview, Json{{"id", "R-2"}}}),
      Json::array({With(kReview, "/checks"_json_pointer, Json::parse(R"([{"name": "a"}])"))}),
  };
  for (const Json& j : values) {
    ChecksAsItReads<int64_t>(j);
    ChecksAsItReads<JsonValue>(j);
    ChecksAsItReads<std::optional<JsonValue>>(j);
    ChecksAsItReads<std::vector<JsonValue>>(j);
    ChecksAsItReads<std::optional<std::vector<JsonValue>>>(j);
    ChecksAsItReads<std::vector<int64_t>>(j);
    ChecksAsItReads<std::vector<std::optional<int64_t>>>(j);
    ChecksAsItReads<std::vector<std::vector<int64_t>>>(j);
    ChecksAsItReads<std::map<std::string, JsonValue>>(j);
    ChecksAsItReads<std::map<std::string, std::vector<int64_t>>>(j);
    ChecksAsItReads<std::vector<Review>>(j);
    ChecksAsItReads<std::map<std::string, Review>>(j);
  }
}

TEST(CheckValue, RefusesEveryShapeAsReadingItRefuses) {
  ChecksEveryShapeAsItReads();
  jr2rt::StrictFields strict;  // a record's unknown field refused, as reading refuses it
  ChecksEveryShapeAsItReads();
}

TEST(PoolInput, ParametersAreCheckedAsTheyAreRead) {
  const jr2rt::PoolSpec& pool = jr2gen::strict::queued_pool_pool();
  const Json items = Json::parse(R"([{"id": "A"}, 1, "x", null, [[]]])");
  const Json given = {{"items", items}, {"reviews", {kReview}}, {"nested", {{1}, {2, 3}}}};
  const jr2rt::JsonValue parsed = pool.parseInput(given);
  EXPECT_EQ(parsed.json(), With(given, "/extra"_json_pointer, nullptr))
      << "what was given, kept as it was, with the defaults";
  const std::string range = std::string(" must be a whole number ") + kRange + ", not ";
  EXPECT_EQ(Refusal([&] {
              pool.parseInput({{"items", "x"}});
            }),
            "`input of queued_pool.items` must be a list, not a string");
  EXPECT_EQ(Refusal([&] {
              pool.parseInput({{"reviews", {kReview, With(kReview, "/rounds"_json_pointer, 1.5)}}});
            }),
            "`input of queued_pool.reviews[1].rounds`" + range + "1.5");
  EXPECT_EQ(Refusal([&] {
              pool.parseInput({{"reviews", {{{"id", "R-1"}}}}});
            }),
            "`input of queued_pool.reviews[0]` needs the field `rounds`");
  EXPECT_EQ(Refusal([&] {
              pool.parseInput({{"extra", Json::array()}});
            }),
            "`input of queued_pool.extra` must be an object, not a list");
  EXPECT_EQ(Refusal([&] { pool.parseInput({{"extra", nullptr}}); }), "nothing thrown");
  EXPECT_EQ(Refusal([&] {
              pool.parseInput({{"nested", Json::parse(R"([[1], [2, "x"]])")}});
            }),
            "`input of queued_pool.nested[1][1]` must be a whole number, not a string");
  jr2rt::StrictFields strict;
  EXPECT_EQ(Refusal([&] {
              pool.parseInput({{"reviews", {With(kReview, "/idd"_json_pointer, 1)}}});
            }),
            "`input of queued_pool.reviews[0]` has no field `idd`; did you mean `id`? Its fields "
            "are id, rounds, scores, weights, limit, ratio, wait, check, checks");
}

}  // namespace

// An answer's payload is read once (#31): what parsePayload made when the answer was checked goes
// to the transition's action with the event (Event::typed), which reads it instead of the JSON.
// An event with none (one restored from a store) is read from its JSON, as before.
TEST(StrictFields, TheActionReadsThePayloadTheCheckRead) {
  NoHost host;
  const Json input = {{"review", {{"id", "r1"}, {"rounds", 1}}}};
  auto typed = jr2gen::strict::Make_reviewer();
  typed->start(host, input);
  const int tick = typed->eventId("tick");
  std::shared_ptr<const jr2rt::Payload> parsed = typed->parsePayload(tick, {{"count", 7}});
  ASSERT_NE(parsed, nullptr) << "an event with fields is read as its type";
  // The JSON beside it says 1: the action must take the 7 the check read.
  ASSERT_TRUE(typed->dispatch({jr2rt::Event::Kind::kExternal, tick, Json{{"count", 1}}, parsed}));
  ASSERT_TRUE(typed->isDone());
  EXPECT_EQ(typed->output(), 7);

  auto plain = jr2gen::strict::Make_reviewer();
  plain->start(host, input);
  ASSERT_TRUE(plain->dispatch({jr2rt::Event::Kind::kExternal, tick, Json{{"count", 1}}}));
  EXPECT_EQ(plain->output(), 1) << "with no typed payload the action reads the JSON";
}
