// SPDX-License-Identifier: GPL-3.0-or-later
// The TCP rendezvous (see tcp_rendezvous.h). Every message is a frame: a
// 4-byte big-endian length, then a type byte and its fields (integers as
// 4-byte big-endian, strings as a length and bytes):
//   node -> 0   HELLO    magic, nodes, node rank, local ranks, fingerprint, node blob
//   0 -> node   LAYOUT   nodes, local ranks of every node, blob, every node's node blob
//   node -> 0   READY    (the layout arrived)
//   0 -> node   GO       (every node is ready: the barrier is passed)
//   0 -> node   ERROR    a message saying why the rendezvous failed
// Sockets are non-blocking and every wait is bounded by a deadline, so no
// node hangs on one that died or never came.
#include "net/tcp_rendezvous.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <thread>
#include <utility>

namespace tr::net {

namespace {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

constexpr const char* kMagic = "renaissance-rendezvous/2";
constexpr uint32_t kMaxFrame = 1u << 20;  // far above any real message: a guard against garbage
enum : char { HELLO = 'H', LAYOUT = 'L', READY = 'R', GO = 'G', FAILED = 'E' };

std::string seconds_text(std::chrono::milliseconds ms) {
  const double s = static_cast<double>(ms.count()) / 1000.0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g s", s);
  return buf;
}

// Owns a socket descriptor.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { reset(); }
  Socket(Socket&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Socket& operator=(Socket&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  int fd() const noexcept { return fd_; }
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

void set_nonblocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    throw RendezvousError(std::string("rendezvous: cannot make a socket non-blocking: ") +
                          std::strerror(errno));
}

// Waits until `fd` is ready for `events`; false when the deadline passes first.
bool wait_fd(int fd, short events, Deadline deadline) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR)
      throw RendezvousError(std::string("rendezvous: poll failed: ") + std::strerror(errno));
  }
}

enum class Io { OK, CLOSED, TIMEOUT };

Io send_all(int fd, const std::string& bytes, Deadline deadline) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_fd(fd, POLLOUT, deadline)) return Io::TIMEOUT;
      continue;
    }
    return Io::CLOSED;  // EPIPE, ECONNRESET: the peer is gone
  }
  return Io::OK;
}

Io recv_exact(int fd, char* out, size_t bytes, Deadline deadline) {
  size_t done = 0;
  while (done < bytes) {
    const ssize_t n = ::recv(fd, out + done, bytes - done, 0);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return Io::CLOSED;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_fd(fd, POLLIN, deadline)) return Io::TIMEOUT;
      continue;
    }
    return Io::CLOSED;
  }
  return Io::OK;
}

void put_u32(std::string& s, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>((v >> shift) & 0xff));
}
void put_str(std::string& s, const std::string& v) {
  put_u32(s, static_cast<uint32_t>(v.size()));
  s += v;
}

std::string frame(char type, const std::string& fields = {}) {
  std::string body(1, type);
  body += fields;
  std::string out;
  put_u32(out, static_cast<uint32_t>(body.size()));
  return out + body;
}

// Reads the fields of one frame; a short or inconsistent frame is reported,
// not read past.
class Reader {
 public:
  explicit Reader(std::string bytes) : bytes_(std::move(bytes)) {}
  char type() { return static_cast<char>(take(1)[0]); }
  uint32_t u32() {
    const std::string b = take(4);
    uint32_t v = 0;
    for (char c : b) v = (v << 8) | static_cast<uint8_t>(c);
    return v;
  }
  std::string str() { return take(u32()); }
  bool ok() const noexcept { return ok_; }

 private:
  std::string take(size_t n) {
    if (!ok_ || n > bytes_.size() - pos_) {
      ok_ = false;
      return std::string(std::min<size_t>(n, 4), '\0');
    }
    std::string out = bytes_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  std::string bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

Io recv_frame(int fd, std::string& out, Deadline deadline) {
  char len[4];
  if (const Io r = recv_exact(fd, len, 4, deadline); r != Io::OK) return r;
  uint32_t n = 0;
  for (char c : len) n = (n << 8) | static_cast<uint8_t>(c);
  if (n == 0 || n > kMaxFrame) return Io::CLOSED;  // not our protocol
  out.assign(n, '\0');
  return recv_exact(fd, out.data(), n, deadline);
}

std::string peer_of(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "an unknown address";
  char host[NI_MAXHOST];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&a), len, host, sizeof host, nullptr, 0,
                    NI_NUMERICHOST) != 0)
    return "an unknown address";
  return host;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

