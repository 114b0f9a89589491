// What comes from outside (issue 8): JSON text is bounded in size and depth and must be UTF-8;
// files are read up to a limit; records refuse unknown fields under StrictFields and integers
// that are not whole or not in 64 bits everywhere. The generated types are pool.jr2's; the
// codegen side is tested at more depth in tests/codegen/strict_test.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <fstream>
#include <functional>

#include "jr2/run.h"
#include "jr2/value.h"
#include "pool.jr2.h"

namespace {

using jr2rt::Json;

// The message of the BadInput (or SchemaError) that `fn` throws, or "nothing thrown".
std::string Refusal(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const jr2rt::BadInput& e) {
    return e.what();
  } catch (const jr2rt::SchemaError& e) {
    return e.what();
  }
  return "nothing thrown";
}

std::string Nested(size_t levels, const char* open = "[", const char* close = "]") {
  std::string text;
  for (size_t i = 0; i < levels; ++i) text += open;
  text += "1";
  for (size_t i = 0; i < levels; ++i) text += close;
  return text;
}

// ---- ParseExternalJson ----------------------------------------------------------------------

TEST(ExternalJson, ParsesWhatFits) {
  EXPECT_EQ(jr2rt::ParseExternalJson(R"({"a": [1, 2.5, "x", null, true]})", "the input"),
            (Json{{"a", {1, 2.5, "x", nullptr, true}}}));
  EXPECT_EQ(jr2rt::ParseExternalJson("\xEF\xBB\xBF{}", "the input"), Json::object())
      << "a UTF-8 byte order mark is skipped";
  EXPECT_EQ(jr2rt::ParseExternalJson("\"caf\xC3\xA9 \xF0\x9F\x8E\x89\"", "the input"),
            "caf\xC3\xA9 \xF0\x9F\x8E\x89");
}

TEST(ExternalJson, InvalidJsonIsOneLine) {
  EXPECT_EQ(Refusal([] { jr2rt::ParseExternalJson(R"({"a": )", "the input"); }),
            "the input is not valid JSON: at line 1, column 7: unexpected end of input; expected "
            "'[', '{', or a literal");
  EXPECT_EQ(Refusal([] { jr2rt::ParseExternalJson("", "the payload"); }),
            "the payload is not valid JSON: at line 1, column 1: unexpected end of input; "
            "expected '[', '{', or a literal");
  EXPECT_EQ(Refusal([] { jr2rt::ParseExternalJson("[1e400]", "the input"); }),
            "the input is not valid JSON: number overflow parsing '1e400'");
}

TEST(ExternalJson, TextThatIsNotUtf8IsRefusedAsSuch) {
  EXPECT_EQ(Refusal([] { jr2rt::ParseExternalJson("{\"a\": \"\xFF\"}", "the input"); }),
            "the input is not UTF-8: the byte 0xFF at line 1, column 8 is not part of a UTF-8 "
            "character (JSON text must be UTF-8)");
  EXPECT_EQ(Refusal([] { jr2rt::ParseExternalJson("{\n \"a\": \xC3\x28}", "the input"); }),
            "the input is not UTF-8: the byte 0x28 at line 2, column 8 is not part of a UTF-8 "
            "character (JSON text must be UTF-8)");
  // Overlong forms, surrogates and code points above U+10FFFF are not UTF-8 either.
  for (const char* bad :
       {"\"\xC0\xAF\"", "\"\xED\xA0\x80\"", "\"\xF4\x90\x80\x80\"", "\"\xE2\x82\""}) {
    EXPECT_NE(Refusal([&] { jr2rt::ParseExternalJson(bad, "x"); }).find("x is not UTF-8"),
              std::string::npos);
  }
}

