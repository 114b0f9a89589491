// The memory one model answer costs (issue #30): an answer of 100,000 tool calls cost 505 MB per
// exchange when every call was built and copied. This binary counts every byte `operator new`
// hands out (its own, so that no other test pays for the count) and holds the peak of one try
// of the exchange, the body already in hand, to a bound: the harness builds the first call alone.
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "run/agents.h"

namespace {
std::atomic<size_t> g_live{0};
std::atomic<size_t> g_peak{0};

void Counted(void* p) {
  const size_t now = g_live.fetch_add(malloc_usable_size(p)) + malloc_usable_size(p);
  size_t peak = g_peak.load();
  while (now > peak && !g_peak.compare_exchange_weak(peak, now)) {
  }
}
}  // namespace

void* operator new(size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  Counted(p);
  return p;
}
// This operator delete frees what the operator new above got from malloc: GCC, seeing `free`
// on a pointer `new` gave, warns of a mismatch that is not one.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  g_live.fetch_sub(malloc_usable_size(p));
  std::free(p);
}
#pragma GCC diagnostic pop
void operator delete(void* p, size_t) noexcept { operator delete(p); }

namespace {

using jr2rt::HttpReply;
using jr2rt::Json;

std::string ManyCalls(size_t n) {
  std::string body = R"({"choices":[{"message":{"role":"assistant","tool_calls":[)";
  body.reserve(n * 60);
  for (size_t i = 0; i < n; ++i) {
    body += i == 0 ? R"({"id":"c0","type":"function",)"
                     R"("function":{"name":"answer","arguments":"{\"text\": \"42\"}"}})"
                   : R"(,{"id":"c)" + std::to_string(i) +
                         R"(","function":{"name":"other","arguments":"{}"}})";
  }
  return body + "]}}]}";
}

TEST(ModelHarnessMemory, OneTryOf100000ToolCallsCostsLittleMoreThanItsBody) {
  jr2rt::ModelServer server;
  server.model = "qwen";
  server.apiKey = "sk-memory-SECRET";
  std::string body = ManyCalls(100000);
  const size_t bodyBytes = body.size();
  jr2rt::ModelTransport transport;
  // The body is handed over, not copied: what the try costs beyond it is what it builds.
  transport.post = [&body](const std::string&, int64_t) {
    return HttpReply{200, std::move(body), ""};
  };
  const std::string request = R"({"model": "qwen"})";
  const size_t before = g_live.load();
  g_peak.store(before);
  Json answer = jr2rt::TryModel(server, request, 1, 1000, transport);
  const size_t peak = g_peak.load() - before;
  ASSERT_EQ(answer["kind"], "pick") << answer.dump().substr(0, 400);
  EXPECT_EQ(answer["calls"], 100000);
  EXPECT_EQ(answer["message"]["tool_calls"].size(), 1u);
  std::printf(
      "[ one try of 100,000 tool calls: a body of %zu bytes, %zu bytes more at the peak ]\n",
      bodyBytes, peak);
  // The body was counted before (it is moved, not copied): the peak is what the try built.
  EXPECT_LT(peak, size_t{1} << 20)
      << "building every call costs hundreds of MB; the first alone, a few KB";
}

}  // namespace
