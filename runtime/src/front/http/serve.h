// `<runner> serve` (docs/runtime.md#serve, docs/serve.md), behind the runner's command line.
// Private to the runner.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "jr2/host.h"

namespace jr2rt {

struct ServeOptions {
  std::string listen = "127.0.0.1:8470";
  std::vector<std::string> workflows;  // the workflows whose runs it hosts
  std::string callersFile;             // --callers: "" for the instance token alone
  std::string storePath;               // the instance token is `<storePath>.token`
  std::string home;                    // the home of the runs started over HTTP
  int maxConnections = 0;       // --max-connections; 0: three quarters of the file descriptor limit
  std::string tlsCert, tlsKey;  // --tls-cert, --tls-key: PEM files; both or neither
  bool insecureHttp = false;    // --insecure-http: plain HTTP on an address that is not loopback
  int64_t drainMs = 10000;
  // Hosts sharing a PostgreSQL store (docs/scaling.md#several-hosts): this host's name ("" is
  // the machine's hostname and the port), its lease's TTL, and how many runs it drives at most.
  std::string hostName;
  int64_t leaseTtlMs = 15000;
  int64_t capacity = 10000;
  // --poll-only: no LISTEN connection (a pooler in transaction mode): polling finds everything.
  bool pollOnly = false;
  int listenFd = -1;  // a socket listening already (ListenOn, serve --supervise); -1: bind `listen`
                      // // --drain-timeout: how long a SIGTERM waits for clients to take answers
};

// Binds `--listen HOST:PORT` and listens; gives the socket (for serve --supervise, which keeps it
// across the restarts of its serve). Throws BadInput.
int ListenOn(const std::string& listen);

// Serves until SIGTERM or SIGINT (RunHost::Interrupt), then drains (every connection answered or
// its stream ended, within `drainMs`) and gives 0. `say` prints a line for a
// person. Throws BadInput for a `--listen` it cannot use.
int Serve(RunHost& host, const ServeOptions& options,
          const std::function<void(const std::string&)>& say);

}  // namespace jr2rt
