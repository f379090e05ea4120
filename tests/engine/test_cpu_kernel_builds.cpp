// SPDX-License-Identifier: GPL-3.0-or-later
// The two builds of the CPU backend's own kernels (backends/cpu/kernel_builds.h):
// the AVX-512 one runs where the CPU has AVX-512 and is refused, with its
// reason, where it cannot be used; the loader turns away files that are not
// that build. That both give the same bits op by op: engine.backend_ops
// (avx512BuildGivesThePortableBits) and engine.cpu_kernel_threads.
#include <QtTest>

#include <dlfcn.h>

#include <filesystem>
#include <fstream>
#include <string>

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

  void avx512BuildRunsWhereTheCpuHasIt() {
    const cpu::Avx512Kernels& k = cpu::avx512_own_kernels();
    if (!cpu_runs_x86_64_v4()) {
      QVERIFY(!k.kernels);
      QVERIFY2(contains(k.problem, "lacks AVX-512"), k.problem.c_str());
      QVERIFY(&cpu::best_own_kernels() == &cpu::portable_own_kernels());
      QSKIP("this CPU lacks AVX-512: the portable build runs, as it must");
    }
    QVERIFY2(k.kernels, k.problem.c_str());
    QVERIFY(k.problem.empty());
    QCOMPARE(std::filesystem::path(k.path).filename().string(),
             std::string(cpu::kAvx512KernelsFile));
    QCOMPARE(std::string(k.kernels->isa), std::string("AVX-512"));
    QVERIFY(&cpu::best_own_kernels() == k.kernels);
    // Its kernels are its own copies, in its own file; the same ops have one.
    const cpu::Kernel bn = k.kernels->compute(ComputeOp::BN_BWD);
    QVERIFY(bn && bn != &cpu::bn_bwd);
    QCOMPARE(library_of(bn), std::string(cpu::kAvx512KernelsFile));
    const cpu::OwnKernels& p = cpu::portable_own_kernels();
    for (int i = 0; i < static_cast<int>(ComputeOp::NUM_COMPUTE_OPS); ++i) {
      const ComputeOp op = static_cast<ComputeOp>(i);
      QCOMPARE(k.kernels->compute(op) == nullptr, p.compute(op) == nullptr);
    }
    for (int i = 0; i < static_cast<int>(RangeOp::NUM_RANGE_OPS); ++i) {
      const RangeOp op = static_cast<RangeOp>(i);
      QCOMPARE(k.kernels->range(op) == nullptr, p.range(op) == nullptr);
    }
    // Nothing but the entry is visible: its copies never stand in for the
    // portable ones, which the CPU backend's library exports by the same name.
    const char* bn_bwd_symbol = "_ZN2tr3cpu6bn_bwdERKNS_10KernelArgsE";
    void* self = dlopen(k.path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    void* backend = dlopen("librenaissance-cpu.so", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    QVERIFY(self && backend);
    QVERIFY(dlsym(self, cpu::kAvx512KernelsEntry));
    QVERIFY(!dlsym(self, bn_bwd_symbol));
    QVERIFY(dlsym(backend, bn_bwd_symbol) == reinterpret_cast<void*>(&cpu::bn_bwd));
    // Drops the references RTLD_NOLOAD took, not the libraries.
    dlclose(self);
    dlclose(backend);
  }

  // Every file that is not this build's kernels is refused, saying why.
  void loaderRefusesOtherFiles() {
    const std::string dir = QDir::tempPath().toStdString() + "/tr-kernel-builds";
    std::filesystem::create_directories(dir);
    auto refused = [](const std::string& path, const std::string& why) {
      const cpu::Avx512Kernels k = cpu::load_avx512_kernels(path);
      QVERIFY2(!k.kernels, path.c_str());
      QCOMPARE(k.path, path);
      QVERIFY2(contains(k.problem, path) && contains(k.problem, why), k.problem.c_str());
    };
    refused(dir + "/missing.so", "is not there");
    const std::string text = dir + "/not-a-library.so";
    std::ofstream(text) << "not ELF\n";
    refused(text, "cannot be loaded");
    refused(FAKE_NO_ENTRY, "has no tr_cpu_avx512_kernels");
    refused(FAKE_KERNELS_OTHER_ABI,
            "speaks another interface (version " + std::to_string(cpu::kOwnKernelsAbi + 1) +
                ", this engine's is " + std::to_string(cpu::kOwnKernelsAbi) + ")");
    refused(FAKE_KERNELS_OTHER_BUILD,
            "is from build 0.0.1+0000000 and this engine is " + engine_build_id());
    std::filesystem::remove_all(dir);
  }

  // Where it looks: beside the CPU backend's library.
  void looksBesideTheCpuBackend() {
    const std::filesystem::path p = cpu::default_avx512_kernels_path();
    QCOMPARE(p.filename().string(), std::string(cpu::kAvx512KernelsFile));
    QVERIFY(std::filesystem::exists(p.parent_path() / "librenaissance-cpu.so"));
  }
};

QTEST_APPLESS_MAIN(TestCpuKernelBuilds)
#include "test_cpu_kernel_builds.moc"
