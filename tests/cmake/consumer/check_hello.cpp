// Drives the generated `hello` machine: a smoke test that the installed package works.
#include <iostream>

#include "hello.jr2.h"

struct Host : jr2rt::MachineHost {
  int invoke = -1;
  void startTimer(int, jr2rt::Duration) override {}
  void cancelTimer(int) override {}
  void startInvoke(const jr2rt::InvokeSpec& spec) override { invoke = spec.id; }
  void cancelInvoke(int) override {}
  void log(const jr2rt::Json&) override {}
};

int main() {
  jr2rt::Registry registry;
  jr2gen::hello::RegisterWorkflows(registry);
  const auto* fn = registry.host("send_greeting");
  if (fn == nullptr) return 10;
  const auto answer = (*fn)({{"arg0", {{"to", "Ada"}}}});
  Host host;
  auto m = jr2gen::hello::Make_hello();
  m->start(host, {{"who", {{"name", "Ada"}}}});
  m->dispatch({jr2rt::Event::Kind::kDone, host.invoke, answer});
  std::cout << m->output().get<std::string>() << "\n";
  return m->output() == "Hello, Ada" ? 0 : 1;
}
