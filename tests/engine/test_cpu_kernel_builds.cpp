// SPDX-License-Identifier: GPL-3.0-or-later
// The builds of the CPU backend's own kernels (backends/cpu/kernel_builds.h):
// the AVX2 and AVX-512 ones run where the CPU has them and are refused, with
// the reason, where they cannot be used; the widest that loads runs; the
// loader turns away files that are not the build it looks for. That all give
// the same bits op by op: engine.backend_ops (everyBuildGivesThePortableBits)
// and engine.cpu_kernel_threads.
#include <QtTest>

#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <renaissance/devices.h>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernels/batch_norm.h"
#include "backends/cpu/kernels/dense.h"
#include "core/build_id.h"
#include "core/cpu_features.h"

using namespace tr;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The file of the loaded library that holds `f`.
std::string library_of(cpu::Kernel f) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(f), &info) == 0 || !info.dli_fname) return {};
  return std::filesystem::path(info.dli_fname).filename().string();
}

}  // namespace

class TestCpuKernelBuilds : public QObject {
  Q_OBJECT

 private slots:
  void portableBuildIsThisLibrarys() {
    const cpu::OwnKernels& p = cpu::portable_own_kernels();
    QCOMPARE(p.abi, cpu::kOwnKernelsAbi);
    QCOMPARE(std::string(p.isa), std::string("x86-64"));
    QCOMPARE(std::string(p.build), engine_build_id());
    QVERIFY(p.compute(ComputeOp::BN_BWD) == &cpu::bn_bwd);
    QCOMPARE(library_of(p.compute(ComputeOp::BN_BWD)), std::string("librenaissance-cpu.so"));
  }

  // oneDNN's ops come from one place whichever build runs the rest.
  void denseOpsAreOneDnnsInEveryBuild() {
    const cpu::OwnKernels& p = cpu::portable_own_kernels();
    QVERIFY(p.compute(ComputeOp::CONV_FWD) == nullptr);
    QVERIFY(cpu::compute_kernel(ComputeOp::CONV_FWD, p) == &cpu::conv_fwd);
    QVERIFY(cpu::compute_kernel(ComputeOp::LINEAR_BWD) == &cpu::linear_bwd);
  }

  // Each optional build runs exactly where the CPU runs it, and is refused
  // with the reason elsewhere.
  void optionalBuildRunsWhereTheCpuHasIt_data() {
    QTest::addColumn<QString>("isa");
    for (const cpu::KernelBuild& b : cpu::optional_kernel_builds())
      QTest::newRow(b.isa) << QString(b.isa);
  }