TEST(ExternalJson, DepthIsBoundedWhileParsing) {
  EXPECT_EQ(Refusal([] { jr2rt::ParseExternalJson(Nested(512), "the input"); }), "nothing thrown");
  EXPECT_EQ(Refusal([] { jr2rt::ParseExternalJson(Nested(513), "the input"); }),
            "the input nests deeper than 512 levels");
  EXPECT_EQ(Refusal([] { jr2rt::ParseExternalJson(Nested(512, "{\"a\":", "}"), "x"); }),
            "nothing thrown");
  EXPECT_EQ(Refusal([] { jr2rt::ParseExternalJson(Nested(513, "{\"a\":", "}"), "x"); }),
            "x nests deeper than 512 levels");
  // Brackets inside strings are text, after an escaped quote or backslash too (the depth is
  // counted before a parser without a callback is trusted with the text: #33).
  EXPECT_EQ(Refusal([] {
              jr2rt::ParseExternalJson("{\"a\": \"\\\"" + std::string(600, '[') + "\"}", "x");
            }),
            "nothing thrown");
  EXPECT_EQ(Refusal([] { jr2rt::ParseExternalJson("[\"\\\\\", " + Nested(512) + "]", "x"); }),
            "x nests deeper than 512 levels");
  EXPECT_EQ(Refusal([] { jr2rt::ParseExternalJson("[\"\\\\\", " + Nested(511) + "]", "x"); }),
            "nothing thrown");
  // Far deeper, and cut off: refused at once, without building (or destroying) a deep tree.
  for (size_t levels : {60000u, 2000000u}) {
    const auto begin = std::chrono::steady_clock::now();
    EXPECT_EQ(Refusal([&] { jr2rt::ParseExternalJson(Nested(levels), "the input"); }),
              "the input nests deeper than 512 levels");
    EXPECT_EQ(Refusal([&] { jr2rt::ParseExternalJson(std::string(levels, '['), "the input"); }),
              "the input nests deeper than 512 levels");
    EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
  }
}

TEST(ExternalJson, SizeIsBounded) {
  EXPECT_EQ(Refusal([] { jr2rt::ParseExternalJson("[1,2,3]", "the input", 7); }), "nothing thrown");
  EXPECT_EQ(Refusal([] { jr2rt::ParseExternalJson("[1,2,3] ", "the input", 7); }),
            "the input is larger than 7 bytes");
  const std::string big(jr2rt::kMaxExternalBytes + 1, ' ');
  EXPECT_EQ(Refusal([&] { jr2rt::ParseExternalJson(big, "the payload"); }),
            "the payload is larger than 16 MiB");
  EXPECT_EQ(Refusal([] { jr2rt::ParseExternalJson("[]", "x", 1); }), "x is larger than 1 byte");
}

// ---- ReadExternalFile -----------------------------------------------------------------------

struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/jr2_strict_XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string file = path + "/" + name;
    std::ofstream(file, std::ios::binary) << text;
    return file;
  }
};

TEST(ExternalFile, ReadsUpToTheLimit) {
  TempDir dir;
  const std::string file = dir.write("in.json", R"({"jobs": 3})");
  EXPECT_EQ(jr2rt::ReadExternalFile(file, "the input file"), R"({"jobs": 3})");
  EXPECT_EQ(jr2rt::ReadExternalJsonFile(file, "the input file"), (Json{{"jobs", 3}}));
  EXPECT_EQ(jr2rt::ReadExternalFile(file, "the input file", 11), R"({"jobs": 3})");
  EXPECT_EQ(Refusal([&] { jr2rt::ReadExternalFile(file, "the input file", 10); }),
            "the input file `" + file + "` is larger than 10 bytes");
  const std::string broken = dir.write("broken.json", "{\"a\":");
  EXPECT_EQ(Refusal([&] { jr2rt::ReadExternalJsonFile(broken, "the agent script"); }),
            "the agent script `" + broken +
                "` is not valid JSON: at line 1, column 6: unexpected end of input; expected "
                "'[', '{', or a literal");
  const std::string deep = dir.write("deep.json", Nested(100000));
  EXPECT_EQ(Refusal([&] { jr2rt::ReadExternalJsonFile(deep, "the input file"); }),
            "the input file `" + deep + "` nests deeper than 512 levels");
}

