// SPDX-License-Identifier: GPL-3.0-or-later
// Pins the MemoryPlan rules of ENGINE.md §2: regions in enum order with no
// gaps, the G/R ordering and the two buckets, the W:A 2:1 relation, and
// identical offsets across variants.
#include <QtTest>
#include <set>

#include <renaissance/memory_plan.h>

using namespace tr;

namespace {

// Allocates a small model's tensors the way the compiler does, with `batch`
// deciding the feature shapes.
void fill(MemoryPlan& p, int64_t batch, bool amp) {
  const ParamSeries series[] = {ParamSeries::W, ParamSeries::G, ParamSeries::M, ParamSeries::A,
                                ParamSeries::H};
  const int n_series = amp ? 5 : 3;
  p.alloc_scalars(8, "scalars");
  p.alloc_result(false);
  p.alloc_result(true);
  p.alloc_input(InputBuffer::A, {batch, 28, 28, 1}, amp ? DType::FP16 : DType::FP32);
  p.alloc_input(InputBuffer::B, {batch, 28, 28, 1}, amp ? DType::FP16 : DType::FP32);
  p.alloc_label(InputBuffer::A, batch);
  p.alloc_label(InputBuffer::B, batch);
  struct P {
    ParamKind kind;
    Shape shape;
    const char* name;
  };
  const P params[] = {{ParamKind::FIRST_CONV, {8, 3, 3, 1}, "conv1.weight"},
                      {ParamKind::BN_WEIGHT, {1, 1, 1, 8}, "bn1.weight"},
                      {ParamKind::BN_BIAS, {1, 1, 1, 8}, "bn1.bias"},
                      {ParamKind::DEEP_CONV, {16, 3, 3, 8}, "conv2.weight"},
                      {ParamKind::DEEP_CONV, {1, 1, 1, 16}, "conv2.bias"},
                      {ParamKind::FC_WEIGHT, {10, 1, 1, 16}, "fc.weight"},
                      {ParamKind::FC_BIAS, {1, 1, 1, 10}, "fc.bias"}};
  for (const P& q : params)
    for (int s = 0; s < n_series; ++s)
      p.alloc_param(series[s], q.kind, q.shape, q.name, 1, DType::FP16);
  p.alloc_bn_stat(Region::B_NEXT_VAR, 8, "bn1.next_var", 2);
  p.alloc_bn_stat(Region::B_PREV_MEAN, 8, "bn1.running_mean", 2);
  p.alloc_bn_stat(Region::B_NEXT_MEAN, 8, "bn1.next_mean", 2);
  const DType feat = amp ? DType::FP16 : DType::FP32;
  p.alloc_feature({batch, 28, 28, 8}, feat, "conv1.out", 1);
  p.alloc_grad_slot({batch, 28, 28, 8}, feat, "conv1.grad", 1);
  p.alloc_mask({batch, 14, 14, 16}, "drop.mask", 3);
  p.alloc_feature({batch, 1, 1, 10}, feat, "fc.out", 4);
}

}  // namespace

class TestMemoryPlan : public QObject {
  Q_OBJECT

 private slots:
  void regionNamesAreUniqueAndRoundTrip() {
    for (int r = 0; r < kNumRegions; ++r) {
      const Region reg = static_cast<Region>(r);
      QVERIFY(region_from_name(region_name(reg)) == reg);
    }
    QVERIFY(!region_from_name("NOPE"));
  }

  void everyRegionHasTitlesForPeople() {
    std::set<std::string_view> titles;
    for (int r = 0; r < kNumRegions; ++r) {
      const Region reg = static_cast<Region>(r);
      const std::string_view title = region_title(reg);
      QVERIFY2(!title.empty() && title != "?", region_name(reg).data());
      QVERIFY2(titles.insert(title).second, title.data());  // no two alike
      QVERIFY2(!region_series_title(region_series(reg)).empty(), region_name(reg).data());
    }
    QCOMPARE(region_title(Region::W_FC_BIAS), std::string_view("Weights: FC bias"));
    QVERIFY(region_series_title('Z').empty());
  }

