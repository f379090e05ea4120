// SPDX-License-Identifier: GPL-3.0-or-later
#include "core/cpu_features.h"

#include <cpuid.h>

#include <cstdint>

namespace tr {

namespace {

struct Leaf {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Leaf cpuid(unsigned leaf, unsigned sub) noexcept {
  Leaf r;
  if (!__get_cpuid_count(leaf, sub, &r.eax, &r.ebx, &r.ecx, &r.edx)) return {};
  return r;
}

// The state components the OS saves on a context switch (XCR0); 0 without XSAVE.
uint64_t os_saved_state() noexcept {
  if (!(cpuid(1, 0).ecx & (1u << 27))) return 0;  // OSXSAVE
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t{hi} << 32) | lo;
}

CpuBf16 detect() noexcept {
  CpuBf16 f;
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  const Leaf l7 = cpuid(7, 0), l7_1 = cpuid(7, 1);
  const uint64_t xcr0 = os_saved_state();
  // AVX-512 needs the opmask and upper ZMM state (XCR0 bits 5-7) saved.
  const bool avx512_state = (xcr0 & 0xE0u) == 0xE0u && (xcr0 & 0x6u) == 0x6u;
  const bool avx512 = avx512_state && (l7.ebx & (1u << 16))               // AVX512F
                      && (l7.ebx & (1u << 30)) && (l7.ebx & (1u << 31));  // BW, VL
  f.avx512_bf16 = avx512 && (l7_1.eax & (1u << 5));
  // AMX: the tile configuration and data (XCR0 bits 17 and 18).
  const bool amx_state = (xcr0 & (3u << 17)) == (3u << 17);
  f.amx_bf16 = amx_state && (l7.edx & (1u << 22)) && (l7.edx & (1u << 24));  // AMX-BF16, TILE
  return f;
}

}  // namespace

CpuBf16 detect_cpu_bf16() noexcept {
  static const CpuBf16 f = detect();
  return f;
}

bool cpu_runs_x86_64_v4() noexcept {
  // libgcc's answer checks the features and what XCR0 says the OS saves.
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v4") != 0;
}

bool cpu_runs_x86_64_v3() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("x86-64-v3") != 0;
}

}  // namespace tr
