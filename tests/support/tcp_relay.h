// A TCP relay on a loopback port to another loopback port, for faults of
// the network between two processes: Cut() resets every connection it
// relays — both ends see their peer vanish, as after a network blip or a
// proxy's restart — and it goes on relaying new ones; Hold() stops passing
// bytes on, as a network that stalls, until Release(). Bytes pass through
// untouched (TLS included).
#pragma once

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"

namespace accumulus::testing {

class TcpRelay {
 public:
  // Listens on a free port of 127.0.0.1 and relays to 127.0.0.1:`target_port`.
  explicit TcpRelay(int target_port);
  ~TcpRelay();
  TcpRelay(const TcpRelay&) = delete;
  TcpRelay& operator=(const TcpRelay&) = delete;

  int port() const { return port_; }
  // Where to connect through it: 127.0.0.1:port().
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // Resets every live connection (RST to both ends); returns how many.
  int Cut() EXCLUDES(mutex_);
  // Stops relaying: what either end sends waits (in the sockets' buffers,
  // then in its sender) until Release(). Connections are still accepted.
  void Hold() EXCLUDES(mutex_);
  void Release() EXCLUDES(mutex_);
  // Connections accepted so far.
  int accepted() const EXCLUDES(mutex_);

 private:
  struct Connection;
  void Accept();
  void Relay(Connection* connection) EXCLUDES(mutex_);
  bool held() const EXCLUDES(mutex_);
  // Has every live connection look at the hold again.
  void WakeLocked() REQUIRES(mutex_);

  const int target_port_;
  int listener_ = -1;
  int port_ = 0;
  int wake_[2] = {-1, -1};  // written to stop Accept
  std::thread acceptor_;
  mutable Mutex mutex_;
  std::vector<std::unique_ptr<Connection>> connections_ GUARDED_BY(mutex_);
  int accepted_ GUARDED_BY(mutex_) = 0;
  bool held_ GUARDED_BY(mutex_) = false;
};

}  // namespace accumulus::testing
