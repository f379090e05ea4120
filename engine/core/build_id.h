// SPDX-License-Identifier: GPL-3.0-or-later
// The engine's build identity: libraries it loads at run time (the CUDA
// backend, the AVX-512 build of the CPU kernels) must carry the same one.
#pragma once

#include <string>

namespace tr {

// "version+commit": what a library the engine loads must have been built as.
std::string engine_build_id();

}  // namespace tr
