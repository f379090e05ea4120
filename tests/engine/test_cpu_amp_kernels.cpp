// SPDX-License-Identifier: GPL-3.0-or-later
// What is particular to the CPU kernels on 16-bit storage: the stream
// workspace the FP32 staging of a kernel needs (and its refusal without one),
// and the FP16 and bfloat16 array conversions underneath, bit for bit
// against reference conversions. Every op's FP16 values against a plain
// reference, on every backend: engine.backend_ops (its fp16 rows).
#include <QtTest>

#include <QFile>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include <renaissance/devices.h>
#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/kernel_builds.h"
#include "backends/cpu/kernels/activations.h"
#include "backends/cpu/kernels/add_relu.h"
#include "backends/cpu/kernels/batch_norm.h"
#include "backends/cpu/kernels/bf16_arrays.h"
#include "backends/cpu/kernels/dense.h"
#include "backends/cpu/kernels/elementwise.h"
#include "backends/cpu/kernels/half_arrays.h"
#include "backends/cpu/kernels/half_convert.h"
#include "backends/cpu/kernels/half_staging.h"
#include "backends/cpu/kernels/pooling.h"
#include "core/bf16_convert.h"
#include "core/cpu_features.h"
#include "resolved_params.h"

using namespace tr;
using cpu::float_to_half_bits;
using cpu::half_bits_to_float;

namespace {

// A quiet NaN in FP16: what padding lanes hold before a conversion writes them.
constexpr uint16_t kHalfNaN = 0x7E00;

// 16-bit tensors with real DTensor descriptors (region, padding) and their memory.
class Tensors {
 public:
  size_t add(const Shape& shape, Region region, DType dtype = DType::FP16) {
    auto d = std::make_unique<DTensor>();
    d->id = static_cast<DTensorId>(descs_.size());
    d->shape = shape;
    d->dtype = dtype;
    d->region = region;
    d->slot_bytes = DTensor::slot_bytes_for(d->shape, d->dtype, d->region);
    storage_.emplace_back(d->slot_bytes / 8 + 1, 0);
    descs_.push_back(std::move(d));
    return descs_.size() - 1;
  }
  TensorArg arg(size_t i) { return {storage_[i].data(), descs_[i].get()}; }
  std::vector<uint64_t>& bytes(size_t i) { return storage_[i]; }
  // Random values, rounded to the tensor's type, in every row's logical lanes.
  void fill(size_t i, std::mt19937& rng) {
    const DTensor& d = *descs_[i];
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    auto* h = reinterpret_cast<uint16_t*>(storage_[i].data());
    const int64_t rows = d.shape.elements() / d.shape.c;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < d.shape.c; ++k) {
        const float x = u(rng);
        const int64_t at = r * d.padded_c() + k;
        if (d.dtype == DType::FP32)
          reinterpret_cast<float*>(h)[at] = x;
        else
          h[at] = d.dtype == DType::BF16 ? float_to_bf16_bits(x) : cpu::float_to_half_bits(x);
      }
  }

 private:
  std::vector<std::unique_ptr<DTensor>> descs_;
  std::vector<std::vector<uint64_t>> storage_;
};

// bfloat16 as VCVTNEPS2BF16 defines it, from the two neighbouring values in
// double: zeros and subnormals to a signed zero, NaN quieted, the nearer
// neighbour otherwise (ties to the even pattern), past the largest to infinity.
uint16_t bf16_reference(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  if (std::isinf(f)) return static_cast<uint16_t>(bits >> 16);
  if (f == 0.0f || std::fpclassify(f) == FP_SUBNORMAL) return sign;
  const uint16_t down = static_cast<uint16_t>(bits >> 16);
  const uint16_t up = static_cast<uint16_t>(down + 1);
  const double a = std::fabs(double(f));
  const double lo = std::fabs(double(std::bit_cast<float>(uint32_t{down} << 16)));
  const double hi_bits = (up & 0x7F80u) == 0x7F80u
                             ? std::ldexp(1.0, 128)  // the next step is infinity
                             : std::fabs(double(std::bit_cast<float>(uint32_t{up} << 16)));
  const double d_lo = a - lo, d_hi = hi_bits - a;
  return d_hi < d_lo || (d_hi == d_lo && (down & 1u)) ? up : down;
}

bool cpu_has_flag(const char* flag) {
  QFile f(QStringLiteral("/proc/cpuinfo"));
  if (!f.open(QIODevice::ReadOnly)) return false;
  const QByteArray text = f.readAll();
  const int at = text.indexOf("\nflags");
  const QByteArray line = text.mid(at, text.indexOf('\n', at + 1) - at);
  return line.split(' ').contains(flag);
}

