// SPDX-License-Identifier: GPL-3.0-or-later
// What is particular to the CUDA kernel table, on the host (no device
// needed): every op has a kernel except the ones the backend runs itself, and
// the kernels refuse operands of mixed or unsupported dtypes, naming the op,
// the layer and the operand. Every op's values against a plain reference, on
// this backend and the CPU: engine.backend_ops.
#include <QtTest>

#include <cstring>
#include <stdexcept>

#include "../engine/kernel_harness.h"
#include "compute_mirror.h"

using namespace tr;
using tr::test::layer_with;
using tr::test::node_for;

class TestCudaComputeKernels : public QObject {
  Q_OBJECT

 private slots:
  // ---- the table (host side, no device needed) ----------------------------

  void everyOpHasAKernelExceptTheBackendsOwn() {
    // The host-to-arena copy and the collectives run in the backend itself.
    for (int i = 0; i < static_cast<int>(ComputeOp::NUM_COMPUTE_OPS); ++i) {
      const ComputeOp op = static_cast<ComputeOp>(i);
      QVERIFY2((cuda::cuda_compute_kernel(op) == nullptr) == (op == ComputeOp::H2D_INPUT),
               compute_op_name(op).data());
    }
    for (int i = 0; i < static_cast<int>(RangeOp::NUM_RANGE_OPS); ++i) {
      const RangeOp op = static_cast<RangeOp>(i);
      QVERIFY2((cuda::cuda_range_kernel(op) == nullptr) == is_collective(op),
               range_op_name(op).data());
    }
    QVERIFY(cuda::cuda_compute_kernel(ComputeOp::NUM_COMPUTE_OPS) == nullptr);
    QVERIFY(cuda::cuda_range_kernel(RangeOp::NUM_RANGE_OPS) == nullptr);
  }

  // ---- operand checks (host side, no device needed) ----------------------

  void mixedOrWrongDtypesAreRefused() {
    DTensor h, f, i;
    h.shape = f.shape = i.shape = {2, 3, 3, 5};
    h.dtype = DType::FP16;
    h.region = Region::F_FEATURE_FP16;
    i.dtype = DType::INT32;
    alignas(16) char dummy[16] = {};
    const LayerNode layer = layer_with(LayerType::ReLU);
    GraphNode n = node_for(ComputeOp::RELU_FWD);
    KernelArgs a;
    a.node = &n;
    a.layer_params = test::resolved(layer);
    auto refused = [&](const TensorArg& x, const TensorArg& y, const char* why) {
      a.in = {x};
      a.out = {y};
      try {
        cuda::cuda_compute_kernel(ComputeOp::RELU_FWD)(a, nullptr);
      } catch (const std::invalid_argument& e) {
        // The op, the layer and the operand are named.
        return std::strstr(e.what(), "RELU_FWD") && std::strstr(e.what(), "layer") &&
               std::strstr(e.what(), why);
      }
      return false;
    };
    QVERIFY(refused({dummy, &h}, {dummy, &f}, "fp16"));  // FP16 x, FP32 y
    QVERIFY(refused({dummy, &f}, {dummy, &h}, "fp16"));
    QVERIFY(refused({dummy, &i}, {dummy, &i}, "int32"));
    // Batch norm statistics stay FP32 under AMP.
    DTensor c16, c32;
    c16.shape = c32.shape = {1, 1, 1, 5};
    c16.dtype = DType::FP16;
    c16.region = Region::A_BN_WEIGHT;
    GraphNode bn = node_for(ComputeOp::BN_FWD_INFER);
    a.node = &bn;
    a.in = {{dummy, &h}, {dummy, &c16}, {dummy, &c32}};
    a.out = {{dummy, &h}};
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                             cuda::cuda_compute_kernel(ComputeOp::BN_FWD_INFER)(a, nullptr));
  }
};

QTEST_GUILESS_MAIN(TestCudaComputeKernels)
#include "test_cuda_compute_kernels.moc"
