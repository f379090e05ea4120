// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/checkpoint.h>

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <system_error>

#include <nlohmann/json.hpp>

#include <renaissance/error.h>

namespace tr {

// The file stores floats and integers as the machine does; every supported
// target is little-endian, which the format prescribes.
static_assert(std::endian::native == std::endian::little, "the checkpoint format is little-endian");

namespace {

using nlohmann::json;

constexpr char kMagic[8] = {'R', 'W', 'B', 'C', 'K', 'P', 'T', '\n'};
constexpr uint32_t kFormat = 1;
// Far above any real header; a larger length means a damaged file.
constexpr uint64_t kMaxHeaderBytes = uint64_t{1} << 30;

uint32_t crc_of(const void* data, uint64_t bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(data);
  while (bytes > 0) {
    const uInt chunk = static_cast<uInt>(std::min<uint64_t>(bytes, 1u << 30));
    crc = crc32(crc, p, chunk);
    p += chunk;
    bytes -= chunk;
  }
  return static_cast<uint32_t>(crc);
}

template <class T>
void put(std::string& out, T value) {
  char b[sizeof(T)];
  std::memcpy(b, &value, sizeof(T));
  out.append(b, sizeof(T));
}

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw UsageError("checkpoint '" + path + "': " + why);
}

json header_of(const Checkpoint& c) {
  json h;
  h["format"] = kFormat;
  h["engine_version"] = TR_VERSION;
  h["project_name"] = c.project_name;
  json project = json::parse(c.project_json, nullptr, false);
  h["project"] = project.is_discarded() ? json(c.project_json) : project;
  h["world_size"] = c.world_size;
  h["position"] = {
      {"epoch", c.position.epoch}, {"batch", c.position.batch}, {"step", c.position.step}};
  h["training"] = {{"seed", c.seed},
                   {"global_batch", c.global_batch},
                   {"optimizer", c.optimizer},
                   {"precision", c.precision}};
  h["scalars"] = {
      {"loss_scale", c.loss_scale}, {"clean_steps", c.clean_steps}, {"updates", c.updates}};
  h["rng"] = {{"generators", "counter-based (Philox4x32-10, mix64)"},
              {"seed", c.seed},
              {"epoch", c.position.epoch},
              {"step", c.position.step}};
  json tensors = json::array();
  uint64_t offset = 0;
  for (const CheckpointTensor& t : c.tensors) {
    const uint64_t bytes = t.values.size() * sizeof(float);
    tensors.push_back({{"region", t.region},
                       {"name", t.name},
                       {"dtype", "fp32"},
                       {"shape", {t.shape.n, t.shape.h, t.shape.w, t.shape.c}},
                       {"offset", offset},
                       {"bytes", bytes},
                       {"crc32", crc_of(t.values.data(), bytes)}});
    offset += bytes;
  }
  h["tensors"] = std::move(tensors);
  h["data_bytes"] = offset;
  return h;
}

// Typed access to the header with messages that say which field is wrong.
class HeaderReader {
 public:
  explicit HeaderReader(const std::string& path) : path_(path) {}

  const json& member(const json& obj, const char* key, const std::string& where) const {
    if (!obj.is_object() || !obj.contains(key))
      fail(path_, "damaged header: '" + where + key + "' is missing");
    return obj.at(key);
  }
  int64_t integer(const json& obj, const char* key, const std::string& where = "") const {
    const json& v = member(obj, key, where);
    if (!v.is_number_integer())
      fail(path_, "damaged header: '" + where + key + "' is not an integer");
    return v.get<int64_t>();
  }
  uint64_t unsigned_integer(const json& obj, const char* key, const std::string& where = "") const {
    const json& v = member(obj, key, where);
    if (!v.is_number_unsigned())
      fail(path_, "damaged header: '" + where + key + "' is not a non-negative integer");
    return v.get<uint64_t>();
  }
  double number(const json& obj, const char* key, const std::string& where = "") const {
    const json& v = member(obj, key, where);
    if (!v.is_number()) fail(path_, "damaged header: '" + where + key + "' is not a number");
    return v.get<double>();
  }
  std::string text(const json& obj, const char* key, const std::string& where = "") const {
    const json& v = member(obj, key, where);
    if (!v.is_string()) fail(path_, "damaged header: '" + where + key + "' is not a string");
    return v.get<std::string>();
  }

 private:
  const std::string& path_;
};

std::string os_error(int e) {
  return std::generic_category().message(e);
}

// The temporary file a checkpoint is written to; removed again unless it
// was renamed into place.
class TemporaryFile {
 public:
  TemporaryFile(const std::string& path, const std::string& temporary)
      : path_(path), temporary_(temporary) {
    fd_ = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) fail(path, "cannot create '" + temporary + "': " + os_error(errno));
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  ~TemporaryFile() { discard(); }

