// SPDX-License-Identifier: GPL-3.0-or-later
// Dataset sources: the IDX reader (round trips and every damaged-file case,
// each with a message that names the file and what was expected),
// Fashion-MNIST loading and location, and synthetic data.
#include <QTemporaryDir>
#include <QtTest>

#include <zlib.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include <renaissance/dataset_probe.h>
#include <renaissance/error.h>
#include "data/cifar.h"
#include "data/dataset.h"
#include "data/fashion_mnist.h"
#include "data/idx_reader.h"
#include "data/synthetic.h"

using namespace tr;

namespace {

using Bytes = std::vector<uint8_t>;

void put_be32(Bytes& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

Bytes idx(uint32_t magic, std::initializer_list<uint32_t> dims, const Bytes& payload) {
  Bytes out;
  put_be32(out, magic);
  for (uint32_t d : dims) put_be32(out, d);
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

Bytes pattern(size_t n, uint32_t salt = 0) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i)
    b[i] = static_cast<uint8_t>((i * 131 + salt * 17 + (i >> 7)) % 256);
  return b;
}

void write_plain(const std::string& path, const Bytes& data) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

void write_gz(const std::string& path, const Bytes& data) {
  gzFile f = gzopen(path.c_str(), "wb9");
  QVERIFY(f);
  if (!data.empty())
    QCOMPARE(gzwrite(f, data.data(), static_cast<unsigned>(data.size())),
             static_cast<int>(data.size()));
  QCOMPARE(gzclose(f), Z_OK);
}

Bytes read_plain(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

// Runs fn, which must throw UsageError, and checks every fragment is in the message.
void expect_usage_error(const std::function<void()>& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
  } catch (const UsageError& e) {
    const std::string msg = e.what();
    for (const std::string& part : parts) {
      QVERIFY2(msg.find(part) != std::string::npos,
               qPrintable(QString::fromStdString("missing \"" + part + "\" in: " + msg)));
    }
    return;
  }
  QFAIL("expected a UsageError");
}

class EnvGuard {
 public:
  explicit EnvGuard(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) saved_ = v, had_ = true;
  }
  ~EnvGuard() {
    if (had_) {
      setenv(name_, saved_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

 private:
  const char* name_;
  std::string saved_;
  bool had_ = false;
};

const std::string kMini = std::string(TR_TEST_DATA) + "/idx/fashion-mini";

// `n` CIFAR records (label bytes then planar pixels) whose pixels tell the
// record, the plane and the position apart: record r, plane c, pixel i
// holds (r * 7 + c * 50 + i) mod 256. Labels from `label(r)`.
Bytes cifar_records(int n, const std::function<Bytes(int)>& label, int first = 0) {
  Bytes out;
  for (int r = first; r < first + n; ++r) {
    const Bytes l = label(r);
    out.insert(out.end(), l.begin(), l.end());
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 1024; ++i)
        out.push_back(static_cast<uint8_t>((r * 7 + c * 50 + i) % 256));
  }
  return out;
}

// A CIFAR-10 folder of five training batches of two records and a test batch of three.
void write_cifar10(const std::string& d) {
  std::filesystem::create_directories(d);
  const auto label = [](int r) { return Bytes{static_cast<uint8_t>(r % 10)}; };
  for (int b = 1; b <= 5; ++b)
    write_plain(d + "/data_batch_" + std::to_string(b) + ".bin",
                cifar_records(2, label, (b - 1) * 2));
  write_plain(d + "/test_batch.bin", cifar_records(3, label, 100));
}

}  // namespace

class TestDataSources : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string path(const char* name) const { return (dir_.path() + "/" + name).toStdString(); }

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  // ---- IDX round trips ----

  void idxRoundTripGzipAndPlain() {
    const Bytes pixels = pattern(3 * 4 * 5);
    const Bytes labels{0, 9, 4};
    for (bool gz : {true, false}) {
      const std::string ip = path(gz ? "rt-images.gz" : "rt-images");
      const std::string lp = path(gz ? "rt-labels.gz" : "rt-labels");
      (gz ? write_gz : write_plain)(ip, idx(0x803, {3, 4, 5}, pixels));
      (gz ? write_gz : write_plain)(lp, idx(0x801, {3}, labels));
      if (gz) {
        const Bytes raw = read_plain(ip);
        QVERIFY(raw.size() > 2 && raw[0] == 0x1F && raw[1] == 0x8B);
      }
      const Tensor img = read_idx_images(ip);
      QVERIFY(img.shape() == (Shape{3, 4, 5, 1}));
      QCOMPARE(img.dtype(), DType::INT8);
      QCOMPARE(std::memcmp(img.data<uint8_t>(), pixels.data(), pixels.size()), 0);
      const Tensor lab = read_idx_labels(lp, 10);
      QVERIFY(lab.shape() == (Shape{3, 1, 1, 1}));
      QCOMPARE(lab.dtype(), DType::INT32);
      QCOMPARE(lab.data<int32_t>()[0], 0);
      QCOMPARE(lab.data<int32_t>()[1], 9);
      QCOMPARE(lab.data<int32_t>()[2], 4);
      check_idx_pair(ip, img, lp, lab);  // no throw
    }
  }