void check_options(const RendezvousOptions& o) {
  if (o.nodes < 1) throw UsageError("rendezvous: the node count must be at least 1");
  if (o.node_rank < 0 || o.node_rank >= o.nodes)
    throw UsageError("rendezvous: node rank " + std::to_string(o.node_rank) + " is outside 0.." +
                     std::to_string(o.nodes - 1) + " for " + std::to_string(o.nodes) + " nodes");
  if (o.local_ranks < 1)
    throw UsageError("rendezvous: a node needs at least one local rank, not " +
                     std::to_string(o.local_ranks));
  if (o.timeout.count() <= 0) throw UsageError("rendezvous: the timeout must be positive");
}

NodeLayout layout_of(int nodes, int node_rank, const std::vector<int>& local, std::string blob,
                     std::vector<std::string> node_blobs) {
  NodeLayout l;
  l.nodes = nodes;
  l.node_rank = node_rank;
  l.local_ranks = local;
  l.world = 0;
  for (int n : local) {
    l.first_rank.push_back(l.world);
    l.world += n;
  }
  l.blob = std::move(blob);
  l.node_blobs = std::move(node_blobs);
  return l;
}

struct Addresses {
  addrinfo* list = nullptr;
  ~Addresses() {
    if (list) ::freeaddrinfo(list);
  }
};

// EAI_AGAIN (a name server not answering yet) is worth a retry; the rest is final.
int resolve(const Endpoint& e, bool passive, Addresses& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  const std::string port = std::to_string(e.port);
  return ::getaddrinfo(passive ? nullptr : e.host.c_str(), port.c_str(), &hints, &out.list);
}

}  // namespace

std::string local_address_towards(const Endpoint& e) {
  Addresses addrs;
  if (const int rc = resolve(e, false, addrs); rc != 0)
    throw RendezvousError("rendezvous: cannot resolve host '" + e.host + "' of " + e.str() + ": " +
                          ::gai_strerror(rc));
  std::string last = "no address";
  for (addrinfo* a = addrs.list; a; a = a->ai_next) {
    // A datagram socket's connect sends nothing: it only picks the route.
    Socket s(::socket(a->ai_family, SOCK_DGRAM, 0));
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    char host[NI_MAXHOST] = {};
    if (s.fd() < 0 || ::connect(s.fd(), a->ai_addr, a->ai_addrlen) != 0 ||
        ::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
      last = std::strerror(errno);
      continue;
    }
    if (::getnameinfo(reinterpret_cast<sockaddr*>(&local), len, host, sizeof host, nullptr, 0,
                      NI_NUMERICHOST) == 0)
      return host;
  }
  throw RendezvousError("rendezvous: no address of this machine reaches " + e.str() + " (" + last +
                        ")");
}

std::string Endpoint::str() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Endpoint parse_endpoint(const std::string& text, const std::string& option, bool allow_any_port) {
  auto bad = [&](const std::string& why) {
    return UsageError("option '" + option +
                      "' takes HOST:PORT (node 0's address and a free port, " +
                      "e.g. 10.0.0.1:29500), got '" + text + "': " + why);
  };
  Endpoint e;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    const auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw bad("an IPv6 address goes in brackets, followed by ':PORT'");
    e.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos) throw bad("no ':PORT'");
    e.host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (e.host.find(':') != std::string::npos)
      throw bad("write an IPv6 address in brackets, [ADDRESS]:PORT");
  }
  if (e.host.empty()) throw bad("the host is empty");
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw bad("the port is not a number");
  const long p = std::stol(port);
  if (p > 65535) throw bad("ports go up to 65535");
  if (p == 0 && !allow_any_port) throw bad("port 0 is not a port the other nodes can reach");
  e.port = static_cast<uint16_t>(p);
  return e;
}