// A 16-bit type's row conversions and its scalar reference.
struct RowConversions {
  void (*narrow_rows)(const float*, uint16_t*, int64_t stride, int64_t rows, int64_t c);
  void (*widen_rows)(const uint16_t*, int64_t stride, float*, int64_t rows, int64_t c);
  uint16_t (*to_bits)(float);
  float (*from_bits)(uint16_t);
};

// Rows of every width up to each stride (the strides of input buffers and
// features) narrowed and widened again, and then rows enough for the threads:
// the bits are the scalar reference's, the padding lanes zero, and nothing is
// written past the rows on either side. Empty when all holds, else what not.
QString padded_rows_problem(const RowConversions& f, std::initializer_list<int64_t> strides,
                            unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  for (int64_t rows : {int64_t{3}, int64_t{70000}})
    for (int64_t stride : strides)
      for (int64_t c = 1; c <= stride; ++c) {
        if (rows > 3 && c != stride - 1) continue;
        const QString where = QString("rows %1, stride %2, c %3: ").arg(rows).arg(stride).arg(c);
        std::vector<float> compact(static_cast<size_t>(rows * c));
        for (float& x : compact) x = u(rng);
        std::vector<uint16_t> padded(static_cast<size_t>(rows * stride) + 16, kHalfNaN);
        f.narrow_rows(compact.data(), padded.data(), stride, rows, c);
        std::vector<float> back(compact.size() + 16, 7.0f);
        f.widen_rows(padded.data(), stride, back.data(), rows, c);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k = 0; k < stride; ++k) {
            const uint16_t h = padded[static_cast<size_t>(r * stride + k)];
            if (k >= c) {
              if (h != 0) return where + "padding lane not zeroed";
              continue;
            }
            const float x = compact[static_cast<size_t>(r * c + k)];
            if (h != f.to_bits(x)) return where + QString("value %1 narrowed wrongly").arg(x);
            if (back[static_cast<size_t>(r * c + k)] != f.from_bits(h))
              return where + "a value widened wrongly";
          }
        if (padded[static_cast<size_t>(rows * stride)] != kHalfNaN)
          return where + "written past the padded rows";
        if (back[compact.size()] != 7.0f) return where + "written past the compact rows";
      }
  return {};
}

// Runs `kernel` on the tensors as they lie and again staged through FP32
// (run_16bit_staged), from the same bytes, and checks that every output in
// `outs` came out with the same bits both ways, and was written.
void check_staged_bits(Tensors& t, cpu::Kernel kernel, KernelArgs& a,
                       std::initializer_list<size_t> outs, const QString& what) {
  std::vector<std::vector<uint64_t>> before;
  for (size_t o : outs) before.push_back(t.bytes(o));
  std::vector<uint64_t> memory(cpu::kernel_workspace_bytes(a) / 8 + 1);
  const StreamWorkspace ws{memory.data(), memory.size() * 8};
  a.workspace = &ws;
  kernel(a);
  std::vector<std::vector<uint64_t>> direct;
  size_t k = 0;
  for (size_t o : outs) {
    direct.push_back(t.bytes(o));
    t.bytes(o) = before[k++];
  }
  QVERIFY(cpu::detail::run_16bit_staged(a, kernel));
  a.workspace = nullptr;
  k = 0;
  for (size_t o : outs) {
    QVERIFY2(direct[k] == t.bytes(o), qPrintable(QString("%1, output tensor %2").arg(what).arg(k)));
    QVERIFY2(direct[k] != before[k],
             qPrintable(QString("%1 left output %2 as it was").arg(what).arg(k)));
    ++k;
  }
}

}  // namespace

class TestCpuAmpKernels : public QObject {
  Q_OBJECT

