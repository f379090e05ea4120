// SPDX-License-Identifier: GPL-3.0-or-later
#include "backends/cpu/collectives.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/bf16_convert.h"
#include "core/data_shard.h"
#include "data/half.h"

namespace tr::cpu {

namespace {

const char* kind_name(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::ALL_REDUCE_SUM:
      return "all-reduce (sum)";
    case CollectiveKind::ALL_REDUCE_MEAN:
      return "all-reduce (mean)";
    case CollectiveKind::ALL_REDUCE_MAX:
      return "all-reduce (max)";
    case CollectiveKind::REDUCE_SCATTER_MEAN:
      return "reduce-scatter (mean)";
    case CollectiveKind::BROADCAST:
      return "broadcast";
    case CollectiveKind::ALL_GATHER:
      return "all-gather";
    case CollectiveKind::GATHER_BLOCKS:
      return "all-gather (blocks)";
    case CollectiveKind::REDUCE_SCATTER_SUM_BLOCKS:
      return "reduce-scatter (sum, blocks)";
  }
  return "collective";
}

uint64_t element_bytes(const CollectiveCall& c) {
  return c.dtype == DType::FP32 ? 4 : 2;
}

float load(const CollectiveCall& c, const void* data, uint64_t i) {
  switch (c.dtype) {
    case DType::FP16:
      return fp16_to_fp32(static_cast<const uint16_t*>(data)[i]);
    case DType::BF16:
      return bf16_bits_to_float(static_cast<const uint16_t*>(data)[i]);
    default:
      return static_cast<const float*>(data)[i];
  }
}

void store(const CollectiveCall& c, void* data, uint64_t i, float v) {
  switch (c.dtype) {
    case DType::FP16:
      static_cast<uint16_t*>(data)[i] = fp32_to_fp16(v);
      break;
    case DType::BF16:
      static_cast<uint16_t*>(data)[i] = float_to_bf16_bits(v);
      break;
    default:
      static_cast<float*>(data)[i] = v;
  }
}

std::string describe(const CollectiveCall& c) {
  std::string s = std::string(kind_name(c.kind)) + " of " + std::to_string(c.bytes) + " bytes";
  if (c.dtype != DType::FP32) s += " of " + std::string(dtype_name(c.dtype));
  if (c.kind == CollectiveKind::BROADCAST) s += " from rank " + std::to_string(c.root);
  if (!c.label.empty()) s += " (" + std::string(c.label) + ")";
  return s;
}

}  // namespace

Collectives::Collectives(int world)
    : world_(world), posted_(static_cast<size_t>(world), nullptr), barrier_(world) {}

std::string Collectives::mismatch() const {
  const std::vector<CollectiveCall>& first = *posted_[0];
  for (int r = 1; r < world_; ++r) {
    const std::vector<CollectiveCall>& other = *posted_[static_cast<size_t>(r)];
    if (other.size() != first.size())
      return "rank 0 called a group of " + std::to_string(first.size()) + " collectives, rank " +
             std::to_string(r) + " one of " + std::to_string(other.size());
    for (size_t i = 0; i < first.size(); ++i) {
      const CollectiveCall& a = first[i];
      const CollectiveCall& b = other[i];
      if (a.kind != b.kind || a.bytes != b.bytes || a.root != b.root || a.dtype != b.dtype)
        return "rank 0 called " + describe(a) + " where rank " + std::to_string(r) + " called " +
               describe(b);
    }
  }
  return {};
}