TEST(ExternalFile, RefusesEndlessFilesDirectoriesAndMissingFiles) {
  const auto begin = std::chrono::steady_clock::now();
  EXPECT_EQ(Refusal([] { jr2rt::ReadExternalFile("/dev/zero", "the input file"); }),
            "the input file `/dev/zero` is larger than 16 MiB");
  EXPECT_EQ(Refusal([] { jr2rt::ReadExternalJsonFile("/dev/zero", "the input file"); }),
            "the input file `/dev/zero` is larger than 16 MiB");
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(5));
  TempDir dir;
  EXPECT_EQ(Refusal([&] { jr2rt::ReadExternalFile(dir.path, "the input file"); }),
            "the input file `" + dir.path + "` is a directory, not a file");
  EXPECT_EQ(Refusal([&] { jr2rt::ReadExternalFile(dir.path + "/nope.json", "the input file"); }),
            "the input file `" + dir.path + "/nope.json` does not exist");
  const std::string big = dir.write("big.json", std::string(jr2rt::kMaxExternalBytes + 1, ' '));
  EXPECT_EQ(Refusal([&] { jr2rt::ReadExternalFile(big, "the input file"); }),
            "the input file `" + big + "` is larger than 16 MiB");
  if (geteuid() != 0) {  // root reads anything
    const std::string secret = dir.write("secret.json", "{}");
    ::chmod(secret.c_str(), 0);
    EXPECT_EQ(Refusal([&] { jr2rt::ReadExternalFile(secret, "the input file"); }),
              "cannot read the input file `" + secret + "`: Permission denied");
  }
}

// ---- pool.jr2's records, Pool and wake ------------------------------------------------------

TEST(StrictRecords, AnItemWithAMisspelledFieldIsRefusedOnlyAtTheBoundary) {
  auto worker = jr2gen::pool::Make_worker();
  const Json input = {{"item", {{"id", "A"}, {"mdoe", "done"}}}};
  EXPECT_EQ(Refusal([&] { worker->checkInput(input); }), "nothing thrown");
  jr2rt::StrictFields strict;
  EXPECT_EQ(Refusal([&] { worker->checkInput(input); }),
            "`input of worker.item` has no field `mdoe`; did you mean `mode`? Its fields are id, "
            "mode");
  EXPECT_EQ(Refusal([&] {
              worker->checkInput({{"item", {{"id", "A"}, {"mode", "nope"}}}});
            }),
            "`input of worker.item.mode` is \"nope\", but it must be one of \"defect\", \"done\", "
            "\"fail\", \"nap\", \"wait\"");
  EXPECT_EQ(Refusal([&] {
              worker->checkInput({{"item", {{"id", "A"}}}, {"iten", 1}});
            }),
            "`input of worker` has no field `iten`; did you mean `item`? Its fields are item");
}

TEST(StrictRecords, APoolsInputAndItsWakePayload) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  const jr2rt::PoolSpec& jobs = *registry.pool("jobs_pool");
  const std::string range = "between -9223372036854775808 and 9223372036854775807";
  EXPECT_EQ(
      Refusal([&] { jobs.parseInput(Json::parse(R"({"jobs": 18446744073709551616})")); }),
      "`input of jobs_pool.jobs` must be a whole number " + range + ", not 1.8446744073709552e+19");
  EXPECT_EQ(Refusal([&] {
              jobs.parseInput({{"jobs", 1.5}});
            }),
            "`input of jobs_pool.jobs` must be a whole number " + range + ", not 1.5");
  EXPECT_EQ(jobs.cap(jobs.parseInput({{"jobs", 3.0}})), 3);
  EXPECT_EQ(jobs.cap(jobs.parseInput(Json::parse(R"({"jobs": -9223372036854775808})"))), INT64_MIN);
  // The wake event `poke` has no fields.
  EXPECT_EQ(jobs.source.wakeSpec.name, "poke");
  EXPECT_EQ(jobs.source.wakeSpec.description, "Wake the source.");
  EXPECT_TRUE(jobs.source.wakeSpec.fields.empty());
  ASSERT_TRUE(jobs.source.checkWake);
  EXPECT_EQ(Refusal([&] { jobs.source.checkWake({{"x", 1}}); }), "nothing thrown");
  EXPECT_EQ(Refusal([&] { jobs.source.checkWake(Json::array()); }),
            "`event poke` must be an object, not a list");
  jr2rt::StrictFields strict;
  EXPECT_EQ(Refusal([&] {
              jobs.source.checkWake({{"x", 1}});
            }),
            "`event poke` has no field `x`; it has no fields");
  EXPECT_EQ(Refusal([&] {
              jobs.parseInput({{"job", 1}});
            }),
            "`input of jobs_pool` has no field `job`; did you mean `jobs`? Its fields are jobs");
  // A payload at a Gate: `answer` (an Agent's reply) and `finish` (no fields).
  auto asker = jr2gen::pool::Make_asker();
  EXPECT_EQ(Refusal([&] {
              asker->checkPayload(asker->eventId("answer"), {{"txt", "42"}});
            }),
            "`event answer` has no field `txt`; did you mean `text`? Its fields are text");
}

