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

// Element i reduced over `world` ranks' buffers, taken in rank order: the
// same bits on every rank, and for a reduce-scatter the same as the
// all-reduce's (world sizes are powers of two, so the mean's scaling is exact).
template <class Buffer>
float reduce_element(const CollectiveCall& c, int world, const Buffer& buffer, uint64_t i) {
  const bool max = c.kind == CollectiveKind::ALL_REDUCE_MAX;
  const bool mean =
      c.kind == CollectiveKind::ALL_REDUCE_MEAN || c.kind == CollectiveKind::REDUCE_SCATTER_MEAN;
  float v = max ? load(c, buffer(0), i) : 0.0f;
  for (int r = max ? 1 : 0; r < world; ++r) {
    const float x = load(c, buffer(r), i);
    v = max ? std::max(v, x) : v + x;
  }
  return mean ? v * (1.0f / static_cast<float>(world)) : v;
}

std::string describe(const CollectiveCall& c) {
  std::string s = std::string(kind_name(c.kind)) + " of " + std::to_string(c.bytes) + " bytes";
  if (c.dtype != DType::FP32) s += " of " + std::string(dtype_name(c.dtype));
  if (c.kind == CollectiveKind::BROADCAST) s += " from rank " + std::to_string(c.root);
  if (!c.label.empty()) s += " (" + std::string(c.label) + ")";
  return s;
}

}  // namespace

Collectives::Collectives(int world, std::shared_ptr<ProcessGroup> processes)
    : world_(world),
      processes_(std::move(processes)),
      posted_(static_cast<size_t>(world), nullptr),
      barrier_(world) {}

