// The program's host function. Never called by the suite: every test scripts `scripted_next` on
// its run; the runners that jr2_add_workflow builds from pool.jr2 link against this.
#include <csignal>

#include "pool.jr2.h"

jr2rt::Json jr2gen::pool::scripted_next(const jr2rt::Json&, const jr2rt::NextQuery&) {
  throw jr2rt::Defect("scripted_next is scripted by the tests; run the suite, not this runner");
}

// Echoes its value; the value `throw-42` throws what is not a std::exception (pool_test.cpp),
// `own-failure` a Failure whose detail says `defect` (replay_test.py: it stays a Failure).
jr2rt::Json jr2gen::pool::echo_host(const jr2rt::Json& args) {
  if (args.at("value") == "throw-42") throw 42;  // NOLINT(hicpp-exception-baseclass)
  // A Failure of its own whose detail looks like anything at all: an ordinary Failure.
  if (args.at("value") == "own-failure")
    throw jr2rt::Failure("its own failure", jr2rt::Json{{"jr2.defect", true}});
  if (args.at("value") == "segv") std::raise(SIGSEGV);  // a host function that crashes
  return args.at("value");
}

jr2rt::Json jr2gen::pool::scripted_read(const jr2rt::Json&) {
  throw jr2rt::Defect("scripted_read is scripted by the tests; run the suite, not this runner");
}
