// SPDX-License-Identifier: GPL-3.0-or-later
// Pins the DTensor layout rules of ENGINE.md §1: alignment, padded C, both
// stride sets and the slot-byte formulas.
#include <QtTest>

#include <renaissance/dtensor.h>
#include "core/align.h"

using namespace tr;

class TestDTensor : public QObject {
  Q_OBJECT

 private slots:
  void alignmentRules() {
    QCOMPARE(DTensor::cuda_alignment(DType::FP16, Region::I_A_DATA), 4u);
    QCOMPARE(DTensor::cuda_alignment(DType::FP16, Region::I_B_DATA), 4u);
    QCOMPARE(DTensor::cuda_alignment(DType::FP16, Region::F_FEATURE_FP16), 8u);
    QCOMPARE(DTensor::cuda_alignment(DType::FP16, Region::F_GRAD_SLOT_FP16), 8u);
    QCOMPARE(DTensor::cuda_alignment(DType::INT8, Region::S_MASK), 8u);
    // everything else: 1
    QCOMPARE(DTensor::cuda_alignment(DType::FP32, Region::I_A_DATA), 1u);
    QCOMPARE(DTensor::cuda_alignment(DType::FP32, Region::F_FEATURE_FP32), 1u);
    QCOMPARE(DTensor::cuda_alignment(DType::FP16, Region::A_DEEP_CONV), 1u);
    QCOMPARE(DTensor::cuda_alignment(DType::FP16, Region::T_SCRATCH), 1u);
    QCOMPARE(DTensor::cuda_alignment(DType::INT8, Region::T_SCRATCH), 1u);
    QCOMPARE(DTensor::cuda_alignment(DType::INT32, Region::I_A_LABEL), 1u);
  }

  void paddedChannelsAndStrides() {
    DTensor t;
    t.shape = {2, 5, 7, 3};
    t.dtype = DType::FP16;
    t.region = Region::F_FEATURE_FP16;
    QCOMPARE(t.padded_c(), 8);
    QVERIFY(!t.is_compact());
    const std::array<int64_t, 4> dev{5 * 7 * 8, 7 * 8, 8, 1};
    const std::array<int64_t, 4> host{5 * 7 * 3, 7 * 3, 3, 1};
    QVERIFY(t.device_strides() == dev);
    QVERIFY(t.host_strides() == host);
    QCOMPARE(t.device_bytes(), uint64_t{2 * 5 * 7 * 8 * 2});

    t.region = Region::I_A_DATA;  // input buffers pad to 4
    QCOMPARE(t.padded_c(), 4);
    t.shape.c = 16;
    QCOMPARE(t.padded_c(), 16);
    QVERIFY(t.is_compact());

    DTensor f;
    f.shape = {2, 5, 7, 3};
    f.dtype = DType::FP32;
    f.region = Region::F_FEATURE_FP32;
    QCOMPARE(f.padded_c(), 3);
    QVERIFY(f.is_compact());
    QVERIFY(f.device_strides() == f.host_strides());

    // A device whose kernels take any C (the CPU's) stores it compact.
    DTensor u = t;
    u.shape = {2, 5, 7, 3};
    u.region = Region::F_FEATURE_FP16;
    u.pad_channels = false;
    QCOMPARE(u.alignment(), 1u);
    QCOMPARE(u.padded_c(), 3);
    QVERIFY(u.is_compact());
    QCOMPARE(u.device_bytes(), uint64_t{2 * 5 * 7 * 3 * 2});
    QCOMPARE(DTensor::slot_bytes_for(u.shape, DType::BF16, Region::F_FEATURE_BF16, false),
             align256(2 * 5 * 7 * 3 * 2 + 16));
    QCOMPARE(DTensor::slot_bytes_for(u.shape, DType::INT8, Region::S_MASK, false),
             align256(2 * 5 * 7 * 3 + 16));
  }

  void slotFormulas() {
    const Shape s{3, 4, 5, 6};  // 360 elements
    QCOMPARE(DTensor::slot_bytes_for(s, DType::FP16, Region::A_DEEP_CONV), align256(360 * 2 + 16));
    QCOMPARE(DTensor::slot_bytes_for(s, DType::FP32, Region::W_DEEP_CONV),
             2 * align256(360 * 2 + 16));
    QCOMPARE(DTensor::slot_bytes_for(s, DType::INT8, Region::T_SCRATCH), align256(360 + 16));
    // padded C enters the element count: 3*4*5*8 = 480
    QCOMPARE(DTensor::slot_bytes_for(s, DType::FP16, Region::F_FEATURE_FP16),
             align256(480 * 2 + 16));
    QCOMPARE(DTensor::slot_bytes_for(s, DType::INT8, Region::S_MASK), align256(480 + 16));
    // exact numbers, so a formula change cannot hide behind the same helper
    QCOMPARE(DTensor::slot_bytes_for({1, 1, 1, 1}, DType::FP16, Region::A_BN_BIAS), uint64_t{256});
    QCOMPARE(DTensor::slot_bytes_for({1, 1, 1, 1}, DType::FP32, Region::W_BN_BIAS), uint64_t{512});
    QCOMPARE(DTensor::slot_bytes_for({1, 1, 1, 120}, DType::FP16, Region::A_FC_WEIGHT),
             uint64_t{256});  // 240 + 16 = 256 exactly
    QCOMPARE(DTensor::slot_bytes_for({1, 1, 1, 121}, DType::FP16, Region::A_FC_WEIGHT),
             uint64_t{512});
  }

  void slotsAreAlignedAndHoldTheData() {
    for (int64_t c = 1; c < 70; c += 3)
      for (DType t : {DType::FP16, DType::FP32, DType::INT8})
        for (Region r : {Region::F_FEATURE_FP16, Region::F_FEATURE_FP32, Region::S_MASK,
                         Region::T_SCRATCH, Region::I_A_DATA}) {
          DTensor d;
          d.shape = {2, 3, 3, c};
          d.dtype = t;
          d.region = r;
          const uint64_t slot = DTensor::slot_bytes_for(d.shape, t, r);
          QCOMPARE(slot % 256, uint64_t{0});
          QVERIFY(slot >= d.device_bytes() + 16);
        }
  }

  void fp32SlotIsTwiceFp16Slot() {
    for (int64_t c = 1; c < 300; c += 7) {
      const Shape s{1, 3, 3, c};
      QCOMPARE(DTensor::slot_bytes_for(s, DType::FP32, Region::W_DEEP_CONV),
               2 * DTensor::slot_bytes_for(s, DType::FP16, Region::A_DEEP_CONV));
    }
  }
};

QTEST_APPLESS_MAIN(TestDTensor)
#include "test_dtensor.moc"
