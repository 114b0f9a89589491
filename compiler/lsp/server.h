// `jr2c lsp`: a language server over JSON-RPC (the Language Server Protocol, 3.17), on the same
// front end and checks as `jr2c check` (docs/editors.md#jr2c-lsp). One thread: it reads a
// message, answers it, and when no message is waiting it checks the documents edited since and
// publishes their diagnostics — a burst of edits is checked once, with no timer to wait out.
#pragma once

#include <memory>
#include <ostream>
#include <string>

namespace jr2::lsp {

// Where messages come from: the framing of the protocol (`Content-Length: N\r\n\r\n` then N
// bytes of JSON) is read by the channel.
class Channel {
 public:
  virtual ~Channel() = default;
  // The next message's body; false at the end of the input or when its framing is broken (then
  // `error` says why, in one line).
  virtual bool read(std::string* body, std::string* error) = 0;
  // Whether a message is waiting: the server checks edited documents only when none is.
  virtual bool pending() = 0;
};

// A channel on a file descriptor (stdin).
std::unique_ptr<Channel> FdChannel(int fd);
// A channel on text held in memory (the transcript tests): every message is read in turn, and
// `pending` is false between them, so each edit is checked before the next message.
std::unique_ptr<Channel> TextChannel(std::string framed);

struct Options {
  std::string version;  // serverInfo.version
  // Where the standard library's text is written for go-to-definition into `<std>`
  // (`DIR/std-VERSION.jr2`); empty: $XDG_CACHE_HOME/jr2c, else ~/.cache/jr2c.
  std::string stdDir;
};

// Phase entry: serves one client until `exit` or the end of the input. Answers go to `out`
// framed; one-line notes about a broken input go to `log`. Returns the exit code: 0 after
// `shutdown` then `exit`, 1 otherwise (as the protocol says).
int Serve(Channel& in, std::ostream& out, std::ostream& log, const Options& options);

// Frames a message body as the protocol does.
std::string Frame(const std::string& body);

}  // namespace jr2::lsp
