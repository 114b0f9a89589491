// The standard library's Sources and effects (docs/runtime.md#the-pool): std.queue and std.backlog
// keyed by the Pool's own item_id, incremental across calls and equal to a full pass at every step;
// what a backlog file from outside can do wrong; paths against the run's home; effect output that
// is not UTF-8.
#include "jr2/stdlib.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "jr2/run.h"
#include "pool.jr2.h"

namespace {

using jr2rt::Json;
using jr2rt::NextQuery;
using jr2rt::RunStatus;
using Ids = std::vector<std::string>;

// The id as an `item_id: item.pkg` gives it (what generated code does: a missing field is null,
// which does not fit a string).
std::string PkgOf(const Json& item) {
  return jr2rt::FromJson<std::string>(jr2rt::Member(item, "pkg", "test:1:1"), "test:1:1");
}

NextQuery Query(Ids active, Ids settled = {}, Ids failed = {}) {
  auto share = [](Ids v) { return std::make_shared<const Ids>(std::move(v)); };
  return NextQuery(share(std::move(active)), share(std::move(settled)), share(std::move(failed)),
                   nullptr);
}

// A fresh directory for one test.
std::string TempDir(const std::string& name) {
  std::string dir = testing::TempDir() + "jr2_stdlib_" + name + "_" + std::to_string(getpid());
  const std::string command = "rm -rf '" + dir + "'";
  EXPECT_EQ(std::system(command.c_str()), 0);
  EXPECT_EQ(mkdir(dir.c_str(), 0755), 0) << dir;
  return dir;
}

void Write(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string DefectOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const jr2rt::Defect& d) {
    return d.what();
  }
  return "no Defect";
}

// ---- ValidUtf8, ResolveAgainst ----------------------------------------------------------------