void Collectives::run(int rank, const std::vector<CollectiveCall>& calls) {
  for (const CollectiveCall& c : calls) {
    if (c.kind != CollectiveKind::BROADCAST && c.bytes % element_bytes(c) != 0)
      throw std::logic_error("CPU collectives: " + describe(c) +
                             " is not a whole number of elements");
    if (c.kind == CollectiveKind::REDUCE_SCATTER_SUM_BLOCKS &&
        c.bytes % (element_bytes(c) * static_cast<uint64_t>(world_)) != 0)
      throw std::logic_error("CPU collectives: " + describe(c) + " does not split into " +
                             std::to_string(world_) + " equal blocks");
    if (c.dtype != DType::FP32 && c.kind != CollectiveKind::ALL_REDUCE_SUM &&
        c.kind != CollectiveKind::BROADCAST && c.kind != CollectiveKind::GATHER_BLOCKS &&
        c.kind != CollectiveKind::REDUCE_SCATTER_SUM_BLOCKS)
      throw std::logic_error("CPU collectives: " + describe(c) + " takes FP32 only");
    if (c.root < 0 || c.root >= world_)
      throw std::logic_error("CPU collectives: " + describe(c) + ": no rank " +
                             std::to_string(c.root));
  }
  if (world_ == 1) {
    for (const CollectiveCall& c : calls)
      if (c.kind == CollectiveKind::REDUCE_SCATTER_MEAN ||
          c.kind == CollectiveKind::GATHER_BLOCKS ||
          c.kind == CollectiveKind::REDUCE_SCATTER_SUM_BLOCKS)
        std::memmove(c.out, c.data, c.bytes);
    return;
  }
  posted_[static_cast<size_t>(rank)] = &calls;
  barrier_.arrive_and_wait();
  // Every rank reaches the same verdict; the second barrier keeps the lists
  // alive until all have read them.
  if (const std::string why = mismatch(); !why.empty()) {
    barrier_.arrive_and_wait();
    throw std::logic_error("CPU collectives: the ranks disagree: " + why);
  }
  const uint64_t w = static_cast<uint64_t>(world_);
  // World sizes are powers of two, so the mean's scaling is exact.
  const float scale = 1.0f / static_cast<float>(world_);
  for (size_t k = 0; k < calls.size(); ++k) {
    const CollectiveCall& c = calls[k];
    auto buffer = [&](int r) { return (*posted_[static_cast<size_t>(r)])[k].data; };
    // Float i over the ranks, taken in rank order: the same bits on every
    // rank, and for a reduce-scatter the same as the all-reduce's.
    const bool max = c.kind == CollectiveKind::ALL_REDUCE_MAX;
    const bool mean =
        c.kind == CollectiveKind::ALL_REDUCE_MEAN || c.kind == CollectiveKind::REDUCE_SCATTER_MEAN;
    auto reduced = [&](uint64_t i) {
      float v = max ? load(c, buffer(0), i) : 0.0f;
      for (int r = max ? 1 : 0; r < world_; ++r) {
        const float x = load(c, buffer(r), i);
        v = max ? std::max(v, x) : v + x;
      }
      return mean ? v * scale : v;
    };
    if (c.kind == CollectiveKind::BROADCAST) {
      if (rank != c.root) std::memcpy(c.data, buffer(c.root), c.bytes);
      continue;
    }
    if (c.kind == CollectiveKind::REDUCE_SCATTER_MEAN) {
      const ShardShare share = shard_share(c.bytes, rank, world_);
      float* out = static_cast<float*>(c.out);
      for (uint64_t i = share.begin / 4; i < share.end / 4; ++i)
        out[i - share.begin / 4] = reduced(i);
      continue;
    }
    if (c.kind == CollectiveKind::GATHER_BLOCKS) {
      // Each rank reads every rank's block into its own buffer.
      for (int r = 0; r < world_; ++r)
        std::memcpy(static_cast<uint8_t*>(c.out) + c.bytes * static_cast<uint64_t>(r), buffer(r),
                    c.bytes);
      continue;
    }
    if (c.kind == CollectiveKind::REDUCE_SCATTER_SUM_BLOCKS) {
      const uint64_t block = c.bytes / element_bytes(c) / w;
      const uint64_t first = block * static_cast<uint64_t>(rank);
      for (uint64_t i = 0; i < block; ++i) store(c, c.out, i, reduced(first + i));
      continue;
    }
    if (c.kind == CollectiveKind::ALL_GATHER) {
      // Each rank writes its own share into every other rank's buffer.
      const ShardShare share = shard_share(c.bytes, rank, world_);
      for (int r = 0; r < world_; ++r)
        if (r != rank && share.bytes() > 0)
          std::memcpy(static_cast<uint8_t*>(buffer(r)) + share.begin,
                      static_cast<const uint8_t*>(c.data) + share.begin, share.bytes());
      continue;
    }
    // Each rank reduces its own slice and writes it to every rank: the work
    // is spread like a reduce-scatter followed by an all-gather.
    const uint64_t count = c.bytes / element_bytes(c);
    const uint64_t begin = count * static_cast<uint64_t>(rank) / w;
    const uint64_t end = count * static_cast<uint64_t>(rank + 1) / w;
    for (uint64_t i = begin; i < end; ++i) {
      const float v = reduced(i);
      for (int r = 0; r < world_; ++r) store(c, buffer(r), i, v);
    }
  }
  barrier_.arrive_and_wait();
}

void Collectives::all_reduce(int rank, float* data, uint64_t count, bool mean) {
  run(rank, {{mean ? CollectiveKind::ALL_REDUCE_MEAN : CollectiveKind::ALL_REDUCE_SUM,
              data,
              count * 4,
              0,
              {}}});
}

void Collectives::broadcast(int rank, void* data, uint64_t bytes, int root) {
  run(rank, {{CollectiveKind::BROADCAST, data, bytes, root, {}}});
}

}  // namespace tr::cpu
