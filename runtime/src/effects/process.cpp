// std.command on the executor: read both pipes and await the pidfd, then build the result as the
// blocking form does (jr2/stdlib.h's CommandResult).
#include "effects/process.h"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <csignal>
#include <memory>
#include <thread>

#include "core/occupancy.h"
#include "effects/orphans.h"
#include "jr2/stdlib.h"

namespace jr2rt {
namespace {

namespace asio = boost::asio;

class Process : public std::enable_shared_from_this<Process> {
 public:
  using OnLine = std::function<void(const char* stream, const std::string& line)>;

  Process(asio::io_context& io, SpawnedCommand c, int pidfd, std::function<void(Json)> done,
          std::function<void(const Failure&)> failed, std::shared_ptr<EffectControl> control,
          OnLine onLine)
      : onLine_(std::move(onLine)),
        control_(std::move(control)),
        c_(std::move(c)),
        out_(io, c_.out),
        err_(io, c_.err),
        pidfd_(io, pidfd),
        deadline_(io),
        done_(std::move(done)),
        failed_(std::move(failed)) {}

  void start() {
    auto self = shared_from_this();
    read(out_, outText_, outBuf_, outDropped_, outFeed_);
    read(err_, errText_, errBuf_, errDropped_, errFeed_);
    pidfd_.async_wait(asio::posix::stream_descriptor::wait_read,
                      [self](const boost::system::error_code&) { self->exited(); });
    deadline_.expires_after(std::chrono::milliseconds(c_.timeoutMs));
    // At the deadline the process is killed (as the blocking form does) and the pipes are given
    // up, even when a child of its own still holds one open.
    deadline_.async_wait([self](const boost::system::error_code& ec) {
      if (ec) return;
      self->timedOut_ = true;
      if (!self->reaped_) KillCommand(self->c_.pid);
      boost::system::error_code ignored;
      self->out_.cancel(ignored);
      self->err_.cancel(ignored);
    });
  }

 private:
  // One output's lines on their way to the feed: the part of a line not yet ended, and how
  // many lines went.
  struct Feed {
    const char* name;
    std::string partial = "";
    int lines = 0;
  };

  void read(asio::posix::stream_descriptor& from, std::string& into, std::array<char, 4096>& buf,
            size_t& dropped, Feed& feed) {
    auto self = shared_from_this();
    from.async_read_some(asio::buffer(buf), [self, &from, &into, &buf, &dropped, &feed](
                                                const boost::system::error_code& ec, size_t n) {
      if (!ec && n > 0) {
        KeepOutput(into, buf.data(), n, dropped);
        self->tell(feed, buf.data(), n);
        self->read(from, into, buf, dropped, feed);
        return;
      }
      self->tellRest(feed);
      from.close();
      self->closed();
    });
  }

  void tell(Feed& feed, const char* data, size_t n) {
    if (!onLine_ || feed.lines > kCommandFeedLines) return;
    for (size_t i = 0; i < n; ++i) {
      if (data[i] != '\n') {
        if (feed.partial.size() <= kCommandFeedLineBytes) feed.partial += data[i];
        continue;
      }
      line(feed);
      if (feed.lines > kCommandFeedLines) return;
    }
  }
  void tellRest(Feed& feed) {
    if (onLine_ && !feed.partial.empty() && feed.lines <= kCommandFeedLines) line(feed);
  }
  void line(Feed& feed) {
    std::string text = std::move(feed.partial);
    feed.partial.clear();
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.size() > kCommandFeedLineBytes) {
      text.resize(kCommandFeedLineBytes);
      text += "…";
    }
    if (++feed.lines > kCommandFeedLines) {
      text = "… more lines: the result keeps the output (its last MiB)";
    }
    onLine_(feed.name, ValidUtf8(text));
  }

  void exited() {
    int status = 0;
    // The pidfd is readable once the process has ended: reap it (never blocks then).
    while (waitpid(c_.pid, &status, 0) < 0 && errno == EINTR) {
    }
    status_ = status;
    reaped_ = true;
    Vacate(Live::kProcess);  // counted since SpawnCommand
    // The command is over: what it left running in its group dies now, and the pipes that a
    // child of its own held open close (orphans.h).
    EndGroup(c_.pid);
    if (control_) control_->reaped = true;
    pidfd_.close();
    closed();
  }

  // Called when each pipe reaches its end and when the process ends: the result goes out once
  // all three have. A child of its own that still holds a pipe open when the process ends was
  // killed with its group (exited), so the pipes end soon after.
  void closed() {
    if (++ended_ < 3) return;
    deadline_.cancel();
    try {
      Json result = CommandResult(c_, status_, timedOut_, std::move(outText_), std::move(errText_),
                                  outDropped_, errDropped_);
      done_(std::move(result));
    } catch (const Failure& f) {
      failed_(f);
    }
  }

  OnLine onLine_;
  Feed outFeed_{"stdout"}, errFeed_{"stderr"};
  std::shared_ptr<EffectControl> control_;
  SpawnedCommand c_;
  asio::posix::stream_descriptor out_, err_, pidfd_;
  asio::steady_timer deadline_;
  std::function<void(Json)> done_;
  std::function<void(const Failure&)> failed_;
  std::array<char, 4096> outBuf_{}, errBuf_{};
  std::string outText_, errText_;
  size_t outDropped_ = 0, errDropped_ = 0;
  int status_ = 0;
  int ended_ = 0;
  bool reaped_ = false;
  bool timedOut_ = false;
};

// Whether this kernel gives pidfds (Linux 5.3 and later), asked once.
bool PidfdsWork() {
  static const bool works = [] {
    const int fd = static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0));
    if (fd < 0) return false;
    close(fd);
    return true;
  }();
  return works;
}

}  // namespace

bool StartCommand(asio::io_context& io, const Json& spec, const std::string& home,
                  std::function<void(Json)> done, std::function<void(const Failure&)> failed,
                  std::shared_ptr<EffectControl> control,
                  std::function<void(const char* stream, const std::string& line)> onLine) {
  if (!PidfdsWork()) return false;
  SpawnedCommand c;
  try {
    c = SpawnCommand(spec, home);
  } catch (const Failure& f) {
    asio::post(io, [failed, f] { failed(f); });
    return true;
  }
  if (control) control->pid = c.pid;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, c.pid, 0));
  if (pidfd < 0) {
    // Out of file descriptors, say: the process runs, and is awaited on a thread of its own;
    // the work guard keeps the executor running until the result is back.
    auto keep = asio::make_work_guard(io);
    std::thread([&io, keep, c, control, done = std::move(done),
                 failed = std::move(failed)]() mutable {
      try {
        Json result = AwaitCommand(c);
        if (control) control->reaped = true;
        asio::post(io, [done, result] { done(result); });
      } catch (const Failure& f) {
        asio::post(io, [failed, f] { failed(f); });
      }
      keep.reset();
    }).detach();
    return true;
  }
  std::make_shared<Process>(io, std::move(c), pidfd, std::move(done), std::move(failed),
                            std::move(control), std::move(onLine))
      ->start();
  return true;
}

}  // namespace jr2rt
