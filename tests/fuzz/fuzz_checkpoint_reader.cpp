// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target for tr::read_checkpoint (engine/runtime/checkpoint.cpp):
// the input is a checkpoint file. Allowed outcomes: a Checkpoint, or a
// tr::UsageError with a message. Any other exception, a crash, a hang, a
// leak or a sanitizer report is a finding. A checkpoint the reader accepts
// is written again with write_checkpoint and read back: every field must
// come back as it was.
//
// The fuzzer cannot compute CRC-32s, so where the input's framing (magic,
// format, header length) leaves room for the header checksum, the target
// writes the right one there before the reader sees the file: mutations of
// the JSON header then reach the header's checks instead of all failing the
// checksum. (The tensors' checksums inside the header stay as they are.)
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <renaissance/checkpoint.h>
#include <renaissance/error.h>
#include "fuzz_support.h"

namespace {

// magic (8), format (4), header length (8), header, header CRC-32 (4)
constexpr size_t kHeaderAt = 20;

std::vector<uint8_t> with_header_crc(const uint8_t* data, size_t size) {
  std::vector<uint8_t> file(data, data + size);
  if (size < kHeaderAt) return file;
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, data + 12, sizeof header_bytes);
  if (header_bytes > size - kHeaderAt || size - kHeaderAt - header_bytes < 4) return file;
  const uInt n = static_cast<uInt>(header_bytes);
  const auto crc = static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0), data + kHeaderAt, n));
  std::memcpy(file.data() + kHeaderAt + header_bytes, &crc, sizeof crc);
  return file;
}

// The project comes back as the same JSON (a text that is JSON may come back
// indented differently), or as the same text.
bool same_project(const std::string& a, const std::string& b) {
  if (a == b) return true;
  const auto ja = nlohmann::json::parse(a, nullptr, false);
  const auto jb = nlohmann::json::parse(b, nullptr, false);
  return !ja.is_discarded() && !jb.is_discarded() && ja == jb;
}

bool same_tensor(const tr::CheckpointTensor& a, const tr::CheckpointTensor& b) {
  return a.region == b.region && a.name == b.name && a.shape == b.shape &&
         a.values.size() == b.values.size() &&
         (a.values.empty() ||
          std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const tr::fuzz::TempFile input("fuzz_checkpoint_reader", ".ckpt");
  static const tr::fuzz::TempFile again("fuzz_checkpoint_reader-again", ".ckpt");
  const std::vector<uint8_t> file = with_header_crc(data, size);
  tr::Checkpoint c;
  try {
    c = tr::read_checkpoint(input.write(file.data(), file.size()));
  } catch (const tr::UsageError& e) {
    FUZZ_CHECK(std::strlen(e.what()) > 0);
    return 0;
  }
  for (const tr::CheckpointTensor& t : c.tensors)
    FUZZ_CHECK(static_cast<int64_t>(t.values.size()) == t.shape.elements());

  // What the reader accepts, the writer writes and the reader reads back alike.
  tr::write_checkpoint(c, again.path());
  const tr::Checkpoint d = tr::read_checkpoint(again.path());
  FUZZ_CHECK(d.project_name == c.project_name);
  FUZZ_CHECK(same_project(d.project_json, c.project_json));
  FUZZ_CHECK(d.world_size == c.world_size);
  FUZZ_CHECK(d.position.epoch == c.position.epoch && d.position.batch == c.position.batch &&
             d.position.step == c.position.step);
  FUZZ_CHECK(d.seed == c.seed && d.global_batch == c.global_batch);
  FUZZ_CHECK(d.optimizer == c.optimizer && d.precision == c.precision);
  FUZZ_CHECK(d.loss_scale == c.loss_scale && d.clean_steps == c.clean_steps);
  FUZZ_CHECK(d.updates == c.updates);
  FUZZ_CHECK(d.tensors.size() == c.tensors.size());
  for (size_t i = 0; i < c.tensors.size(); ++i) FUZZ_CHECK(same_tensor(d.tensors[i], c.tensors[i]));
  return 0;
}
