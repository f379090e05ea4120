// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cpu/channel_blocks.h"

#include <array>
#include <stdexcept>
#include <string>

#include "compile/computation_graph.h"
#include "compile/ops.h"

namespace tr::cpu {

namespace {

bool any_blocked(const KernelArgs& a) {
  for (const auto* side : {&a.in, &a.out})
    for (const TensorArg& t : *side)
      if (t.desc && t.desc->is_blocked()) return true;
  return false;
}

[[noreturn]] void refuse(const KernelArgs& a, const DTensor& t, const std::string& why) {
  throw std::logic_error(std::string(compute_op_name(a.node->op)) + a.where() + ": tensor '" +
                         t.name + "' " + why);
}

// The block size every blocked operand shares (0 when none is blocked).
int common_block(const KernelArgs& a) {
  int b = 0;
  for (const auto* side : {&a.in, &a.out})
    for (const TensorArg& t : *side) {
      if (!t.desc || !t.desc->is_blocked()) continue;
      if (is_16bit_float(t.desc->dtype))
        refuse(a, *t.desc, "is 16-bit in channel blocks (they hold FP32 features and masks)");
      if (b != 0 && t.desc->channel_block != b)
        refuse(a, *t.desc,
               "has channel blocks of " + std::to_string(t.desc->channel_block) +
                   " where another operand has " + std::to_string(b));
      b = t.desc->channel_block;
    }
  return b;
}

// Kernel-visible copies: each blocked [N, H, W, C] map as [N * C / b, H, W, b]
// in the plain layout, which is where its bytes are. A plain operand of one
// pixel per sample ([N, 1, 1, C]: global pooling's output) lies the same way
// in both layouts and is viewed alike; any other plain feature map with the
// blocked maps' channels would be read wrongly and is refused.
void run_windowed(Kernel kernel, const KernelArgs& a, int b) {
  KernelArgs view = a;
  int64_t c = 0;
  for (const auto* side : {&a.in, &a.out})
    for (const TensorArg& t : *side)
      if (t.desc && t.desc->is_blocked()) c = t.desc->shape.c;
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
  if (!a.node || a.node->kind != NodeKind::COMPUTE || !any_blocked(a)) return kernel(a);
  const int b = common_block(a);
  switch (compute_op_info(a.node->op).channel_blocks) {
    case ChannelBlocks::Native:
      return kernel(a);
    case ChannelBlocks::PerChannelWindows:
      return run_windowed(kernel, a, b);
    case ChannelBlocks::Elementwise:
      for (const auto* side : {&a.in, &a.out})
        for (const TensorArg& t : *side)
          if (t.desc && !t.desc->is_blocked() && t.desc->shape.h * t.desc->shape.w > 1)
            refuse(a, *t.desc, "lies with its channels innermost beside maps in channel blocks");
      return kernel(a);
    case ChannelBlocks::None:
      break;
  }
  for (const auto* side : {&a.in, &a.out})
    for (const TensorArg& t : *side)
      if (t.desc && t.desc->is_blocked())
        refuse(a, *t.desc, "is in channel blocks, which this op does not take");
  return kernel(a);
}

}  // namespace tr::cpu
