// Callers and scopes (docs/runtime.md#callers-and-scopes-for-serve): the callers file refused field
// by field, and a table of every scope against every caller: 401 without a known token, 403 without
// the scope (or, for `answer` limited to some Gates, for another Gate), allowed with it.
#include "jr2/callers.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "jr2/auth.h"

namespace {

namespace fs = std::filesystem;
using jr2rt::Callers;
using jr2rt::Json;
using jr2rt::Scope;
using D = jr2rt::Callers::Decision;

Callers Sample() {
  const Json doc = {{"callers",
                     {{{"name", "ci"},
                       {"token_sha256", jr2rt::Sha256Hex("ci-token")},
                       {"scopes", {{"tickets", {"start", "read", "answer", "cancel"}}}}},
                      {{"name", "reviewer"},
                       {"token_sha256", jr2rt::Sha256Hex("reviewer-token")},
                       {"scopes", {{"tickets", {"answer"}}}},
                       {"gates", {"*.review"}}},
                      {{"name", "watcher"},
                       {"token_sha256", jr2rt::Sha256Hex("watcher-token")},
                       {"scopes", {{"*", {"read"}}}}}}},
                    {"hooks", {{"forge", {{"secret_env", "FORGE_HOOK_SECRET"}}}}}};
  Callers c = Callers::Parse(doc, "the callers file");
  c.addInstance("instance-token");
  return c;
}

std::string Refusal(const Json& doc) {
  try {
    Callers::Parse(doc, "f");
  } catch (const jr2rt::BadInput& e) {
    return e.what();
  }
  return "nothing thrown";
}

TEST(Callers, EveryScopeAgainstEveryCaller) {
  const Callers c = Sample();
  struct Row {
    const char* token;
    const char* workflow;
    Scope scope;
    const char* gate;
    D want;
  };
  const Row rows[] = {
      // No token, or one nobody has: 401, whatever is asked.
      {"", "tickets", Scope::kRead, "", D::kUnauthorized},
      {"", "tickets", Scope::kStart, "", D::kUnauthorized},
      {"nobodys-token", "tickets", Scope::kAnswer, "T-1.review", D::kUnauthorized},
      {"ci-token ", "tickets", Scope::kRead, "", D::kUnauthorized},  // not the same token
      // ci: every scope on tickets, none elsewhere.
      {"ci-token", "tickets", Scope::kStart, "", D::kAllowed},
      {"ci-token", "tickets", Scope::kRead, "", D::kAllowed},
      {"ci-token", "tickets", Scope::kAnswer, "T-1.deploy", D::kAllowed},
      {"ci-token", "tickets", Scope::kCancel, "", D::kAllowed},
      {"ci-token", "triage", Scope::kRead, "", D::kForbidden},
      // reviewer: answer on tickets, at `*.review` Gates only.
      {"reviewer-token", "tickets", Scope::kAnswer, "T-1.review", D::kAllowed},
      {"reviewer-token", "tickets", Scope::kAnswer, "T-1.deploy", D::kForbidden},
      {"reviewer-token", "tickets", Scope::kRead, "", D::kForbidden},
      {"reviewer-token", "tickets", Scope::kStart, "", D::kForbidden},
      {"reviewer-token", "tickets", Scope::kCancel, "", D::kForbidden},
      // watcher: read on every workflow (`*`), nothing else.
      {"watcher-token", "tickets", Scope::kRead, "", D::kAllowed},
      {"watcher-token", "triage", Scope::kRead, "", D::kAllowed},
      {"watcher-token", "triage", Scope::kAnswer, "x.review", D::kForbidden},
      // The instance token: everything.
      {"instance-token", "tickets", Scope::kStart, "", D::kAllowed},
      {"instance-token", "anything", Scope::kCancel, "", D::kAllowed},
      {"instance-token", "tickets", Scope::kAnswer, "T-1.deploy", D::kAllowed},
  };
  int n = 0;
  for (const Row& r : rows) {
    EXPECT_EQ(c.authorize(r.token, r.workflow, r.scope, r.gate), r.want)
        << "row " << n << ": `" << r.token << "` " << jr2rt::ToString(r.scope) << " on "
        << r.workflow << " " << r.gate;
    ++n;
  }
  std::cout << "[ callers ] " << n << " rows\n";
  EXPECT_EQ(c.hooks().at("forge").secretEnv, "FORGE_HOOK_SECRET");
}

TEST(Callers, TheFileIsRefusedFieldByFieldWithTheFix) {
  const std::string hash = jr2rt::Sha256Hex("t");
  EXPECT_EQ(Refusal({{"caller", Json::array()}}),
            "f: `callers file` has no field `caller`; did you mean `callers`? Its fields are "
            "callers, hooks");
  EXPECT_EQ(Refusal({{"callers", {{{"name", "a"}, {"token_sha256", "secret-token"}}}}}),
            "f: `callers[0].token_sha256` must be 64 lowercase hex digits: the SHA-256 of the "
            "token (`printf %s TOKEN | sha256sum`), never the token itself");
  EXPECT_EQ(Refusal({{"callers",
                      {{{"name", "a"}, {"token_sha256", hash}, {"scopes", {{"t", {"raed"}}}}}}}}),
            "f: `callers[0].scopes.t` has the scope `raed`; did you mean `read`?");
  EXPECT_EQ(Refusal({{"callers",
                      {{{"name", "a"}, {"token_sha256", hash}},
                       {{"name", "a"}, {"token_sha256", jr2rt::Sha256Hex("u")}}}}}),
            "f: `callers[1].name` is `a`, which an earlier caller has");
  EXPECT_EQ(Refusal({{"callers",
                      {{{"name", "a"}, {"token_sha256", hash}},
                       {{"name", "b"}, {"token_sha256", hash}}}}}),
            "f: `callers[1].token_sha256` is the hash of a token an earlier caller has");
  EXPECT_EQ(Refusal({{"callers", {{{"name", "a"}, {"token_sha256", hash}, {"gate", {"x"}}}}}}),
            "f: `callers[0]` has no field `gate`; did you mean `gates`? Its fields are name, "
            "token_sha256, scopes, gates");
  EXPECT_NE(Refusal({{"hooks", {{"forge", {{"secret", "x"}}}}}})
                .find("f: `hooks.forge` has no field `secret`"),
            std::string::npos);
}

TEST(Callers, GatePatternsMatchAsGlobs) {
  EXPECT_TRUE(jr2rt::GlobMatches("*.review", "T-1.review"));
  EXPECT_TRUE(jr2rt::GlobMatches("*.review", "a.b.review"));
  EXPECT_FALSE(jr2rt::GlobMatches("*.review", "T-1.reviewer"));
  EXPECT_FALSE(jr2rt::GlobMatches("*.review", "review"));
  EXPECT_TRUE(jr2rt::GlobMatches("*", ""));
  EXPECT_TRUE(jr2rt::GlobMatches("T-*.*", "T-9.deploy"));
  EXPECT_FALSE(jr2rt::GlobMatches("T-1.review", "T-1.reviewX"));
  // Many stars against a long text that does not match: still fast (no exponential backtrack).
  EXPECT_FALSE(jr2rt::GlobMatches(std::string(50, '*') + "b", std::string(10000, 'a')));
}

TEST(Callers, TheInstanceTokenIsMadeOnceWithMode0600AndNeverFollowedThroughALink) {
  const fs::path dir = fs::path(testing::TempDir()) / ("jr2-callers-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string store = (dir / "jr2.db").string();
  const std::string token = jr2rt::InstanceToken(store);
  EXPECT_EQ(token.size(), 64u);
  struct stat st {};
  ASSERT_EQ(stat((store + ".token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(jr2rt::InstanceToken(store), token) << "read back, not made again";
  chmod((store + ".token").c_str(), 0644);
  EXPECT_THROW(jr2rt::InstanceToken(store), jr2rt::BadInput) << "readable by others";
  const std::string linked = (dir / "other.db").string();
  fs::create_symlink(store + ".token", linked + ".token");
  EXPECT_THROW(jr2rt::InstanceToken(linked), jr2rt::BadInput) << "a symlink is not followed";
  fs::remove_all(dir);
}

}  // namespace
