// SPDX-License-Identifier: GPL-3.0-or-later
// Host-side building blocks of the data layer: the owning Tensor, binary16
// conversion, the counter-based RNG and the computed shuffle.
#include <QtTest>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "core/counter_rng.h"
#include "data/half.h"
#include "data/host_tensor.h"
#include "data/permutation.h"

using namespace tr;

namespace {

uint32_t bits(float f) {
  return std::bit_cast<uint32_t>(f);
}

}  // namespace

class TestDataHost : public QObject {
  Q_OBJECT

 private slots:
  void tensorAllocatesAlignedZeroedCompactNhwc() {
    const Tensor t({2, 3, 5, 7}, DType::FP32);
    QCOMPARE(t.bytes(), size_t{2 * 3 * 5 * 7 * 4});
    QCOMPARE(t.elements(), int64_t{210});
    QVERIFY(t.shape() == (Shape{2, 3, 5, 7}));
    QCOMPARE(reinterpret_cast<uintptr_t>(t.data<float>()) % Tensor::kAlignment, uintptr_t{0});
    for (int64_t i = 0; i < t.elements(); ++i) QCOMPARE(t.data<float>()[i], 0.0f);

    const Tensor h({1, 1, 3, 1}, DType::FP16);
    QCOMPARE(h.bytes(), size_t{6});
    const Tensor i8({4, 1, 1, 1}, DType::INT8);
    QCOMPARE(i8.bytes(), size_t{4});
    QVERIFY(i8.data<uint8_t>() != nullptr);  // pixels are read as uint8 from INT8 storage
    QVERIFY(i8.data<int8_t>() != nullptr);
    const Tensor i32({4, 1, 1, 1}, DType::INT32);
    QCOMPARE(i32.bytes(), size_t{16});

    const Tensor none;
    QVERIFY(none.empty());
    QCOMPARE(none.bytes(), size_t{0});
  }

  void tensorChecksTypedAccess() {
    Tensor t({1, 1, 1, 4}, DType::FP16);
    QVERIFY(t.data<uint16_t>() != nullptr);
    QVERIFY(t.data<std::byte>() != nullptr);
    QVERIFY_THROWS_EXCEPTION(std::logic_error, t.data<float>());
    QVERIFY_THROWS_EXCEPTION(std::logic_error, t.data<int32_t>());
    try {
      t.data<float>();
    } catch (const std::logic_error& e) {
      QVERIFY2(std::strstr(e.what(), "fp16") && std::strstr(e.what(), "[1,1,1,4]"), e.what());
    }
  }

  void tensorIsMoveOnlyAndClonesExplicitly() {
    static_assert(!std::is_copy_constructible_v<Tensor>);
    static_assert(!std::is_copy_assignable_v<Tensor>);
    static_assert(std::is_nothrow_move_constructible_v<Tensor>);
    Tensor a({2, 2, 2, 1}, DType::INT32);
    for (int i = 0; i < 8; ++i) a.data<int32_t>()[i] = i * 11;
    const int32_t* storage = a.data<int32_t>();
    Tensor b = std::move(a);
    QVERIFY(a.empty());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
    QVERIFY(a.shape() == (Shape{0, 0, 0, 0}));
    QCOMPARE(b.data<int32_t>(), storage);  // moved, not copied
    Tensor c = b.clone();
    QVERIFY(c.data<int32_t>() != b.data<int32_t>());
    QCOMPARE(std::memcmp(c.data<int32_t>(), b.data<int32_t>(), b.bytes()), 0);
    Tensor d;
    d = std::move(c);
    QCOMPARE(d.data<int32_t>()[7], 77);
    const Tensor u = Tensor::uninitialized({3, 1, 1, 1}, DType::FP32);
    QCOMPARE(u.bytes(), size_t{12});
    QCOMPARE(reinterpret_cast<uintptr_t>(u.data<float>()) % Tensor::kAlignment, uintptr_t{0});
  }