  void write(const char* data, size_t bytes) {
    while (bytes > 0) {
      const ssize_t n = ::write(fd_, data, std::min<size_t>(bytes, size_t{1} << 30));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int e = n < 0 ? errno : ENOSPC;
        discard();
        fail(path_, "cannot write '" + temporary_ + "': " + os_error(e));
      }
      data += n;
      bytes -= static_cast<size_t>(n);
    }
  }

  void sync_and_close() {
    if (::fsync(fd_) != 0) {
      const int e = errno;
      discard();
      fail(path_, "cannot write '" + temporary_ + "' to the disk: " + os_error(e));
    }
    const int closed = ::close(fd_);
    fd_ = -1;
    if (closed != 0) {
      const int e = errno;
      discard();
      fail(path_, "cannot write '" + temporary_ + "' to the disk: " + os_error(e));
    }
  }

  void renamed() { kept_ = true; }

  void discard() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!kept_) ::unlink(temporary_.c_str());
    kept_ = true;
  }

 private:
  const std::string& path_;
  const std::string& temporary_;
  int fd_ = -1;
  bool kept_ = false;
};

// A rename is on the disk once the folder holding it is.
void sync_folder_of(const std::string& path) {
  std::string folder = std::filesystem::path(path).parent_path().string();
  if (folder.empty()) folder = ".";
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(path, "written, but its folder cannot be opened to sync it: " + os_error(errno));
  const int synced = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  // Some file systems cannot sync a folder; their renames are as durable as they get.
  if (synced != 0 && e != EINVAL && e != ENOTSUP)
    fail(path, "written, but its folder cannot be synced to the disk: " + os_error(e));
}

}  // namespace

void write_checkpoint(const Checkpoint& c, const std::string& path) {
  const std::string header = header_of(c).dump();
  std::string prefix(kMagic, sizeof kMagic);
  put<uint32_t>(prefix, kFormat);
  put<uint64_t>(prefix, header.size());
  prefix += header;
  put<uint32_t>(prefix, crc_of(header.data(), header.size()));

  // Durable before it is visible: the data reaches the disk under a
  // temporary name, the rename replaces the previous checkpoint in one step,
  // and the folder's entry is synced. A crash or a kill at any point leaves
  // the previous checkpoint or this one, each whole.
  const std::string temporary = path + ".tmp";
  TemporaryFile f(path, temporary);
  f.write(prefix.data(), prefix.size());
  for (const CheckpointTensor& t : c.tensors)
    f.write(reinterpret_cast<const char*>(t.values.data()), t.values.size() * sizeof(float));
  f.sync_and_close();
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    const int e = errno;
    f.discard();
    fail(path, "cannot rename '" + temporary + "' into place: " + os_error(e));
  }
  f.renamed();
  sync_folder_of(path);
}