RendezvousServer::RendezvousServer(RendezvousOptions options) : options_(std::move(options)) {
  check_options(options_);
  if (options_.node_rank != 0)
    throw UsageError("rendezvous: only node 0 listens; this is node " +
                     std::to_string(options_.node_rank));
  endpoint_ = parse_endpoint(options_.address, "--rendezvous", true);
  // Every address of this machine: HOST is how the others reach node 0, and
  // a name may resolve to a loopback address here but not there.
  Addresses addrs;
  if (const int rc = resolve(endpoint_, true, addrs); rc != 0)
    throw RendezvousError("rendezvous: cannot listen on port " + std::to_string(endpoint_.port) +
                          ": " + ::gai_strerror(rc));
  // IPv4 first: the other nodes mostly connect over it.
  std::vector<addrinfo*> order;
  for (addrinfo* a = addrs.list; a; a = a->ai_next)
    if (a->ai_family == AF_INET) order.push_back(a);
  for (addrinfo* a = addrs.list; a; a = a->ai_next)
    if (a->ai_family != AF_INET) order.push_back(a);
  int last_error = 0;
  for (addrinfo* a : order) {
    Socket s(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
    if (s.fd() < 0) {
      last_error = errno;
      continue;
    }
    // A port left in TIME_WAIT by the previous run is free to reuse; one
    // that something listens on still fails below.
    const int one = 1;
    (void)::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(s.fd(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(s.fd(), 128) != 0) {
      last_error = errno;
      continue;
    }
    set_nonblocking(s.fd());
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    if (::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&bound), &len) != 0)
      throw RendezvousError(std::string("rendezvous: cannot read the bound port: ") +
                            std::strerror(errno));
    port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    listener_ = s.release();  // closed by the destructor
    return;
  }
  if (last_error == EADDRINUSE)
    throw RendezvousError("rendezvous: port " + std::to_string(endpoint_.port) +
                          " on node 0 is already in use (another training run or program "
                          "listens there); choose another port in --rendezvous " +
                          endpoint_.host + ":PORT on every node");
  throw RendezvousError("rendezvous: cannot listen on port " + std::to_string(endpoint_.port) +
                        ": " + std::strerror(last_error));
}

RendezvousServer::~RendezvousServer() {
  if (listener_ >= 0) ::close(listener_);
}

