// SPDX-License-Identifier: GPL-3.0-or-later
// Collectives between processes over Gloo's TCP transport (net/gloo_mesh.h,
// under the CPU backend's collectives)
// on loopback: three forked processes, started through the TCP rendezvous
// that carries each one's Gloo addresses, sum with the very bits of the
// in-process collectives (node order from zero), gather and broadcast; a
// process killed before a collective makes the other fail within the
// timeout, with a message naming it, and so does a process that hangs
// among three.
#include <QtTest>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <thread>

#include "backends/cpu/collectives.h"
#include "net/gloo_mesh.h"
#include "net/tcp_rendezvous.h"

using namespace tr;
using namespace tr::net;
using namespace std::chrono_literals;

namespace {

constexpr size_t kCount = 1000;

// Node `node`'s floats: sums of them round differently in another order.
std::vector<float> values_of(int node) {
  std::vector<float> v(kCount);
  for (size_t i = 0; i < kCount; ++i)
    v[i] = static_cast<float>((node + 1) * 1e-3 * static_cast<double>(i * 7919 % 1013)) +
           (i % 3 == 0 ? 1e4f : 0.5f) * static_cast<float>(node % 2 ? -1 : 1);
  return v;
}

// A free port on loopback, given back for node 0 to bind.
uint16_t free_port() {
  RendezvousOptions o;
  o.address = "127.0.0.1:0";
  o.nodes = 2;
  return RendezvousServer(o).port();
}

// What a node's body sees: its mesh, and the CPU collectives of one rank
// thread that reach the other processes through it (what training runs).
using Body = std::function<int(GlooMesh&, cpu::Collectives&)>;

// One node: its mesh, the rendezvous that hands every node the others'
// addresses, the connection, then `body`; 0 when all went well.
int run_node(int node, int nodes, uint16_t port, std::chrono::milliseconds timeout,
             const Body& body) {
  try {
    auto shared = std::make_shared<GlooMesh>(nodes, node, "127.0.0.1", timeout);
    GlooMesh& mesh = *shared;
    RendezvousOptions o;
    o.address = "127.0.0.1:" + std::to_string(port);
    o.nodes = nodes;
    o.node_rank = node;
    o.fingerprint = "test";
    o.node_blob = mesh.addresses();
    o.timeout = 20s;
    const NodeLayout layout = rendezvous(o);
    mesh.connect(layout.node_blobs);
    cpu::Collectives across(1, shared);
    return body(mesh, across);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "node %d: %s\n", node, e.what());
    return 2;
  }
}

// Nodes 1.. in forked children, node 0 here; the children's wait statuses.
std::vector<int> run_nodes(int nodes, std::chrono::milliseconds timeout, const Body& body,
                           int& node0) {
  const uint16_t port = free_port();
  std::vector<pid_t> children;
  for (int n = 1; n < nodes; ++n) {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(run_node(n, nodes, port, timeout, body));
    children.push_back(pid);
  }
  node0 = run_node(0, nodes, port, timeout, body);
  std::vector<int> statuses;
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    statuses.push_back(status);
  }
  return statuses;
}

// The in-process collectives' sum of every node's values, ranks as threads.
std::vector<float> in_process_sum(int nodes) {
  cpu::Collectives c(nodes);
  std::vector<std::vector<float>> data;
  for (int n = 0; n < nodes; ++n) data.push_back(values_of(n));
  std::vector<std::thread> threads;
  for (int n = 0; n < nodes; ++n)
    threads.emplace_back(
        [&, n] { c.all_reduce(n, data[static_cast<size_t>(n)].data(), kCount, false); });
  for (std::thread& t : threads) t.join();
  return data[0];
}

}  // namespace

class TestGlooMesh : public QObject {
  Q_OBJECT

