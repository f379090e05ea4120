// SPDX-License-Identifier: GPL-3.0-or-later
// Times each convolution of the sample CNNs in our plain NHWC features against the blocked
// layout oneDNN prefers for them (nChw8c on AVX2, nChw16c on AVX-512), pass by pass, the two
// called alternately so that a shared machine's drift hits both alike, and says whether the
// two give the same bits (the outputs are reordered to NHWC and compared). It answers, per
// machine and layer, whether planning features blocked would pay, before the plan does it.
//   bench_conv_layouts [--batch N] [--repeat N] [--model lenet|resnet8|cnn-bn]
// Threads come from OMP_NUM_THREADS. One JSON line per layer and pass, then per model the
// passes' sums in each layout. Weights are in oneDNN's chosen layout on both sides (ours
// reorders them per call today; that cost is the same for both and is left out).
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "zoo_layers.h"

namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using DT = memory::data_type;

using Options = tr::bench::ZooOptions;

dnnl::engine& eng() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& strm() {
  static dnnl::stream s(eng());
  return s;
}

// "nhwc", or the blocked layout as oneDNN's tags spell it ("nChw8c").
std::string layout_name(const memory::desc& d) {
  const auto& b = d.data.format_desc.blocking;
  if (b.inner_nblks == 0) return b.strides[1] == 1 ? "nhwc" : "plain";
  std::string s = "nChw";
  for (int i = 0; i < b.inner_nblks; ++i)
    s += std::to_string(b.inner_blks[i]) + (b.inner_idxs[i] == 1 ? "c" : "?");
  return s;
}

memory reordered(const memory& from, const memory::desc& to) {
  memory m(to, eng());
  dnnl::reorder(from, m).execute(strm(), const_cast<memory&>(from), m);
  strm().wait();
  return m;
}

// One pass of one layout: its primitive and arguments, and the output to compare.
struct Pass {
  dnnl::primitive prim;
  std::unordered_map<int, memory> args;
  int out_arg = 0;
  std::string impl, layout;
  void run() {
    prim.execute(strm(), args);
    strm().wait();
  }
};

// Builds fwd, bwd-data and bwd-weights for one layout. `blocked`: features as oneDNN
// prefers; otherwise NHWC. Inputs are the plain tensors reordered into each layout, so both
// sides compute on the same values.
std::vector<Pass> make_passes(const tr::bench::ConvLayer& c, int64_t n, bool blocked,
                              const memory& x, const memory& w, const memory& dy) {
  const int64_t ho = (c.h + 2 * c.pad - c.k) / c.stride + 1,
                wo = (c.w + 2 * c.pad - c.k) / c.stride + 1;
  const Tag ft = blocked ? Tag::any : Tag::nhwc;
  const memory::desc src({n, c.ci, c.h, c.w}, DT::f32, ft), dst({n, c.co, ho, wo}, DT::f32, ft),
      wd({c.co, c.ci, c.k, c.k}, DT::f32, Tag::any);
  const memory::dims s{c.stride, c.stride}, p{c.pad, c.pad};
  const auto alg = dnnl::algorithm::convolution_direct;
  const dnnl::convolution_forward::primitive_desc f(
      {dnnl::prop_kind::forward_training, alg, src, wd, dst, s, p, p}, eng());
  const dnnl::convolution_backward_data::primitive_desc bd({alg, src, wd, dst, s, p, p}, eng(), f);
  const dnnl::convolution_backward_weights::primitive_desc bw({alg, src, wd, dst, s, p, p}, eng(),
                                                              f);
  std::vector<Pass> out(3);
  out[0] = {dnnl::convolution_forward(f),
            {{DNNL_ARG_SRC, reordered(x, f.src_desc())},
             {DNNL_ARG_WEIGHTS, reordered(w, f.weights_desc())},
             {DNNL_ARG_DST, memory(f.dst_desc(), eng())}},
            DNNL_ARG_DST,
            f.impl_info_str(),
            layout_name(f.src_desc()) + "->" + layout_name(f.dst_desc())};
  out[1] = {dnnl::convolution_backward_data(bd),
            {{DNNL_ARG_DIFF_DST, reordered(dy, bd.diff_dst_desc())},
             {DNNL_ARG_WEIGHTS, reordered(w, bd.weights_desc())},
             {DNNL_ARG_DIFF_SRC, memory(bd.diff_src_desc(), eng())}},
            DNNL_ARG_DIFF_SRC,
            bd.impl_info_str(),
            layout_name(bd.diff_dst_desc()) + "->" + layout_name(bd.diff_src_desc())};
  out[2] = {dnnl::convolution_backward_weights(bw),
            {{DNNL_ARG_SRC, reordered(x, bw.src_desc())},
             {DNNL_ARG_DIFF_DST, reordered(dy, bw.diff_dst_desc())},
             {DNNL_ARG_DIFF_WEIGHTS, memory(bw.diff_weights_desc(), eng())}},
            DNNL_ARG_DIFF_WEIGHTS,
            bw.impl_info_str(),
            layout_name(bw.src_desc()) + "," + layout_name(bw.diff_dst_desc())};
  return out;
}

