// The keeper of a host's lease (docs/scaling.md#the-keeper, #32): a connection of its own and a
// thread of its own, so that neither a turn that runs long on the host's thread nor a call of
// that thread that hangs (a server gone silent) keeps the heartbeat from going out or the lease's
// loss from being judged. Its heartbeat is sent without waiting on libpq (PQsendQueryParams, the
// socket polled with a deadline): a heartbeat that hangs is given up when the lease would be
// judged lost, and the connection made again. Unless told to poll only, the same connection
// LISTENs on the store's channels and tells the host what the other hosts' commits asked of it
// (Hosts::Wake); NOTIFYs this store's own connection sent are not told back to it.
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "store/postgres/pg_store.h"

namespace jr2rt::pg {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string Duration(Clock::duration d) {
  const auto ms = std::chrono::duration_cast<milliseconds>(d).count();
  return ms < 10000 ? std::to_string(ms) + " ms" : std::to_string(ms / 1000) + " s";
}

class PgKeeper final : public Hosts::Keeper {
 public:
  PgKeeper(const Conn& store, Hosts::Lease lease, int64_t beatMs, bool pollOnly,
           std::function<void(unsigned)> woken)
      : location_(store.location()),
        name_(store.name()),
        secrets_(store.secrets()),
        store_(store),
        beat_(milliseconds(std::max<int64_t>(100, beatMs))),
        listen_(!pollOnly),
        woken_(std::move(woken)),
        lease_(std::move(lease)),
        lastOk_(Clock::now()) {
    stopFd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stopFd_ < 0) {
      throw StoreError(std::string("the keeper of the lease on ") + Quoted(name_) +
                       " cannot start: " + std::strerror(errno));
    }
    thread_ = std::thread([this] { loop(); });
  }

