// `<runner> serve` (RUNTIME.md §6): one process hosts every live run of its workflows on the run
// host's engine, fires their timers on time, answers the CLI's verbs through the store's inbox,
// and answers HTTP (Boost.Beast) on loopback. This first cut answers `GET /healthz`; the other
// routes of §6 come with the rest of issue #11.
#include "serve.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <chrono>
#include <memory>

#include "engine.h"

namespace jr2rt {
namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

constexpr size_t kBodyLimit = 1 << 20;  // RUNTIME.md §6: a body over 1 MiB is 413

// One connection: one request read within 10 s (a client that never finishes is cut off, not a
// stuck server), one JSON answer, then closed.
class Session : public std::enable_shared_from_this<Session> {
 public:
  explicit Session(tcp::socket socket) : stream_(std::move(socket)) {}

  void start() {
    parser_.body_limit(kBodyLimit);
    parser_.header_limit(16 * 1024);
    stream_.expires_after(std::chrono::seconds(10));
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->read(ec); });
  }

 private:
  void read(beast::error_code ec) {
    if (ec == http::error::body_limit) return answer(413, {{"error", "the body is over 1 MiB"}});
    if (ec) return;  // a timeout, a closed connection, a request that is not HTTP: cut off
    const auto& req = parser_.get();
    const std::string target(req.target());
    if (req.method() == http::verb::get && target == "/healthz") {
      return answer(200, {{"ok", true}});
    }
    answer(404, {{"error", "no route " + std::string(req.method_string()) + " " +
                               Printable(target.substr(0, 200)) + " on this serve"}});
  }

  void answer(unsigned status, const Json& body) {
    res_.version(11);
    res_.result(status);
    res_.set(http::field::content_type, "application/json");
    res_.set(http::field::connection, "close");
    res_.body() = body.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
    res_.prepare_payload();
    stream_.expires_after(std::chrono::seconds(10));
    http::async_write(stream_, res_, [self = shared_from_this()](beast::error_code, size_t) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request_parser<http::string_body> parser_;
  http::response<http::string_body> res_;
};

class Listener {
 public:
  Listener(boost::asio::io_context& io, const tcp::endpoint& at) : acceptor_(io) {
    acceptor_.open(at.protocol());
    acceptor_.set_option(boost::asio::socket_base::reuse_address(true));
    acceptor_.bind(at);
    acceptor_.listen();
    accept();
  }
  void close() {
    beast::error_code ignored;
    acceptor_.close(ignored);
  }
  uint16_t port() const { return acceptor_.local_endpoint().port(); }

 private:
  void accept() {
    acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec == boost::asio::error::operation_aborted) return;
      if (!ec) std::make_shared<Session>(std::move(socket))->start();
      accept();
    });
  }
  tcp::acceptor acceptor_;
};

}  // namespace

int Serve(RunHost& host, const ServeOptions& options,
          const std::function<void(const std::string&)>& say) {
  // HOST:PORT, loopback by default.
  std::string hostPart = "127.0.0.1";
  std::string portPart = options.listen;
  if (const auto colon = options.listen.rfind(':'); colon != std::string::npos) {
    hostPart = options.listen.substr(0, colon);
    portPart = options.listen.substr(colon + 1);
  }
  beast::error_code ec;
  const auto address = boost::asio::ip::make_address(hostPart, ec);
  char* end = nullptr;
  const long port = std::strtol(portPart.c_str(), &end, 10);
  if (ec || portPart.empty() || *end != '\0' || port < 0 || port > 65535) {
    throw BadInput("`--listen` takes HOST:PORT with an IP address, such as 127.0.0.1:8470, not `" +
                   Printable(options.listen) + "`");
  }
  std::unique_ptr<Listener> listener;
  try {
    listener = std::make_unique<Listener>(host.engine().io(),
                                          tcp::endpoint(address, static_cast<uint16_t>(port)));
  } catch (const boost::system::system_error& e) {
    throw BadInput("cannot listen on " + options.listen + ": " + e.code().message());
  }
  const int taken = host.takeLive(options.workflows);
  say("serving " + std::to_string(taken) + " waiting run" + (taken == 1 ? "" : "s") +
      " on http://" + hostPart + ":" + std::to_string(listener->port()) +
      " (SIGTERM or Ctrl-C stops it)");
  host.serve([&] {
    if (const int more = host.takeLive(options.workflows); more > 0) {
      say("took up " + std::to_string(more) + " more run" + (more == 1 ? "" : "s"));
    }
  });
  listener->close();
  say("stopped: every step under way is stored" +
      (host.stoppedEffects() > 0
           ? "; " + std::to_string(host.stoppedEffects()) +
                 " processes were stopped (they read `interrupted` when the runs go on)"
           : std::string()));
  return 0;
}

}  // namespace jr2rt
