// What a person meant (runtime/include/jr2/meant.h, through compiler/diag/suggest.h): the close
// name of a typo and the duration literal of a unit written out. The compiler and the runner
// share these rules; these cases are the mistakes new users made (#35).
#include <gtest/gtest.h>

#include "compiler/diag/suggest.h"

namespace jr2 {
namespace {

TEST(ClosestName, AnAdjacentSwapIsOneStep) {
  EXPECT_EQ(ClosestName("titel", {"id", "title"}), "title");
  EXPECT_EQ(ClosestName("inptu", {"input", "store"}), "input");
  EXPECT_EQ(ClosestName("sned", {"send", "status"}), "send");
}

TEST(ClosestName, AMissingOrExtraLetterIsOneStep) {
  EXPECT_EQ(ClosestName("chek", {"check", "compile", "workflows", "graph", "explain"}), "check");
  EXPECT_EQ(ClosestName("aprove", {"approve", "reject"}), "approve");
  EXPECT_EQ(ClosestName("--Wreror", {"--Werror", "--version"}), "--Werror");
}

TEST(ClosestName, NothingFarIsSuggested) {
  EXPECT_EQ(ClosestName("accpt", {"approve", "reject"}), "");
  EXPECT_EQ(ClosestName("ab", {"xy"}), "");
  EXPECT_EQ(ClosestName("frob", {"check", "compile"}), "");
  EXPECT_EQ(ClosestName("check", {"check"}), "") << "the word itself is no suggestion";
}

TEST(DurationMeant, AUnitWrittenOutIsTheLiteralToWrite) {
  EXPECT_EQ(DurationMeant("5", "min"), "5m");
  EXPECT_EQ(DurationMeant("1", "minute"), "1m");
  EXPECT_EQ(DurationMeant("90", "MIN"), "90m");
  EXPECT_EQ(DurationMeant("30", "seconds"), "30s");
  EXPECT_EQ(DurationMeant("2", "hours"), "2h");
  EXPECT_EQ(DurationMeant("1", "day"), "1d");
  EXPECT_EQ(DurationMeant("2", "weeks"), "14d");
  EXPECT_EQ(DurationMeant("250", "msec"), "250ms");
}

TEST(DurationMeant, NothingWhenItIsNoUnitOrNoWholeNumber) {
  EXPECT_EQ(DurationMeant("5", "mn"), "");
  EXPECT_EQ(DurationMeant("5", "hold"), "");
  EXPECT_EQ(DurationMeant("1.5", "min"), "");
  EXPECT_EQ(DurationMeant("", "min"), "");
  EXPECT_EQ(DurationMeant("1234567890", "s"), "") << "more digits than a duration holds";
}

}  // namespace
}  // namespace jr2