  ~PgKeeper() override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake();
    thread_.join();
    close(stopFd_);
  }

  std::string fenced() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    return fenced_;
  }
  std::string trouble() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    return trouble_;
  }
  void renewed(const Hosts::Lease& lease) override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      lease_ = lease;
      fenced_.clear();
      trouble_.clear();
      lastOk_ = Clock::now();
    }
    wake();  // the next beat goes out now
  }
  bool listening() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    return listening_;
  }
  Counts counts() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    return counts_;
  }

 private:
  void wake() const {
    const uint64_t one = 1;
    if (write(stopFd_, &one, sizeof one) < 0) {
      // Full only if never read: the loop reads it each pass.
    }
  }

  // The lease's loss, judged once: told to the host at once.
  void fence(const std::string& why) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!fenced_.empty()) return;
      fenced_ = why;
    }
    woken_(Hosts::kWakeFenced);
  }

  void drop(const std::string& why) {
    if (conn_ != nullptr) {
      const std::lock_guard<std::mutex> lock(mutex_);
      listening_ = false;
      if (trouble_.empty()) trouble_ = why;
    }
    conn_.reset();
    inFlight_ = false;
    nextConnect_ = Clock::now() + milliseconds(500);
  }

  void connect() {
    try {
      // A connect waits at most 2 s (libpq's least): the loss of the lease is judged after it.
      auto conn = std::make_unique<Conn>(location_, name_, secrets_, 2);
      if (listen_) {
        PGresult* r =
            Pq().exec(conn->handle(), "LISTEN jr2_inbox; LISTEN jr2_answers; LISTEN jr2_runs");
        const bool ok = Pq().resultStatus(r) == PGRES_COMMAND_OK;
        const std::string why = ok ? "" : conn->clean(Pq().resultErrorMessage(r));
        Pq().clear(r);
        if (!ok) throw StoreError("cannot LISTEN on " + Quoted(name_) + ": " + why);
      }
      if (Pq().setnonblocking(conn->handle(), 1) != 0)
        throw StoreError("cannot use " + Quoted(name_) + " without blocking");
      conn_ = std::move(conn);
      bool again = false;
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        listening_ = listen_;
        again = connectedOnce_;
        connectedOnce_ = true;
        if (again) ++counts_.reconnects;
      }
      // What was sent while nobody listened is found by polling everything once.
      if (listen_ && again) woken_(Hosts::kWakeAll);
    } catch (const StoreError& e) {
      const std::lock_guard<std::mutex> lock(mutex_);
      trouble_ = e.what();
      nextConnect_ = Clock::now() + milliseconds(500);
    }
  }

  void sendBeat() {
    Hosts::Lease lease;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      lease = lease_;
    }
    const std::string epoch = std::to_string(lease.epoch);
    const std::string ttl = std::to_string(lease.ttlMs);
    const std::string host = AsText(lease.host);
    const char* values[] = {host.c_str(), epoch.c_str(), ttl.c_str()};
    if (Pq().sendQueryParams(conn_->handle(), kHeartbeatSql, 3, nullptr, values, nullptr, nullptr,
                             0) == 0) {
      drop("the heartbeat could not be sent: " + conn_->clean(Pq().errorMessage(conn_->handle())));
      return;
    }
    inFlight_ = true;
    beatEpoch_ = lease.epoch;
    sentAt_ = Clock::now();
  }

  // A result of the heartbeat in flight.
  void took(PGresult* r) {
    const ExecStatusType s = Pq().resultStatus(r);
    if (s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK) {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (fenced_.empty() && beatEpoch_ == lease_.epoch) {
        lastOk_ = sentAt_;  // the lease runs from when the beat went out, not from its answer
        trouble_.clear();
        ++counts_.beats;
      }
      return;
    }
    const char* state = Pq().resultErrorField(r, PG_DIAG_SQLSTATE);
    const char* primary = Pq().resultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
    const std::string message = conn_->clean(primary ? primary : Pq().resultErrorMessage(r));
    if (state != nullptr && std::strcmp(state, "JR003") == 0) {
      bool current = false;
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        current = beatEpoch_ == lease_.epoch;
      }
      if (current) fence(message);
      return;
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    trouble_ = "the heartbeat failed: " + message;
  }

  // Reads what the server sent: the heartbeat's results, the NOTIFYs.
  void read() {
    PGconn* pg = conn_->handle();
    if (Pq().consumeInput(pg) == 0) {
      drop("lost the keeper's connection to " + Quoted(name_) + ": " +
           conn_->clean(Pq().errorMessage(pg)));
      return;
    }
    while (inFlight_ && Pq().isBusy(pg) == 0) {
      PGresult* r = Pq().getResult(pg);
      if (r == nullptr) {
        inFlight_ = false;
        break;
      }
      took(r);
      Pq().clear(r);
    }
    unsigned wakes = 0;
    std::string host;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      host = lease_.host;
    }
    const int own = store_.backendPid();
    int64_t heard = 0;
    while (PGnotify* n = Pq().notifies(pg)) {
      if (n->be_pid != own) {
        ++heard;
        const std::string channel = n->relname;
        const std::string payload = n->extra != nullptr ? n->extra : "";
        if (channel == "jr2_inbox" && (payload.empty() || payload == host))
          wakes |= Hosts::kWakeInbox;
        if (channel == "jr2_answers") wakes |= Hosts::kWakeAnswers;
        if (channel == "jr2_runs") wakes |= Hosts::kWakeRuns;
      }
      Pq().freemem(n);
    }
    if (heard > 0) {
      const std::lock_guard<std::mutex> lock(mutex_);
      counts_.notifies += heard;
    }
    if (wakes != 0) woken_(wakes);
  }

  void loop() {
    for (;;) {
      const auto now = Clock::now();
      Clock::time_point fenceAt;
      bool lost = false;
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        lost = !fenced_.empty();
        // Two thirds of the TTL without a heartbeat that went through: the lease may run out
        // before the next one, and another host may take the runs.
        fenceAt = lastOk_ + milliseconds(lease_.ttlMs * 2 / 3);
      }
      if (!lost && now >= fenceAt) {
        std::string why;
        {
          const std::lock_guard<std::mutex> lock(mutex_);
          why = "no heartbeat went through for " + Duration(now - lastOk_) +
                (trouble_.empty() ? std::string() : " (" + trouble_ + ")");
        }
        fence(why);
        lost = true;
        // A heartbeat still out hangs: given up with its connection.
        if (inFlight_) drop("the heartbeat had no answer for " + Duration(now - sentAt_));
      }
      if (conn_ == nullptr && now >= nextConnect_) connect();
      if (conn_ != nullptr && !inFlight_ && !lost && now >= nextBeat_) {
        sendBeat();
        nextBeat_ = now + beat_;
      }
      // Until the next beat, the next connect or the moment the lease would be judged lost.
      auto until = now + milliseconds(1000);
      if (!lost) until = std::min(until, fenceAt);
      if (conn_ == nullptr) {
        until = std::min(until, nextConnect_);
      } else if (!inFlight_ && !lost) {
        until = std::min(until, nextBeat_);
      }
      if (conn_ != nullptr && Pq().flush(conn_->handle()) < 0)
        drop("the heartbeat could not be sent");
      pollfd fds[2] = {{stopFd_, POLLIN, 0}, {-1, POLLIN, 0}};
      if (conn_ != nullptr) fds[1].fd = Pq().socket(conn_->handle());
      const auto waitMs = std::max<int64_t>(
          0, std::chrono::duration_cast<milliseconds>(until - Clock::now()).count() + 1);
      const int ready = ::poll(fds, conn_ != nullptr ? 2 : 1, static_cast<int>(waitMs));
      if (ready < 0 && errno != EINTR) std::this_thread::sleep_for(milliseconds(10));
      if (ready > 0 && (fds[0].revents & POLLIN) != 0) {
        uint64_t n = 0;
        if (::read(stopFd_, &n, sizeof n) < 0) {
          // Nonblocking: read by another pass already.
        }
        if (stopping()) return;
      }
      if (conn_ != nullptr && ready > 0 && fds[1].revents != 0) read();
    }
  }

  bool stopping() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return stop_;
  }

  const std::string location_;
  const std::string name_;
  const std::vector<std::string> secrets_;
  const Conn& store_;
  const Clock::duration beat_;
  const bool listen_;
  const std::function<void(unsigned)> woken_;
  int stopFd_ = -1;
  std::thread thread_;

  // The keeper's thread's own.
  std::unique_ptr<Conn> conn_;
  bool inFlight_ = false;
  int64_t beatEpoch_ = 0;
  Clock::time_point sentAt_;
  Clock::time_point nextBeat_;
  Clock::time_point nextConnect_;

  // Shared with the host's thread.
  std::mutex mutex_;
  Hosts::Lease lease_;
  Clock::time_point lastOk_;
  std::string fenced_;
  std::string trouble_;
  bool listening_ = false;
  bool connectedOnce_ = false;
  bool stop_ = false;
  Counts counts_;
};

}  // namespace

std::unique_ptr<Hosts::Keeper> MakeKeeper(const Conn& store, const Hosts::Lease& lease,
                                          int64_t beatMs, bool pollOnly,
                                          std::function<void(unsigned)> woken) {
  return std::make_unique<PgKeeper>(store, lease, beatMs, pollOnly, std::move(woken));
}

}  // namespace jr2rt::pg