// A Source's items stay lenient: an item with more fields than the worker's record still fits.
TEST(StrictRecords, ItemsFromASourceMayCarryMoreFields) {
  jr2rt::Registry registry;
  jr2gen::pool::RegisterWorkflows(registry);
  jr2rt::ManualClock clock;
  jr2rt::Run run(registry, *registry.workflow("conformance_one"), "r1", clock);
  std::deque<Json> answers = {{{"id", "A"}, {"mode", "done"}, {"owner", "ops"}}};
  run.scriptNext("scripted_next", [&](const jr2rt::NextQuery&, std::function<void(Json)> answer) {
    if (answers.empty()) {
      answer({{"item", nullptr}, {"open", 0}});
      return;
    }
    Json item = answers.front();
    answers.pop_front();
    answer(item);
  });
  run.start(Json::object());
  EXPECT_EQ(run.status(), jr2rt::RunStatus::kDone) << run.reason();
}

}  // namespace

// A save's text (#33): AppendJson writes what nlohmann's dump(-1, ' ', false, replace) writes,
// byte for byte, for every kind of value: strings with every control character, quotes,
// backslashes, text of 2, 3 and 4 bytes a character and text that is not UTF-8 (replaced as
// nlohmann replaces it), keys that need escaping, integers at their limits, floats, nesting.
TEST(ExternalJson, AppendJsonWritesWhatNlohmannDumps) {
  std::string every;
  for (int c = 1; c < 0x80; ++c) every += static_cast<char>(c);
  const std::vector<std::string> strings = {"",
                                            "plain",
                                            every,
                                            "quote \" backslash \\ slash /",
                                            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
                                            "bad \xff byte",
                                            "cut \xe2\x82",
                                            "\xc0\xaf overlong",
                                            "\xed\xa0\x80 surrogate",
                                            "\x7f del",
                                            std::string("nul \0 inside", 12)};
  Json cases = Json::array();
  for (const std::string& s : strings) {
    cases.push_back(s);
    cases.push_back(Json{{s, s}});
  }
  for (const Json& n : {Json(0), Json(-1), Json(INT64_MIN), Json(INT64_MAX), Json(UINT64_MAX),
                        Json(1.5), Json(-0.0), Json(1e300), Json(0.1), Json(3.0)}) {
    cases.push_back(n);
  }
  cases.push_back(Json{{"a", {1, 2, {{"b", nullptr}}}},
                       {"c", true},
                       {"d", false},
                       {"e", Json::object()},
                       {"f", Json::array()}});
  for (const Json& j : cases) {
    std::string written;
    jr2rt::AppendJson(written, j);
    EXPECT_EQ(written, j.dump(-1, ' ', false, Json::error_handler_t::replace))
        << j.dump(-1, ' ', true, Json::error_handler_t::replace);
  }
  std::string whole;
  jr2rt::AppendJson(whole, cases);
  EXPECT_EQ(whole, cases.dump(-1, ' ', false, Json::error_handler_t::replace));
  // A string's own writer: false, and nothing written, for text that is not UTF-8.
  std::string out = "x";
  EXPECT_FALSE(jr2rt::AppendUtf8String(out, "bad \xff"));
  EXPECT_EQ(out, "x");
  EXPECT_TRUE(jr2rt::AppendUtf8String(out, "t\x01\"\xc3\xa9"));
  EXPECT_EQ(out, "x\"t\\u0001\\\"\xc3\xa9\"");
}