 private slots:
  // The residual join's fused Add+ReLU writes the unfused pair's bits (ADD
  // then RELU forward, RELU_BWD then ADD_BWD backward) in every storage
  // type, padded and compact, with the values where a careless fusion
  // differs: a sum stored as -0 (a bfloat16 subnormal flushed), -inf, NaN,
  // a gradient added onto one already there, and both gradients one tensor.
  void addReluGivesTheUnfusedPairsBits() {
    for (DType type : {DType::FP32, DType::FP16, DType::BF16})
      for (const int64_t c : {12, 16}) {  // 16-bit rows padded to 16, and compact
        const bool bf16 = type == DType::BF16, fp32 = type == DType::FP32;
        const Region f = fp32   ? Region::F_FEATURE_FP32
                         : bf16 ? Region::F_FEATURE_BF16
                                : Region::F_FEATURE_FP16;
        const Region g = fp32   ? Region::F_GRAD_SLOT_FP32
                         : bf16 ? Region::F_GRAD_SLOT_BF16
                                : Region::F_GRAD_SLOT_FP16;
        const Shape s{16, 7, 9, c};
        Tensors t;
        const size_t x0 = t.add(s, f, type), x1 = t.add(s, f, type), sum = t.add(s, f, type),
                     unfused = t.add(s, f, type), fused = t.add(s, f, type);
        std::mt19937 rng(11);
        t.fill(x0, rng);
        t.fill(x1, rng);
        auto set = [&](size_t i, int64_t at, float v) {
          auto* h = reinterpret_cast<uint16_t*>(t.bytes(i).data());
          if (type == DType::FP32)
            reinterpret_cast<float*>(h)[at] = v;
          else
            h[at] = bf16 ? float_to_bf16_bits(v) : cpu::float_to_half_bits(v);
        };
        const float tiny = std::ldexp(1.0f, -126);  // FP32's and bfloat16's smallest normal
        set(x0, 0, -1.5f * tiny);
        set(x1, 0, tiny);
        set(x0, 1, -std::numeric_limits<float>::infinity());
        set(x0, 2, std::numeric_limits<float>::quiet_NaN());
        set(x0, 3, -1.0f);
        set(x1, 3, 1.0f);
        const std::string what = std::string(dtype_name(type)) + " C=" + std::to_string(c);
        std::vector<uint64_t> memory(1 << 20);
        const StreamWorkspace ws{memory.data(), memory.size() * 8};
        auto run = [&](cpu::Kernel kernel, std::vector<size_t> in, std::vector<size_t> out,
                       uint8_t accumulate = 0) {
          GraphNode node;
          node.accumulate_mask = accumulate;
          KernelArgs a;
          a.node = &node;
          for (size_t i : in) a.in.push_back(t.arg(i));
          for (size_t i : out) a.out.push_back(t.arg(i));
          QVERIFY(cpu::kernel_workspace_bytes(a) <= ws.bytes);
          a.workspace = &ws;
          kernel(a);
        };
        run(cpu::add_fwd, {x0, x1}, {sum});
        run(cpu::relu_fwd, {sum}, {unfused});
        run(cpu::add_relu_fwd, {x0, x1}, {fused});
        QVERIFY2(t.bytes(fused) == t.bytes(unfused), what.c_str());

        const size_t dy = t.add(s, g, type), masked = t.add(s, g, type);
        size_t dx[2][2];  // [unfused, fused][port]
        for (auto& pair : dx)
          for (size_t& d : pair) d = t.add(s, g, type);
        t.fill(dy, rng);
        t.fill(dx[0][1], rng);
        t.bytes(dx[1][1]) = t.bytes(dx[0][1]);
        run(cpu::relu_bwd, {unfused, dy}, {masked});
        run(cpu::add_bwd, {masked}, {dx[0][0], dx[0][1]}, 0b10);
        run(cpu::add_relu_bwd, {dy, fused}, {dx[1][0], dx[1][1]}, 0b10);
        for (size_t port = 0; port < 2; ++port)
          QVERIFY2(t.bytes(dx[1][port]) == t.bytes(dx[0][port]),
                   (what + ", dx" + std::to_string(port)).c_str());
        // x + x: both gradients are one slot, the second added onto the first.
        t.fill(dx[0][0], rng);
        t.bytes(dx[1][0]) = t.bytes(dx[0][0]);
        run(cpu::add_bwd, {masked}, {dx[0][0], dx[0][0]}, 0b11);
        run(cpu::add_relu_bwd, {dy, fused}, {dx[1][0], dx[1][0]}, 0b11);
        QVERIFY2(t.bytes(dx[1][0]) == t.bytes(dx[0][0]), (what + ", one slot").c_str());
      }
  }

