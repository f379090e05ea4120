// SPDX-License-Identifier: GPL-3.0-or-later
// IDX parsing over zlib's gz* API, which reads gzip and plain files alike.
#include "data/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <string_view>
#include <system_error>
#include <vector>

#include <renaissance/error.h>

namespace tr {

namespace {

// Refuse headers that announce more than this many payload bytes: a damaged
// header must fail with a message, not with an attempt to allocate exabytes.
constexpr uint64_t kMaxPayloadBytes = uint64_t{1} << 40;

struct IdxKind {
  const char* noun;    // "image"
  int dimensions;      // 3 or 1
  uint32_t magic;      // 0x00000803
  const char* layout;  // what the dimensions are, for messages
  std::array<const char*, 3> dim_names;
};

constexpr IdxKind kImages{
    "image", 3, 0x00000803u, "count, rows, columns", {"images", "rows", "columns"}};
constexpr IdxKind kLabels{"label", 1, 0x00000801u, "count", {"labels", "", ""}};

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}

std::string hex_bytes(const uint8_t* p, size_t n) {
  std::string s;
  char buf[4];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", p[i]);
    if (i) s += ' ';
    s += buf;
  }
  return s;
}

const char* idx_type_name(uint8_t type) {
  switch (type) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "an unknown type";
  }
}

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw UsageError(path + ": " + what);
}

// One open IDX file; closes itself on every path out, including throws.
class GzFile {
 public:
  GzFile(const std::string& path, const std::string& missing_hint) : path_(path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(status)) {
      fail(path, "missing: no such file" + (missing_hint.empty() ? "" : " (" + missing_hint + ")"));
    }
    if (std::filesystem::is_directory(status)) fail(path, "is a directory, expected an IDX file");
    errno = 0;
    file_ = gzopen(path.c_str(), "rb");
    if (!file_) {
      fail(path, std::string("cannot open: ") +
                     (errno ? std::strerror(errno) : "zlib could not allocate its state"));
    }
    gzbuffer(file_, 1u << 17);  // fewer syscalls on the 26 MB training images
    const uintmax_t bytes = std::filesystem::file_size(path, ec);
    file_bytes_ = ec ? UINT64_MAX : static_cast<uint64_t>(bytes);
  }
  ~GzFile() {
    if (file_) gzclose_r(file_);
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;

  // Reads up to n bytes; fewer only at the end of the data. Throws on
  // corrupt compressed data.
  uint64_t read(void* out, uint64_t n) {
    auto* dst = static_cast<uint8_t*>(out);
    uint64_t total = 0;
    while (total < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<uint64_t>(n - total, 1u << 30));
      const int got = gzread(file_, dst + total, chunk);
      if (got < 0) {
        int errnum = 0;
        const char* msg = gzerror(file_, &errnum);
        // Z_BUF_ERROR is zlib's "the compressed stream stops mid-way".
        if (errnum == Z_BUF_ERROR) {
          stream_cut_ = true;
          break;
        }
        fail(path_, "corrupt gzip data after " + std::to_string(consumed_ + total) +
                        " decompressed bytes: " + (msg ? msg : "unknown zlib error") +
                        "; expected a valid gzip stream");
      }
      if (got == 0) {
        int errnum = 0;
        gzerror(file_, &errnum);
        if (errnum == Z_BUF_ERROR) stream_cut_ = true;
        break;
      }
      total += static_cast<uint64_t>(got);
    }
    consumed_ += total;
    return total;
  }

  // Bytes left after everything read so far (reads them to count them).
  uint64_t count_rest() {
    std::vector<uint8_t> sink(1u << 16);
    uint64_t extra = 0;
    for (;;) {
      const uint64_t got = read(sink.data(), sink.size());
      extra += got;
      if (got < sink.size()) return extra;
    }
  }

  // At most this many bytes of data follow what was read so far: what is
  // left of a plain file, or for gzip what deflate's best ratio (1032:1,
  // plus a little for tiny files) makes of the whole file.
  uint64_t most_left() {
    if (file_bytes_ == UINT64_MAX) return UINT64_MAX;
    if (!compressed()) return file_bytes_ > consumed_ ? file_bytes_ - consumed_ : 0;
    constexpr uint64_t kDeflateRatio = 1032, kSlack = 1024;
    if (file_bytes_ > (UINT64_MAX - kSlack) / kDeflateRatio) return UINT64_MAX;
    return file_bytes_ * kDeflateRatio + kSlack;
  }

  bool compressed() { return gzdirect(file_) == 0; }
  bool stream_cut() const { return stream_cut_; }

 private:
  std::string path_;
  gzFile file_ = nullptr;
  uint64_t file_bytes_ = UINT64_MAX;  // on disk; UINT64_MAX when unknown
  uint64_t consumed_ = 0;
  bool stream_cut_ = false;
};

