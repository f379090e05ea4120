// SPDX-License-Identifier: GPL-3.0-or-later
// Which feature maps of a CPU plan lie in channel blocks (DTensor::channel_block):
// those every op that touches them takes blocked (the op table's
// ChannelBlocks), with the layouts each op needs to agree agreeing.
#pragma once

#include "compile/compiler.h"

namespace tr {

// Marks them in every variant's plan, in blocks of `block` (8 or 16; 0:
// none). Only CPU plans without tensor parallel; the bytes do not change.
void choose_channel_blocks(CompiledProject& cp, int block);

// How many of `plan`'s tensors lie in channel blocks.
int channel_blocked_tensors(const MemoryPlan& plan);

}  // namespace tr