TEST(ValidUtf8, ReplacesEachMaximalBadSubpartAndCountsThem) {
  const std::string fffd = "\xEF\xBF\xBD";
  struct Case {
    std::string in, out;
    size_t replaced;
  };
  const std::vector<Case> cases = {
      {"plain ascii", "plain ascii", 0},
      {"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 0},
      {"\xFF", fffd, 1},                        // never a UTF-8 byte
      {"a\x80z", "a" + fffd + "z", 1},          // a continuation byte alone
      {"\xE2\x82", fffd, 1},                    // truncated at the end: one, not two
      {"\xF0\x9F\x98", fffd, 1},                // a 4-byte character cut after 3
      {"\xE2\x82x", fffd + "x", 1},             // truncated inside the text
      {"\xC0\xAF", fffd + fffd, 2},             // overlong `/`: C0 is never valid
      {"\xE0\x80\xAF", fffd + fffd + fffd, 3},  // overlong 3-byte form
      {"\xF0\x80\x80\xAF", fffd + fffd + fffd + fffd, 4},
      {"\xED\xA0\x80", fffd + fffd + fffd, 3},             // a UTF-16 surrogate (U+D800)
      {"\xED\x9F\xBF", "\xED\x9F\xBF", 0},                 // U+D7FF, just below the surrogates
      {"\xF4\x90\x80\x80", fffd + fffd + fffd + fffd, 4},  // above U+10FFFF
      {"\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF", 0},         // U+10FFFF
      {"Latin-1 caf\xE9!", "Latin-1 caf" + fffd + "!", 1},
  };
  for (const Case& c : cases) {
    size_t replaced = 99;
    EXPECT_EQ(jr2rt::ValidUtf8(c.in, &replaced), c.out) << Json(c.out).dump();
    EXPECT_EQ(replaced, c.replaced) << Json(c.out).dump();
    EXPECT_NO_THROW(Json(jr2rt::ValidUtf8(c.in)).dump()) << "what is stored can be saved";
  }
  // Every byte value after every lead byte: the result is always valid UTF-8.
  for (int a = 0x80; a < 0x100; ++a) {
    for (int b = 0; b < 0x100; b += 7) {
      const std::string in = {static_cast<char>(a), static_cast<char>(b), '\xBF'};
      EXPECT_NO_THROW(Json(jr2rt::ValidUtf8(in)).dump()) << a << " " << b;
    }
  }
}

TEST(ResolveAgainst, RelativePathsAreTheHomes) {
  EXPECT_EQ(jr2rt::ResolveAgainst("/home/ann/repo", "samples/backlog.json"),
            "/home/ann/repo/samples/backlog.json");
  EXPECT_EQ(jr2rt::ResolveAgainst("/home/ann/repo/", "b.json"), "/home/ann/repo/b.json");
  EXPECT_EQ(jr2rt::ResolveAgainst("/home/ann/repo", "/etc/b.json"), "/etc/b.json");
  EXPECT_EQ(jr2rt::ResolveAgainst("/home/ann/repo", ""), "/home/ann/repo");
  EXPECT_EQ(jr2rt::ResolveAgainst("/home/ann/repo", "."), "/home/ann/repo");
  EXPECT_EQ(jr2rt::ResolveAgainst(".", "b.json"), "b.json");
}

// ---- std.queue --------------------------------------------------------------------------------

TEST(StdQueue, TheIdsAreThePoolsItemIdNotAGuessedField) {
  const Json args = {
      {"items", {{{"pkg", "left-pad"}}, {{"pkg", "right-pad"}}, {{"pkg", "is-odd"}}}}};
  auto source = jr2rt::MakeStdNext("std.queue", PkgOf, ".");
  ASSERT_NE(source, nullptr);
  EXPECT_EQ(source->next(args, Query({})), (Json{{"item", {{"pkg", "left-pad"}}}, {"open", 0}}));
  EXPECT_EQ(source->next(args, Query({"left-pad"}))["item"]["pkg"], "right-pad")
      << "the live item is known by its pkg";
  EXPECT_EQ(source->next(args, Query({"right-pad"}, {"left-pad"}))["item"]["pkg"], "is-odd");
  EXPECT_EQ(source->next(args, Query({"is-odd"}, {"left-pad", "right-pad"}))["item"], nullptr);
  EXPECT_EQ(source->next(args, Query({}, {"left-pad", "right-pad", "is-odd"}))["item"], nullptr);
  // The one-call form agrees, with the same id.
  EXPECT_EQ(jr2rt::StdQueue(args, Query({"left-pad"}, {"right-pad"}), PkgOf)["item"]["pkg"],
            "is-odd");
  // Without an item_id, the `id` field or a string item is the id.
  EXPECT_EQ(jr2rt::StdQueue({{"items", {"a", "b"}}}, Query({"a"}))["item"], "b");
}

TEST(StdQueue, ActiveAndSettledItemsAreSkippedWhereverTheyAre) {
  const Json args = {{"items", {{{"pkg", "a"}}, {{"pkg", "b"}}, {{"pkg", "c"}}, {{"pkg", "d"}}}}};
  EXPECT_EQ(jr2rt::StdQueue(args, Query({"b"}, {"a"}), PkgOf)["item"]["pkg"], "c");
  EXPECT_EQ(jr2rt::StdQueue(args, Query({"a", "c"}, {"b"}), PkgOf)["item"]["pkg"], "d");
  EXPECT_EQ(jr2rt::StdQueue(args, Query({}, {"d", "a"}, {"a"}), PkgOf)["item"]["pkg"], "b")
      << "a failed item is settled: not given again";
}

TEST(StdQueue, TwoItemsWithOneIdOrAnItemWithoutOneAreDefects) {
  const Json twice = {{"items",
                       {{{"pkg", "left-pad"}},
                        {{"pkg", "a"}},
                        {{"pkg", "b"}},
                        {{"pkg", "c"}},
                        {{"pkg", "left-pad"}}}}};
  EXPECT_EQ(DefectOf([&] { jr2rt::StdQueue(twice, Query({}), PkgOf); }),
            "std.queue: items 1 and 5 have the same id `left-pad`; ids must be unique");
  auto source = jr2rt::MakeStdNext("std.queue", PkgOf, ".");
  EXPECT_EQ(DefectOf([&] { source->next(twice, Query({})); }),
            "std.queue: items 1 and 5 have the same id `left-pad`; ids must be unique")
      << "not a silent drop, and not only once the second is reached";
  const Json missing = {{"items", {{{"pkg", "a"}}, {{"name", "b"}}}}};
  const std::string what = DefectOf([&] { jr2rt::StdQueue(missing, Query({}), PkgOf); });
  EXPECT_EQ(what.rfind("std.queue: item 2 gives no id: ", 0), 0u) << what;
  EXPECT_EQ(DefectOf([&] {
              jr2rt::StdQueue({{"items", {{{"n", 1}}}}}, Query({}));
            }),
            "std.queue: item 1 gives no id: it has no string `id` field");
  EXPECT_EQ(DefectOf([&] {
              jr2rt::StdQueue({{"items", "x"}}, Query({}));
            }),
            "std.queue: its argument must be a list, not a string");
}

TEST(StdQueue, AnotherListAtTheNextCallIsSeen) {
  auto source = jr2rt::MakeStdNext("std.queue", PkgOf, ".");
  {
    const Json args = {{"items", {{{"pkg", "a"}}, {{"pkg", "b"}}}}};
    EXPECT_EQ(source->next(args, Query({}))["item"]["pkg"], "a");
  }
  {
    // Another list, likely at the same address (the last one's storage is free again).
    const Json args = {{"items", {{{"pkg", "x"}}, {{"pkg", "y"}}}}};
    EXPECT_EQ(source->next(args, Query({"a"}))["item"]["pkg"], "x");
    EXPECT_EQ(source->next(args, Query({"a", "x"}))["item"]["pkg"], "y");
  }
}

// ---- std.backlog ------------------------------------------------------------------------------

TEST(StdBacklog, NeedsNameIdsAsTheItemIdGivesThem) {
  const std::string dir = TempDir("pkg");
  const std::string path = dir + "/b.json";
  Write(path, R"([{"pkg":"core"},{"pkg":"json","needs":["core"]},{"pkg":"cli","needs":["json"]},
                  {"pkg":"docs","needs":["cli","core"]}])");
  const Json args = {{"path", path}};
  auto source = jr2rt::MakeStdNext("std.backlog", PkgOf, dir);
  Json a = source->next(args, Query({}));
  EXPECT_EQ(a["item"]["pkg"], "core");
  EXPECT_EQ(a["open"], 3);
  a = source->next(args, Query({"core"}));
  EXPECT_EQ(a["item"], nullptr) << "json needs core, which is live";
  EXPECT_EQ(a["open"], 3);
  a = source->next(args, Query({}, {"core"}));
  EXPECT_EQ(a["item"]["pkg"], "json");
  EXPECT_EQ(a["open"], 2);
  a = source->next(args, Query({}, {"core", "json"}, {"json"}));
  EXPECT_EQ(a, (Json{{"item", nullptr}, {"open", 2}}))
      << "json failed: cli and docs are never ready (the Pool ends deadlocked)";
  EXPECT_EQ(jr2rt::StdBacklog(args, Query({}, {"core", "json"}, {"json"}), PkgOf), a)
      << "the one-call form agrees";
}