struct Header {
  std::vector<uint64_t> dims;
  uint64_t header_bytes = 0;
  uint64_t payload_bytes = 0;
};

// "60000 images of 28x28 (47040000 bytes)" / "60000 labels (60000 bytes)"
std::string announced(const IdxKind& kind, const Header& h) {
  std::string s = std::to_string(h.dims[0]) + " " + kind.noun + "s";
  if (h.dims.size() == 3) s += " of " + std::to_string(h.dims[1]) + "x" + std::to_string(h.dims[2]);
  return s + " (" + std::to_string(h.payload_bytes) + " bytes)";
}

Header read_header(GzFile& in, const std::string& path, const IdxKind& kind) {
  const std::string what = std::string("an IDX ") + kind.noun + " file";
  const uint64_t header_bytes = 4 + 4 * static_cast<uint64_t>(kind.dimensions);
  const std::string header_desc = "an IDX " + std::string(kind.noun) + " header is " +
                                  std::to_string(header_bytes) + " bytes (magic, then " +
                                  kind.layout + " as big-endian uint32)";
  std::array<uint8_t, 4> magic{};
  const uint64_t got = in.read(magic.data(), magic.size());
  const bool gz = in.compressed();
  if (got == 0) {
    fail(path, gz ? "is empty after decompression; expected " + what
                  : "is empty (0 bytes); expected " + what);
  }
  // Every IDX magic starts with two zero bytes; anything else is some other file.
  if ((got >= 1 && magic[0] != 0) || (got >= 2 && magic[1] != 0)) {
    const std::string starts = "starts with " + hex_bytes(magic.data(), got);
    if (gz) {
      fail(path, "is gzip but does not hold IDX data: the decompressed data " + starts +
                     "; expected the IDX magic 00 00 08 0" + std::to_string(kind.dimensions));
    }
    fail(path, "is not gzip and not IDX: it " + starts +
                   "; expected the gzip magic 1f 8b or the IDX magic 00 00 08 0" +
                   std::to_string(kind.dimensions));
  }
  if (got < magic.size()) {
    fail(path,
         "truncated header: the file holds only " + std::to_string(got) + " bytes; " + header_desc);
  }
  const uint32_t value = (uint32_t{magic[2]} << 8) | magic[3];
  const int dims = magic[3];
  if (dims != kind.dimensions) {
    std::string which;
    if (dims == 1) which = " (that is a label file)";
    if (dims == 3) which = " (that is an image file)";
    if (dims != 1 && dims != 3) which = " (" + std::to_string(dims) + " dimensions)";
    fail(path,
         "not " + what + ": magic " + hex32(value) + which + "; expected " + hex32(kind.magic));
  }
  if (magic[2] != 0x08) {
    char type[8];
    std::snprintf(type, sizeof type, "0x%02X", magic[2]);
    fail(path, "wrong element type " + std::string(type) + " (" + idx_type_name(magic[2]) +
                   ") in magic " + hex32(value) + "; expected 0x08 (unsigned byte), magic " +
                   hex32(kind.magic));
  }

  std::vector<uint8_t> raw(4 * static_cast<size_t>(kind.dimensions));
  const uint64_t got_dims = in.read(raw.data(), raw.size());
  if (got_dims < raw.size()) {
    fail(path, "truncated header: the file ends after " + std::to_string(4 + got_dims) +
                   " bytes; " + header_desc);
  }
  Header h;
  h.header_bytes = header_bytes;
  for (size_t d = 0; d < static_cast<size_t>(kind.dimensions); ++d) {
    const uint8_t* p = raw.data() + 4 * d;
    const uint64_t v =
        (uint64_t{p[0]} << 24) | (uint64_t{p[1]} << 16) | (uint64_t{p[2]} << 8) | p[3];
    if (v == 0) {
      fail(path, "header announces 0 " + std::string(kind.dim_names[d]) + "; expected at least 1");
    }
    h.dims.push_back(v);
  }
  // Each factor is < 2^32, so the first product fits; check before the second.
  const uint64_t per_item = h.dims.size() == 3 ? h.dims[1] * h.dims[2] : 1;
  if (h.dims[0] > kMaxPayloadBytes / per_item) {
    fail(path, "header announces " + std::to_string(h.dims[0]) + " " + kind.noun + "s of " +
                   std::to_string(per_item) + " bytes each, more than " +
                   std::to_string(kMaxPayloadBytes) + " bytes in all; the header is damaged");
  }
  h.payload_bytes = h.dims[0] * per_item;
  return h;
}

