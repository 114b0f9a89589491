// std.command awaited on an executor (#10): the process is spawned, its pipes are read by Asio
// and its end is awaited through a pidfd, so a running process holds no thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "jr2/stdlib.h"
#include "jr2/value.h"

namespace boost::asio {
class io_context;
}  // namespace boost::asio

namespace jr2rt {

// Starts `std.command` with `spec` on `io`. Exactly one of `done` (its result) and `failed` (a
// Failure: it could not start, it timed out, it exited non-zero) is called later, from a handler
// of `io`. Returns false, having started nothing, when this kernel cannot await a process
// (no pidfd): the caller then runs the blocking form on a thread.
// `control` (may be null) gets the process's pid, and `reaped` once it was waited for.
// `onLine` (may be null) is told each line of its output as it comes, from a handler of `io`:
// "stdout" or "stderr" and the line, at most kCommandFeedLines lines of each (then one line
// saying the rest is in the result), each cut at kCommandFeedLineBytes.
bool StartCommand(
    boost::asio::io_context& io, const Json& spec, const std::string& home,
    std::function<void(Json)> done, std::function<void(const Failure&)> failed,
    std::shared_ptr<EffectControl> control = nullptr,
    std::function<void(const char* stream, const std::string& line)> onLine = nullptr);

}  // namespace jr2rt