  // Elementwise kernels on 16-bit storage run a chunk of rows at a time
  // (run_16bit_elementwise), pooling a sample at a time: the bits of staging
  // the whole tensors, over dozens of chunks split between the threads,
  // padded rows, an accumulated gradient and two outputs that are one tensor.
  void chunksGiveTheStagedBits() {
    for (DType type : {DType::FP16, DType::BF16}) {
      const bool bf16 = type == DType::BF16;
      const Region f = bf16 ? Region::F_FEATURE_BF16 : Region::F_FEATURE_FP16;
      const Region g = bf16 ? Region::F_GRAD_SLOT_BF16 : Region::F_GRAD_SLOT_FP16;
      const Shape s{64, 28, 28, 12};  // 50,176 rows of 12 lanes padded to 16
      Tensors t;
      const size_t y = t.add(s, f, type), dy = t.add(s, g, type), dx = t.add(s, g, type);
      std::mt19937 rng(5);
      for (size_t i : {y, dy, dx}) t.fill(i, rng);
      auto compare = [&](cpu::Kernel kernel, KernelArgs& a, size_t out, const char* what) {
        const std::vector<uint64_t> before = t.bytes(out);
        std::vector<uint64_t> memory(cpu::kernel_workspace_bytes(a) / 8 + 1);
        const StreamWorkspace ws{memory.data(), memory.size() * 8};
        a.workspace = &ws;
        kernel(a);
        const std::vector<uint64_t> chunked = t.bytes(out);
        t.bytes(out) = before;
        QVERIFY(cpu::detail::run_16bit_staged(a, kernel));
        QVERIFY2(chunked == t.bytes(out), qPrintable(QString("%1, %2").arg(what).arg(
                                              QString::fromUtf8(dtype_name(type).data()))));
        QVERIFY(chunked != before);
      };
      GraphNode accumulate;
      accumulate.accumulate_mask = 1;
      KernelArgs relu;
      relu.node = &accumulate;
      relu.in = {t.arg(y), t.arg(dy)};
      relu.out = {t.arg(dx)};
      compare(cpu::relu_bwd, relu, dx, "relu_bwd onto a gradient");
      // ADD_BWD into one slot twice: the second output adds onto the first.
      GraphNode second;
      second.accumulate_mask = 2;
      KernelArgs add;
      add.node = &second;
      add.in = {t.arg(dy)};
      add.out = {t.arg(dx), t.arg(dx)};
      compare(cpu::add_bwd, add, dx, "add_bwd, both outputs one tensor");
      // Pooling goes a sample at a time (run_16bit_per_sample), windows
      // overlapping (3x3, stride 2) onto a gradient that holds a value.
      LayerNode pool;
      pool.id = "pool";
      pool.type = LayerType::MaxPool2d;
      pool.params.kernel_h = pool.params.kernel_w = 3;
      pool.params.stride_h = pool.params.stride_w = 2;
      pool.params.pad_h = pool.params.pad_w = 1;
      const Shape ps{s.n, 14, 14, s.c};
      const size_t py = t.add(ps, f, type), pdy = t.add(ps, g, type);
      t.fill(pdy, rng);
      GraphNode fresh;
      KernelArgs fwd;
      fwd.node = &fresh;
      fwd.layer_params = test::resolved(pool);
      fwd.in = {t.arg(y)};
      fwd.out = {t.arg(py)};
      compare(cpu::maxpool_fwd, fwd, py, "maxpool_fwd");
      cpu::maxpool_fwd(fwd);
      KernelArgs bwd;
      bwd.node = &accumulate;
      bwd.layer_params = fwd.layer_params;
      bwd.in = {t.arg(y), t.arg(py), t.arg(pdy)};
      bwd.out = {t.arg(dx)};
      compare(cpu::maxpool_bwd, bwd, dx, "maxpool_bwd onto a gradient");
    }
  }