TEST(StdBacklog, TwoItemsWithOneIdAreADefectNamingIt) {
  const std::string dir = TempDir("twice");
  Write(dir + "/b.json", R"([{"pkg":"a"},{"pkg":"b"},{"pkg":"a"}])");
  EXPECT_EQ(DefectOf([&] {
              jr2rt::StdBacklog({{"path", "b.json"}}, Query({}), PkgOf, dir);
            }),
            "std.backlog: in `b.json`, items 1 and 3 have the same id `a`; ids must be unique");
  Write(dir + "/b.json", R"([{"pkg":"a"},{"id":"b"}])");
  const std::string what = DefectOf([&] {
    jr2rt::StdBacklog({{"path", dir + "/b.json"}}, Query({}), PkgOf, dir);
  });
  EXPECT_EQ(what.rfind("std.backlog: in `" + dir + "/b.json`, item 2 gives no id: ", 0), 0u)
      << what;
}

// Every edit is seen, at the next call, even one of the same size written within the same
// timestamp tick as the read before it (the stamp is not trusted then: the bytes are compared).
TEST(StdBacklog, EditsBetweenCallsAreSeenIncludingSameSizeRewrites) {
  const std::string dir = TempDir("edits");
  const std::string path = dir + "/b.json";
  const Json args = {{"path", path}};
  auto source = jr2rt::MakeStdNext("std.backlog", PkgOf, dir);
  for (const char* id : {"P", "Q", "R", "S"}) {
    Write(path, std::string(R"([{"pkg":")") + id + R"("}])");
    EXPECT_EQ(source->next(args, Query({}))["item"]["pkg"], id);
  }
  // A need added while the Pool runs: the item waits; removed again: it is ready.
  Write(path, R"([{"pkg":"A"},{"pkg":"B"}])");
  EXPECT_EQ(source->next(args, Query({}))["item"]["pkg"], "A");
  EXPECT_EQ(source->next(args, Query({"A"}))["item"]["pkg"], "B");
  Write(path, R"([{"pkg":"A"},{"pkg":"B","needs":["A"]}])");
  EXPECT_EQ(source->next(args, Query({"A"})), (Json{{"item", nullptr}, {"open", 1}}));
  Write(path, R"([{"pkg":"A"},{"pkg":"B","needs":[   ]}])");  // the same size
  EXPECT_EQ(source->next(args, Query({"A"}))["item"]["pkg"], "B");
  // Replaced by another file (an editor's rename): another inode, seen too.
  Write(path + ".new", R"([{"pkg":"C"}])");
  ASSERT_EQ(rename((path + ".new").c_str(), path.c_str()), 0);
  EXPECT_EQ(source->next(args, Query({"A"}))["item"]["pkg"], "C");
}

TEST(StdBacklog, WhatCannotBeReadIsADefectNamingThePathAndWhy) {
  const std::string dir = TempDir("unreadable");
  mkdir((dir + "/samples").c_str(), 0755);
  mkdir((dir + "/samples/backlog.json").c_str(), 0755);
  auto defect = [&](const std::string& path) {
    return DefectOf([&] { jr2rt::StdBacklog({{"path", path}}, Query({}), PkgOf, dir); });
  };
  EXPECT_EQ(defect(dir + "/samples/backlog.json"),
            "std.backlog: `" + dir + "/samples/backlog.json` is a directory, not a file");
  EXPECT_EQ(defect(dir + "/missing.json"),
            "std.backlog: `" + dir + "/missing.json` does not exist");
  EXPECT_EQ(defect("missing.json"),
            "std.backlog: `missing.json` does not exist (looked for `" + dir + "/missing.json`)")
      << "a relative path is the run's home's, and the message says where it looked";
  EXPECT_EQ(defect("samples/backlog.json"),
            "std.backlog: `samples/backlog.json` is a directory, not a file");
  EXPECT_EQ(defect("/dev/null"), "std.backlog: `/dev/null` is not a regular file");
  Write(dir + "/broken.json", "[{");
  const std::string broken = defect(dir + "/broken.json");
  EXPECT_EQ(broken.rfind("std.backlog: `" + dir + "/broken.json` is not valid JSON", 0), 0u)
      << broken;
  Write(dir + "/object.json", "{}");
  EXPECT_EQ(defect(dir + "/object.json"),
            "std.backlog: `" + dir + "/object.json` must hold a JSON list of items, not an object");
  Write(dir + "/latin1.json", "[{\"pkg\":\"caf\xE9\"}]");
  const std::string latin1 = defect(dir + "/latin1.json");
  EXPECT_NE(latin1.find("is not UTF-8"), std::string::npos) << latin1;
  EXPECT_NO_THROW(Json(latin1).dump()) << "the run's error can be saved";
  Write(dir + "/huge.json", "[" + std::string(jr2rt::kMaxExternalBytes, ' ') + "]");
  EXPECT_EQ(defect(dir + "/huge.json"),
            "std.backlog: `" + dir + "/huge.json` is larger than 16 MiB")
      << "read no further than the bound";
  Write(dir + "/numbers.json", R"([{"pkg":"a"},{"pkg":"b","needs":["a",1]}])");
  EXPECT_EQ(defect(dir + "/numbers.json"),
            "std.backlog: `" + dir +
                "/numbers.json` has an item (2) whose `needs` holds a number (1), not an id")
      << "never an item that waits for ever";
  EXPECT_EQ(defect(""), "std.backlog: `` is a directory, not a file") << "the home itself";
  EXPECT_EQ(DefectOf([&] { jr2rt::StdBacklog(Json::object(), Query({}), PkgOf, dir); }),
            "std.backlog: needs a `path` string");
}

TEST(StdBacklog, ARelativePathIsTheRunsHomesNotTheProcesss) {
  const std::string home = TempDir("home");
  mkdir((home + "/samples").c_str(), 0755);
  Write(home + "/samples/backlog.json", R"([{"pkg":"at-home"}])");
  // The process's directory is elsewhere (the test runs in the build tree).
  char cwd[PATH_MAX];
  ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
  ASSERT_NE(std::string(cwd), home);
  auto source = jr2rt::MakeStdNext("std.backlog", PkgOf, home);
  EXPECT_EQ(source->next({{"path", "samples/backlog.json"}}, Query({}))["item"]["pkg"], "at-home");
  EXPECT_EQ(jr2rt::StdBacklog({{"path", "samples/backlog.json"}}, Query({}), PkgOf, home)["item"],
            (Json{{"pkg", "at-home"}}));
}

TEST(StdBacklog, DeepNestingIsRefusedWithoutACrash) {
  const std::string dir = TempDir("deep");
  const std::string path = dir + "/deep.json";
  const int levels = 60000;
  Write(path,
        "[{\"pkg\":\"a\",\"x\":" + std::string(levels, '[') + std::string(levels, ']') + "}]");
  EXPECT_EQ(DefectOf([&] {
              jr2rt::StdBacklog({{"path", path}}, Query({}), PkgOf);
            }),
            "std.backlog: `" + path + "` nests deeper than 512 levels");
  // Within the bound: read as usual (the list and the item are two of the levels).
  Write(path, "[{\"pkg\":\"a\",\"x\":" + std::string(510, '[') + std::string(510, ']') + "}]");
  EXPECT_EQ(jr2rt::StdBacklog({{"path", path}}, Query({}), PkgOf)["item"]["pkg"], "a");
}

// Runs on several threads share the parse of a file: calls from four threads while a fifth
// rewrites the file (truncate, then write: a reader may see it empty or half written) each give
// one of the two answers or a Defect for the half-written file, never a crash or a mix.
TEST(StdBacklog, ThreadsReadingAFileThatIsRewrittenSeeOneVersionOrADefect) {
  const std::string dir = TempDir("threads");
  const std::string path = dir + "/b.json";
  const std::string one = R"([{"pkg":"one"}])", two = R"([{"pkg":"two","needs":[]}])";
  Write(path, one);
  std::atomic<bool> done{false};
  std::atomic<int> answers{0}, defects{0}, wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      auto source = jr2rt::MakeStdNext("std.backlog", PkgOf, dir);
      for (int i = 0; i < 300; ++i) {
        try {
          const Json item =
              (i % 2 == 0 ? source->next({{"path", "b.json"}}, Query({}))
                          : jr2rt::StdBacklog({{"path", path}}, Query({}), PkgOf))["item"];
          ++answers;
          if (item != Json::parse(one)[0] && item != Json::parse(two)[0]) ++wrong;
        } catch (const jr2rt::Defect&) {
          ++defects;
        }
      }
    });
  }
  std::thread writer([&] {
    for (int i = 0; !done; ++i) Write(path, i % 2 == 0 ? two : one);
  });
  for (auto& r : readers) r.join();
  done = true;
  writer.join();
  std::printf("%d answers, %d defects (a half-written file), %d wrong\n", answers.load(),
              defects.load(), wrong.load());
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(answers + defects, 1200);
}