// The number of values that differ bit for bit once both outputs are in `plain`.
size_t differing(const memory& a, const memory& b, const memory::desc& plain) {
  const memory pa = reordered(a, plain), pb = reordered(b, plain);
  const size_t count = plain.get_size() / sizeof(float);
  const auto* fa = static_cast<const uint32_t*>(pa.get_data_handle());
  const auto* fb = static_cast<const uint32_t*>(pb.get_data_handle());
  size_t d = 0;
  for (size_t i = 0; i < count; ++i) d += fa[i] != fb[i];
  return d;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Sums {
  double plain = 0, blocked = 0;
};

void bench_layer(const Options& o, const char* model, const tr::bench::ConvLayer& c, Sums& sums) {
  const int64_t n = o.batch, ho = (c.h + 2 * c.pad - c.k) / c.stride + 1,
                wo = (c.w + 2 * c.pad - c.k) / c.stride + 1;
  const memory::desc xd({n, c.ci, c.h, c.w}, DT::f32, Tag::nhwc),
      yd({n, c.co, ho, wo}, DT::f32, Tag::nhwc), wd({c.co, c.ci, c.k, c.k}, DT::f32, Tag::ohwi);
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  auto filled = [&](const memory::desc& d) {
    memory m(d, eng());
    auto* f = static_cast<float*>(m.get_data_handle());
    for (size_t i = 0; i < d.get_size() / sizeof(float); ++i) f[i] = normal(rng);
    return m;
  };
  const memory x = filled(xd), w = filled(wd), dy = filled(yd);
  std::vector<Pass> plain = make_passes(c, n, false, x, w, dy);
  std::vector<Pass> blocked = make_passes(c, n, true, x, w, dy);
  const char* names[3] = {"fwd", "bwd_data", "bwd_weights"};
  const memory::desc out_plain[3] = {yd, xd, wd};
  const double flops = 2.0 * static_cast<double>(n * ho * wo * c.co * c.ci * c.k * c.k);
  for (int k = 0; k < 3; ++k) {
    if (c.first && k == 1) continue;  // the first layer has no dX
    Pass& a = plain[static_cast<size_t>(k)];
    Pass& b = blocked[static_cast<size_t>(k)];
    for (int i = 0; i < 3; ++i) a.run(), b.run();
    std::vector<double> ta, tb;
    for (int i = 0; i < o.repeat; ++i) {
      // Alternating which goes first cancels a cache or frequency edge for either.
      Pass& first = i % 2 ? b : a;
      Pass& second = i % 2 ? a : b;
      auto t0 = std::chrono::steady_clock::now();
      first.run();
      (i % 2 ? tb : ta).push_back(ms_since(t0));
      t0 = std::chrono::steady_clock::now();
      second.run();
      (i % 2 ? ta : tb).push_back(ms_since(t0));
    }
    std::sort(ta.begin(), ta.end());
    std::sort(tb.begin(), tb.end());
    const double ma = ta[ta.size() / 2], mb = tb[tb.size() / 2];
    sums.plain += ma;
    sums.blocked += mb;
    const size_t diff =
        differing(a.args.at(a.out_arg), b.args.at(b.out_arg), out_plain[static_cast<size_t>(k)]);
    std::printf(
        "{\"model\":\"%s\",\"layer\":\"%s\",\"pass\":\"%s\",\"nhwc_ms\":%.3f,\"blocked_ms\":%.3f,"
        "\"blocked_speedup\":%.3f,\"nhwc_gflops\":%.1f,\"blocked_gflops\":%.1f,"
        "\"blocked_layout\":\"%s\",\"values_differing\":%zu,\"impl\":\"%s|%s\"}\n",
        model, c.name, names[k], ma, mb, ma / mb, flops / ma / 1e6, flops / mb / 1e6,
        b.layout.c_str(), diff, a.impl.c_str(), b.impl.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  o.repeat = 20;
  if (!tr::bench::parse_zoo_options(argc, argv, "bench_conv_layouts", o)) return 2;
  bool any = false;
  for (const tr::bench::ZooModel& m : tr::bench::zoo_models()) {
    if (!o.model.empty() && o.model != m.name) continue;
    any = true;
    Sums sums;
    for (const tr::bench::ConvLayer& c : m.convs) bench_layer(o, m.name, c, sums);
    std::printf(
        "{\"model\":\"%s\",\"pass\":\"all convolutions\",\"batch\":%lld,\"nhwc_ms\":%.3f,"
        "\"blocked_ms\":%.3f,\"blocked_speedup\":%.3f}\n",
        m.name, static_cast<long long>(o.batch), sums.plain, sums.blocked,
        sums.plain / sums.blocked);
  }
  if (!any) {
    std::fprintf(stderr, "bench_conv_layouts: no model '%s' (lenet, resnet8, cnn-bn)\n",
                 o.model.c_str());
    return 2;
  }
  return 0;
}