Checkpoint read_checkpoint(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(path, "cannot open the file");
  f.seekg(0, std::ios::end);
  const auto end = f.tellg();
  if (end < 0) fail(path, "cannot read the file");
  const uint64_t size = static_cast<uint64_t>(end);
  f.seekg(0);
  auto read = [&](void* out, uint64_t bytes, const char* what) {
    if (!f.read(static_cast<char*>(out), static_cast<std::streamsize>(bytes)))
      fail(path, std::string("truncated: the file ends inside ") + what);
  };

  char magic[sizeof kMagic];
  if (size < sizeof magic)
    fail(path, "not a checkpoint (the file is only " + std::to_string(size) + " bytes)");
  read(magic, sizeof magic, "the signature");
  if (std::memcmp(magic, kMagic, sizeof magic) != 0)
    fail(path, "not a checkpoint (the signature is wrong)");
  uint32_t format = 0;
  read(&format, sizeof format, "the format number");
  if (format != kFormat)
    fail(path, "format " + std::to_string(format) + " is not supported (this build reads format " +
                   std::to_string(kFormat) + ")");
  uint64_t header_bytes = 0;
  read(&header_bytes, sizeof header_bytes, "the header length");
  if (header_bytes > kMaxHeaderBytes || header_bytes > size)
    fail(path, "damaged: the header length " + std::to_string(header_bytes) +
                   " exceeds the file of " + std::to_string(size) + " bytes");
  std::string header(header_bytes, '\0');
  read(header.data(), header_bytes, "the header");
  uint32_t header_crc = 0;
  read(&header_crc, sizeof header_crc, "the header checksum");
  if (crc_of(header.data(), header.size()) != header_crc)
    fail(path, "damaged: the header checksum does not match");
  const json h = json::parse(header, nullptr, false);
  if (h.is_discarded() || !h.is_object()) fail(path, "damaged: the header is not a JSON object");

  const HeaderReader r(path);
  Checkpoint c;
  c.project_name = r.text(h, "project_name");
  const json& project = r.member(h, "project", "");
  c.project_json = project.is_string() ? project.get<std::string>() : project.dump(2);
  c.world_size = static_cast<int>(r.integer(h, "world_size"));
  const json& pos = r.member(h, "position", "");
  c.position = {r.integer(pos, "epoch", "position."), r.integer(pos, "batch", "position."),
                r.integer(pos, "step", "position.")};
  if (c.position.epoch < 0 || c.position.batch < 0 || c.position.step < 0)
    fail(path, "damaged header: a negative position");
  const json& t = r.member(h, "training", "");
  c.seed = r.unsigned_integer(t, "seed", "training.");
  c.global_batch = r.integer(t, "global_batch", "training.");
  c.optimizer = r.text(t, "optimizer", "training.");
  c.precision = r.text(t, "precision", "training.");
  const json& s = r.member(h, "scalars", "");
  c.loss_scale = static_cast<float>(r.number(s, "loss_scale", "scalars."));
  c.clean_steps = static_cast<float>(r.number(s, "clean_steps", "scalars."));
  if (!(c.loss_scale > 0.0f) || !std::isfinite(c.loss_scale) || !std::isfinite(c.clean_steps))
    fail(path, "damaged header: the loss scale is not a positive number");
  c.updates = s.contains("updates") ? r.integer(s, "updates", "scalars.") : c.position.step;
  if (c.updates < 0 || c.updates > c.position.step)
    fail(path, "damaged header: scalars.updates is not between 0 and the step");

  const uint64_t data_bytes = r.unsigned_integer(h, "data_bytes");
  const uint64_t data_start =
      sizeof kMagic + sizeof format + sizeof header_bytes + header_bytes + sizeof header_crc;
  if (size < data_start + data_bytes)
    fail(path, "truncated: " + std::to_string(size - data_start) + " of " +
                   std::to_string(data_bytes) + " bytes of tensor data are present");
  if (size > data_start + data_bytes)
    fail(path, "damaged: " + std::to_string(size - data_start - data_bytes) +
                   " unexpected bytes after the tensor data");
  std::vector<char> data(data_bytes);
  read(data.data(), data_bytes, "the tensor data");

  const json& tensors = r.member(h, "tensors", "");
  if (!tensors.is_array()) fail(path, "damaged header: 'tensors' is not a list");
  for (size_t i = 0; i < tensors.size(); ++i) {
    const json& e = tensors[i];
    const std::string where = "tensors[" + std::to_string(i) + "].";
    CheckpointTensor ct;
    ct.region = r.text(e, "region", where);
    ct.name = r.text(e, "name", where);
    if (r.text(e, "dtype", where) != "fp32")
      fail(path, "tensor " + ct.name + " in " + ct.region + " is not fp32");
    const json& shape = r.member(e, "shape", where);
    if (!shape.is_array() || shape.size() != 4)
      fail(path, "damaged header: '" + where + "shape' is not [N, H, W, C]");
    int64_t dims[4];
    for (size_t k = 0; k < 4; ++k) {
      if (!shape[k].is_number_integer() || shape[k].get<int64_t>() < 1 ||
          shape[k].get<int64_t>() > (int64_t{1} << 40))
        fail(path, "damaged header: '" + where + "shape' has an invalid dimension");
      dims[k] = shape[k].get<int64_t>();
    }
    // The product is checked before it is formed: four dimensions of up to
    // 2^40 would overflow it (a fuzzed file did).
    uint64_t elements = 1;
    for (const int64_t d : dims) {
      if (static_cast<uint64_t>(d) > data_bytes / sizeof(float) / elements)
        fail(path, "damaged header: '" + where + "shape' holds more values than the file's " +
                       std::to_string(data_bytes) + " bytes of tensor data");
      elements *= static_cast<uint64_t>(d);
    }
    ct.shape = {dims[0], dims[1], dims[2], dims[3]};
    const uint64_t offset = r.unsigned_integer(e, "offset", where);
    const uint64_t bytes = r.unsigned_integer(e, "bytes", where);
    const uint64_t expected = static_cast<uint64_t>(ct.shape.elements()) * sizeof(float);
    if (bytes != expected || offset > data_bytes || bytes > data_bytes - offset)
      fail(path, "damaged header: tensor " + ct.name + " in " + ct.region + " claims bytes [" +
                     std::to_string(offset) + ", +" + std::to_string(bytes) + ") of " +
                     std::to_string(data_bytes) + " for shape " + ct.shape.str());
    const char* bytes_at = data.data() + offset;
    if (crc_of(bytes_at, bytes) != static_cast<uint32_t>(r.unsigned_integer(e, "crc32", where)))
      fail(path, "damaged: the data of tensor " + ct.name + " in " + ct.region +
                     " does not match its checksum");
    ct.values.resize(static_cast<size_t>(ct.shape.elements()));
    std::memcpy(ct.values.data(), bytes_at, bytes);
    c.tensors.push_back(std::move(ct));
  }
  return c;
}

}  // namespace tr