  // Batch norm, alone and with its ReLU, reads and writes compact bfloat16 as
  // it lies, its rows widened a chunk at a time (row_chunks.h): in every build
  // of our kernels, at widths of one to four AVX-512 vectors and between,
  // every output (the features, the saved and running statistics, dgamma,
  // dbeta, dx overwritten and accumulated) has the bits of staging the whole
  // tensors through FP32.
  void batchNormOnBf16GivesTheStagedBits() {
    for (const cpu::OwnKernels* build : cpu::runnable_own_kernels())
      for (const int64_t c : {16, 24, 48, 64})
        for (const bool relu : {false, true}) {
          const QString where = QString("%1 build, C=%2, %3")
                                    .arg(build->isa)
                                    .arg(c)
                                    .arg(relu ? "with ReLU" : "alone");
          const DType type = DType::BF16;
          Tensors t;
          const Shape bs{16, 14, 14, c}, cs{1, 1, 1, c};
          const size_t x = t.add(bs, Region::F_FEATURE_BF16, type),
                       y = t.add(bs, Region::F_FEATURE_BF16, type),
                       dy = t.add(bs, Region::F_GRAD_SLOT_BF16, type),
                       dx = t.add(bs, Region::F_GRAD_SLOT_BF16, type),
                       // Scale, shift and their gradients: FP32 at every precision.
              gamma = t.add(cs, Region::W_BN_WEIGHT, DType::FP32),
                       beta = t.add(cs, Region::W_BN_BIAS, DType::FP32),
                       prev_mean = t.add(cs, Region::B_PREV_MEAN, DType::FP32),
                       prev_var = t.add(cs, Region::B_PREV_VAR, DType::FP32),
                       saved = t.add({1, 1, 2, c}, Region::S_BN_SAVED, DType::FP32),
                       next_mean = t.add(cs, Region::B_NEXT_MEAN, DType::FP32),
                       next_var = t.add(cs, Region::B_NEXT_VAR, DType::FP32),
                       dgamma = t.add(cs, Region::G_BN_WEIGHT, DType::FP32),
                       dbeta = t.add(cs, Region::G_BN_BIAS, DType::FP32);
          std::mt19937 rng(static_cast<unsigned>(11 + c + relu));
          for (size_t i : {x, dy, dx, gamma, beta, prev_mean, prev_var, dgamma, dbeta})
            t.fill(i, rng);
          auto compare = [&](ComputeOp op, KernelArgs& a, std::initializer_list<size_t> outs,
                             const char* what) {
            check_staged_bits(t, cpu::compute_kernel(op, *build), a, outs,
                              QString("%1: %2").arg(where, what));
          };
          LayerNode bn;
          bn.id = "bn";
          bn.type = LayerType::BatchNorm2d;
          GraphNode fresh;
          KernelArgs fwd;
          fwd.node = &fresh;
          fwd.layer_params = test::resolved(bn);
          fwd.in = {t.arg(x), t.arg(gamma), t.arg(beta), t.arg(prev_mean), t.arg(prev_var)};
          fwd.out = {t.arg(y), t.arg(saved), t.arg(next_mean), t.arg(next_var)};
          compare(relu ? ComputeOp::BN_RELU_FWD_TRAIN : ComputeOp::BN_FWD_TRAIN, fwd,
                  {y, saved, next_mean, next_var}, "forward");
          cpu::compute_kernel(ComputeOp::BN_FWD_TRAIN, *build)(fwd);  // saved statistics
          // The backward onto gradients that hold values: dgamma and dbeta
          // overwritten, dx accumulated; then dx overwritten.
          GraphNode onto_dx;
          onto_dx.accumulate_mask = 4;
          KernelArgs bwd;
          bwd.node = &onto_dx;
          bwd.layer_params = fwd.layer_params;
          if (relu)
            bwd.in = {t.arg(x), t.arg(gamma), t.arg(beta), t.arg(saved), t.arg(dy)};
          else
            bwd.in = {t.arg(x), t.arg(gamma), t.arg(saved), t.arg(dy)};
          bwd.out = {t.arg(dgamma), t.arg(dbeta), t.arg(dx)};
          const ComputeOp back = relu ? ComputeOp::BN_RELU_BWD : ComputeOp::BN_BWD;
          compare(back, bwd, {dgamma, dbeta, dx}, "backward onto dx");
          bwd.node = &fresh;
          compare(back, bwd, {dx}, "backward");
        }
  }