// ---- model-based: the incremental Sources against full passes ---------------------------------

// What a full pass says, written plainly here (a third opinion beside the one-call forms).
Json ReferenceBacklog(const Json& items, const std::set<std::string>& active,
                      const std::set<std::string>& settled, const std::set<std::string>& failed) {
  Json first = nullptr;
  int64_t open = 0;
  for (const Json& item : items) {
    const std::string id = item["pkg"];
    if (active.count(id) != 0 || settled.count(id) != 0) continue;
    bool ready = true;
    for (const Json& need : item.value("needs", Json::array())) {
      if (settled.count(need) == 0 || failed.count(need) != 0) ready = false;
    }
    if (!ready) {
      ++open;
    } else if (first.is_null()) {
      first = item;
    }
  }
  return {{"item", first}, {"open", open}};
}

Json ReferenceQueue(const Json& items, const std::set<std::string>& active,
                    const std::set<std::string>& settled) {
  for (const Json& item : items) {
    const std::string id = item["pkg"];
    if (active.count(id) == 0 && settled.count(id) == 0) return {{"item", item}, {"open", 0}};
  }
  return {{"item", nullptr}, {"open", 0}};
}

// A Pool, simulated: it calls `next` while a slot is free and claims each item answered;
// workers settle (or fail) in a random order; the backlog file is edited now and then; and
// rarely the Pool drops an answer (a run that ended meanwhile) or the Source is asked by a
// caller that is not the Pool, which the Source must notice. At every call the Pool's Source
// (MakeStdNext, kept across calls) answers exactly what a full pass answers.
struct Simulation {
  std::mt19937 random;
  bool backlog;
  std::string path;
  Json items = Json::array();  // the backlog's or the queue's items
  Json args;
  Ids active, settled, failed;
  std::unique_ptr<jr2rt::StdNextSource> source;
  int64_t compared = 0, restarts = 0, edits = 0;

