#include "tests/support/tcp_relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>

namespace accumulus::testing {
namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  return address;
}

// Closes `fd` with an RST rather than a FIN: the peer's next read fails
// with ECONNRESET, as when a connection is cut.
void Reset(int fd) {
  const linger abort{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
  close(fd);
}

}  // namespace

// What a connection's control pipe carries.
constexpr char kCut = 'c';   // end the relay
constexpr char kWake = 'w';  // look at the hold again

struct TcpRelay::Connection {
  int client = -1;
  int target = -1;
  int control[2] = {-1, -1};  // kCut or kWake; closed by ~TcpRelay
  std::atomic<bool> cut_sent{false};
  std::atomic<bool> done{false};
  std::thread thread;
};

TcpRelay::TcpRelay(int target_port) : target_port_(target_port) {
  listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address = Loopback(0);
  socklen_t length = sizeof(address);
  if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      listen(listener_, 16) != 0 ||
      getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
      pipe2(wake_, O_CLOEXEC) != 0) {
    throw std::runtime_error("TcpRelay: cannot listen on 127.0.0.1");
  }
  port_ = ntohs(address.sin_port);
  acceptor_ = std::thread([this] { Accept(); });
}

TcpRelay::~TcpRelay() {
  (void)!write(wake_[1], "x", 1);
  acceptor_.join();
  Cut();
  // Joined without the lock: a relay thread between two forwards takes it
  // (held()) before it reads the cut.
  std::vector<std::unique_ptr<Connection>> connections;
  {
    MutexLock lock(&mutex_);
    connections.swap(connections_);
  }
  for (auto& c : connections) {
    if (c->thread.joinable()) c->thread.join();
    close(c->control[0]);
    close(c->control[1]);
  }
  close(listener_);
  close(wake_[0]);
  close(wake_[1]);
}

void TcpRelay::Accept() {
  while (true) {
    pollfd fds[2] = {{listener_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents != 0) return;
    const int client = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    const int target = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_in address = Loopback(target_port_);
    if (target < 0 ||
        connect(target, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
      Reset(client);
      if (target >= 0) close(target);
      continue;
    }
    auto connection = std::make_unique<Connection>();
    connection->client = client;
    connection->target = target;
    if (pipe2(connection->control, O_CLOEXEC) != 0) {
      Reset(client);
      Reset(target);
      continue;
    }
    Connection* c = connection.get();
    MutexLock lock(&mutex_);
    ++accepted_;
    connections_.push_back(std::move(connection));
    c->thread = std::thread([this, c] { Relay(c); });
  }
}

void TcpRelay::Relay(Connection* c) {
  char buffer[16384];
  while (true) {
    // Held: neither end is read (poll skips a negative descriptor), so
    // nothing passes and a hang-up is noticed once released.
    const bool hold = held();
    pollfd fds[3] = {{hold ? -1 : c->client, POLLIN, 0},
                     {hold ? -1 : c->target, POLLIN, 0},
                     {c->control[0], POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) continue;
    if (fds[2].revents != 0) {
      char command = kCut;
      (void)!read(c->control[0], &command, 1);
      if (command == kCut) break;
      continue;
    }
    bool ended = false;
    for (int from = 0; from < 2 && !ended; ++from) {
      if (fds[from].revents == 0) continue;
      const int to = from == 0 ? c->target : c->client;
      const ssize_t n = read(fds[from].fd, buffer, sizeof(buffer));
      if (n <= 0) {
        ended = true;
        break;
      }
      for (ssize_t sent = 0; sent < n;) {
        const ssize_t m = send(to, buffer + sent, static_cast<size_t>(n - sent), MSG_NOSIGNAL);
        if (m <= 0) {
          ended = true;
          break;
        }
        sent += m;
      }
    }
    if (ended) break;
  }
  // Either end closed, or Cut: both ends are reset.
  Reset(c->client);
  Reset(c->target);
  c->done = true;
}

int TcpRelay::Cut() {
  MutexLock lock(&mutex_);
  int cut = 0;
  for (auto& c : connections_) {
    if (c->done || c->cut_sent.exchange(true)) continue;
    (void)!write(c->control[1], &kCut, 1);
    ++cut;
  }
  return cut;
}

void TcpRelay::Hold() {
  MutexLock lock(&mutex_);
  held_ = true;
  WakeLocked();
}

void TcpRelay::Release() {
  MutexLock lock(&mutex_);
  held_ = false;
  WakeLocked();
}

bool TcpRelay::held() const {
  MutexLock lock(&mutex_);
  return held_;
}

void TcpRelay::WakeLocked() {
  for (auto& c : connections_) {
    if (!c->done) (void)!write(c->control[1], &kWake, 1);
  }
}

int TcpRelay::accepted() const {
  MutexLock lock(&mutex_);
  return accepted_;
}

}  // namespace accumulus::testing