  // LayerNorm reads and writes compact bfloat16 features as they lie, a row
  // widened at a time, and attention stages a few samples at a time: in
  // every build of our kernels, every output (y and the statistics; dgamma,
  // dbeta, dx overwritten and accumulated; o, lse; dqkv) has the bits of
  // staging the whole tensors through FP32.
  void transformerKernelsOnBf16GiveTheStagedBits() {
    for (const cpu::OwnKernels* build : cpu::runnable_own_kernels()) {
      const QString where = QString("%1 build").arg(build->isa);
      const DType type = DType::BF16;
      const int64_t c = 48;
      Tensors t;
      const Shape xs{6, 1, 17, c}, cs{1, 1, 1, c}, qs{6, 1, 17, 3 * c}, ls{6, 1, 17, 3};
      const size_t x = t.add(xs, Region::F_FEATURE_BF16, type),
                   y = t.add(xs, Region::F_FEATURE_BF16, type),
                   dy = t.add(xs, Region::F_GRAD_SLOT_BF16, type),
                   dx = t.add(xs, Region::F_GRAD_SLOT_BF16, type),
                   gamma = t.add(cs, Region::W_BN_WEIGHT, DType::FP32),
                   beta = t.add(cs, Region::W_BN_BIAS, DType::FP32),
                   saved = t.add({6, 1, 17, 2}, Region::S_BN_SAVED, DType::FP32),
                   dgamma = t.add(cs, Region::G_BN_WEIGHT, DType::FP32),
                   dbeta = t.add(cs, Region::G_BN_BIAS, DType::FP32),
                   qkv = t.add(qs, Region::F_FEATURE_BF16, type),
                   lse = t.add(ls, Region::S_BN_SAVED, DType::FP32),
                   dqkv = t.add(qs, Region::F_GRAD_SLOT_BF16, type);
      std::mt19937 rng(29);
      for (size_t i : {x, dy, dx, gamma, beta, dgamma, dbeta, qkv, dqkv}) t.fill(i, rng);
      // Each check leaves the staged outputs, which are the kernel's bits: the
      // backward reads the forward's.
      auto compare = [&](ComputeOp op, KernelArgs& a, std::initializer_list<size_t> outs,
                         const char* what) {
        check_staged_bits(t, cpu::compute_kernel(op, *build), a, outs,
                          QString("%1: %2").arg(where, what));
      };
      LayerNode ln;
      ln.id = "ln";
      ln.type = LayerType::LayerNorm;
      GraphNode fresh;
      KernelArgs fwd;
      fwd.node = &fresh;
      fwd.layer_params = test::resolved(ln);
      fwd.in = {t.arg(x), t.arg(gamma), t.arg(beta)};
      fwd.out = {t.arg(y), t.arg(saved)};
      compare(ComputeOp::LAYER_NORM_FWD, fwd, {y, saved}, "LayerNorm forward");
      GraphNode onto_dx;
      onto_dx.accumulate_mask = 4;
      KernelArgs bwd;
      bwd.node = &onto_dx;
      bwd.layer_params = fwd.layer_params;
      bwd.in = {t.arg(x), t.arg(gamma), t.arg(saved), t.arg(dy)};
      bwd.out = {t.arg(dgamma), t.arg(dbeta), t.arg(dx)};
      compare(ComputeOp::LAYER_NORM_BWD, bwd, {dgamma, dbeta, dx}, "LayerNorm backward onto dx");
      bwd.node = &fresh;
      compare(ComputeOp::LAYER_NORM_BWD, bwd, {dx}, "LayerNorm backward");

      LayerNode attn;
      attn.id = "attn";
      attn.type = LayerType::SelfAttention;
      attn.params.heads = 3;
      KernelArgs afwd;
      afwd.node = &fresh;
      afwd.layer_params = test::resolved(attn);
      afwd.in = {t.arg(qkv)};
      afwd.out = {t.arg(y), t.arg(lse)};
      compare(ComputeOp::ATTENTION_FWD, afwd, {y, lse}, "attention forward");
      GraphNode onto_dqkv;
      onto_dqkv.accumulate_mask = 1;
      KernelArgs abwd;
      abwd.node = &onto_dqkv;
      abwd.layer_params = afwd.layer_params;
      abwd.in = {t.arg(qkv), t.arg(y), t.arg(lse), t.arg(dy)};
      abwd.out = {t.arg(dqkv)};
      compare(ComputeOp::ATTENTION_BWD, abwd, {dqkv}, "attention backward onto dqkv");
    }
  }

  // AMP's loss-scaled gradients: dbeta sums dy over N*H*W rows, here
  // 12544 rows of 256 (the loss scale's order), 3.2 million: past FP16's
  // 65504, so an FP16 dbeta would be infinite and every step skipped. It
  // is FP32, as dgamma is, and exact.
  void batchNormParameterGradientsAreFp32UnderAmp() {
    const Shape bs{16, 28, 28, 8}, cs{1, 1, 1, 8};
    Tensors t;
    const size_t x = t.add(bs, Region::F_FEATURE_FP16), dy = t.add(bs, Region::F_GRAD_SLOT_FP16),
                 dx = t.add(bs, Region::F_GRAD_SLOT_FP16),
                 gamma = t.add(cs, Region::W_BN_WEIGHT, DType::FP32),
                 saved = t.add({1, 1, 2, 8}, Region::S_BN_SAVED, DType::FP32),
                 dgamma = t.add(cs, Region::G_BN_WEIGHT, DType::FP32),
                 dbeta = t.add(cs, Region::G_BN_BIAS, DType::FP32);
    std::mt19937 rng(5);
    t.fill(x, rng);
    t.fill(gamma, rng);
    auto* dyh = reinterpret_cast<uint16_t*>(t.bytes(dy).data());
    const int64_t n = bs.elements();
    for (int64_t i = 0; i < n; ++i) dyh[i] = cpu::float_to_half_bits(256.0f);
    auto* sv = reinterpret_cast<float*>(t.bytes(saved).data());
    for (int c = 0; c < 8; ++c) sv[8 + c] = 1.0f;  // mean 0, inv_std 1
    LayerNode bn;
    bn.id = "bn";
    bn.type = LayerType::BatchNorm2d;
    GraphNode node;
    KernelArgs a;
    a.node = &node;
    a.layer_params = test::resolved(bn);
    a.in = {t.arg(x), t.arg(gamma), t.arg(saved), t.arg(dy)};
    a.out = {t.arg(dgamma), t.arg(dbeta), t.arg(dx)};
    std::vector<uint64_t> memory(cpu::kernel_workspace_bytes(a) / 8 + 1);
    const StreamWorkspace ws{memory.data(), memory.size() * 8};
    a.workspace = &ws;
    cpu::compute_kernel(ComputeOp::BN_BWD, *cpu::runnable_own_kernels().front())(a);
    const auto* db = reinterpret_cast<const float*>(t.bytes(dbeta).data());
    const float rows = static_cast<float>(bs.n * bs.h * bs.w);
    for (int c = 0; c < 8; ++c) QCOMPARE(db[c], 256.0f * rows);
    QVERIFY(256.0f * rows > 65504.0f);
  }

