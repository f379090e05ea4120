// SPDX-License-Identifier: GPL-3.0-or-later
// The TCP rendezvous that starts a multi-node run: several nodes as threads
// on 127.0.0.1 and an ephemeral port. They agree on a layout and node 0's
// blob; a missing node, a node rank given twice, a different fingerprint,
// node count or device count, a port in use and a bad address each fail with
// a message that says which.
#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net/tcp_rendezvous.h"

using namespace tr;
using namespace tr::net;
using namespace std::chrono_literals;

namespace {

RendezvousOptions node(int rank, int nodes, uint16_t port, int local = 2,
                       std::string fingerprint = "plan-abc") {
  RendezvousOptions o;
  o.address = "127.0.0.1:" + std::to_string(port);
  o.nodes = nodes;
  o.node_rank = rank;
  o.local_ranks = local;
  o.fingerprint = std::move(fingerprint);
  o.timeout = 5s;
  return o;
}

// What a node's rendezvous ended with: its layout, or the error message.
struct Outcome {
  NodeLayout layout;
  std::string error;  // empty: joined
};

std::future<Outcome> run_async(std::function<NodeLayout()> f) {
  return std::async(std::launch::async, [f = std::move(f)] {
    Outcome out;
    try {
      out.layout = f();
    } catch (const RendezvousError& e) {
      out.error = e.what();
    }
    return out;
  });
}

Outcome finish(std::future<Outcome>& f) {
  if (f.wait_for(60s) != std::future_status::ready) qFatal("a node stayed blocked for 60 s");
  return f.get();
}

// A client that is not a node: connects, sends `bytes` and hangs up.
void send_and_close(uint16_t port, const std::string& bytes) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  QVERIFY(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  QCOMPARE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  if (!bytes.empty()) QCOMPARE(::send(fd, bytes.data(), bytes.size(), 0), ssize_t(bytes.size()));
  ::close(fd);
}

bool contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return true;
  qWarning("'%s' does not contain '%s'", text.c_str(), part.c_str());
  return false;
}

}  // namespace

class TestRendezvous : public QObject {
  Q_OBJECT

 private slots:
  void parses_addresses() {
    const Endpoint a = parse_endpoint("10.0.0.1:29500");
    QCOMPARE(a.host, std::string("10.0.0.1"));
    QCOMPARE(int(a.port), 29500);
    const Endpoint b = parse_endpoint("[fe80::1]:1234");
    QCOMPARE(b.host, std::string("fe80::1"));
    QCOMPARE(b.str(), std::string("[fe80::1]:1234"));
    QCOMPARE(parse_endpoint("node-a.cluster:80").host, std::string("node-a.cluster"));
    for (const char* bad : {"10.0.0.1", "10.0.0.1:", ":29500", "host:port", "host:70000", "host:0",
                            "fe80::1:29500", "[fe80::1]29500"}) {
      try {
        parse_endpoint(bad);
        QFAIL(qPrintable(QString("accepted '%1'").arg(bad)));
      } catch (const UsageError& e) {
        QVERIFY(contains(e.what(), "'--rendezvous' takes HOST:PORT"));
        QVERIFY(contains(e.what(), std::string("'") + bad + "'"));
      }
    }
    QCOMPARE(int(parse_endpoint("127.0.0.1:0", "--rendezvous", true).port), 0);
  }

  void one_node_needs_no_network() {
    RendezvousOptions o = node(0, 1, 1);
    o.blob = "id";
    const NodeLayout l = rendezvous(o);
    QCOMPARE(l.world, 2);
    QCOMPARE(l.first_global_rank(), 0);
    QCOMPARE(l.blob, std::string("id"));
  }

