// SPDX-License-Identifier: GPL-3.0-or-later
// What oneDNN chose behind the dense kernels, for tests and benchmarks.
//
// They use it to prove that no convolution silently runs on oneDNN's
// reference code, which is thousands of times slower.
#pragma once

#include <cstddef>
#include <string>

#include "runtime/kernel_args.h"

namespace tr::cpu::dense_info {

// oneDNN implementation names, e.g. "brgconv:avx512_core", "jit:avx512_core".
struct ConvImpls {
  std::string fwd, bwd_data, bwd_weights;
};

// The implementations used for the convolution whose forward arguments are
// `fwd_args` (in [x, w, (b)], out [y]); creates and caches the primitives
// when they do not exist yet, exactly as the kernels would.
ConvImpls conv_impls(const KernelArgs& fwd_args);

// True when `impl` is one of oneDNN's reference (slow) implementations.
bool is_reference_impl(const std::string& impl);

// Number of convolution primitives in the process-wide cache.
size_t cached_conv_primitives();

}  // namespace tr::cpu::dense_info