  void stagingNeedsAWorkspaceOfTheRightSize() {
    // A convolution on FP16 features stages them through FP32 copies.
    Tensors t;
    const std::vector<size_t> ids{t.add({2, 6, 6, 5}, Region::F_FEATURE_FP16),
                                  t.add({3, 3, 3, 5}, Region::A_DEEP_CONV)};
    const size_t y = t.add({2, 3, 3, 3}, Region::F_FEATURE_FP16);
    LayerNode layer;
    layer.id = "layer";
    layer.type = LayerType::Conv2d;
    layer.params.out_channels = 3;
    layer.params.kernel_h = layer.params.kernel_w = 3;
    layer.params.stride_h = layer.params.stride_w = 2;
    layer.params.pad_h = layer.params.pad_w = 1;
    layer.params.bias = false;
    GraphNode node;
    node.op = ComputeOp::CONV_FWD;
    KernelArgs a;
    a.node = &node;
    a.layer_params = test::resolved(layer);
    for (size_t i : ids) a.in.push_back(t.arg(i));
    a.out.push_back(t.arg(y));
    // x [2,6,6,5], w [3,3,3,5], y [2,3,3,3] as FP32, each rounded up to 64 bytes
    QCOMPARE(cpu::kernel_workspace_bytes(a), uint64_t{1472 + 576 + 256});
    try {
      cpu::conv_fwd(a);
      QFAIL("no workspace accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains("CONV_FWD") && QString(e.what()).contains("'layer'") &&
                   QString(e.what()).contains("workspace"),
               e.what());
    }
    std::vector<uint64_t> memory(64);
    StreamWorkspace small{memory.data(), 512};
    a.workspace = &small;
    try {
      cpu::conv_fwd(a);
      QFAIL("a small workspace accepted");
    } catch (const std::invalid_argument& e) {
      QVERIFY2(QString(e.what()).contains("needs 2304 bytes"), e.what());
    }
  }

  void bf16ConversionIsTheInstructions() {
    // Specials, every bfloat16 pattern as a float (exact), ties (the low
    // half 0x8000 on both parities), around the subnormal edge and FLT_MAX,
    // then random bit patterns over the whole range.
    std::vector<float> in{0.0f,
                          -0.0f,
                          1.0f,
                          -2.5f,
                          INFINITY,
                          -INFINITY,
                          NAN,
                          -NAN,
                          std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::min(),
                          std::numeric_limits<float>::denorm_min(),
                          -1e-40f};
    for (uint32_t h = 0; h < 65536; ++h) {
      in.push_back(std::bit_cast<float>(h << 16));
      in.push_back(std::bit_cast<float>((h << 16) | 0x8000u));
    }
    std::mt19937 rng(11);
    std::uniform_int_distribution<uint32_t> bits;
    while (in.size() < (size_t{1} << 20)) in.push_back(std::bit_cast<float>(bits(rng)));
    for (float f : in) {
      const uint16_t want = bf16_reference(f);
      const uint16_t got = float_to_bf16_bits(f);
      if (got != want)
        QFAIL(qPrintable(QString("float 0x%1: 0x%2, want 0x%3")
                             .arg(std::bit_cast<uint32_t>(f), 8, 16, QChar('0'))
                             .arg(got, 4, 16, QChar('0'))
                             .arg(want, 4, 16, QChar('0'))));
    }
    // The arrays (AVX-512 BF16 where the CPU has it), flat and threaded.
    QCOMPARE(cpu::bf16_arrays_use_avx512(),
             cpu_has_flag("avx512_bf16") && cpu_has_flag("avx512bw") && cpu_has_flag("avx512vl"));
    qDebug("AVX-512 BF16 path: %s", cpu::bf16_arrays_use_avx512() ? "yes" : "no");
    std::vector<uint16_t> out(in.size());
    cpu::narrow_to_bf16(in.data(), out.data(), static_cast<int64_t>(in.size()));
    for (size_t i = 0; i < in.size(); ++i)
      QVERIFY2(out[i] == float_to_bf16_bits(in[i]), qPrintable(QString::number(i)));
    std::vector<float> back(in.size());
    cpu::widen_bf16(out.data(), back.data(), static_cast<int64_t>(out.size()));
    for (size_t i = 0; i < out.size(); ++i)
      QVERIFY2(std::bit_cast<uint32_t>(back[i]) == uint32_t{out[i]} << 16,
               qPrintable(QString::number(i)));
  }

