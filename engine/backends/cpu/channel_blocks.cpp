// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cpu/channel_blocks.h"

#include <array>
#include <stdexcept>
#include <string>

#include "compile/computation_graph.h"
#include "compile/ops.h"

namespace tr::cpu {

namespace {

[[noreturn]] void refuse(const KernelArgs& a, const DTensor& t, const std::string& why) {
  throw std::logic_error(std::string(compute_op_name(a.node->op)) + a.where() + ": tensor '" +
                         t.name + "' " + why);
}

// The blocked operands, in one pass: the block they share (0 when none is
// blocked), the channels of a blocked map and the first one.
struct Blocks {
  int b = 0;
  int64_t c = 0;
  const DTensor* first = nullptr;
};

Blocks blocks_of(const KernelArgs& a) {
  Blocks k;
  for (const auto* side : {&a.in, &a.out})
    for (const TensorArg& t : *side) {
      if (!t.desc || !t.desc->is_blocked()) continue;
      if (is_16bit_float(t.desc->dtype))
        refuse(a, *t.desc, "is 16-bit in channel blocks (they hold FP32 features and masks)");
      if (k.b != 0 && t.desc->channel_block != k.b)
        refuse(a, *t.desc,
               "has channel blocks of " + std::to_string(t.desc->channel_block) +
                   " where another operand has " + std::to_string(k.b));
      if (!k.first) k.first = t.desc;
      k.b = t.desc->channel_block;
      k.c = t.desc->shape.c;
    }
  return k;
}

// Kernel-visible copies: each blocked [N, H, W, C] map as [N * C / b, H, W, b]
// in the plain layout, which is where its bytes are. A plain operand of one
// pixel per sample ([N, 1, 1, C]: global pooling's output) lies the same way
// in both layouts and is viewed alike; any other plain feature map with the
// blocked maps' channels would be read wrongly and is refused.
void run_windowed(Kernel kernel, const KernelArgs& a, const Blocks& k) {
  KernelArgs view = a;
  const int64_t c = k.c, b = k.b;
  constexpr size_t kMaxOperands = 8;
  std::array<DTensor, kMaxOperands> descs;
  size_t used = 0;
  auto remap = [&](TensorArg& t) {
    if (!t.desc || t.desc->shape.c != c) return;
    const DTensor& d = *t.desc;
    if (!d.is_blocked() && d.shape.h * d.shape.w != 1)
      refuse(a, d, "lies with its channels innermost beside maps in channel blocks");
    if (used == kMaxOperands) refuse(a, d, "is one operand too many for a blocked view");
    DTensor& v = descs[used++];
    v = d;
    v.channel_block = 0;
    v.shape = {d.shape.n * (c / b), d.shape.h, d.shape.w, b};
    t.desc = &v;
  };
  for (TensorArg& t : view.in) remap(t);
  for (TensorArg& t : view.out) remap(t);
  kernel(view);
}

}  // namespace

void run_kernel(Kernel kernel, const KernelArgs& a) {
  if (!a.node || a.node->kind != NodeKind::COMPUTE) return kernel(a);
  const Blocks k = blocks_of(a);
  if (k.b == 0) return kernel(a);
  switch (compute_op_info(a.node->op).channel_blocks) {
    case ChannelBlocks::Native:
      return kernel(a);
    case ChannelBlocks::PerChannelWindows:
      return run_windowed(kernel, a, k);
    case ChannelBlocks::Elementwise:
      for (const auto* side : {&a.in, &a.out})
        for (const TensorArg& t : *side)
          if (t.desc && !t.desc->is_blocked() && t.desc->shape.h * t.desc->shape.w > 1)
            refuse(a, *t.desc, "lies with its channels innermost beside maps in channel blocks");
      return kernel(a);
    case ChannelBlocks::None:
      break;
  }
  refuse(a, *k.first, "is in channel blocks, which this op does not take");
}

}  // namespace tr::cpu