  void orderingConstraints() {
    // G kinds in the fixed order, then R_RESULT right after
    const Region g[] = {Region::G_BN_BIAS,   Region::G_BN_WEIGHT,  Region::G_FC_BIAS,
                        Region::G_FC_WEIGHT, Region::G_FIRST_CONV, Region::G_DEEP_CONV,
                        Region::R_RESULT};
    for (size_t i = 1; i < std::size(g); ++i)
      QCOMPARE(region_index(g[i]), region_index(g[i - 1]) + 1);
    QCOMPARE(region_index(Region::B_NEXT_VAR), region_index(Region::B_NEXT_MEAN) + 1);
    // every parameter series uses the same kind order
    for (ParamSeries s : {ParamSeries::W, ParamSeries::E, ParamSeries::A, ParamSeries::G,
                          ParamSeries::H, ParamSeries::M, ParamSeries::V})
      for (int k = 0; k < kParamKinds; ++k) {
        const Region r = param_region(s, static_cast<ParamKind>(k));
        QCOMPARE(region_index(r), region_index(param_region(s, ParamKind::BN_BIAS)) + k);
        QCOMPARE(region_name(r).substr(2),
                 region_name(param_region(ParamSeries::W, static_cast<ParamKind>(k))).substr(2));
      }
    // series order B, W, E, A, G, R, ..., I, F, S, T
    QVERIFY(region_index(Region::B_EQ_BIAS) < region_index(Region::W_BN_BIAS));
    QVERIFY(region_index(Region::W_DEEP_CONV) < region_index(Region::E_BN_BIAS));
    QVERIFY(region_index(Region::E_DEEP_CONV) < region_index(Region::A_BN_BIAS));
    QVERIFY(region_index(Region::A_DEEP_CONV) < region_index(Region::G_BN_BIAS));
    QVERIFY(region_index(Region::N_DEEP_CONV) < region_index(Region::I_A_DATA));
    QVERIFY(region_index(Region::I_ACTIVE_LABEL) < region_index(Region::F_FEATURE_FP32));
    QVERIFY(region_index(Region::F_GRAD_SLOT_FP16) < region_index(Region::S_SCALARS));
    QCOMPARE(region_index(Region::T_SCRATCH), kNumRegions - 1);
  }

  void finalizeHasNoGaps() {
    MemoryPlan p;
    fill(p, 32, true);
    p.finalize();
    uint64_t cursor = 0;
    for (int r = 0; r < kNumRegions; ++r) {
      const RegionInfo& info = p.region(static_cast<Region>(r));
      QCOMPARE(info.base_offset, cursor);
      uint64_t sum = 0;
      for (DTensorId id : info.tensors) {
        const DTensor& t = p.get_dtensor(id);
        QCOMPARE(t.offset, cursor + sum);
        QCOMPARE(t.offset % 256, uint64_t{0});
        QCOMPARE(t.region, static_cast<Region>(r));
        sum += t.slot_bytes;
      }
      QCOMPARE(info.total_bytes, sum);
      cursor += sum;
    }
    QCOMPARE(p.total_bytes(), cursor);
    uint64_t all = 0;
    for (const DTensor& t : p.dtensors()) all += t.slot_bytes;
    QCOMPARE(p.total_bytes(), all);
  }

  void idsAreDenseAndInAllocationOrder() {
    MemoryPlan p;
    fill(p, 8, false);
    p.finalize();
    for (size_t i = 0; i < p.dtensors().size(); ++i)
      QCOMPARE(p.dtensors()[i].id, static_cast<DTensorId>(i));
    // within a region, allocation order is address order
    const auto& deep = p.region(Region::W_DEEP_CONV).tensors;
    QCOMPARE(deep.size(), size_t{2});
    QCOMPARE(p.get_dtensor(deep[0]).name, std::string("conv2.weight"));
    QVERIFY(p.get_dtensor(deep[0]).offset < p.get_dtensor(deep[1]).offset);
  }

  void masterWeightsAreTwiceTheHalfWeights() {
    MemoryPlan p;
    fill(p, 16, true);
    p.finalize();
    const ByteRange w = p.region_range(Region::W_BN_BIAS, Region::W_DEEP_CONV);
    const ByteRange a = p.region_range(Region::A_BN_BIAS, Region::A_DEEP_CONV);
    QVERIFY(a.bytes > 0);
    QCOMPARE(w.bytes, 2 * a.bytes);
    const ByteRange g = p.region_range(Region::G_BN_BIAS, Region::G_DEEP_CONV);
    const ByteRange h = p.region_range(Region::H_BN_BIAS, Region::H_DEEP_CONV);
    QCOMPARE(g.bytes, 2 * h.bytes);
    for (int k = 0; k < kParamKinds; ++k) {
      const auto kind = static_cast<ParamKind>(k);
      QCOMPARE(p.region(param_region(ParamSeries::W, kind)).total_bytes,
               2 * p.region(param_region(ParamSeries::A, kind)).total_bytes);
    }
  }