[[noreturn]] void truncated(GzFile& in, const std::string& path, const IdxKind& kind,
                            const Header& h, uint64_t got) {
  fail(path, "truncated: header announces " + announced(kind, h) + " but the file holds only " +
                 std::to_string(got) + " bytes after the " + std::to_string(h.header_bytes) +
                 "-byte header" +
                 (in.stream_cut() ? " (the gzip stream itself is cut short)" : ""));
}

// A damaged header can announce far more than the file can hold: those
// bytes are counted, not allocated (a 20-byte file must not cost gigabytes).
void check_payload_fits(GzFile& in, const std::string& path, const IdxKind& kind, const Header& h) {
  if (h.payload_bytes <= in.most_left()) return;
  truncated(in, path, kind, h, in.count_rest());
}

void read_payload(GzFile& in, const std::string& path, const IdxKind& kind, const Header& h,
                  uint8_t* out) {
  const uint64_t got = in.read(out, h.payload_bytes);
  if (got < h.payload_bytes) truncated(in, path, kind, h, got);
  const uint64_t extra = in.count_rest();
  if (extra > 0) {
    fail(path, "trailing bytes: header announces " + announced(kind, h) + " but " +
                   std::to_string(extra) + " more bytes follow; expected the data to end there");
  }
}

Tensor allocate(const std::string& path, const IdxKind& kind, const Header& h, Shape shape,
                DType dtype) {
  try {
    return Tensor::uninitialized(shape, dtype);
  } catch (const std::bad_alloc&) {
    fail(path, "header announces " + announced(kind, h) + ", more than this machine can allocate");
  }
}

}  // namespace

Tensor read_idx_images(const std::string& path, const std::string& missing_hint) {
  GzFile in(path, missing_hint);
  const Header h = read_header(in, path, kImages);
  check_payload_fits(in, path, kImages, h);
  const Shape shape{static_cast<int64_t>(h.dims[0]), static_cast<int64_t>(h.dims[1]),
                    static_cast<int64_t>(h.dims[2]), 1};
  Tensor pixels = allocate(path, kImages, h, shape, DType::INT8);
  read_payload(in, path, kImages, h, pixels.data<uint8_t>());
  return pixels;
}

Tensor read_idx_labels(const std::string& path, int64_t classes, const std::string& missing_hint) {
  GzFile in(path, missing_hint);
  const Header h = read_header(in, path, kLabels);
  check_payload_fits(in, path, kLabels, h);
  Tensor bytes =
      allocate(path, kLabels, h, Shape{static_cast<int64_t>(h.dims[0]), 1, 1, 1}, DType::INT8);
  read_payload(in, path, kLabels, h, bytes.data<uint8_t>());
  Tensor labels = allocate(path, kLabels, h, bytes.shape(), DType::INT32);
  const uint8_t* src = bytes.data<uint8_t>();
  int32_t* dst = labels.data<int32_t>();
  for (int64_t i = 0; i < labels.elements(); ++i) {
    if (src[i] >= classes) {
      fail(path, "label " + std::to_string(src[i]) + " at index " + std::to_string(i) +
                     " is out of range; expected 0.." + std::to_string(classes - 1) + " (" +
                     std::to_string(classes) + " classes)");
    }
    dst[i] = src[i];
  }
  return labels;
}

IdxHeader read_idx_header(const std::string& path, bool images, const std::string& missing_hint) {
  GzFile in(path, missing_hint);
  const Header h = read_header(in, path, images ? kImages : kLabels);
  IdxHeader out;
  out.count = static_cast<int64_t>(h.dims[0]);
  if (images) {
    out.rows = static_cast<int64_t>(h.dims[1]);
    out.columns = static_cast<int64_t>(h.dims[2]);
  }
  return out;
}

void check_idx_pair(const std::string& images_path, const Tensor& images,
                    const std::string& labels_path, const Tensor& labels) {
  if (images.shape().n != labels.shape().n) {
    throw UsageError(images_path + " holds " + std::to_string(images.shape().n) + " images but " +
                     labels_path + " holds " + std::to_string(labels.shape().n) +
                     " labels; expected one label per image");
  }
}

}  // namespace tr