NodeLayout RendezvousServer::run() {
  const RendezvousOptions& o = options_;
  if (o.nodes == 1) return layout_of(1, 0, {o.local_ranks}, o.blob, {o.node_blob});
  struct Peer {
    Socket socket;
    std::string from;
    int rank = -1;
  };
  std::vector<Peer> peers;  // joined, in arrival order
  // Stops the rendezvous: every connected node learns why, then this node throws.
  auto fail = [&](const std::string& why) -> RendezvousError {
    const Deadline soon = Clock::now() + std::chrono::seconds(2);
    std::string fields;
    put_str(fields, why);
    for (Peer& p : peers) (void)send_all(p.socket.fd(), frame(FAILED, fields), soon);
    return RendezvousError(why);
  };
  const Deadline deadline = Clock::now() + o.timeout;
  std::vector<bool> joined(static_cast<size_t>(o.nodes), false);
  std::vector<std::string> node_blobs(static_cast<size_t>(o.nodes));
  joined[0] = true;
  node_blobs[0] = o.node_blob;
  int missing = o.nodes - 1;
  while (missing > 0) {
    if (!wait_fd(listener_, POLLIN, deadline)) {
      std::vector<int> absent, present;
      for (int r = 0; r < o.nodes; ++r)
        (joined[static_cast<size_t>(r)] ? present : absent).push_back(r);
      throw fail("rendezvous at " + endpoint_.str() + " timed out after " +
                 seconds_text(o.timeout) + ": node rank" + (absent.size() == 1 ? " " : "s ") +
                 rank_list(absent) + " of " + std::to_string(o.nodes) + " did not join (joined: " +
                 rank_list(present) + "); start them with --node-rank and the same --rendezvous");
    }
    Socket s(::accept(listener_, nullptr, nullptr));
    if (s.fd() < 0) continue;  // the connection went away again, or EINTR
    set_nonblocking(s.fd());
    const int one = 1;
    (void)::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const std::string from = peer_of(s.fd());
    // A node sends its hello at once; something that does not is not a node.
    std::string hello;
    const Deadline hello_by = std::min(deadline, Clock::now() + std::chrono::seconds(10));
    if (recv_frame(s.fd(), hello, hello_by) != Io::OK) continue;
    Reader r(hello);
    const char type = r.type();
    const std::string magic = r.str();
    const int nodes = static_cast<int>(r.u32());
    const int rank = static_cast<int>(r.u32());
    const int local = static_cast<int>(r.u32());
    const std::string fingerprint = r.str();
    std::string node_blob = r.str();
    if (!r.ok() || type != HELLO || magic != kMagic) continue;  // a stray connection: ignore it
    const std::string who = "node " + std::to_string(rank) + " (from " + from + ")";
    // Refused nodes learn why too: keep the socket with the others first.
    peers.push_back({std::move(s), from, rank});
    if (nodes != o.nodes)
      throw fail(who + " was started with --nodes " + std::to_string(nodes) + " but node 0 with " +
                 std::to_string(o.nodes) + "; give every node the same --nodes");
    if (rank == 0)
      throw fail("two nodes claim node rank 0: node 0 runs at " + endpoint_.str() +
                 " and another connected from " + from + "; give each machine its own --node-rank");
    if (rank < 0 || rank >= o.nodes)
      throw fail(who + " has a node rank outside 0.." + std::to_string(o.nodes - 1));
    if (joined[static_cast<size_t>(rank)]) {
      std::string first;
      for (const Peer& p : peers)
        if (p.rank == rank) {
          first = p.from;
          break;
        }
      throw fail("node rank " + std::to_string(rank) + " joined twice (from " + first + " and " +
                 from + "); give each machine its own --node-rank");
    }
    if (local != o.local_ranks)
      throw fail(who + " trains on " + std::to_string(local) + " device" + (local == 1 ? "" : "s") +
                 " but node 0 on " + std::to_string(o.local_ranks) +
                 "; every node must use the same number of devices");
    if (fingerprint != o.fingerprint)
      throw fail(who +
                 " trains a different project or plan, or from another starting point, than "
                 "node 0 (its fingerprint: " +
                 fingerprint + "; node 0's: " + o.fingerprint +
                 "); every node must use the same project file, options, build and checkpoint");
    joined[static_cast<size_t>(rank)] = true;
    node_blobs[static_cast<size_t>(rank)] = std::move(node_blob);
    --missing;
  }

  std::vector<int> local(static_cast<size_t>(o.nodes), o.local_ranks);
  std::string fields;
  put_u32(fields, static_cast<uint32_t>(o.nodes));
  for (int n : local) put_u32(fields, static_cast<uint32_t>(n));
  put_str(fields, o.blob);
  for (const std::string& b : node_blobs) put_str(fields, b);
  const std::string layout = frame(LAYOUT, fields);
  // The barrier: every node has the layout and said so before any is let go.
  const Deadline barrier_by = Clock::now() + o.timeout;
  for (Peer& p : peers)
    if (send_all(p.socket.fd(), layout, barrier_by) != Io::OK)
      throw fail("node " + std::to_string(p.rank) + " (from " + p.from +
                 ") left before the rendezvous completed");
  for (Peer& p : peers) {
    std::string reply;
    const Io io = recv_frame(p.socket.fd(), reply, barrier_by);
    if (io != Io::OK || Reader(reply).type() != READY)
      throw fail("node " + std::to_string(p.rank) + " (from " + p.from + ") " +
                 (io == Io::TIMEOUT ? "did not confirm the layout in time"
                                    : "left before the rendezvous completed"));
  }
  for (Peer& p : peers) (void)send_all(p.socket.fd(), frame(GO), barrier_by);
  return layout_of(o.nodes, 0, local, o.blob, std::move(node_blobs));
}