  void halfConversionTable_data() {
    QTest::addColumn<float>("value");
    QTest::addColumn<int>("expected");
    const float inf = std::numeric_limits<float>::infinity();
    QTest::newRow("zero") << 0.0f << 0x0000;
    QTest::newRow("negative zero") << -0.0f << 0x8000;
    QTest::newRow("one") << 1.0f << 0x3C00;
    QTest::newRow("minus two") << -2.0f << 0xC000;
    QTest::newRow("max half 65504") << 65504.0f << 0x7BFF;
    QTest::newRow("65519 rounds down") << 65519.0f << 0x7BFF;
    QTest::newRow("65520 ties to inf") << 65520.0f << 0x7C00;
    QTest::newRow("-65520 to -inf") << -65520.0f << 0xFC00;
    QTest::newRow("1e6 overflows") << 1e6f << 0x7C00;
    QTest::newRow("inf") << inf << 0x7C00;
    QTest::newRow("-inf") << -inf << 0xFC00;
    QTest::newRow("smallest normal 2^-14") << 0x1p-14f << 0x0400;
    QTest::newRow("largest subnormal") << 0x3FFp-24f << 0x03FF;
    QTest::newRow("6e-8 smallest subnormal") << 6e-8f << 0x0001;
    QTest::newRow("2^-24") << 0x1p-24f << 0x0001;
    QTest::newRow("2^-25 ties to zero") << 0x1p-25f << 0x0000;
    QTest::newRow("just above 2^-25") << 0x1.000002p-25f << 0x0001;
    QTest::newRow("3*2^-25 ties to even 2") << 0x3p-25f << 0x0002;
    QTest::newRow("1e-10 underflows") << 1e-10f << 0x0000;
    QTest::newRow("-1e-10 keeps sign") << -1e-10f << 0x8000;
    QTest::newRow("1+2^-11 ties to even 1") << 1.00048828125f << 0x3C00;
    QTest::newRow("1+3*2^-11 ties to even up") << 1.00146484375f << 0x3C02;
    QTest::newRow("0.1") << 0.1f << 0x2E66;
    QTest::newRow("pi") << 3.14159265f << 0x4248;
    QTest::newRow("subnormal carry to normal") << 0x1.FFFp-15f << 0x0400;
  }

  void halfConversionTable() {
    QFETCH(float, value);
    QFETCH(int, expected);
    QCOMPARE(int{fp32_to_fp16(value)}, expected);
  }

  void halfNanStaysNan() {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const uint16_t h = fp32_to_fp16(nan);
    QCOMPARE(h & 0x7C00, 0x7C00);
    QVERIFY((h & 0x03FF) != 0);
    QVERIFY(std::isnan(fp16_to_fp32(h)));
    // A signalling NaN whose payload sits only in the low bits must not become inf.
    const uint16_t s = fp32_to_fp16(std::bit_cast<float>(0x7F800001u));
    QVERIFY((s & 0x03FF) != 0);
    QCOMPARE(fp32_to_fp16(-nan) & 0x8000, 0x8000);
  }