  Simulation(unsigned seed, bool isBacklog, const std::string& dir)
      : random(seed), backlog(isBacklog), path(dir + "/model.json") {
    const int n = 20 + static_cast<int>(random() % 60);
    for (int i = 0; i < n; ++i) items.push_back(makeItem("t" + std::to_string(i), i));
    if (backlog) Write(path, items.dump());
    // One arguments object for every call, as a Pool makes them (the queue's list never changes).
    args = backlog ? Json{{"path", path}} : Json{{"items", items}};
    source = jr2rt::MakeStdNext(backlog ? "std.backlog" : "std.queue", PkgOf, dir);
  }

  bool chance(int percent) { return static_cast<int>(random() % 100) < percent; }

  Json makeItem(const std::string& id, int before) {
    Json item = {{"pkg", id}};
    if (!backlog) return item;
    Json needs = Json::array();
    const int count = static_cast<int>(random() % 3);
    for (int k = 0; k < count && before > 0; ++k) {
      // Mostly earlier items; now and then a later one, or one that is no item at all.
      if (chance(5)) {
        needs.push_back("ghost");
      } else if (chance(10)) {
        needs.push_back("t" + std::to_string(before + 1 + static_cast<int>(random() % 5)));
      } else {
        needs.push_back(items[random() % static_cast<size_t>(before)]["pkg"]);
      }
    }
    item["needs"] = needs;
    return item;
  }

  void edit() {
    ++edits;
    const int what = static_cast<int>(random() % 3);
    if (what == 0) {
      items.push_back(makeItem("n" + std::to_string(edits), static_cast<int>(items.size())));
    } else if (what == 1 && !items.empty()) {
      const size_t i = random() % items.size();
      items[i] = makeItem(items[i]["pkg"], static_cast<int>(i));
    } else if (!items.empty()) {
      items.erase(items.begin() + static_cast<std::ptrdiff_t>(random() % items.size()));
    }
    Write(path, items.dump());
  }

  // One call of `next`, compared three ways. Returns the answer.
  Json call(const Ids& live, const Ids& done, const Ids& broke) {
    const NextQuery q = Query(live, done, broke);
    Json got = source->next(args, q);
    const std::set<std::string> a(live.begin(), live.end()), s(done.begin(), done.end()),
        f(broke.begin(), broke.end());
    const Json full = backlog ? jr2rt::StdBacklog(args, q, PkgOf) : jr2rt::StdQueue(args, q, PkgOf);
    const Json reference = backlog ? ReferenceBacklog(items, a, s, f) : ReferenceQueue(items, a, s);
    EXPECT_EQ(got, full) << "step " << compared;
    EXPECT_EQ(got, reference) << "step " << compared;
    ++compared;
    return got;
  }

  void run(int cap) {
    for (int step = 0; step < 5000; ++step) {
      if (backlog && chance(3)) edit();
      if (chance(2)) {
        // A caller that is not the Pool: the query of an earlier moment (a prefix of what
        // settled, nothing live). Neither it nor the next real query follows from the one
        // before, so the Source must start over, twice.
        ++restarts;
        const Ids done(settled.begin(), settled.begin() + static_cast<std::ptrdiff_t>(
                                                              random() % (settled.size() + 1)));
        Ids broke;
        for (const std::string& id : failed) {
          if (std::find(done.begin(), done.end(), id) != done.end()) broke.push_back(id);
        }
        call({}, done, broke);
      }
      if (chance(1)) {
        // An earlier moment with the same live workers: fewer settled, and so fewer failed.
        ++restarts;
        const Ids done(settled.begin(), settled.begin() + static_cast<std::ptrdiff_t>(
                                                              random() % (settled.size() + 1)));
        Ids broke;
        for (const std::string& id : failed) {
          if (std::find(done.begin(), done.end(), id) != done.end()) broke.push_back(id);
        }
        call(active, done, broke);
      }
      if (chance(4) && !failed.empty()) {
        // The same moment, but the last failure read as a success: then as a failure again.
        ++restarts;
        call(active, settled, Ids(failed.begin(), failed.end() - 1));
      }
      if (chance(1) && !active.empty()) {
        // As many live workers, but the newest is another item (one that is free).
        for (const Json& item : items) {
          const std::string id = item["pkg"];
          if (std::find(active.begin(), active.end(), id) != active.end() ||
              std::find(settled.begin(), settled.end(), id) != settled.end())
            continue;
          ++restarts;
          Ids live = active;
          live.back() = id;
          call(live, settled, failed);
          break;
        }
      }
      const bool free = static_cast<int>(active.size()) < cap;
      if (free && (active.empty() || chance(60))) {
        const Json answer = call(active, settled, failed);
        if (answer["item"].is_null()) {
          if (active.empty()) return;  // drained or deadlocked
          continue;
        }
        if (chance(1)) {
          ++restarts;  // dropped: the Pool ended meanwhile (here it goes on)
          continue;
        }
        active.push_back(answer["item"]["pkg"]);
        continue;
      }
      if (active.empty()) continue;
      const size_t i = random() % active.size();
      const std::string id = active[i];
      active.erase(active.begin() + static_cast<std::ptrdiff_t>(i));
      settled.push_back(id);
      if (chance(15)) failed.push_back(id);
    }
  }
};