  void optionalBuildRunsWhereTheCpuHasIt() {
    QFETCH(QString, isa);
    const cpu::LoadedKernels* k = cpu::optional_own_kernels(isa.toStdString());
    QVERIFY(k && k->build);
    if (!k->build->cpu_runs()) {
      QVERIFY(!k->kernels);
      QVERIFY2(contains(k->problem, std::string("lacks ") + k->build->lacking), k->problem.c_str());
      QVERIFY(k->path.empty());
      QVERIFY(&cpu::best_own_kernels() != k->kernels);
      QSKIP(qPrintable("this CPU lacks " + isa + ": the build is refused, as it must be"));
    }
    QVERIFY2(k->kernels, k->problem.c_str());
    QVERIFY(k->problem.empty());
    QCOMPARE(std::filesystem::path(k->path).filename().string(), std::string(k->build->file));
    QCOMPARE(QString(k->kernels->isa), isa);
    // Its kernels are its own copies, in its own file; the same ops have one.
    const cpu::Kernel bn = k->kernels->compute(ComputeOp::BN_BWD);
    QVERIFY(bn && bn != &cpu::bn_bwd);
    QCOMPARE(library_of(bn), std::string(k->build->file));
    const cpu::OwnKernels& p = cpu::portable_own_kernels();
    for (int i = 0; i < static_cast<int>(ComputeOp::NUM_COMPUTE_OPS); ++i) {
      const ComputeOp op = static_cast<ComputeOp>(i);
      QCOMPARE(k->kernels->compute(op) == nullptr, p.compute(op) == nullptr);
    }
    for (int i = 0; i < static_cast<int>(RangeOp::NUM_RANGE_OPS); ++i) {
      const RangeOp op = static_cast<RangeOp>(i);
      QCOMPARE(k->kernels->range(op) == nullptr, p.range(op) == nullptr);
    }
    // Nothing but the entry is visible: its copies never stand in for the
    // portable ones, which the CPU backend's library exports by the same name.
    const char* bn_bwd_symbol = "_ZN2tr3cpu6bn_bwdERKNS_10KernelArgsE";
    void* self = dlopen(k->path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    void* backend = dlopen("librenaissance-cpu.so", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    QVERIFY(self && backend);
    QVERIFY(dlsym(self, cpu::kOwnKernelsEntry));
    QVERIFY(!dlsym(self, bn_bwd_symbol));
    QVERIFY(dlsym(backend, bn_bwd_symbol) == reinterpret_cast<void*>(&cpu::bn_bwd));
    // Drops the references RTLD_NOLOAD took, not the libraries.
    dlclose(self);
    dlclose(backend);
  }

  // The backend runs the widest build that loaded, and says why not a wider one.
  void theWidestBuildThatLoadedRuns() {
    const std::vector<cpu::LoadedKernels>& found = cpu::optional_own_kernels();
    QCOMPARE(found.size(), cpu::optional_kernel_builds().size());
    const cpu::OwnKernels* widest = nullptr;
    std::string note;
    for (const cpu::LoadedKernels& k : found) {
      if (k.kernels) {
        widest = k.kernels;
        break;
      }
      note += (note.empty() ? "not the " : "; not the ") + std::string(k.build->isa) +
              " kernels: " + k.problem;
    }
    QVERIFY(&cpu::best_own_kernels() == (widest ? widest : &cpu::portable_own_kernels()));
    QCOMPARE(cpu::narrower_kernels_note(), note);
    QCOMPARE(scan_devices().cpu_kernels, std::string(cpu::best_own_kernels().isa));
    QCOMPARE(scan_devices().cpu_kernels_note, note);
    // Every build that runs, the portable one first.
    const std::vector<const cpu::OwnKernels*> runnable = cpu::runnable_own_kernels();
    QVERIFY(runnable.front() == &cpu::portable_own_kernels());
    size_t loaded = 0;
    for (const cpu::LoadedKernels& k : found) loaded += k.kernels ? 1 : 0;
    QCOMPARE(runnable.size(), 1 + loaded);
    // An x86-64-v4 CPU runs x86-64-v3 code too, so a CPU that runs the
    // AVX-512 build has both.
    if (cpu_runs_x86_64_v4()) {
      QVERIFY(cpu_runs_x86_64_v3());
      QCOMPARE(std::string(cpu::best_own_kernels().isa), std::string("AVX-512"));
    } else if (cpu_runs_x86_64_v3()) {
      QCOMPARE(std::string(cpu::best_own_kernels().isa), std::string("AVX2"));
      QVERIFY2(contains(note, "not the AVX-512 kernels: this CPU lacks AVX-512"), note.c_str());
    }
  }

  // Every file that is not the build's kernels is refused, saying why.
  void loaderRefusesOtherFiles() {
    const std::string dir = QDir::tempPath().toStdString() + "/tr-kernel-builds";
    std::filesystem::create_directories(dir);
    const cpu::KernelBuild& avx2 = cpu::optional_kernel_builds().back();
    QCOMPARE(std::string(avx2.isa), std::string("AVX2"));
    auto refused = [&](const std::string& path, const std::string& why) {
      const cpu::LoadedKernels k = cpu::load_own_kernels(avx2, path);
      QVERIFY2(!k.kernels, path.c_str());
      QCOMPARE(k.path, path);
      QVERIFY(k.build == &avx2);
      QVERIFY2(contains(k.problem, path) && contains(k.problem, why), k.problem.c_str());
    };
    refused(dir + "/missing.so", "is not there");
    const std::string text = dir + "/not-a-library.so";
    std::ofstream(text) << "not ELF\n";
    refused(text, "cannot be loaded");
    refused(FAKE_NO_ENTRY, "has no tr_cpu_own_kernels");
    refused(FAKE_KERNELS_OTHER_ABI,
            "speaks another interface (version " + std::to_string(cpu::kOwnKernelsAbi + 1) +
                ", this engine's is " + std::to_string(cpu::kOwnKernelsAbi) + ")");
    refused(FAKE_KERNELS_OTHER_BUILD,
            "is from build 0.0.1+0000000 and this engine is " + engine_build_id());
    refused(FAKE_KERNELS_OTHER_ISA, "holds the AVX-512 kernels, not the AVX2 ones");
    std::filesystem::remove_all(dir);
  }

  // Where it looks: beside the CPU backend.
  void looksBesideTheCpuBackend() {
    for (const cpu::KernelBuild& b : cpu::optional_kernel_builds()) {
      const std::filesystem::path p = cpu::kernels_path_beside_backend(b.file);
      QCOMPARE(p.filename().string(), std::string(b.file));
      QVERIFY(std::filesystem::exists(p.parent_path() / "librenaissance-cpu.so"));
      // The build makes every one, whatever this CPU runs (on x86-64 with
      // GCC or Clang, where it makes them at all).
      if (!contains(cpu::optional_own_kernels(b.isa)->problem, "this build has no"))
        QVERIFY2(std::filesystem::exists(p), p.c_str());
    }
  }
};

QTEST_APPLESS_MAIN(TestCpuKernelBuilds)
#include "test_cpu_kernel_builds.moc"