  void idxLargeGzipPayload() {
    // Bigger than zlib's buffers so reads cross many inflate calls.
    const Bytes pixels = pattern(1000 * 28 * 28, 7);
    const std::string p = path("large-images.gz");
    write_gz(p, idx(0x803, {1000, 28, 28}, pixels));
    const Tensor img = read_idx_images(p);
    QVERIFY(img.shape() == (Shape{1000, 28, 28, 1}));
    QCOMPARE(std::memcmp(img.data<uint8_t>(), pixels.data(), pixels.size()), 0);
  }

  // ---- every damaged file gets its own clear message ----

  void missingFile() {
    const std::string p = path("nope-images.gz");
    expect_usage_error([&] { read_idx_images(p); }, {p + ": missing: no such file"});
    expect_usage_error([&] { read_idx_images(p, "try harder"); },
                       {p + ": missing: no such file (try harder)"});
  }

  void directoryInsteadOfFile() {
    const std::string p = dir_.path().toStdString();
    expect_usage_error([&] { read_idx_images(p); }, {p + ": is a directory"});
  }

  void emptyFile() {
    const std::string p = path("empty-images");
    write_plain(p, {});
    expect_usage_error([&] { read_idx_images(p); },
                       {p + ": is empty (0 bytes); expected an IDX image file"});
    const std::string g = path("empty-images.gz");
    write_gz(g, {});
    expect_usage_error([&] { read_idx_images(g); }, {g + ": is empty after decompression"});
  }

  void truncatedHeader() {
    const std::string p = path("short-header-images");
    write_plain(p, {0x00, 0x00, 0x08});
    expect_usage_error(
        [&] { read_idx_images(p); },
        {p + ": truncated header: the file holds only 3 bytes", "an IDX image header is 16 bytes"});
    Bytes partial = idx(0x803, {60000}, {});
    partial.push_back(0);
    partial.push_back(0);  // 10 bytes: magic, count, half of rows
    const std::string q = path("short-dims-images.gz");
    write_gz(q, partial);
    expect_usage_error([&] { read_idx_images(q); },
                       {q + ": truncated header: the file ends after 10 bytes",
                        "an IDX image header is 16 bytes (magic, then count, rows, columns"});
    const std::string l = path("short-header-labels");
    write_plain(l, {0x00, 0x00, 0x08, 0x01, 0x00});
    expect_usage_error(
        [&] { read_idx_labels(l, 10); },
        {l + ": truncated header: the file ends after 5 bytes", "an IDX label header is 8 bytes"});
  }

  void truncatedPayload() {
    const std::string p = path("truncated-images");
    write_plain(p, idx(0x803, {3, 4, 5}, pattern(50)));
    expect_usage_error([&] { read_idx_images(p); },
                       {p + ": truncated: header announces 3 images of 4x5 (60 bytes) but the "
                            "file holds only 50 bytes after the 16-byte header"});
    const std::string g = path("train-images-idx3-ubyte.gz");
    write_gz(g, idx(0x803, {60000, 28, 28}, pattern(1234)));
    expect_usage_error([&] { read_idx_images(g); },
                       {g + ": truncated: header announces 60000 images of 28x28 (47040000 "
                            "bytes) but the file holds only 1234 bytes"});
    const std::string l = path("truncated-labels");
    write_plain(l, idx(0x801, {10}, {1, 2, 3}));
    expect_usage_error([&] { read_idx_labels(l, 10); },
                       {l + ": truncated: header announces 10 labels (10 bytes) but the file "
                            "holds only 3 bytes after the 8-byte header"});
  }