  // Three nodes of two ranks: node 0 first, the others connecting as they
  // come, one of them before node 0 listens (it retries).
  void nodes_agree_on_layout_and_blob() {
    RendezvousOptions o0 = node(0, 3, 0);
    o0.blob = std::string("\x00\x01unique-id\xff", 12);
    auto server = std::make_unique<RendezvousServer>(o0);
    const uint16_t port = server->port();
    QVERIFY(port != 0);
    auto n2 = run_async([&] { return rendezvous(node(2, 3, port)); });
    std::this_thread::sleep_for(100ms);
    auto n0 = run_async([&] { return server->run(); });
    std::this_thread::sleep_for(100ms);
    auto n1 = run_async([&] { return rendezvous(node(1, 3, port)); });
    std::vector<Outcome> out{finish(n0), finish(n1), finish(n2)};
    for (int r = 0; r < 3; ++r) {
      const Outcome& o = out[static_cast<size_t>(r)];
      QVERIFY2(o.error.empty(), o.error.c_str());
      QCOMPARE(o.layout.nodes, 3);
      QCOMPARE(o.layout.node_rank, r);
      QCOMPARE(o.layout.world, 6);
      QCOMPARE(o.layout.first_rank, (std::vector<int>{0, 2, 4}));
      QCOMPARE(o.layout.first_global_rank(), 2 * r);
      QCOMPARE(o.layout.blob, o0.blob);
    }
  }

  // A node that starts before node 0 keeps retrying until node 0 listens.
  void a_node_waits_for_node_0() {
    RendezvousOptions o0 = node(0, 2, 0);
    uint16_t port = 0;
    {
      RendezvousServer probe(o0);  // find a free port, then give it back
      port = probe.port();
    }
    auto n1 = run_async([&] { return rendezvous(node(1, 2, port)); });
    std::this_thread::sleep_for(600ms);
    auto n0 = run_async([&] { return rendezvous(node(0, 2, port)); });
    const Outcome a = finish(n0), b = finish(n1);
    QVERIFY2(a.error.empty(), a.error.c_str());
    QVERIFY2(b.error.empty(), b.error.c_str());
    QCOMPARE(b.layout.first_global_rank(), 2);
  }

  void missing_node_times_out_naming_it() {
    RendezvousOptions o0 = node(0, 4, 0);
    o0.timeout = 1500ms;
    RendezvousServer server(o0);
    const uint16_t port = server.port();
    auto n0 = run_async([&] { return server.run(); });
    auto n2 = run_async([&] { return rendezvous(node(2, 4, port)); });
    const Outcome a = finish(n0), b = finish(n2);
    QVERIFY(contains(a.error, "timed out after 1.5 s"));
    QVERIFY(contains(a.error, "node ranks 1, 3 of 4 did not join (joined: 0, 2)"));
    // The node that did come learns why, from node 0.
    QVERIFY(contains(b.error, "as node 0 reports"));
    QVERIFY(contains(b.error, "node ranks 1, 3 of 4 did not join"));
  }

  void node_0_that_never_starts() {
    uint16_t port = 0;
    {
      RendezvousServer probe(node(0, 2, 0));
      port = probe.port();
    }
    RendezvousOptions o1 = node(1, 2, port);
    o1.timeout = 800ms;
    auto n1 = run_async([&] { return rendezvous(o1); });
    const Outcome b = finish(n1);
    QVERIFY(contains(b.error, "node 1 could not reach node 0 at 127.0.0.1:" + std::to_string(port) +
                                  " within 0.8 s"));
    QVERIFY(contains(b.error, "refused"));
  }

  void duplicate_node_rank() {
    RendezvousServer server(node(0, 3, 0));
    const uint16_t port = server.port();
    auto n0 = run_async([&] { return server.run(); });
    auto first = run_async([&] { return rendezvous(node(1, 3, port)); });
    std::this_thread::sleep_for(300ms);
    auto second = run_async([&] { return rendezvous(node(1, 3, port)); });
    const Outcome a = finish(n0), b = finish(first), c = finish(second);
    QVERIFY(contains(a.error, "node rank 1 joined twice (from 127.0.0.1 and 127.0.0.1)"));
    QVERIFY(contains(b.error, "node rank 1 joined twice"));
    QVERIFY(contains(c.error, "node rank 1 joined twice"));
  }