 private slots:
  void threeProcessesSumGatherAndBroadcast() {
    const std::vector<float> want = in_process_sum(3);
    auto body = [&](GlooMesh& mesh, cpu::Collectives& across) {
      std::vector<float> v = values_of(mesh.node_rank());
      across.all_reduce(0, v.data(), kCount, false);
      if (std::memcmp(v.data(), want.data(), kCount * sizeof(float)) != 0) return 10;
      int mine = 100 + mesh.node_rank(), all[3] = {};
      mesh.all_gather(&mine, sizeof mine, all);
      if (all[0] != 100 || all[1] != 101 || all[2] != 102) return 11;
      char word[8] = {};
      if (mesh.node_rank() == 2) std::strcpy(word, "from 2");
      across.broadcast(0, word, sizeof word, 2);
      return std::strcmp(word, "from 2") == 0 ? 0 : 12;
    };
    int node0 = -1;
    const std::vector<int> children = run_nodes(3, 10s, body, node0);
    QCOMPARE(node0, 0);
    for (int status : children) {
      QVERIFY(WIFEXITED(status));
      QCOMPARE(WEXITSTATUS(status), 0);
    }
  }

  void aKilledProcessIsNamedWithinTheTimeout() {
    std::string error;
    double waited = 0;
    auto body = [&](GlooMesh& mesh, cpu::Collectives& across) {
      // Both connected (a first collective), then node 1 dies.
      int mine = mesh.node_rank(), all[2] = {};
      mesh.all_gather(&mine, sizeof mine, all);
      if (mesh.node_rank() == 1) ::raise(SIGKILL);
      const auto start = std::chrono::steady_clock::now();
      std::vector<float> v = values_of(0);
      try {
        across.all_reduce(0, v.data(), kCount, false);
      } catch (const std::runtime_error& e) {
        error = e.what();
      }
      waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return 0;
    };
    int node0 = -1;
    const std::vector<int> children = run_nodes(2, 3s, body, node0);
    QCOMPARE(node0, 0);
    QVERIFY(WIFSIGNALED(children.at(0)));
    QVERIFY2(!error.empty(), "the all-reduce with a dead node returned");
    QVERIFY2(error.find("node 1") != std::string::npos, error.c_str());
    QVERIFY2(waited < 6.0, qPrintable(QString::number(waited)));
  }

  // Of three, node 2 hangs (alive, its sockets open, sending nothing):
  // nodes 0 and 1 each fail at the timeout, naming node 2, not each other.
  void aHungProcessIsNamedByEveryOtherAtTheTimeout() {
    auto body = [&](GlooMesh& mesh, cpu::Collectives& across) {
      int mine = mesh.node_rank(), all[3] = {};
      mesh.all_gather(&mine, sizeof mine, all);
      if (mesh.node_rank() == 2) {
        std::this_thread::sleep_for(4s);  // past the others' timeout
        return 0;
      }
      std::vector<float> v = values_of(mesh.node_rank());
      try {
        across.all_reduce(0, v.data(), kCount, false);
      } catch (const std::runtime_error& e) {
        const std::string why = e.what();
        std::fprintf(stderr, "node %d: %s\n", mesh.node_rank(), e.what());
        return why.find("node 2 sent nothing") != std::string::npos ? 0 : 20;
      }
      return 21;  // the all-reduce returned without node 2
    };
    int node0 = -1;
    const std::vector<int> children = run_nodes(3, 1500ms, body, node0);
    QCOMPARE(node0, 0);
    for (int status : children) {
      QVERIFY(WIFEXITED(status));
      QCOMPARE(WEXITSTATUS(status), 0);
    }
  }

  void malformedAddressesAreRefused() {
    GlooMesh mesh(2, 0, "127.0.0.1", 1s);
    try {
      mesh.connect({mesh.addresses(), "garbage"});
      QFAIL("connected to garbage");
    } catch (const MeshError& e) {
      QVERIFY2(std::string(e.what()).find("node 1 sent malformed addresses") != std::string::npos,
               e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestGlooMesh)
#include "test_gloo_mesh.moc"