  void truncatedGzipStream() {
    // Cut the compressed file itself in half: zlib sees the stream end early.
    const std::string full = path("cut-full.gz");
    Bytes noisy(20000);
    uint32_t x = 12345;
    for (auto& b : noisy) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 24);
    write_gz(full, idx(0x803, {20, 20, 50}, noisy));
    Bytes compressed = read_plain(full);
    compressed.resize(compressed.size() / 2);
    const std::string p = path("cut-images.gz");
    write_plain(p, compressed);
    expect_usage_error([&] { read_idx_images(p); },
                       {p + ": truncated: header announces 20 images of 20x50 (20000 bytes)",
                        "the gzip stream itself is cut short"});
  }

  void corruptGzipData() {
    const std::string full = path("corrupt-full.gz");
    write_gz(full, idx(0x803, {20, 20, 50}, pattern(20000, 3)));
    Bytes compressed = read_plain(full);
    for (size_t i = compressed.size() / 3; i < compressed.size() / 3 + 16; ++i)
      compressed[i] ^= 0x5A;
    const std::string p = path("corrupt-images.gz");
    write_plain(p, compressed);
    expect_usage_error([&] { read_idx_images(p); }, {p + ": corrupt gzip data"});
  }

  void trailingBytes() {
    Bytes data = idx(0x803, {3, 4, 5}, pattern(60));
    data.insert(data.end(), {1, 2, 3, 4, 5});
    for (bool gz : {false, true}) {
      const std::string p = path(gz ? "trailing-images.gz" : "trailing-images");
      (gz ? write_gz : write_plain)(p, data);
      expect_usage_error([&] { read_idx_images(p); },
                         {p + ": trailing bytes: header announces 3 images of 4x5 (60 bytes) but "
                              "5 more bytes follow"});
    }
  }

  void notGzipAndNotIdx() {
    const std::string p = path("zip-images");
    write_plain(p, {'P', 'K', 0x03, 0x04, 0, 0, 0, 0});
    expect_usage_error([&] { read_idx_images(p); },
                       {p + ": is not gzip and not IDX: it starts with 50 4b 03 04",
                        "expected the gzip magic 1f 8b or the IDX magic 00 00 08 03"});
    const std::string g = path("text-images.gz");
    write_gz(g, Bytes{'h', 'e', 'l', 'l', 'o'});
    expect_usage_error([&] { read_idx_images(g); },
                       {g + ": is gzip but does not hold IDX data", "68 65 6c 6c"});
  }

  void labelFileGivenAsImages() {
    const std::string p = path("swapped-labels.gz");
    write_gz(p, idx(0x801, {3}, {1, 2, 3}));
    expect_usage_error([&] { read_idx_images(p); },
                       {p + ": not an IDX image file: magic 0x00000801 (that is a label file); "
                            "expected 0x00000803"});
    const std::string q = path("swapped-images.gz");
    write_gz(q, idx(0x803, {1, 2, 2}, pattern(4)));
    expect_usage_error([&] { read_idx_labels(q, 10); },
                       {q + ": not an IDX label file: magic 0x00000803 (that is an image file); "
                            "expected 0x00000801"});
    const std::string r = path("matrix-images");
    write_plain(r, idx(0x802, {2, 2}, pattern(4)));
    expect_usage_error([&] { read_idx_images(r); },
                       {r + ": not an IDX image file: magic 0x00000802 (2 dimensions)"});
  }

  void wrongTypeByte() {
    const std::string p = path("float-images");
    write_plain(p, idx(0xD03, {1, 2, 2}, pattern(16)));
    expect_usage_error([&] { read_idx_images(p); },
                       {p + ": wrong element type 0x0D (float32) in magic 0x00000D03; expected "
                            "0x08 (unsigned byte), magic 0x00000803"});
    const std::string l = path("int-labels");
    write_plain(l, idx(0xC01, {1}, pattern(4)));
    expect_usage_error([&] { read_idx_labels(l, 10); },
                       {l + ": wrong element type 0x0C (int32)", "expected 0x08"});
  }

  void zeroOrAbsurdDimensions() {
    const std::string p = path("zero-images");
    write_plain(p, idx(0x803, {0, 28, 28}, {}));
    expect_usage_error([&] { read_idx_images(p); },
                       {p + ": header announces 0 images; expected at least 1"});
    const std::string q = path("zero-rows");
    write_plain(q, idx(0x803, {5, 0, 28}, {}));
    expect_usage_error([&] { read_idx_images(q); }, {q + ": header announces 0 rows"});
    const std::string r = path("huge-images");
    write_plain(r, idx(0x803, {0xFFFFFFFFu, 0xFFFF, 0xFFFF}, pattern(10)));
    expect_usage_error([&] { read_idx_images(r); },
                       {r + ": header announces 4294967295 images", "the header is damaged"});
  }

  // A damaged count in a small file fails as the truncation it is, before
  // the data it announces (gigabytes, or a terabyte) is allocated.
  void hugeCountsInSmallFiles() {
    const std::string l = path("huge-labels");
    write_plain(l, idx(0x801, {0xFD060104u}, {7, 3, 9, 1}));
    expect_usage_error([&] { read_idx_labels(l, 10); },
                       {l + ": truncated: header announces 4245029124 labels (4245029124 bytes) "
                            "but the file holds only 4 bytes after the 8-byte header"});
    const std::string g = path("huge-images.gz");
    write_gz(g, idx(0x803, {1000000, 1000, 1000}, pattern(100)));
    expect_usage_error([&] { read_idx_images(g); },
                       {g + ": truncated: header announces 1000000 images of 1000x1000 "
                            "(1000000000000 bytes) but the file holds only 100 bytes"});
  }

  void labelOutOfRange() {
    const std::string p = path("bad-labels.gz");
    write_gz(p, idx(0x801, {5}, {0, 1, 12, 3, 15}));
    expect_usage_error([&] { read_idx_labels(p, 10); },
                       {p + ": label 12 at index 2 is out of range; expected 0..9 (10 classes)"});
    const Tensor ok = read_idx_labels(p, 16);  // fine with more classes
    QCOMPARE(ok.data<int32_t>()[4], 15);
  }

  void mismatchedCounts() {
    const std::string ip = path("pair-images"), lp = path("pair-labels");
    write_plain(ip, idx(0x803, {3, 2, 2}, pattern(12)));
    write_plain(lp, idx(0x801, {2}, {1, 2}));
    const Tensor img = read_idx_images(ip);
    const Tensor lab = read_idx_labels(lp, 10);
    expect_usage_error(
        [&] { check_idx_pair(ip, img, lp, lab); },
        {ip + " holds 3 images but " + lp + " holds 2 labels", "expected one label per image"});
  }

  // ---- Fashion-MNIST ----

  void fashionMiniFixture() {
    DatasetSpec spec;
    spec.path = kMini;
    spec.train_size = 0;  // all
    spec.val_size = 0;
    const auto src = load_dataset(spec);
    QCOMPARE(src->size(Split::Train), int64_t{6});
    QCOMPARE(src->size(Split::Val), int64_t{4});
    QVERIFY(src->sample_shape() == (Shape{1, 28, 28, 1}));
    QCOMPARE(src->classes(), int64_t{10});
    std::vector<uint8_t> px(28 * 28);
    src->read(Split::Train, 5, px.data());
    for (int y : {0, 13, 27}) {
      for (int x : {0, 9, 27})
        QCOMPARE(int{px[static_cast<size_t>(y * 28 + x)]}, (37 * 5 + 7 * y + 3 * x) % 256);
    }
    QCOMPARE(src->label(Split::Train, 5), (3 * 5 + 1) % 10);
    QCOMPARE(src->label(Split::Val, 3), (3 * 3 + 1) % 10);
    QVERIFY(src->describe().find(kMini) != std::string::npos);
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, src->label(Split::Val, 4));

    spec.train_size = 4;  // a prefix
    QCOMPARE(load_dataset(spec)->size(Split::Train), int64_t{4});
    spec.train_size = 60000;  // the project default asks for more than the fixture holds
    expect_usage_error([&] { load_dataset(spec); },
                       {kMini + "/train-images-idx3-ubyte.gz holds 6 images but "
                                "\"dataset.train_size\" asks for 60000"});
  }

  void fashionSpecMustMatchTheFiles() {
    DatasetSpec spec;
    spec.path = kMini;
    spec.train_size = spec.val_size = 0;
    spec.height = 32;
    expect_usage_error([&] { load_dataset(spec); },
                       {"holds 28x28x1 images but \"dataset\" says 32x28x1"});
    spec.height = 28;
    spec.classes = 100;
    expect_usage_error([&] { load_dataset(spec); },
                       {"\"dataset.classes\" is 100; Fashion-MNIST has 10 classes"});
  }

  void fashionPlainFilesAreFound() {
    // Someone gunzipped the files: the same names without .gz are read.
    const std::string d = path("gunzipped");
    std::filesystem::create_directories(d);
    for (const char* stem : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                             "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
      gzFile in = gzopen((kMini + "/" + stem + ".gz").c_str(), "rb");
      QVERIFY(in);
      Bytes data(1 << 16);
      const int n = gzread(in, data.data(), static_cast<unsigned>(data.size()));
      gzclose(in);
      QVERIFY(n > 0);
      data.resize(static_cast<size_t>(n));
      write_plain(d + "/" + stem, data);
    }
    const FashionMnistSource src(d);
    QCOMPARE(src.size(Split::Train), int64_t{6});
    QCOMPARE(FashionMnistSource::file_path(d, Split::Val, false), d + "/t10k-labels-idx1-ubyte");
  }

  // ---- CIFAR ----

  void cifar10ReadsItsBinaryBatches() {
    const std::string d = path("cifar10");
    write_cifar10(d);
    CifarSource src(DatasetKind::Cifar10, d);
    QCOMPARE(src.size(Split::Train), int64_t{10});
    QCOMPARE(src.size(Split::Val), int64_t{3});
    QCOMPARE(src.classes(), int64_t{10});
    QCOMPARE(src.sample_shape(), (Shape{1, 32, 32, 3}));
    // The batches follow one another; planar pixels come out HWC.
    std::vector<uint8_t> px(3072);
    for (int64_t r : {0, 3, 9}) {
      QCOMPARE(src.label(Split::Train, r), static_cast<int32_t>(r % 10));
      src.read(Split::Train, r, px.data());
      for (int64_t i : {0, 1, 33, 1023})
        for (int64_t c = 0; c < 3; ++c)
          QCOMPARE(px[static_cast<size_t>(i * 3 + c)],
                   static_cast<uint8_t>((r * 7 + c * 50 + i) % 256));
    }
    src.read(Split::Val, 2, px.data());
    QCOMPARE(px[3 * 5 + 1], static_cast<uint8_t>((102 * 7 + 50 + 5) % 256));
    QCOMPARE(src.label(Split::Val, 2), int32_t{2});
    QVERIFY(src.describe().find("CIFAR-10 from " + d) != std::string::npos);
    // A prefix of each split, as for Fashion-MNIST.
    CifarSource some(DatasetKind::Cifar10, d, 4, 1);
    QCOMPARE(some.size(Split::Train), int64_t{4});
    QCOMPARE(some.size(Split::Val), int64_t{1});
    expect_usage_error([&] { CifarSource(DatasetKind::Cifar10, d, 11, 0); },
                       {"the CIFAR-10 training set in " + d +
                        " holds 10 images but \"dataset.train_size\" asks for 11"});
  }

  void cifar100TrainsOnFineLabels() {
    const std::string d = path("cifar100");
    std::filesystem::create_directories(d);
    const auto label = [](int r) {
      return Bytes{static_cast<uint8_t>(r % 20), static_cast<uint8_t>(40 + r)};
    };
    write_plain(d + "/train.bin", cifar_records(4, label));
    write_plain(d + "/test.bin", cifar_records(2, label, 10));
    CifarSource src(DatasetKind::Cifar100, d);
    QCOMPARE(src.classes(), int64_t{100});
    QCOMPARE(src.size(Split::Train), int64_t{4});
    QCOMPARE(src.label(Split::Train, 3), int32_t{43});
    QCOMPARE(src.label(Split::Val, 1), int32_t{51});
    std::vector<uint8_t> px(3072);
    src.read(Split::Train, 1, px.data());
    QCOMPARE(px[2], static_cast<uint8_t>((7 + 100) % 256));  // the first pixel's blue
    // Coarse labels are checked too, and a fine label past 99 names its record.
    write_plain(d + "/test.bin", cifar_records(2, [](int r) {
                  return Bytes{static_cast<uint8_t>(r == 1 ? 20 : 0), 5};
                }));
    expect_usage_error([&] { CifarSource(DatasetKind::Cifar100, d); },
                       {d + "/test.bin: record 1 has coarse label 20; CIFAR-100's coarse labels "
                            "are 0..19"});
    write_plain(d + "/test.bin", cifar_records(2, [](int r) {
                  return Bytes{0, static_cast<uint8_t>(r == 0 ? 100 : 5)};
                }));
    expect_usage_error([&] { CifarSource(DatasetKind::Cifar100, d); },
                       {d + "/test.bin: record 0 has label 100; CIFAR-100 labels are 0..99"});
  }

  void cifarDamagedFilesAreNamed() {
    const std::string d = path("cifar10-damaged");
    write_cifar10(d);
    // Cut off inside a record: not a whole number of records.
    const Bytes cut(2 * 3073 - 100, 7);
    write_plain(d + "/data_batch_3.bin", cut);
    expect_usage_error([&] { CifarSource(DatasetKind::Cifar10, d); },
                       {d + "/data_batch_3.bin is " + std::to_string(cut.size()) +
                            " bytes, not a whole number of 3073-byte CIFAR-10 records",
                        "not the Python or MATLAB ones"});
    write_cifar10(d);
    write_plain(d + "/data_batch_2.bin", cifar_records(2, [](int r) {
                  return Bytes{static_cast<uint8_t>(r == 1 ? 10 : 3)};
                }));
    expect_usage_error([&] { CifarSource(DatasetKind::Cifar10, d); },
                       {d + "/data_batch_2.bin: record 1 has label 10; CIFAR-10 labels are 0..9"});
    write_cifar10(d);
    std::filesystem::remove(d + "/test_batch.bin");
    expect_usage_error([&] { CifarSource(DatasetKind::Cifar10, d, 0, 0, "the hint"); },
                       {d + "/test_batch.bin: no such file; the hint"});
    write_plain(d + "/test_batch.bin", {});
    expect_usage_error([&] { CifarSource(DatasetKind::Cifar10, d); },
                       {d + "/test_batch.bin is 0 bytes"});
  }

  // Through load_dataset and the probe: where the folder comes from, how to
  // get the files when they are missing, and the same verdicts from the probe.
  void cifarThroughTheLoaderAndTheProbe() {
    EnvGuard guard("TR_CIFAR10_DIR");
    unsetenv("TR_CIFAR10_DIR");
    const std::string d = path("cifar10-loader");
    write_cifar10(d);
    DatasetSpec spec;
    spec.kind = DatasetKind::Cifar10;
    spec.height = spec.width = 32;
    spec.channels = 3;
    spec.train_size = spec.val_size = 0;
    spec.path = d;
    auto src = load_dataset(spec);
    QCOMPARE(src->size(Split::Train), int64_t{10});
    QCOMPARE(src->classes(), int64_t{10});
    DatasetProbe p = probe_dataset(spec);
    QVERIFY2(p.ok, p.problem.c_str());
    QCOMPARE(p.train_size, int64_t{10});
    QCOMPARE(p.val_size, int64_t{3});
    QCOMPARE(p.origin, std::string("\"dataset.dir\""));
    spec.train_size = 50000;
    p = probe_dataset(spec);
    QVERIFY(!p.ok);
    QCOMPARE(p.field, std::string("dataset.train_size"));
    expect_usage_error([&] { load_dataset(spec); }, {"holds 10 images"});
    spec.train_size = 0;
    // The environment names the folder when the project does not; else the default.
    spec.path.clear();
    setenv("TR_CIFAR10_DIR", d.c_str(), 1);
    QCOMPARE(resolve_dataset_dir(spec).origin, std::string("$TR_CIFAR10_DIR"));
    QVERIFY(probe_dataset(spec).ok);
    unsetenv("TR_CIFAR10_DIR");
    QVERIFY(resolve_dataset_dir(spec).dir.find("cifar-10-batches-bin") != std::string::npos);
    // A folder without the files: the message says where they come from.
    const std::string empty = path("cifar10-empty");
    std::filesystem::create_directories(empty);
    spec.path = empty;
    expect_usage_error(
        [&] { load_dataset(spec); },
        {empty + "/data_batch_1.bin: no such file", "cifar-10-binary.tar.gz",
         "https://www.cs.toronto.edu/~kriz/cifar.html", "set \"dataset.dir\" (or $TR_CIFAR10_DIR)",
         "this folder came from \"dataset.dir\""});
    p = probe_dataset(spec);
    QVERIFY(!p.ok);
    QVERIFY2(p.problem.find(empty + "/data_batch_1.bin: no such file") != std::string::npos,
             p.problem.c_str());
    spec.path = path("cifar10-absent");
    p = probe_dataset(spec);
    QVERIFY(!p.ok);
    QCOMPARE(p.field, std::string("dataset.dir"));
    QVERIFY2(p.problem.find("the CIFAR-10 folder " + spec.path +
                            " (from \"dataset.dir\") does not exist") != std::string::npos,
             p.problem.c_str());
    // The spec must agree with what the files are.
    spec.path = d;
    spec.channels = 1;
    expect_usage_error([&] { load_dataset(spec); },
                       {"holds 32x32x3 images but \"dataset\" says 32x32x1"});
  }

  void fashionMissingFolderSaysHowToFixIt() {
    const std::string d = path("no-dataset-here");
    DatasetSpec spec;
    spec.path = d;
    expect_usage_error([&] { load_dataset(spec); },
                       {d + "/train-images-idx3-ubyte.gz: missing: no such file (install the "
                            "Debian package dataset-fashion-mnist; set \"dataset.path\" (or "
                            "$TR_FASHION_MNIST_DIR) to the folder that holds them",
                        "this folder came from \"dataset.path\""});
    expect_usage_error([&] { load_dataset(DatasetSpec{}, d); },
                       {d + "/train-images-idx3-ubyte.gz: missing", "came from the command line"});
  }

  // The header-only look an editor takes on every settings change: the same
  // verdicts and messages as loading, without the pixels.
  void probeAgreesWithLoading() {
    DatasetSpec spec;
    spec.path = kMini;
    spec.train_size = spec.val_size = 0;
    DatasetProbe p = probe_dataset(spec);
    QVERIFY2(p.ok, p.problem.c_str());
    QCOMPARE(p.train_size, int64_t{6});
    QCOMPARE(p.val_size, int64_t{4});
    QCOMPARE(p.dir, kMini);
    QCOMPARE(p.origin, std::string("\"dataset.path\""));

    spec.train_size = 60000;  // more than the fixture holds
    p = probe_dataset(spec);
    QVERIFY(!p.ok);
    QCOMPARE(p.field, std::string("dataset.train_size"));
    QVERIFY2(p.problem.find("holds 6 images but \"dataset.train_size\" asks for 60000") !=
                 std::string::npos,
             p.problem.c_str());

    const std::string absent = path("probe-absent");
    spec.path = absent;
    p = probe_dataset(spec);
    QVERIFY(!p.ok);
    QCOMPARE(p.field, std::string("dataset.path"));
    QVERIFY2(
        p.problem.find(absent + " (from \"dataset.path\") does not exist") != std::string::npos,
        p.problem.c_str());
    QVERIFY(p.problem.find("dataset-fashion-mnist") != std::string::npos);

    // A folder with one damaged file: that file is named, as loading names it.
    const std::string d = path("probe-damaged");
    std::filesystem::create_directories(d);
    for (const char* stem : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                             "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"})
      std::filesystem::copy_file(kMini + "/" + stem + ".gz", d + "/" + stem + ".gz");
    write_gz(d + "/t10k-labels-idx1-ubyte.gz", Bytes{0, 0, 8});
    spec.path = d;
    spec.train_size = 0;
    p = probe_dataset(spec);
    QVERIFY(!p.ok);
    QVERIFY2(
        p.problem.find(d + "/t10k-labels-idx1-ubyte.gz: truncated header") != std::string::npos,
        p.problem.c_str());
    // Mismatched counts between images and labels.
    std::filesystem::copy_file(kMini + "/train-labels-idx1-ubyte.gz",
                               d + "/t10k-labels-idx1-ubyte.gz",
                               std::filesystem::copy_options::overwrite_existing);
    p = probe_dataset(spec);
    QVERIFY(!p.ok);
    QVERIFY2(p.problem.find("holds 4 images but") != std::string::npos &&
                 p.problem.find("holds 6 labels") != std::string::npos,
             p.problem.c_str());

    // Synthetic data is always there, in the sizes asked for.
    DatasetSpec synthetic;
    synthetic.kind = DatasetKind::Synthetic;
    synthetic.train_size = 123;
    synthetic.val_size = 45;
    p = probe_dataset(synthetic);
    QVERIFY(p.ok);
    QCOMPARE(p.train_size, int64_t{123});
    QCOMPARE(p.val_size, int64_t{45});
  }

  void fashionLocationPriority() {
    EnvGuard guard(kFashionMnistEnvVar);
    unsetenv(kFashionMnistEnvVar);
    DatasetSpec spec;
    QCOMPARE(resolve_dataset_dir(spec).dir, std::string(kFashionMnistDefaultDir));
    QCOMPARE(resolve_dataset_dir(spec).origin, std::string("the default location"));
    setenv(kFashionMnistEnvVar, "/from/env", 1);
    QCOMPARE(resolve_dataset_dir(spec).dir, std::string("/from/env"));
    QCOMPARE(resolve_dataset_dir(spec).origin, std::string("$TR_FASHION_MNIST_DIR"));
    spec.path = "/from/spec";
    QCOMPARE(resolve_dataset_dir(spec).dir, std::string("/from/spec"));
    QCOMPARE(resolve_dataset_dir(spec, "/from/cli").dir, std::string("/from/cli"));
    setenv(kFashionMnistEnvVar, kMini.c_str(), 1);
    DatasetSpec from_env;
    from_env.train_size = from_env.val_size = 0;
    QCOMPARE(load_dataset(from_env)->size(Split::Val), int64_t{4});
  }

  void realFashionMnist() {
    const std::string d = kFashionMnistDefaultDir;
    if (!std::filesystem::exists(d + "/train-images-idx3-ubyte.gz")) {
      QSKIP(
          "Fashion-MNIST is not installed in /usr/share/datasets/fashion-mnist "
          "(Debian package dataset-fashion-mnist); skipping the real-data checks");
    }
    const FashionMnistSource src(d);
    QCOMPARE(src.size(Split::Train), int64_t{60000});
    QCOMPARE(src.size(Split::Val), int64_t{10000});
    QVERIFY(src.sample_shape() == (Shape{1, 28, 28, 1}));
    QVERIFY(src.images(Split::Train).shape() == (Shape{60000, 28, 28, 1}));
    QVERIFY(src.labels(Split::Val).shape() == (Shape{10000, 1, 1, 1}));
    for (Split s : {Split::Train, Split::Val}) {
      std::array<int64_t, 10> per_class{};
      const int32_t* l = src.labels(s).data<int32_t>();
      for (int64_t i = 0; i < src.size(s); ++i) {
        QVERIFY(l[i] >= 0 && l[i] <= 9);
        ++per_class[static_cast<size_t>(l[i])];
      }
      for (int64_t c : per_class) QCOMPARE(c, src.size(s) / 10);  // balanced
    }
    // The normalisation constants every Fashion-MNIST recipe uses.
    std::array<int64_t, 256> histogram{};
    const Tensor& img = src.images(Split::Train);
    const uint8_t* p = img.data<uint8_t>();
    for (int64_t i = 0; i < img.elements(); ++i) ++histogram[p[i]];
    double sum = 0, sum_sq = 0;
    for (int v = 0; v < 256; ++v) {
      const double x = v / 255.0;
      sum += x * static_cast<double>(histogram[static_cast<size_t>(v)]);
      sum_sq += x * x * static_cast<double>(histogram[static_cast<size_t>(v)]);
    }
    const double n = static_cast<double>(img.elements());
    const double mean = sum / n, std = std::sqrt(sum_sq / n - mean * mean);
    QVERIFY2(std::abs(mean - 0.286041) < 1e-4, qPrintable(QString::number(mean, 'f', 7)));
    QVERIFY2(std::abs(std - 0.353024) < 1e-4, qPrintable(QString::number(std, 'f', 7)));
    const DatasetSpec defaults;  // the project defaults agree with the data
    QVERIFY(std::abs(defaults.mean[0] - mean) < 1e-4 && std::abs(defaults.std[0] - std) < 1e-4);
  }

  // ---- synthetic ----

  void syntheticIsDeterministic() {
    const SyntheticSource a(12, 10, 3, 7, 500, 100, 99), b(12, 10, 3, 7, 500, 100, 99);
    const SyntheticSource c(12, 10, 3, 7, 500, 100, 100);
    std::vector<uint8_t> x(360), y(360), z(360);
    int differing = 0;
    for (int64_t i : {0, 1, 250, 499}) {
      a.read(Split::Train, i, x.data());
      b.read(Split::Train, i, y.data());
      c.read(Split::Train, i, z.data());
      QVERIFY(x == y);
      QCOMPARE(a.label(Split::Train, i), b.label(Split::Train, i));
      differing += x != z;
    }
    QCOMPARE(differing, 4);
    a.read(Split::Val, 0, y.data());
    a.read(Split::Train, 0, x.data());
    QVERIFY(x != y);  // the splits are different samples
    // Pinned bytes: a seed must give the same data on every machine and build.
    const SyntheticSource pinned(4, 4, 1, 10, 8, 8, 42);
    std::vector<uint8_t> px(16);
    pinned.read(Split::Train, 3, px.data());
    QCOMPARE(pinned.label(Split::Train, 3), 9);
    QCOMPARE(QByteArray(reinterpret_cast<const char*>(px.data()), 16).toHex(),
             QByteArray("005ac714ff76dc937d4bd832956fe2d2"));
  }

  void syntheticShapesAndLabels() {
    const SyntheticSource s(5, 3, 2, 4, 1000, 10, 1);
    QVERIFY(s.sample_shape() == (Shape{1, 5, 3, 2}));
    QCOMPARE(s.classes(), int64_t{4});
    std::array<int, 4> counts{};
    for (int64_t i = 0; i < 1000; ++i) {
      const int32_t l = s.label(Split::Train, i);
      QVERIFY(l >= 0 && l < 4);
      ++counts[static_cast<size_t>(l)];
    }
    for (int c : counts) QVERIFY(c > 200 && c < 300);
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, s.label(Split::Val, 10));
    expect_usage_error([] { SyntheticSource(0, 3, 1, 2, 10, 10, 1); },
                       {"\"dataset.height\" is 0; expected a positive number"});
  }

  void syntheticImageNetSizeIsLazy() {
    QElapsedTimer timer;
    timer.start();
    DatasetSpec spec;
    spec.kind = DatasetKind::Synthetic;
    spec.height = spec.width = 224;
    spec.channels = 3;
    spec.classes = 1000;
    spec.train_size = 1281167;
    spec.val_size = 50000;
    const auto src = load_dataset(spec, "", 7);
    std::vector<uint8_t> px(224 * 224 * 3);
    src->read(Split::Train, 1281166, px.data());
    QVERIFY(src->label(Split::Train, 1281166) < 1000);
    QVERIFY2(timer.elapsed() < 2000, "synthetic data must not be materialised");
    QVERIFY(src->describe().find("1281167 train") != std::string::npos);
  }

  void syntheticIsLearnable() {
    // Nearest class mean, fitted on the train split, must classify the
    // validation split well: the classes are separable, not noise.
    const int64_t classes = 10, train = 2000, val = 500, pixels = 28 * 28;
    const SyntheticSource s(28, 28, 1, classes, train, val, 5);
    std::vector<double> means(static_cast<size_t>(classes * pixels), 0.0);
    std::vector<int64_t> counts(static_cast<size_t>(classes), 0);
    std::vector<uint8_t> px(static_cast<size_t>(pixels));
    for (int64_t i = 0; i < train; ++i) {
      s.read(Split::Train, i, px.data());
      const auto c = static_cast<size_t>(s.label(Split::Train, i));
      ++counts[c];
      for (int64_t p = 0; p < pixels; ++p) means[c * pixels + p] += px[static_cast<size_t>(p)];
    }
    for (size_t c = 0; c < counts.size(); ++c) {
      for (int64_t p = 0; p < pixels; ++p) means[c * pixels + p] /= static_cast<double>(counts[c]);
    }
    int correct = 0;
    for (int64_t i = 0; i < val; ++i) {
      s.read(Split::Val, i, px.data());
      size_t best = 0;
      double best_d = 1e300;
      for (size_t c = 0; c < counts.size(); ++c) {
        double d = 0;
        for (int64_t p = 0; p < pixels; ++p) {
          const double e = px[static_cast<size_t>(p)] - means[c * pixels + p];
          d += e * e;
        }
        if (d < best_d) best_d = d, best = c;
      }
      correct += static_cast<int32_t>(best) == s.label(Split::Val, i);
    }
    QVERIFY2(correct > val * 9 / 10, qPrintable(QString("%1 of %2").arg(correct).arg(val)));
  }
};

QTEST_APPLESS_MAIN(TestDataSources)
#include "test_data_sources.moc"
