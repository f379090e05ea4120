// SPDX-License-Identifier: GPL-3.0-or-later
// The engine finds its CUDA backend at run time (backends/cuda_plugin.h):
// each kind of file it may meet instead gets a message naming the file and
// what is wrong, and a faithful backend is reached through the device scan
// and the training setup. Stand-in libraries (tests/fixtures/fake_cuda_plugin.cpp)
// play the backend; where the real one was built, it is loaded too.
#include <QtTest>

#include <cstdlib>
#include <fstream>

#include <renaissance/devices.h>
#include <renaissance/project_io.h>
#include "backends/cuda_plugin.h"
#include "runtime/backend.h"
#include "setup/training_setup.h"

using namespace tr;

class CudaPluginTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    // Before anything asks for the process's backend: the faithful stand-in.
    QVERIFY(setenv("RENAISSANCE_CUDA_BACKEND", FAKE_PLUGIN_GOOD, 1) == 0);
  }

  void aMissingFileSaysNoBackendIsInstalled() {
    const CudaPlugin p = load_cuda_plugin("/nonexistent/librenaissance-cuda.so");
    QVERIFY(!p.table);
    QVERIFY2(p.problem.starts_with("no CUDA backend installed (/nonexistent/librenaissance-cuda.so "
                                   "is not there"),
             p.problem.c_str());
  }

  void aFileThatIsNoLibraryCannotBeLoaded() {
    const std::string path = QDir::temp().filePath("tr-not-a-library.so").toStdString();
    std::ofstream(path) << "not an ELF file\n";
    const CudaPlugin p = load_cuda_plugin(path);
    std::remove(path.c_str());
    QVERIFY(!p.table);
    QVERIFY2(p.problem.starts_with("the CUDA backend " + path + " cannot be loaded: "),
             p.problem.c_str());
    QVERIFY2(p.problem.find("CUDA runtime, cuBLAS, cuDNN and NCCL") != std::string::npos,
             p.problem.c_str());
  }

  void aLibraryWithoutTheEntryIsNotABackend() {
    const CudaPlugin p = load_cuda_plugin(FAKE_PLUGIN_NO_ENTRY);
    QVERIFY(!p.table);
    QCOMPARE(p.problem, std::string(FAKE_PLUGIN_NO_ENTRY) +
                            " is not a Renaissance CUDA backend (it has no tr_cuda_plugin_entry)");
  }

  void anotherInterfaceVersionIsRefused() {
    const CudaPlugin p = load_cuda_plugin(FAKE_PLUGIN_OTHER_ABI);
    QVERIFY(!p.table);
    QCOMPARE(p.problem, "the CUDA backend " + std::string(FAKE_PLUGIN_OTHER_ABI) +
                            " speaks another interface (version " +
                            std::to_string(kCudaPluginAbi + 1) + ", this engine's is " +
                            std::to_string(kCudaPluginAbi) +
                            "): install the CUDA backend of this very build");
  }

  void anotherBuildIsRefused() {
    const CudaPlugin p = load_cuda_plugin(FAKE_PLUGIN_OTHER_BUILD);
    QVERIFY(!p.table);
    QCOMPARE(p.problem, "the CUDA backend " + std::string(FAKE_PLUGIN_OTHER_BUILD) +
                            " is from build 0.0.1+0000000 and this engine is " + engine_build_id() +
                            ": install the CUDA backend of this very build");
  }

  void theDefaultIsBesideTheEngineLibrary() {
    const char* saved = std::getenv("RENAISSANCE_CUDA_BACKEND");
    const std::string keep = saved ? saved : "";
    unsetenv("RENAISSANCE_CUDA_BACKEND");
    const std::string path = default_cuda_plugin_path();
    setenv("RENAISSANCE_CUDA_BACKEND", keep.c_str(), 1);
    QCOMPARE(path, std::string(ENGINE_LIBRARY_DIR) + "/" + kCudaPluginFile);
  }

  void theScanListsTheBackendsDevices() {
    const DeviceScan s = scan_devices();
    QVERIFY2(s.cuda_backend_loaded, s.cuda_status.c_str());
    QCOMPARE(s.cuda_backend_path, std::string(FAKE_PLUGIN_GOOD));
    QCOMPARE(s.cuda_status, std::string("fake driver"));
    QCOMPARE(s.cuda.size(), size_t{1});
    QCOMPARE(s.cuda[0].name, std::string("Fake device 0"));
    DeviceSet d;
    std::string error;
    QVERIFY(parse_device_set("cuda:0", d, error));
    QCOMPARE(memory_per_rank(d, s).bytes, uint64_t{1} << 30);
  }

  // The training setup makes its backend through the table, and refuses a
  // device the backend does not have, naming the ones it has.
  void trainingOnCudaGoesThroughTheBackendsTable() {
    Project p = load_project(TR_PROJECTS_DIR "/lenet-fashion.json");
    std::string error;
    QVERIFY(parse_device_set("cuda:0", p.training.devices, error));
    const TrainingSetup s = prepare_training(p);
    QVERIFY(s.backend);
    QVERIFY(!s.fell_back);
    QCOMPARE(s.device_note, std::string("training on cuda:0: 0 (Fake device 0)"));
    QCOMPARE(s.backend->world_size(), 1);

    QVERIFY(parse_device_set("cuda:0,1", p.training.devices, error));
    try {
      prepare_training(p);
      QFAIL("cuda:1 was accepted");
    } catch (const UsageError& e) {
      QCOMPARE(std::string(e.what()),
               std::string("cuda:0-1 requested, but this machine has no CUDA device 1; it has "
                           "0 (Fake device 0)"));
    }
  }

  void theRealBackendLoadsWhereItWasBuilt() {
#ifdef REAL_CUDA_PLUGIN
    const CudaPlugin p = load_cuda_plugin(REAL_CUDA_PLUGIN);
    QVERIFY2(p.table, p.problem.c_str());
    QCOMPARE(std::string(p.table->build), engine_build_id());
    DeviceScan s;
    p.table->scan_devices(s);
    QVERIFY(!s.cuda_status.empty());  // the devices, or why there are none
    // Every CUDA library with its version and file, device or not; NCCL's
    // entry may instead say why it cannot be loaded.
    QCOMPARE(s.cuda_libraries.size(), size_t{4});
    const char* names[] = {"CUDA runtime", "cuBLAS", "cuDNN", "NCCL"};
    for (size_t i = 0; i < 4; ++i) {
      const CudaLibraryInfo& l = s.cuda_libraries[i];
      QCOMPARE(l.name, std::string(names[i]));
      if (l.name == "NCCL" && !l.problem.empty()) continue;
      QVERIFY2(QRegularExpression("^[0-9]+\\.[0-9]+\\.[0-9]+$")
                   .match(QString::fromStdString(l.version))
                   .hasMatch(),
               (l.name + ": " + l.version).c_str());
      QVERIFY2(QFileInfo(QString::fromStdString(l.path)).isFile(),
               (l.name + ": " + l.path).c_str());
    }
#else
    QSKIP("this build has no CUDA backend (TR_CUDA=OFF)");
#endif
  }

  // NCCL is loaded at run time for more than one GPU, never linked: a
  // machine without it still runs one GPU, and a bundle without it loads.
  void theRealBackendDoesNotLinkNccl() {
#ifdef REAL_CUDA_PLUGIN
    QProcess readelf;
    readelf.start("readelf", {"-d", REAL_CUDA_PLUGIN});
    if (!readelf.waitForFinished(30000) || readelf.exitCode() != 0)
      QSKIP("readelf is not available here");
    const QString needed = QString::fromUtf8(readelf.readAllStandardOutput());
    QVERIFY2(needed.contains("libcudart"), qPrintable(needed));  // it did read the library
    QVERIFY2(!needed.contains("libnccl"), qPrintable(needed));
#else
    QSKIP("this build has no CUDA backend (TR_CUDA=OFF)");
#endif
  }
};

QTEST_GUILESS_MAIN(CudaPluginTest)
#include "test_cuda_plugin.moc"