NodeLayout join_rendezvous(const RendezvousOptions& o) {
  check_options(o);
  if (o.node_rank == 0) throw UsageError("rendezvous: node 0 listens, it does not join");
  const Endpoint e = parse_endpoint(o.address);
  const Deadline deadline = Clock::now() + o.timeout;
  Socket s;
  std::string last = "no answer";
  // Node 0 may start after this one: retry until the timeout.
  while (s.fd() < 0) {
    if (Clock::now() >= deadline)
      throw RendezvousError("rendezvous: node " + std::to_string(o.node_rank) +
                            " could not reach node 0 at " + e.str() + " within " +
                            seconds_text(o.timeout) + " (" + last +
                            "); start node 0 with --node-rank 0 and this --rendezvous, and check "
                            "the address and that the port is open");
    Addresses addrs;
    const int rc = resolve(e, false, addrs);
    if (rc != 0 && rc != EAI_AGAIN)
      throw RendezvousError("rendezvous: cannot resolve host '" + e.host + "' of --rendezvous " +
                            e.str() + ": " + ::gai_strerror(rc));
    if (rc == EAI_AGAIN) last = std::string("resolving the host: ") + ::gai_strerror(rc);
    for (addrinfo* a = rc == 0 ? addrs.list : nullptr; a && s.fd() < 0; a = a->ai_next) {
      Socket c(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
      if (c.fd() < 0) continue;
      set_nonblocking(c.fd());
      if (::connect(c.fd(), a->ai_addr, a->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
          last = std::strerror(errno);
          continue;
        }
        const Deadline attempt = std::min(deadline, Clock::now() + std::chrono::seconds(5));
        if (!wait_fd(c.fd(), POLLOUT, attempt)) {
          last = "connection attempt timed out";
          continue;
        }
        int err = 0;
        socklen_t len = sizeof err;
        (void)::getsockopt(c.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          last = std::strerror(err);
          continue;
        }
      }
      s = std::move(c);
    }
    if (s.fd() < 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const int one = 1;
  (void)::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

  const std::string me = "node " + std::to_string(o.node_rank);
  std::string fields;
  put_str(fields, kMagic);
  put_u32(fields, static_cast<uint32_t>(o.nodes));
  put_u32(fields, static_cast<uint32_t>(o.node_rank));
  put_u32(fields, static_cast<uint32_t>(o.local_ranks));
  put_str(fields, o.fingerprint);
  put_str(fields, o.node_blob);
  // Node 0 decides when the others are late: it started no earlier than this
  // connection, so waiting its timeout (and a margin) lets its verdict arrive.
  const Deadline reply_by = Clock::now() + o.timeout + std::chrono::seconds(10);
  if (send_all(s.fd(), frame(HELLO, fields), reply_by) != Io::OK)
    throw RendezvousError("rendezvous: " + me + " lost the connection to node 0 at " + e.str() +
                          " while joining");
  auto receive = [&](const char* stage) {
    std::string reply;
    const Io io = recv_frame(s.fd(), reply, reply_by);
    if (io == Io::TIMEOUT)
      throw RendezvousError("rendezvous: " + me + " waited " + seconds_text(o.timeout) +
                            " for node 0 at " + e.str() + " " + stage + " without an answer");
    if (io == Io::CLOSED)
      throw RendezvousError("rendezvous: node 0 at " + e.str() + " closed the connection " + stage +
                            " (is another program listening on that port?)");
    Reader r(reply);
    const char type = r.type();
    if (type == FAILED) {
      const std::string why = r.str();
      throw RendezvousError("rendezvous failed, as node 0 reports: " + why);
    }
    return std::make_pair(type, std::move(r));
  };
  auto [type, r] = receive("while the other nodes joined");
  if (type != LAYOUT)
    throw RendezvousError("rendezvous: node 0 at " + e.str() + " sent an unexpected message");
  const int nodes = static_cast<int>(r.u32());
  std::vector<int> local;
  for (int i = 0; i < nodes && i <= o.nodes; ++i) local.push_back(static_cast<int>(r.u32()));
  std::string blob = r.str();
  std::vector<std::string> node_blobs;
  for (int i = 0; i < nodes && i <= o.nodes; ++i) node_blobs.push_back(r.str());
  if (!r.ok() || nodes != o.nodes)
    throw RendezvousError("rendezvous: node 0 at " + e.str() + " sent a malformed layout");
  if (send_all(s.fd(), frame(READY), reply_by) != Io::OK)
    throw RendezvousError("rendezvous: " + me + " lost the connection to node 0 at " + e.str() +
                          " before the barrier");
  auto [go, unused] = receive("at the barrier");
  (void)unused;
  if (go != GO)
    throw RendezvousError("rendezvous: node 0 at " + e.str() + " sent an unexpected message");
  return layout_of(nodes, o.node_rank, local, std::move(blob), std::move(node_blobs));
}

NodeLayout rendezvous(const RendezvousOptions& options) {
  check_options(options);
  if (options.nodes == 1)
    return layout_of(1, 0, {options.local_ranks}, options.blob, {options.node_blob});
  if (options.node_rank == 0) return RendezvousServer(options).run();
  return join_rendezvous(options);
}

}  // namespace tr::net