int Collectives::global_world() const noexcept {
  return world_ * (processes_ ? processes_->processes() : 1);
}

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
    if (c.root < 0 || c.root >= global_world())
      throw std::logic_error("CPU collectives: " + describe(c) + ": no rank " +
                             std::to_string(c.root));
  }
  if (!failure_.empty()) throw std::runtime_error(failure_);
  if (world_ == 1 && !processes_) {
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
  if (processes_) {
    // One thread exchanges with the other processes while the others wait.
    if (rank == 0) try {
        across_processes();
      } catch (const std::exception& e) {
        failure_ = std::string("CPU collectives across processes: ") + e.what();
      }
    barrier_.arrive_and_wait();
    if (!failure_.empty()) throw std::runtime_error(failure_);
    return;
  }
  const uint64_t w = static_cast<uint64_t>(world_);
  for (size_t k = 0; k < calls.size(); ++k) {
    const CollectiveCall& c = calls[k];
    auto buffer = [&](int r) { return (*posted_[static_cast<size_t>(r)])[k].data; };
    auto reduced = [&](uint64_t i) { return reduce_element(c, world_, buffer, i); };
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

// The collectives' own sequence between processes (the stop vote has another).
constexpr int kChannel = 0;

void Collectives::all_reduce_across(size_t k) {
  const CollectiveCall& c = (*posted_[0])[k];
  const auto processes = static_cast<size_t>(processes_->processes());
  const auto local = static_cast<size_t>(world_);
  const int world = global_world();
  const uint64_t esize = element_bytes(c), n = c.bytes / esize;
  // Process j reduces the j-th chunk of every rank's elements: an all-to-all
  // brings it every rank's chunk, in global rank order (process-major), it
  // reduces them as one process of all the ranks would, and an all-gather
  // hands every process all the chunks (each sends and receives about
  // twice the buffer, as in a ring all-reduce). The buffers are kept from
  // call to call: a gradient bucket goes through here every step.
  const uint64_t chunk = (n + processes - 1) / processes, chunk_bytes = chunk * esize;
  const uint64_t part = chunk_bytes * local;
  const uint8_t* send = static_cast<const uint8_t*>(c.data);
  if (local > 1 || chunk * processes != n) {
    send_.resize(part * processes);
    for (size_t j = 0; j < processes; ++j)
      for (size_t l = 0; l < local; ++l) {
        const uint64_t first = std::min<uint64_t>(n, chunk * j);
        const uint64_t last = std::min<uint64_t>(n, first + chunk);
        uint8_t* to = send_.data() + part * j + chunk_bytes * l;
        std::memcpy(to, static_cast<const uint8_t*>((*posted_[l])[k].data) + first * esize,
                    (last - first) * esize);
        std::memset(to + (last - first) * esize, 0, chunk_bytes - (last - first) * esize);
      }
    send = send_.data();
  }
  received_.resize(part * processes);
  processes_->all_to_all(send, part, received_.data(), kChannel);
  auto buffer = [&](int r) { return received_.data() + chunk_bytes * static_cast<uint64_t>(r); };
  mine_.resize(chunk_bytes);
  if (c.dtype == DType::FP32 && c.kind != CollectiveKind::ALL_REDUCE_MAX) {
    // reduce_element's order and rounding, a rank at a time (vectorised).
    auto* sum = reinterpret_cast<float*>(mine_.data());
    std::fill_n(sum, chunk, 0.0f);
    for (int r = 0; r < world; ++r) {
      const auto* x = reinterpret_cast<const float*>(buffer(r));
      for (uint64_t i = 0; i < chunk; ++i) sum[i] += x[i];
    }
    if (c.kind == CollectiveKind::ALL_REDUCE_MEAN) {
      const float scale = 1.0f / static_cast<float>(world);
      for (uint64_t i = 0; i < chunk; ++i) sum[i] *= scale;
    }
  } else {
    for (uint64_t i = 0; i < chunk; ++i)
      store(c, mine_.data(), i, reduce_element(c, world, buffer, i));
  }
  auto* first = static_cast<uint8_t*>((*posted_[0])[k].data);
  if (chunk * processes == n) {
    processes_->all_gather(mine_.data(), chunk_bytes, first, kChannel);
  } else {
    gathered_.resize(chunk_bytes * processes);
    processes_->all_gather(mine_.data(), chunk_bytes, gathered_.data(), kChannel);
    std::memcpy(first, gathered_.data(), c.bytes);
  }
  for (size_t l = 1; l < local; ++l) std::memcpy((*posted_[l])[k].data, first, c.bytes);
}

namespace {

// What every process must agree on of a group: each call's kind, bytes,
// root and dtype.
std::vector<uint64_t> call_fields(const std::vector<CollectiveCall>& calls) {
  std::vector<uint64_t> f;
  for (const CollectiveCall& c : calls)
    f.insert(f.end(), {static_cast<uint64_t>(c.kind), c.bytes, static_cast<uint64_t>(c.root),
                       static_cast<uint64_t>(c.dtype)});
  return f;
}

}  // namespace

void Collectives::across_processes() {
  const std::vector<CollectiveCall>& calls = *posted_[0];
  const int processes = processes_->processes();
  // The processes' groups agree: a digest of the calls in one round trip;
  // where they differ, the count and the calls to say how.
  uint64_t digest[2] = {calls.size(), 14695981039346656037ull};
  for (uint64_t v : call_fields(calls)) digest[1] = (digest[1] ^ v) * 1099511628211ull;  // FNV-1a
  std::vector<uint64_t> digests(2 * static_cast<size_t>(processes));
  processes_->all_gather(digest, sizeof digest, digests.data(), kChannel);
  bool agree = true;
  for (int p = 0; p < processes; ++p)
    agree &= digests[2 * static_cast<size_t>(p)] == digest[0] &&
             digests[2 * static_cast<size_t>(p) + 1] == digest[1];
  if (!agree) disagreement(calls);
  exchange(calls);
}

void Collectives::disagreement(const std::vector<CollectiveCall>& calls) {
  const int processes = processes_->processes(), me = processes_->process_rank();
  uint64_t count = calls.size();
  std::vector<uint64_t> counts(static_cast<size_t>(processes));
  processes_->all_gather(&count, sizeof count, counts.data(), kChannel);
  for (int p = 0; p < processes; ++p)
    if (counts[static_cast<size_t>(p)] != count)
      throw std::logic_error("process " + std::to_string(p) + " called a group of " +
                             std::to_string(counts[static_cast<size_t>(p)]) +
                             " collectives, process " + std::to_string(me) + " one of " +
                             std::to_string(count));
  const std::vector<uint64_t> shape = call_fields(calls);
  std::vector<uint64_t> shapes(shape.size() * static_cast<size_t>(processes));
  processes_->all_gather(shape.data(), shape.size() * sizeof(uint64_t), shapes.data(), kChannel);
  for (int p = 0; p < processes; ++p)
    for (size_t k = 0; k < calls.size(); ++k)
      if (!std::equal(
              shape.begin() + static_cast<long>(4 * k),
              shape.begin() + static_cast<long>(4 * k + 4),
              shapes.begin() + static_cast<long>(shape.size() * static_cast<size_t>(p) + 4 * k)))
        throw std::logic_error("process " + std::to_string(p) + " called another collective than " +
                               describe(calls[k]) + " in process " + std::to_string(me));
  throw std::logic_error("the processes' groups of collectives differ");
}

void Collectives::exchange(const std::vector<CollectiveCall>& calls) {
  const int processes = processes_->processes(), me = processes_->process_rank();
  const int world = global_world();
  for (size_t k = 0; k < calls.size(); ++k) {
    const CollectiveCall& c = calls[k];
    if (c.bytes == 0) continue;  // the same on every process (the shapes agree)
    if (c.kind == CollectiveKind::ALL_REDUCE_SUM || c.kind == CollectiveKind::ALL_REDUCE_MEAN ||
        c.kind == CollectiveKind::ALL_REDUCE_MAX) {
      all_reduce_across(k);
      continue;
    }
    // Every rank's buffer, in global rank order: this process's ranks are
    // me * world_ .. me * world_ + world_ - 1.
    std::vector<uint8_t> mine(c.bytes * static_cast<uint64_t>(world_));
    for (int l = 0; l < world_; ++l)
      std::memcpy(mine.data() + c.bytes * static_cast<uint64_t>(l),
                  (*posted_[static_cast<size_t>(l)])[k].data, c.bytes);
    std::vector<uint8_t> all(mine.size() * static_cast<size_t>(processes));
    processes_->all_gather(mine.data(), mine.size(), all.data(), kChannel);
    auto buffer = [&](int r) { return all.data() + c.bytes * static_cast<uint64_t>(r); };
    for (int l = 0; l < world_; ++l) {
      const CollectiveCall& to = (*posted_[static_cast<size_t>(l)])[k];
      const int g = me * world_ + l;
      switch (c.kind) {
        case CollectiveKind::BROADCAST:
          std::memcpy(to.data, buffer(c.root), c.bytes);
          break;
        case CollectiveKind::ALL_GATHER:
          for (int r = 0; r < world; ++r) {
            const ShardShare share = shard_share(c.bytes, r, world);
            std::memcpy(static_cast<uint8_t*>(to.data) + share.begin, buffer(r) + share.begin,
                        share.bytes());
          }
          break;
        case CollectiveKind::REDUCE_SCATTER_MEAN: {
          const ShardShare share = shard_share(c.bytes, g, world);
          for (uint64_t i = share.begin / 4; i < share.end / 4; ++i)
            static_cast<float*>(to.out)[i - share.begin / 4] = reduce_element(c, world, buffer, i);
          break;
        }
        case CollectiveKind::GATHER_BLOCKS:
          std::memcpy(to.out, all.data(), all.size());
          break;
        case CollectiveKind::REDUCE_SCATTER_SUM_BLOCKS: {
          const uint64_t block = c.bytes / element_bytes(c) / static_cast<uint64_t>(world);
          for (uint64_t i = 0; i < block; ++i)
            store(c, to.out, i,
                  reduce_element(c, world, buffer, block * static_cast<uint64_t>(g) + i));
          break;
        }
        default:  // the all-reduces took the path above
          throw std::logic_error("CPU collectives across processes: " + describe(c));
      }
    }
  }
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