  void halfToFloatIsExactForEveryValue() {
    for (uint32_t h = 0; h < 0x10000; ++h) {
      const auto bits16 = static_cast<uint16_t>(h);
      const float f = fp16_to_fp32(bits16);
      const bool is_nan = (h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0;
      if (is_nan) {
        QVERIFY(std::isnan(f));
        continue;
      }
      if (fp32_to_fp16(f) != bits16) QFAIL(qPrintable(QString("round trip of 0x%1").arg(h, 4, 16)));
    }
    QCOMPARE(fp16_to_fp32(0x0001), 0x1p-24f);
    QCOMPARE(fp16_to_fp32(0x7BFF), 65504.0f);
    QCOMPARE(bits(fp16_to_fp32(0x8000)), 0x80000000u);
    QVERIFY(std::isinf(fp16_to_fp32(0xFC00)) && fp16_to_fp32(0xFC00) < 0);
  }

  void halfMatchesTheCompilersConversion() {
#if defined(__FLT16_MAX__)
    // GCC's _Float16 conversion is IEEE round-to-nearest-even; compare on
    // a spread of bit patterns (every exponent, many mantissas).
    for (uint64_t i = 0; i < (uint64_t{1} << 32); i += 4099) {
      const auto x = static_cast<uint32_t>(i);
      const float f = std::bit_cast<float>(x);
      if (std::isnan(f)) continue;
      const _Float16 ref = static_cast<_Float16>(f);
      const uint16_t want = std::bit_cast<uint16_t>(ref);
      if (fp32_to_fp16(f) != want) {
        QFAIL(qPrintable(QString("0x%1: got 0x%2, want 0x%3")
                             .arg(x, 8, 16)
                             .arg(fp32_to_fp16(f), 4, 16)
                             .arg(want, 4, 16)));
      }
    }
#else
    QSKIP("the compiler has no _Float16 to compare against");
#endif
  }

  void halfBulkConversion() {
    const std::vector<float> in{0.5f, -1.5f, 65520.0f, 6e-8f};
    std::vector<uint16_t> h(in.size());
    fp32_to_fp16(in.data(), h.data(), in.size());
    QCOMPARE(h[0], uint16_t{0x3800});
    QCOMPARE(h[1], uint16_t{0xBE00});
    QCOMPARE(h[2], uint16_t{0x7C00});
    QCOMPARE(h[3], uint16_t{0x0001});
    std::vector<float> back(in.size());
    fp16_to_fp32(h.data(), back.data(), h.size());
    QCOMPARE(back[0], 0.5f);
    QCOMPARE(back[1], -1.5f);
  }

  void philoxMatchesRandom123KnownAnswers() {
    using C = Philox4x32::Counter;
    QVERIFY((Philox4x32::block({0, 0, 0, 0}, {0, 0}) ==
             C{0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8}));
    QVERIFY((Philox4x32::block({~0u, ~0u, ~0u, ~0u}, {~0u, ~0u}) ==
             C{0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD}));
    QVERIFY((Philox4x32::block({0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344},
                               {0xA4093822, 0x299F31D0}) ==
             C{0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1}));
    // Evaluated at compile time too: the stream is a pure function.
    static_assert(Philox4x32::block({0, 0, 0, 0}, {0, 0})[0] == 0x6627E8D5u);
  }

  void counterRandomSeparatesStreamsAndSeeds() {
    const auto a = counter_random(1, RngStream::Augment, 5, 0);
    QVERIFY(a == counter_random(1, RngStream::Augment, 5, 0));
    QVERIFY(a != counter_random(2, RngStream::Augment, 5, 0));
    QVERIFY(a != counter_random(1, RngStream::Shuffle, 5, 0));
    QVERIFY(a != counter_random(1, RngStream::Augment, 6, 0));
    QVERIFY(a != counter_random(1, RngStream::Augment, 5, 1));
    QVERIFY(a != counter_random(1, RngStream::Augment, 5 + (uint64_t{1} << 32), 0));
    QCOMPARE(uniform_below(0, 7), 0u);
    QCOMPARE(uniform_below(~0u, 7), 6u);
  }

  void permutationIsABijection_data() {
    QTest::addColumn<qulonglong>("n");
    for (qulonglong n : {1ull, 2ull, 3ull, 5ull, 17ull, 64ull, 1000ull, 60000ull, 65537ull}) {
      QTest::newRow(qPrintable(QString::number(n))) << n;
    }
  }

  void permutationIsABijection() {
    QFETCH(qulonglong, n);
    const Permutation p(n, 42, 3);
    std::vector<char> seen(n, 0);
    uint64_t fixed = 0;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t j = p(i);
      QVERIFY(j < n);
      QVERIFY(!seen[j]);
      seen[j] = 1;
      fixed += (i == j);
    }
    if (n >= 1000) QVERIFY2(fixed < n / 100, "a shuffle should move almost every sample");
  }

  void permutationDependsOnSeedAndEpochOnly() {
    const uint64_t n = 1000;
    const Permutation a(n, 7, 0), a2(n, 7, 0), b(n, 7, 1), c(n, 8, 0);
    int same_b = 0, same_c = 0;
    for (uint64_t i = 0; i < n; ++i) {
      QCOMPARE(a(i), a2(i));
      same_b += a(i) == b(i);
      same_c += a(i) == c(i);
    }
    QVERIFY(same_b < 20);
    QVERIFY(same_c < 20);
    // Pinned: the order must not change between builds or machines, or saved
    // runs could no longer be reproduced.
    const Permutation pinned(10, 42, 0);
    std::vector<uint64_t> order;
    for (uint64_t i = 0; i < 10; ++i) order.push_back(pinned(i));
    QVERIFY((order == std::vector<uint64_t>{6, 0, 5, 9, 3, 8, 2, 1, 7, 4}));
  }
};

QTEST_APPLESS_MAIN(TestDataHost)
#include "test_data_host.moc"