  void mismatched_fingerprint() {
    RendezvousServer server(node(0, 2, 0));
    const uint16_t port = server.port();
    auto n0 = run_async([&] { return server.run(); });
    auto n1 = run_async([&] { return rendezvous(node(1, 2, port, 2, "plan-xyz")); });
    const Outcome a = finish(n0), b = finish(n1);
    QVERIFY(contains(a.error,
                     "node 1 (from 127.0.0.1) trains a different project or plan, or from "
                     "another starting point, than node 0 (its fingerprint: plan-xyz; node 0's: "
                     "plan-abc)"));
    QVERIFY(contains(b.error, "trains a different project or plan"));
  }

  void mismatched_node_count() {
    RendezvousServer server(node(0, 2, 0));
    const uint16_t port = server.port();
    auto n0 = run_async([&] { return server.run(); });
    auto n1 = run_async([&] { return rendezvous(node(1, 3, port)); });
    const Outcome a = finish(n0), b = finish(n1);
    QVERIFY(contains(a.error,
                     "node 1 (from 127.0.0.1) was started with --nodes 3 but node 0 "
                     "with 2"));
    QVERIFY(contains(b.error, "--nodes 3"));
  }

  void mismatched_device_count() {
    RendezvousServer server(node(0, 2, 0, 4));
    const uint16_t port = server.port();
    auto n0 = run_async([&] { return server.run(); });
    auto n1 = run_async([&] { return rendezvous(node(1, 2, port, 2)); });
    const Outcome a = finish(n0), b = finish(n1);
    QVERIFY(contains(a.error, "trains on 2 devices but node 0 on 4"));
    QVERIFY(contains(b.error, "trains on 2 devices but node 0 on 4"));
  }

  // Something that is not a node connects (a port scanner, a browser): the
  // rendezvous ignores it and completes.
  void ignores_a_stray_connection() {
    RendezvousServer server(node(0, 2, 0));
    const uint16_t port = server.port();
    auto n0 = run_async([&] { return server.run(); });
    send_and_close(port, "GET / HTTP/1.0\r\n\r\n");
    send_and_close(port, "");
    auto n1 = run_async([&] { return rendezvous(node(1, 2, port)); });
    const Outcome b = finish(n1);
    QVERIFY2(b.error.empty(), b.error.c_str());
    const Outcome a = finish(n0);
    QVERIFY2(a.error.empty(), a.error.c_str());
  }

  void port_in_use() {
    RendezvousServer first(node(0, 2, 0));
    try {
      RendezvousServer second(node(0, 2, first.port()));
      QFAIL("a second server listened on the same port");
    } catch (const RendezvousError& e) {
      QVERIFY(contains(e.what(),
                       "port " + std::to_string(first.port()) + " on node 0 is already in use"));
    }
  }

  void unknown_host() {
    RendezvousOptions o = node(1, 2, 29500);
    o.address = "no-such-host.invalid:29500";
    o.timeout = 1s;
    try {
      rendezvous(o);
      QFAIL("joined an unknown host");
    } catch (const RendezvousError& e) {
      // Without a name server here the lookup fails as temporary, and is retried.
      const std::string m = e.what();
      QVERIFY(contains(m, "cannot resolve host 'no-such-host.invalid'") ||
              contains(m, "could not reach node 0 at no-such-host.invalid:29500"));
    }
  }

  void bad_options() {
    RendezvousOptions o = node(2, 2, 29500);
    try {
      rendezvous(o);
      QFAIL("accepted node rank 2 of 2");
    } catch (const UsageError& e) {
      QVERIFY(contains(e.what(), "node rank 2 is outside 0..1 for 2 nodes"));
    }
    o = node(1, 2, 29500, 0);
    QVERIFY_THROWS_EXCEPTION(UsageError, rendezvous(o));
  }
};

QTEST_APPLESS_MAIN(TestRendezvous)
#include "test_rendezvous.moc"