TEST(StdSources, IncrementalAnswersEqualFullPassesAtEveryStep) {
  const std::string dir = TempDir("model");
  int64_t compared = 0, restarts = 0, edits = 0;
  for (bool backlog : {false, true}) {
    for (unsigned seed = 1; seed <= 150; ++seed) {
      Simulation sim(seed, backlog, dir);
      sim.run(1 + static_cast<int>(seed % 8));
      compared += sim.compared;
      restarts += sim.restarts;
      edits += sim.edits;
      if (testing::Test::HasFailure()) {
        ADD_FAILURE() << (backlog ? "std.backlog" : "std.queue") << ", seed " << seed;
        return;
      }
    }
  }
  std::printf("compared %lld calls against full passes (%lld restarts, %lld file edits)\n",
              static_cast<long long>(compared), static_cast<long long>(restarts),
              static_cast<long long>(edits));
  EXPECT_GT(compared, 10000);
}

// ---- through a real Pool ----------------------------------------------------------------------

// The conformance program's worker, in a Pool whose Source is a std one keyed by `pkg`.
struct StdPool : testing::Test {
  jr2rt::Registry registry;
  jr2rt::ManualClock clock;
  jr2rt::PoolSpec spec;
  std::unique_ptr<jr2rt::WorkflowInfo> info;

  void make(const std::string& function) {
    jr2gen::pool::RegisterWorkflows(registry);
    spec = *registry.pool("jobs_pool");
    spec.name = "std_pool";
    spec.source.function = function;
    spec.source.wake = "";
    spec.source.pollEveryMs = 0;
    spec.source.checkWake = nullptr;
    spec.parseInput = [](const Json& given) { return given; };
    spec.source.args = [function](const Json& input) {
      return function == "std.queue" ? Json{{"items", input["items"]}}
                                     : Json{{"path", input["file"]}};
    };
    spec.itemId = [](const Json& item, const Json&) { return PkgOf(item); };
    spec.cap = [](const Json& input) { return input.value("jobs", int64_t{2}); };
    spec.itemInput = [](const Json& item, const Json&) {
      return Json{{"item", {{"id", item["pkg"]}, {"mode", item.value("mode", "done")}}}};
    };
    info = std::make_unique<jr2rt::WorkflowInfo>(
        jr2rt::WorkflowInfo{"std_pool", "test", nullptr, &spec});
  }
};

TEST_F(StdPool, AQueueKeyedByPkgDrains) {
  make("std.queue");
  jr2rt::Run run(registry, *info, "r1", clock);
  // Both wait at their Gates: the second call must not give `left-pad` again (it did, and the run
  // ended `error`: "gave the item id `left-pad`, which a live worker holds").
  run.start({{"jobs", 2},
             {"items",
              {{{"pkg", "left-pad"}, {"mode", "wait"}},
               {{"pkg", "right-pad"}, {"mode", "wait"}},
               {{"pkg", "is-odd"}}}}});
  ASSERT_EQ(run.status(), RunStatus::kWaiting) << run.reason();
  run.send("left-pad.working", "finish", Json::object());
  run.send("right-pad.working", "finish", Json::object());
  EXPECT_EQ(run.status(), RunStatus::kDone) << run.reason();
  EXPECT_EQ(run.output()["items"],
            (Json{{"left-pad", "left-pad"}, {"right-pad", "right-pad"}, {"is-odd", "is-odd"}}));
}

TEST_F(StdPool, AQueueWithTwoItemsOfOneIdEndsTheRunError) {
  make("std.queue");
  jr2rt::Run run(registry, *info, "r1", clock);
  run.start({{"items", {{{"pkg", "left-pad"}}, {{"pkg", "x"}}, {{"pkg", "left-pad"}}}}});
  EXPECT_EQ(run.status(), RunStatus::kError);
  EXPECT_NE(run.reason().find("std.queue: items 1 and 3 have the same id `left-pad`"),
            std::string::npos)
      << run.reason();
}

TEST_F(StdPool, ABacklogAtTheRunsHomeDrainsInDependencyOrder) {
  make("std.backlog");
  const std::string home = TempDir("pool_home");
  Write(home + "/packages.json", R"([{"pkg":"docs","needs":["cli"]},{"pkg":"cli","needs":["core"]},
                                     {"pkg":"core"},{"pkg":"extra","needs":["nothing"]}])");
  jr2rt::Run run(registry, *info, "r1", clock);
  run.setHome(home);
  std::vector<std::string> started;
  run.onProgress([&](const std::string& line) {
    if (line.size() > 8 && line.compare(line.size() - 8, 8, " started") == 0)
      started.push_back(line.substr(0, line.size() - 8));
  });
  run.start({{"file", "packages.json"}, {"jobs", 4}});
  EXPECT_EQ(run.status(), RunStatus::kDeadlocked) << "`extra` needs an item that is not there";
  EXPECT_EQ(started, (Ids{"core", "cli", "docs"}));
  // The deadlock is explained in the output (#30): the item left and what it waits for.
  EXPECT_EQ(run.output()["blocked"], Json::parse(R"([{"id": "extra", "waitsFor":
                                       [{"id": "nothing", "is": "missing"}]}])"))
      << run.output();
  EXPECT_FALSE(run.output().contains("cycle"));
}

