// The host function hello.jr2 calls.
#include "hello.jr2.h"

namespace jr2gen::hello {

::jr2rt::Json send_greeting(const ::jr2rt::Json& args) {
  return {{"sent_to", args.at("arg0").at("to")}};
}

}  // namespace jr2gen::hello