  void bucketsCoverExactlyTheirRegions() {
    MemoryPlan p;
    fill(p, 16, false);
    p.finalize();
    const ByteRange deep = p.comm_bucket_deep();
    QCOMPARE(deep.offset, p.region(Region::G_DEEP_CONV).base_offset);
    QCOMPARE(deep.bytes,
             p.region(Region::G_DEEP_CONV).total_bytes + p.region(Region::R_RESULT).total_bytes);
    const ByteRange first = p.comm_bucket_first();
    QCOMPARE(first.offset, p.region(Region::G_BN_BIAS).base_offset);
    uint64_t sum = 0;
    for (Region r : {Region::G_BN_BIAS, Region::G_BN_WEIGHT, Region::G_FC_BIAS, Region::G_FC_WEIGHT,
                     Region::G_FIRST_CONV})
      sum += p.region(r).total_bytes;
    QCOMPARE(first.bytes, sum);
    // the two buckets are adjacent and together cover every gradient plus the result
    QCOMPARE(first.end(), deep.offset);
    QCOMPARE(deep.end(), p.region(Region::R_RESULT_ACCUMULATED).base_offset);
    // the result block is not in the first bucket, the accumulated one in neither
    QVERIFY(p.region(Region::R_RESULT).base_offset >= first.end());
  }

  void regionRangeIsInclusive() {
    MemoryPlan p;
    fill(p, 4, false);
    p.finalize();
    const ByteRange one = p.region_range(Region::B_NEXT_MEAN, Region::B_NEXT_MEAN);
    QCOMPARE(one.bytes, p.region(Region::B_NEXT_MEAN).total_bytes);
    const ByteRange both = p.region_range(Region::B_NEXT_MEAN, Region::B_NEXT_VAR);
    QCOMPARE(both.bytes,
             p.region(Region::B_NEXT_MEAN).total_bytes + p.region(Region::B_NEXT_VAR).total_bytes);
    QVERIFY_THROWS_EXCEPTION(std::logic_error,
                             p.region_range(Region::B_NEXT_VAR, Region::B_NEXT_MEAN));
  }

  void variantsShareOffsets() {
    std::vector<MemoryPlan> plans;
    plans.emplace_back("train");
    plans.emplace_back("last");
    plans.emplace_back("val");
    fill(plans[0], 128, true);
    fill(plans[1], 96, true);
    fill(plans[2], 1000, true);  // larger than train: it decides the feature slots
    std::vector<uint64_t> own;
    for (const DTensor& t : plans[1].dtensors()) own.push_back(t.slot_bytes);
    finalize_variants(plans);
    const auto& ref = plans[0].dtensors();
    for (const MemoryPlan& p : plans) {
      QVERIFY(p.finalized());
      QCOMPARE(p.total_bytes(), plans[0].total_bytes());
      for (size_t i = 0; i < ref.size(); ++i) {
        QCOMPARE(p.dtensors()[i].offset, ref[i].offset);
        QCOMPARE(p.dtensors()[i].slot_bytes, ref[i].slot_bytes);
        QVERIFY(p.dtensors()[i].slot_bytes >= DTensor::slot_bytes_for(p.dtensors()[i].shape,
                                                                      p.dtensors()[i].dtype,
                                                                      p.dtensors()[i].region));
      }
    }
    // shapes stay per variant
    const DTensorId feat = plans[0].region(Region::F_FEATURE_FP16).tensors.front();
    QCOMPARE(plans[0].get_dtensor(feat).shape.n, int64_t{128});
    QCOMPARE(plans[1].get_dtensor(feat).shape.n, int64_t{96});
    QCOMPARE(plans[2].get_dtensor(feat).shape.n, int64_t{1000});
    // the slot is the maximum: the validation batch's
    QCOMPARE(plans[1].get_dtensor(feat).slot_bytes,
             DTensor::slot_bytes_for({1000, 28, 28, 8}, DType::FP16, Region::F_FEATURE_FP16));
    QVERIFY(plans[1].get_dtensor(feat).slot_bytes > own[static_cast<size_t>(feat)]);
  }

  void mismatchedVariantsAreRejected() {
    std::vector<MemoryPlan> plans;
    plans.emplace_back("a");
    plans.emplace_back("b");
    fill(plans[0], 8, false);
    fill(plans[1], 8, false);
    plans[1].alloc_scratch({1, 1, 1, 4}, DType::FP32, "extra", -1);
    QVERIFY_THROWS_EXCEPTION(std::logic_error, finalize_variants(plans));
  }

  void misuseIsALogicError() {
    MemoryPlan p;
    QVERIFY_THROWS_EXCEPTION(std::logic_error,
                             p.alloc_feature({0, 1, 1, 1}, DType::FP32, "empty", -1));
    QVERIFY_THROWS_EXCEPTION(std::logic_error,
                             p.alloc_bn_stat(Region::W_BN_BIAS, 4, "not a stat", -1));
    p.alloc_scalars(2, "s");
    p.finalize();
    QVERIFY_THROWS_EXCEPTION(std::logic_error, p.alloc_scalars(2, "late"));
    QVERIFY_THROWS_EXCEPTION(std::out_of_range, p.get_dtensor(99));
  }
};

QTEST_APPLESS_MAIN(TestMemoryPlan)
#include "test_memory_plan.moc"