// Why the items left can never start: a failed need, a missing one, one left too, and a cycle
// (#30: "the items left can never start" named neither the items nor a cycle).
TEST(StdBacklog, ADeadlockIsExplainedItemByItemWithItsCycle) {
  const std::string dir = TempDir("explain");
  Write(dir + "/b.json", R"([{"pkg":"core"},{"pkg":"json","needs":["core"]},
                             {"pkg":"cli","needs":["json"]},{"pkg":"a","needs":["b"]},
                             {"pkg":"b","needs":["c"]},{"pkg":"c","needs":["a","ghost"]},
                             {"pkg":"free"}])");
  const Json why = jr2rt::ExplainBacklog({{"path", "b.json"}},
                                         Query({}, {"core", "json", "free"}, {"json"}), PkgOf, dir);
  EXPECT_EQ(why["count"], 4);
  EXPECT_EQ(why["blocked"], Json::parse(R"([
    {"id": "cli", "waitsFor": [{"id": "json", "is": "failed"}]},
    {"id": "a", "waitsFor": [{"id": "b", "is": "waiting"}]},
    {"id": "b", "waitsFor": [{"id": "c", "is": "waiting"}]},
    {"id": "c", "waitsFor": [{"id": "a", "is": "waiting"}, {"id": "ghost", "is": "missing"}]}])"));
  EXPECT_EQ(why["cycle"], (Json{"a", "b", "c", "a"}));
  // A long chain with its cycle at the end: walked without recursion, shown 10 items at most.
  std::string items = "[";
  for (int i = 0; i < 100000; ++i)
    items +=
        "{\"pkg\":\"p" + std::to_string(i) + "\",\"needs\":[\"p" + std::to_string(i + 1) + "\"]},";
  items += "{\"pkg\":\"p100000\",\"needs\":[\"p99999\"]}]";
  Write(dir + "/long.json", items);
  const Json chain = jr2rt::ExplainBacklog({{"path", "long.json"}}, Query({}), PkgOf, dir);
  EXPECT_EQ(chain["count"], 100001);
  EXPECT_EQ(chain["blocked"].size(), 10u);
  EXPECT_EQ(chain["cycle"], (Json{"p99999", "p100000", "p99999"}));
}

// ---- std.command ------------------------------------------------------------------------------

TEST(StdCommand, OutputThatIsNotUtf8IsStoredWithReplacementsAndSaysSo) {
  const Json out = jr2rt::StdEffect("std.command", {{"spec", {{"argv", {"printf", "\\377"}}}}});
  EXPECT_EQ(
      out,
      (Json{
          {"exit", 0}, {"stdout", "\xEF\xBF\xBD"}, {"stderr", ""}, {"replaced", {{"stdout", 1}}}}));
  EXPECT_NO_THROW(out.dump());
  try {
    jr2rt::StdEffect("std.command",
                     {{"spec", {{"argv", {"sh", "-c", "printf 'caf\\351 \\377' >&2; exit 3"}}}}});
    ADD_FAILURE() << "no Failure";
  } catch (const jr2rt::Failure& f) {
    EXPECT_EQ(f.reason(), "`sh` exited 3");
    EXPECT_EQ(f.detail()["stderr"], "caf\xEF\xBF\xBD \xEF\xBF\xBD");
    EXPECT_EQ(f.detail()["replaced"], (Json{{"stderr", 2}}));
    EXPECT_NO_THROW(f.detail().dump());
  }
}

TEST(StdCommand, ARelativeCwdIsTheRunsHomes) {
  const std::string home = TempDir("command_home");
  mkdir((home + "/sub").c_str(), 0755);
  char real[PATH_MAX];
  ASSERT_NE(realpath(home.c_str(), real), nullptr);
  auto pwd = [&](const Json& spec) {
    return jr2rt::StdEffect("std.command", {{"spec", spec}}, home)["stdout"].get<std::string>();
  };
  EXPECT_EQ(pwd({{"argv", {"pwd", "-P"}}, {"cwd", "sub"}}), std::string(real) + "/sub\n");
  EXPECT_EQ(pwd({{"argv", {"pwd", "-P"}}, {"cwd", "."}}), std::string(real) + "\n");
  EXPECT_EQ(pwd({{"argv", {"pwd", "-P"}}}), std::string(real) + "\n") << "the default is the home";
  EXPECT_EQ(pwd({{"argv", {"pwd", "-P"}}, {"cwd", "/"}}), "/\n");
  try {
    jr2rt::StdEffect("std.command", {{"spec", {{"argv", {"true"}}, {"cwd", "nope"}}}}, home);
    ADD_FAILURE() << "no Failure";
  } catch (const jr2rt::Failure& f) {
    EXPECT_EQ(f.reason(), "`true` cannot be started in `nope` (`" + home +
                              "/nope`): No such file or directory");
  }
}

// ---- std.http_get ----------------------------------------------------------------------------