  void bf16InstructionsAreWhatTheKernelReports() {
    // The kernel lists only what it lets processes use (AMX needs its state
    // enabled), as the CPUID and XCR0 checks must find.
    const CpuBf16 f = detect_cpu_bf16();
    qDebug("BF16 on this CPU: %s", cpu_bf16_text(f).c_str());
    QCOMPARE(f.avx512_bf16,
             cpu_has_flag("avx512_bf16") && cpu_has_flag("avx512bw") && cpu_has_flag("avx512vl"));
    QCOMPARE(f.amx_bf16, cpu_has_flag("amx_bf16") && cpu_has_flag("amx_tile"));
    QCOMPARE(scan_devices().cpu_bf16.any(), f.any());
    QVERIFY(cpu_bf16_text({}).find("neither AVX-512 BF16 nor AMX") != std::string::npos);
  }

  void bf16PaddedRowsRoundTrip() {
    std::mt19937 rng(13);
    std::uniform_real_distribution<float> u(-3.0f, 3.0f);
    // Short arrays (every tail length), then rows of features (stride 8, 16,
    // 24) and input buffers (4), with enough rows for the threads at the end.
    for (int64_t n = 1; n <= 40; ++n) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = u(rng);
      std::vector<uint16_t> h(x.size() + 3, 0x7E00);
      cpu::narrow_to_bf16(x.data(), h.data(), n);
      QCOMPARE(h[x.size()], uint16_t{0x7E00});  // nothing written past the end
      for (size_t i = 0; i < x.size(); ++i) QCOMPARE(h[i], float_to_bf16_bits(x[i]));
    }
    const QString problem = padded_rows_problem({&cpu::narrow_to_bf16_rows, &cpu::widen_bf16_rows,
                                                 &float_to_bf16_bits, &bf16_bits_to_float},
                                                {4, 8, 16, 24}, 13);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
  }

  void halvesWidenExactly() {
    // Every FP16 bit pattern, through the array path (F16C where present).
    qDebug("F16C path: %s", cpu::half_arrays_use_f16c() ? "yes" : "no");
    std::vector<uint16_t> all(65536);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
    std::vector<float> out(all.size());
    cpu::widen_half(all.data(), out.data(), static_cast<int64_t>(all.size()));
    for (size_t i = 0; i < all.size(); ++i) {
      const float want = half_bits_to_float(all[i]);
      // A NaN stays a NaN; F16C also quiets a signaling one.
      if (std::isnan(want)) {
        QVERIFY2(std::isnan(out[i]), qPrintable(QString::number(i, 16)));
        continue;
      }
      QVERIFY2(std::bit_cast<uint32_t>(out[i]) == std::bit_cast<uint32_t>(want),
               qPrintable(QString::number(i, 16)));
    }
  }

  void floatsNarrowToNearestEven() {
    std::mt19937 rng(5);
    std::vector<float> in;
    // Specials, ties (the bit just below FP16's mantissa set), the overflow
    // edge, subnormals, then random bit patterns over the whole range.
    for (float f : {0.0f, -0.0f, 1.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e-8f, 3e-8f,
                    5.96e-8f, 6.1e-5f, INFINITY, -INFINITY, NAN})
      in.push_back(f);
    for (uint32_t m = 0; m < 4096; ++m) in.push_back(std::bit_cast<float>(0x3F800000u + m));
    std::uniform_int_distribution<uint32_t> bits;
    while (in.size() < (size_t{1} << 20)) in.push_back(std::bit_cast<float>(bits(rng)));
    std::vector<uint16_t> out(in.size());
    cpu::narrow_to_half(in.data(), out.data(), static_cast<int64_t>(in.size()));
    for (size_t i = 0; i < in.size(); ++i)
      QVERIFY2(out[i] == float_to_half_bits(in[i]),
               qPrintable(QString::number(std::bit_cast<uint32_t>(in[i]), 16)));
  }

  void paddedRowsRoundTrip() {
    const QString problem = padded_rows_problem({&cpu::narrow_to_half_rows, &cpu::widen_half_rows,
                                                 &float_to_half_bits, &half_bits_to_float},
                                                {4, 8, 16}, 9);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));
  }
};

QTEST_APPLESS_MAIN(TestCpuAmpKernels)
#include "test_cpu_amp_kernels.moc"