// Answers each of `answers` (whole HTTP responses) to one connection on 127.0.0.1, in order.
class CannedServer {
 public:
  explicit CannedServer(std::vector<std::string> answers) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(listen(fd_, 4), 0);
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, answers = std::move(answers)] {
      for (const std::string& answer : answers) {
        const int client = accept(fd_, nullptr, nullptr);
        if (client < 0) return;
        std::string request;
        char buffer[4096];
        while (request.find("\r\n\r\n") == std::string::npos) {
          const ssize_t n = read(client, buffer, sizeof buffer);
          if (n <= 0) break;
          request.append(buffer, static_cast<size_t>(n));
        }
        EXPECT_EQ(write(client, answer.data(), answer.size()), ssize_t(answer.size()));
        close(client);
      }
    });
  }
  ~CannedServer() {
    thread_.join();
    close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/x"; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

std::string Response(const std::string& status, const std::string& body) {
  return "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

TEST(StdHttpGet, WhatComesBackIsStoredValidAndNeverTooDeep) {
  const std::string deep = std::string(600, '[') + std::string(600, ']');
  CannedServer server({Response("500 Oops \xFF", "caf\xE9 \xFF\xFE"), Response("200 OK", deep),
                       Response("200 OK", "{\"a\": \"\xFF\"}")});
  auto failure = [&] {
    try {
      jr2rt::HttpGet({{"url", server.url()}, {"timeout", 5000}});
    } catch (const jr2rt::Failure& f) {
      EXPECT_NO_THROW(Json(f.reason()).dump()) << "the reason can be saved";
      EXPECT_NO_THROW(f.detail().dump()) << "the detail can be saved";
      return std::make_pair(f.reason(), f.detail());
    }
    return std::make_pair(std::string("no Failure"), Json());
  };
  const auto [status, detail] = failure();
  EXPECT_EQ(status, "std.http_get: GET " + server.url() + " answered 500 Oops \xEF\xBF\xBD");
  EXPECT_EQ(detail["body"], "caf\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(detail["replaced"], (Json{{"body", 3}}));
  EXPECT_EQ(failure().first,
            "std.http_get: the body of GET " + server.url() + " nests deeper than 512 levels");
  const std::string bad = failure().first;
  EXPECT_EQ(bad.rfind("std.http_get: the body of GET " + server.url() + " is not JSON", 0), 0u)
      << bad;
}

}  // namespace

namespace {

// A process that prints without end costs bounded memory and store (#10): each output keeps its
// last MiB (where a build log's error is), and the result says how much went before it.
TEST(StdCommand, OutputPastAMiBKeepsItsEndAndSaysWhatWasDropped) {
  const Json r = jr2rt::StdEffect(
      "std.command",
      {{"spec",
        {{"argv",
          {"sh", "-c", "head -c 3145728 /dev/zero | tr '\\\\0' a; echo END; echo err >&2"}}}}});
  const std::string out = r["stdout"].get<std::string>();
  EXPECT_EQ(out.size(), jr2rt::kCommandOutputKept);
  EXPECT_EQ(out.substr(out.size() - 4), "END\n");
  EXPECT_EQ(r["truncated"]["stdout"].get<size_t>(), 3145728 + 4 - jr2rt::kCommandOutputKept);
  EXPECT_FALSE(r["truncated"].contains("stderr"));
  EXPECT_EQ(r["stderr"], "err\n");
}

TEST(StdCommand, EnvAddsVariablesAndReplacesOnesOfTheSameName) {
  setenv("JR2_TEST_KEPT", "host", 1);
  setenv("JR2_TEST_REPLACED", "host", 1);
  const Json r = jr2rt::StdEffect(
      "std.command",
      {{"spec",
        {{"argv",
          {"sh", "-c",
           "printf '%s|%s|%s' \"$JR2_TEST_KEPT\" \"$JR2_TEST_REPLACED\" "
           "\"$JR2_TEST_ADDED\""}},
         {"env", {{"JR2_TEST_REPLACED", "mine"}, {"JR2_TEST_ADDED", "a b 'c' \"d\" $e"}}}}}});
  EXPECT_EQ(r["stdout"], "host|mine|a b 'c' \"d\" $e") << "spaces, quotes and $ pass as they are";
  unsetenv("JR2_TEST_KEPT");
  unsetenv("JR2_TEST_REPLACED");
}

TEST(StdCommand, ArgvWithSpacesAndQuotesIsPassedIntact) {
  const Json r = jr2rt::StdEffect(
      "std.command",
      {{"spec", {{"argv", {"printf", "[%s]", "two words", "it's", "\"q\"", "$HOME", ""}}}}});
  EXPECT_EQ(r["stdout"], "[two words][it's][\"q\"][$HOME][]");
}

TEST(StdCommand, AnEnvThatCannotBeIsAFailureThatNamesItBeforeAnythingStarts) {
  const std::string home = TempDir("env_refused");
  auto refused = [&](const Json& env) {
    try {
      jr2rt::StdEffect("std.command",
                       {{"spec", {{"argv", {"sh", "-c", "touch started"}}, {"env", env}}}}, home);
      ADD_FAILURE() << "no Failure for " << env.dump();
      return std::string();
    } catch (const jr2rt::Failure& f) {
      return f.reason();
    }
  };
  EXPECT_EQ(refused({{"A=B", "x"}}),
            "std.command: `A=B` cannot be an environment variable's name (no `=`, no NUL, not "
            "empty)");
  EXPECT_EQ(refused({{"", "x"}}),
            "std.command: `` cannot be an environment variable's name (no `=`, no NUL, not "
            "empty)");
  EXPECT_EQ(refused({{"A", 3}}), "std.command: the value of `env.A` is not a string");
  EXPECT_EQ(refused({{"A", std::string("x\0y", 3)}}),
            "std.command: the value of `env.A` holds a NUL");
  EXPECT_EQ(refused(Json::array({1})), "std.command: `env` is not an object of names to strings");
  struct stat st {};
  EXPECT_NE(stat((home + "/started").c_str(), &st), 0) << "a refused command never started";
}

TEST(StdCommand, KeepOutputTrimsInHalvesAndCountsEveryByte) {
  std::string kept;
  size_t dropped = 0;
  const std::string chunk(300000, 'x');
  for (int i = 0; i < 20; ++i) jr2rt::KeepOutput(kept, chunk.data(), chunk.size(), dropped);
  EXPECT_LT(kept.size(), 2 * jr2rt::kCommandOutputKept);
  EXPECT_EQ(kept.size() + dropped, 20u * chunk.size());
}

}  // namespace
