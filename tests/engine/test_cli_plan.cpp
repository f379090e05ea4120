// SPDX-License-Identifier: GPL-3.0-or-later
// renaissance-cli plan end to end: the JSON schema the issue fixes, the text
// tables, and clear failures on bad input.
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <map>

#include <set>

#include <nlohmann/json.hpp>

using nlohmann::json;

namespace {

struct Result {
  int code = -1;
  QByteArray out, err;
};

Result run_cli(const QStringList& args) {
  QProcess p;
  p.start(QStringLiteral(TR_CLI), args);
  if (!p.waitForFinished(120000)) return {};
  return {p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError()};
}

QString project(const char* name) {
  return QStringLiteral(TR_PROJECTS_DIR) + "/" + name + ".json";
}

}  // namespace

class TestCliPlan : public QObject {
  Q_OBJECT

 private slots:
  void layersPrintsTheLayerTable() {
    const Result r = run_cli({"layers"});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.startsWith("| type | ports in/out |"));
    QVERIFY(r.out.contains("| `Conv2d` | 1/1 | yes | `out_channels` (**required**"));
    const Result bad = run_cli({"layers", "extra"});
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains("layers takes no arguments"), bad.err.constData());
  }

  // Analyze network (plan --layers): per layer its output, parameters,
  // FLOPs and each variant's activation bytes, the same bytes the plan's
  // tensor table gives the layer's features, gradient slots, masks and saved
  // statistics, and warnings where they are due.
  void layersAnalyseTheNetwork() {
    Result r =
        run_cli({"plan", project("lenet-fashion"), "--layers", "--json", "--precision", "amp"});
    QVERIFY2(r.code == 0, r.err.constData());
    const json t = json::parse(r.out.toStdString());
    r = run_cli({"plan", project("lenet-fashion"), "--json", "--precision", "amp"});
    QVERIFY2(r.code == 0, r.err.constData());
    const json plan = json::parse(r.out.toStdString());
    const auto& layers = t.at("layers");
    QCOMPARE(layers.size(), size_t{14});
    QCOMPARE(t.at("variants").size(), plan.at("variants").size());
    int64_t params = 0;
    std::vector<uint64_t> sums(t.at("variants").size(), 0);
    for (const auto& l : layers) {
      params += l.at("parameters").get<int64_t>();
      const std::string id = l.at("id").get<std::string>();
      for (size_t v = 0; v < sums.size(); ++v) {
        uint64_t owned = 0;
        for (const auto& x : plan.at("variants")[v].at("tensors")) {
          const std::string region = x.at("region").get<std::string>();
          if (x.at("owner").get<std::string>() != id || (region[0] != 'F' && region[0] != 'S'))
            continue;
          if (x.contains("in_use") && !x.at("in_use").get<bool>()) continue;
          owned += x.at("slot_bytes").get<uint64_t>();
        }
        QCOMPARE(l.at("activation_bytes")[v].get<uint64_t>(), owned);
        sums[v] += owned;
      }
    }
    QCOMPARE(params, plan.at("parameters").get<int64_t>());
    QCOMPARE(t.at("totals").at("activation_bytes").get<std::vector<uint64_t>>(), sums);
    const auto row = [&](const char* id) {
      for (const auto& l : layers)
        if (l.at("id").get<std::string>() == id) return l;
      return json();
    };
    QCOMPARE(row("conv1").at("output").get<std::vector<int64_t>>(),
             (std::vector<int64_t>{128, 28, 28, 6}));
    QCOMPARE(row("conv1").at("forward_flops").get<int64_t>(), int64_t{30707712});
    // The CPU stores conv1's 6 FP16 channels as they are; fc1 holds most
    // parameters; relu1 inherits its 6 channels and fc3's 10 are the
    // classes: no warning.
    QVERIFY(row("conv1").at("warnings").empty());
    QCOMPARE(row("fc1").at("warnings")[0].get<std::string>(),
             std::string("holds 78% of the network's parameters"));
    QVERIFY(row("relu1").at("warnings").empty());
    QVERIFY(row("fc3").at("warnings").empty());
    // On CUDA they are padded to 8 (its kernels need it), and plan says so.
    r = run_cli({"plan", project("lenet-fashion"), "--layers", "--json", "--precision", "amp",
                 "--devices", "cuda:0"});
    QVERIFY2(r.code == 0, r.err.constData());
    const json cuda = json::parse(r.out.toStdString());
    QCOMPARE(cuda.at("layers")[1].at("id").get<std::string>(), std::string("conv1"));
    QVERIFY(cuda.at("layers")[1].at("warnings")[0].get<std::string>().starts_with(
        "its 6 channels are padded to 8 on the device in fp16"));

    // A 3x3 stride-2 window on 28 rows without padding never reads the last
    // row or column; the text table and the CSV say so too.
    QTemporaryDir dir;
    QFile lenet(project("lenet-fashion"));
    QVERIFY(lenet.open(QIODevice::ReadOnly));
    json p = json::parse(lenet.readAll().toStdString());
    for (auto& n : p.at("model").at("nodes"))
      if (n.at("id") == "conv1") n["params"] = {{"out_channels", 8}, {"kernel", 3}, {"stride", 2}};
    const QString strided = dir.filePath("strided.json");
    {
      QFile f(strided);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write(QByteArray::fromStdString(p.dump(2)));
    }
    r = run_cli({"plan", strided, "--layers"});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY2(r.out.contains("warning: its last 1 row and 1 column of the 28x28 input are never "
                            "read: the stride (2x2) steps past them"),
             r.out.constData());
    r = run_cli({"plan", strided, "--layers", "--csv"});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY(
        r.out.startsWith("id,type,settings,output,parameters,forward_flops,train_activation_"
                         "bytes"));
    QCOMPARE(r.out.count('\n'), 15);  // header and 14 layers
    QVERIFY(r.out.contains("its last 1 row and 1 column of the 28x28 input"));
    // --csv alone, or with --graphs, is refused with what to do.
    r = run_cli({"plan", strided, "--csv"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--csv goes with --layers"), r.err.constData());
  }

  void jsonSchema() {
    const Result r = run_cli({"plan", project("resnet8-fashion"), "--json"});
    QCOMPARE(r.code, 0);
    const json j = json::parse(r.out.toStdString());
    QVERIFY(j.at("total_bytes").get<uint64_t>() > 0);
    QCOMPARE(j.at("parameters").get<int64_t>(), int64_t{77754});
    const auto& variants = j.at("variants");
    QCOMPARE(variants.size(), size_t{3});
    QCOMPARE(variants[0].at("name").get<std::string>(), std::string("train"));
    QVERIFY(j.at("memory_packing").get<bool>());
    uint64_t largest = 0;
    for (const auto& v : variants) {
      largest = std::max(largest, v.at("total_bytes").get<uint64_t>());
      // The regions that keep their bytes for the run, end to end, then the pool.
      uint64_t cursor = 0;
      for (const auto& reg : v.at("regions")) {
        QVERIFY(reg.contains("name"));
        if (reg.at("packed").get<bool>()) continue;
        QCOMPARE(reg.at("offset").get<uint64_t>(), cursor);
        cursor += reg.at("bytes").get<uint64_t>();
      }
      const auto& pool = v.at("pool");
      QCOMPARE(pool.at("offset").get<uint64_t>(), cursor);
      QCOMPARE(cursor + pool.at("bytes").get<uint64_t>(), v.at("total_bytes").get<uint64_t>());
      QVERIFY(pool.at("bytes").get<uint64_t>() < pool.at("slot_bytes").get<uint64_t>());
      QVERIFY(pool.at("peak_live_slot_bytes").get<uint64_t>() <= pool.at("bytes").get<uint64_t>());
      // Tensors that share bytes are never live at the same time...
      const auto& ts = v.at("tensors");
      size_t sharing = 0;
      for (const auto& t : ts) {
        if (!t.contains("shares_with")) continue;
        for (const auto& other : t.at("shares_with")) {
          const auto& o = ts[other.get<size_t>()];
          ++sharing;
          QVERIFY(t.at("lifetime").is_array() && o.at("lifetime").is_array());
          const int a0 = t.at("lifetime")[0], a1 = t.at("lifetime")[1];
          const int b0 = o.at("lifetime")[0], b1 = o.at("lifetime")[1];
          // ... but at the one node where an output is written over its
          // dying input, in place, at the same offset.
          const bool in_place = (a1 == b0 || b1 == a0) && t.at("offset") == o.at("offset");
          QVERIFY2(a1 < b0 || b1 < a0 || in_place,
                   (t.at("name").get<std::string>() + " and " + o.at("name").get<std::string>())
                       .c_str());
        }
      }
      QVERIFY(sharing > 0);
      for (const auto& t : v.at("tensors")) {
        for (const char* key : {"id", "name", "region", "shape", "dtype", "offset", "slot_bytes"})
          QVERIFY2(t.contains(key), key);
        QCOMPARE(t.at("shape").size(), size_t{4});
      }
      // one blueprint: tensor i has the same offset in every variant, but for
      // the step-local ones, which each variant places by its own lifetimes
      for (size_t i = 0; i < v.at("tensors").size(); ++i)
        if (!v.at("tensors")[i].contains("shares_with"))
          QCOMPARE(v.at("tensors")[i].at("offset").get<uint64_t>(),
                   variants[0].at("tensors")[i].at("offset").get<uint64_t>());
    }
    QCOMPARE(j.at("bytes_per_device").get<uint64_t>(), largest);
    QVERIFY(j.at("unpacked_bytes_per_device").get<uint64_t>() > largest);
    QCOMPARE(variants[1].at("batch").get<int64_t>(), int64_t{96});  // 60000 % 128
    // The compiler's rewrites are named per layer.
    int fused_bn = 0, fused_add = 0, in_place = 0;
    for (const auto& l : j.at("layers")) {
      if (l.contains("fused_relu")) {
        const std::string type = l.at("type").get<std::string>();
        QVERIFY2(type == "BatchNorm2d" || type == "Add", type.c_str());
        ++(type == "Add" ? fused_add : fused_bn);
      }
      if (l.value("grad_in_place", false)) ++in_place;
    }
    QCOMPARE(fused_bn, 4);   // the stem's and each block's first BN
    QCOMPARE(fused_add, 3);  // each block's residual join
    QCOMPARE(in_place, 4);  // the three blocks' inner ReLUs and the global pool
  }

  // --memory-packing off: the plan before lifetimes, every variant the same
  // bytes, and the figure the packed plan names for it.
  void packingOff() {
    const Result packed = run_cli({"plan", project("resnet8-fashion"), "--json"});
    const Result off =
        run_cli({"plan", project("resnet8-fashion"), "--json", "--memory-packing", "off"});
    QCOMPARE(off.code, 0);
    const json p = json::parse(packed.out.toStdString());
    const json j = json::parse(off.out.toStdString());
    QVERIFY(!j.at("memory_packing").get<bool>());
    QCOMPARE(j.at("bytes_per_device").get<uint64_t>(),
             p.at("unpacked_bytes_per_device").get<uint64_t>());
    QCOMPARE(j.at("unpacked_bytes_per_device"), j.at("bytes_per_device"));
    for (const auto& v : j.at("variants")) {
      QCOMPARE(v.at("total_bytes"), j.at("bytes_per_device"));
      QVERIFY(v.at("pool").is_null());
      for (const auto& t : v.at("tensors")) QVERIFY(t.value("shares_with", json::array()).empty());
    }
    const Result text = run_cli({"plan", project("resnet8-fashion")});
    QVERIFY2(text.out.contains("step-local pool (F, T, S) at ") &&
                 text.out.contains("in the tensors' own slots, packed into") &&
                 text.out.contains("before packing,") && text.out.contains("live at once (at ") &&
                 text.out.contains("with --memory-packing off)"),
             text.out.constData());
    const Result bad = run_cli({"plan", project("resnet8-fashion"), "--memory-packing", "maybe"});
    QVERIFY(bad.code != 0);
    QVERIFY2(bad.err.contains("option '--memory-packing' takes on or off, got 'maybe'"),
             bad.err.constData());
  }

  // --sharding: the plan says what each rank keeps, and what each rank's
  // shards hold, per rank and bucket; the JSON has both, the ranks' shares
  // adding up to each bucket's weights; a sharding it does not know is
  // refused with the ones it does.
  void shardingSaysWhatEachRankHolds() {
    const Result text = run_cli({"plan", project("cnn-bn-fashion"), "--devices", "cpu:2",
                                 "--sharding", "optimizer+gradients"});
    QCOMPARE(text.code, 0);
    QVERIFY2(text.out.contains("sharding optimizer+gradients (ZeRO-2): each rank keeps ") &&
                 text.out.contains("step-local pool (F, T, S, G, H) at ") &&
                 text.out.contains("what each rank's shards hold (momentum.first_bucket"),
             text.out.constData());
    const Result r = run_cli({"plan", project("cnn-bn-fashion"), "--devices", "cpu:2", "--json",
                              "--sharding", "optimizer+gradients"});
    QCOMPARE(r.code, 0);
    const json j = json::parse(r.out.toStdString());
    const json& s = j.at("sharding");
    QCOMPARE(s.at("kind").get<std::string>(), std::string("optimizer+gradients"));
    QVERIFY(s.at("gradient_bytes_per_rank").get<uint64_t>() * 2 <=
            s.at("gradient_bytes_unsharded").get<uint64_t>() + 4096);
    QCOMPARE(s.at("gradient_bytes_in_pool"), s.at("gradient_bytes_unsharded"));
    std::map<std::string, int64_t> held;
    QCOMPARE(s.at("ranks").size(), size_t{2});
    for (const json& rank : s.at("ranks"))
      for (const json& b : rank.at("buckets"))
        for (const json& w : b.at("weights")) {
          QCOMPARE(w.at("first").get<int64_t>(), held[w.at("name").get<std::string>()]);
          held[w.at("name").get<std::string>()] += w.at("count").get<int64_t>();
        }
    int64_t weights = 0;
    for (const auto& v : j.at("variants"))
      if (v.at("name") == "train")
        for (const auto& t : v.at("tensors"))
          if (t.at("region").get<std::string>()[0] == 'W') {
            ++weights;
            int64_t elements = 1;
            for (const json& d : t.at("shape")) elements *= d.get<int64_t>();
            QCOMPARE(held[t.at("name").get<std::string>()], elements);
          }
    QCOMPARE(static_cast<int64_t>(held.size()), weights);
    const Result bad = run_cli(
        {"plan", project("cnn-bn-fashion"), "--devices", "cpu:2", "--sharding", "gradients"});
    QVERIFY(bad.code != 0);
    QVERIFY2(bad.err.contains("option '--sharding' takes none, optimizer or optimizer+gradients, "
                              "got 'gradients'"),
             bad.err.constData());
  }

  // The transformer's LayerNorms and GELUs are computed again in the backward
  // (the plan says so per layer) and the plan is smaller for it; --recompute
  // off keeps them, matmuls also computes the blocks' qkv and fc1 again, and
  // nothing else is taken.
  void recomputeOnAndOff() {
    const Result on = run_cli({"plan", project("vit-tiny-fashion"), "--json"});
    const Result off =
        run_cli({"plan", project("vit-tiny-fashion"), "--json", "--recompute", "off"});
    QCOMPARE(on.code, 0);
    QCOMPARE(off.code, 0);
    const json a = json::parse(on.out.toStdString());
    const json b = json::parse(off.out.toStdString());
    int recomputed = 0;
    for (const auto& l : a.at("layers"))
      if (l.value("recomputed", false)) ++recomputed;
    QCOMPARE(recomputed, 18);  // the blocks' 12 LayerNorms and 6 GELUs, not the last LayerNorm
    for (const auto& l : b.at("layers")) QVERIFY(!l.value("recomputed", false));
    QVERIFY(a.at("bytes_per_device").get<uint64_t>() <
            b.at("bytes_per_device").get<uint64_t>() * 4 / 5);
    const Result layers = run_cli({"plan", project("vit-tiny-fashion"), "--layers"});
    QVERIFY(layers.out.contains("output computed again in the backward"));
    const Result more =
        run_cli({"plan", project("vit-tiny-fashion"), "--json", "--recompute", "matmuls"});
    QCOMPARE(more.code, 0);
    const json c = json::parse(more.out.toStdString());
    int products = 0;
    for (const auto& l : c.at("layers"))
      if (l.value("recomputed", false) && l.at("type") == "TokenLinear") ++products;
    QCOMPARE(products, 12);  // each block's qkv and fc1
    QVERIFY(c.at("bytes_per_device").get<uint64_t>() < a.at("bytes_per_device").get<uint64_t>());
    const Result bad = run_cli({"plan", project("vit-tiny-fashion"), "--recompute", "maybe"});
    QVERIFY(bad.code != 0);
    QVERIFY2(bad.err.contains("option '--recompute' takes on, off or matmuls, got 'maybe'"),
             bad.err.constData());
    const Result clash = run_cli(
        {"plan", project("vit-tiny-fashion"), "--recompute", "matmuls", "--rewrites", "off"});
    QVERIFY(clash.code != 0);
    QVERIFY2(clash.err.contains("'--recompute matmuls' needs the rewrites"), clash.err.constData());
  }

  // --memory-budget: the planner recomputes what it takes to fit, says what
  // and at what cost; --max-batch finds a larger batch recomputing; a budget
  // training cannot meet is refused before anything runs; bad values name
  // the option.
  // --feature-layout blocked: the CPU's channel blocks where every op takes
  // them, said in the text and the JSON; the bytes do not change.
  void featureLayout() {
    const Result plain = run_cli({"plan", project("cnn-bn-fashion"), "--json"});
    QVERIFY2(plain.code == 0, plain.err.constData());
    const json p = json::parse(plain.out.toStdString());
    QCOMPARE(p.at("channel_block").get<int>(), 0);
    const Result blocked =
        run_cli({"plan", project("cnn-bn-fashion"), "--json", "--feature-layout", "blocked"});
    QVERIFY2(blocked.code == 0, blocked.err.constData());
    const json b = json::parse(blocked.out.toStdString());
    const int block = b.at("channel_block").get<int>();
    QVERIFY2(block == 8 || block == 16, qPrintable(QString::number(block)));
    QCOMPARE(b.at("bytes_per_device").get<uint64_t>(), p.at("bytes_per_device").get<uint64_t>());
    int tensors = 0;
    for (const json& t : b.at("variants").at(0).at("tensors"))
      if (t.contains("channel_block")) {
        QCOMPARE(t.at("channel_block").get<int>(), block);
        QVERIFY(t.at("shape").at(3).get<int64_t>() % block == 0);
        ++tensors;
      }
    QVERIFY(tensors > 0);
    const Result text = run_cli({"plan", project("cnn-bn-fashion"), "--feature-layout", "blocked"});
    QVERIFY2(text.out.contains("feature layout: ") && text.out.contains("in channel blocks of"),
             text.out.constData());
    const Result bad = run_cli({"plan", project("cnn-bn-fashion"), "--feature-layout", "nchw"});
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains("option '--feature-layout' takes blocked or nhwc, got 'nchw'"),
             bad.err.constData());

    // The project's own setting (the workbench's Feature layout), which the
    // option overrides either way; a value it does not know is refused by name.
    QTemporaryDir dir;
    QFile file(project("cnn-bn-fashion"));
    QVERIFY(file.open(QIODevice::ReadOnly));
    json j = json::parse(file.readAll().toStdString());
    auto write = [&](const QString& name, const json& value) {
      j["training"]["feature_layout"] = value;
      QFile f(dir.filePath(name));
      if (f.open(QIODevice::WriteOnly)) f.write(QByteArray::fromStdString(j.dump(2)));
      return dir.filePath(name);
    };
    const QString in_file = write("blocked.json", "blocked");
    auto block_of = [](const Result& r) {
      return r.code == 0 ? json::parse(r.out.toStdString()).at("channel_block").get<int>() : -1;
    };
    QCOMPARE(block_of(run_cli({"plan", in_file, "--json"})), block);
    QCOMPARE(block_of(run_cli({"plan", in_file, "--json", "--feature-layout", "nhwc"})), 0);
    const Result unknown = run_cli({"plan", write("nchw.json", "nchw"), "--json"});
    QVERIFY(unknown.code != 0);
    QVERIFY2(unknown.err.contains("training.feature_layout") && unknown.err.contains("nhwc") &&
                 unknown.err.contains("blocked"),
             unknown.err.constData());
  }

  void memoryBudget() {
    const Result plain = run_cli({"plan", project("cnn-bn-fashion"), "--json"});
    QVERIFY2(plain.code == 0, plain.err.constData());
    const uint64_t bytes = json::parse(plain.out.toStdString()).at("bytes_per_device");
    const QString budget = QString::number(bytes - 1);
    const Result fitted =
        run_cli({"plan", project("cnn-bn-fashion"), "--json", "--memory-budget", budget});
    QVERIFY2(fitted.code == 0, fitted.err.constData());
    const json f = json::parse(fitted.out.toStdString());
    QVERIFY(f.at("bytes_per_device").get<uint64_t>() < bytes);
    QVERIFY(f.at("recompute").at("fits_budget").get<bool>());
    QVERIFY(!f.at("recompute").at("chosen").empty());
    QCOMPARE(f.at("recompute").at("memory_budget").get<uint64_t>(), bytes - 1);
    const Result text = run_cli({"plan", project("cnn-bn-fashion"), "--memory-budget", budget});
    QVERIFY2(text.out.contains("memory budget") && text.out.contains(": fits; recomputes "),
             text.out.constData());
    // A budget below what recomputing everything reaches.
    const Result over = run_cli({"plan", project("cnn-bn-fashion"), "--memory-budget", "1MiB"});
    QVERIFY2(over.out.contains("does NOT fit") && over.out.contains("even recomputing all"),
             over.out.constData());
    const Result batch =
        run_cli({"plan", project("cnn-bn-fashion"), "--max-batch", "--memory", "200MiB"});
    QVERIFY2(batch.out.contains("largest batch that fits recomputing layer outputs"),
             batch.out.constData());
    const Result refused = run_cli({"train", project("cnn-bn-fashion"), "--memory-budget", "1MiB",
                                    "--no-store", "--epochs", "1"});
    QVERIFY(refused.code != 0);
    QVERIFY2(refused.err.contains("over the memory budget of 1.00 MiB"), refused.err.constData());
    const Result bad = run_cli({"plan", project("cnn-bn-fashion"), "--memory-budget", "lots"});
    QVERIFY(bad.code != 0);
    QVERIFY2(bad.err.contains("--memory-budget lots: expected a positive number of bytes"),
             bad.err.constData());
    const Result off = run_cli(
        {"plan", project("cnn-bn-fashion"), "--memory-budget", "1GiB", "--recompute", "off"});
    QVERIFY(off.code != 0);
    QVERIFY2(off.err.contains("'--memory-budget' recomputes features to fit"), off.err.constData());
  }

  void textTables() {
    const Result r = run_cli({"plan", project("lenet-fashion")});
    QCOMPARE(r.code, 0);
    const QString out = QString::fromUtf8(r.out);
    QVERIFY(out.contains("61706"));
    QVERIFY(out.contains("W_FIRST_CONV"));
    QVERIFY(out.contains("conv1.weight"));
    QVERIFY(out.contains("bytes per device"));
    QVERIFY(out.contains("variant val"));
    QVERIFY(out.contains("grad in place"));  // flatten, relu3 and relu4 before an FC layer
  }

  void overridesChangeThePlan() {
    const Result one = run_cli({"plan", project("lenet-fashion"), "--json"});
    const Result amp = run_cli(
        {"plan", project("lenet-fashion"), "--json", "--precision", "amp", "--devices", "cpu:2"});
    QCOMPARE(amp.code, 0);
    const json a = json::parse(amp.out.toStdString());
    QCOMPARE(a.at("world_size").get<int>(), 2);
    QCOMPARE(a.at("precision").get<std::string>(), std::string("amp"));
    bool has_comm = false;
    for (const auto& g : a.at("graphs")) has_comm |= g.at("id") == "DEEP_COMM";
    QVERIFY(has_comm);
    QVERIFY(a.at("total_bytes") != json::parse(one.out.toStdString()).at("total_bytes"));
  }

  // bf16: its cast graphs and bfloat16 regions; an unknown precision is
  // refused with the choices.
  void bf16PlanAndAnUnknownPrecision() {
    const Result r = run_cli({"plan", project("lenet-fashion"), "--json", "--precision", "bf16"});
    QVERIFY2(r.code == 0, r.err.constData());
    const json b = json::parse(r.out.toStdString());
    QCOMPARE(b.at("precision").get<std::string>(), std::string("bf16"));
    std::set<std::string> ids;
    for (const auto& g : b.at("graphs")) ids.insert(g.at("id").get<std::string>());
    QVERIFY(ids.count("CAST_MAIN_FP32_TO_BF16"));
    QVERIFY(ids.count("CAST_DEEP_GRAD_BF16_TO_FP32"));
    QVERIFY(!ids.count("CAST_MAIN_FP32_TO_FP16"));
    QVERIFY(r.out.contains("F_FEATURE_BF16"));
    const Result bad = run_cli({"plan", project("lenet-fashion"), "--precision", "fp8"});
    QCOMPARE(bad.code, 2);
    QVERIFY2(bad.err.contains("'--precision' takes fp32, amp or bf16, got 'fp8'"),
             bad.err.constData());
  }

  // The largest global batch that fits a budget: its plan fits, one more
  // sample per rank does not.
  void maxBatchFindsTheEdge() {
    const uint64_t budget = 2ull << 30;
    for (const char* devices : {"cpu:1", "cpu:2"}) {
      const Result r = run_cli({"plan", project("cnn-bn-fashion"), "--json", "--max-batch",
                                "--memory", "2GiB", "--devices", devices});
      QVERIFY2(r.code == 0, r.err.constData());
      const json m = json::parse(r.out.toStdString()).at("max_batch");
      const int64_t batch = m.at("global_batch").get<int64_t>();
      const int64_t ranks = devices[4] - '0';
      QVERIFY2(batch > 0 && batch % ranks == 0, m.dump().c_str());
      QVERIFY(m.at("bytes_per_device").get<uint64_t>() <= budget);
      auto bytes_at = [&](int64_t b) {
        const Result p = run_cli({"plan", project("cnn-bn-fashion"), "--json", "--batch",
                                  QString::number(b), "--devices", devices});
        return json::parse(p.out.toStdString()).at("bytes_per_device").get<uint64_t>();
      };
      QCOMPARE(bytes_at(batch), m.at("bytes_per_device").get<uint64_t>());
      QVERIFY(bytes_at(batch + ranks) > budget);
    }
    // Text, a budget nothing fits (the validation batch of 1000 in one pass
    // needs more), bad input.
    Result r = run_cli({"plan", project("lenet-fashion"), "--max-batch", "--memory", "30MB",
                        "--validation-micro-batch", "as-written"});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.out.contains("largest batch that fits (--memory 30MB per device): none; at one "
                            "sample per rank the plan needs"),
             r.out.constData());
    r = run_cli({"plan", project("lenet-fashion"), "--max-batch", "--memory", "lots"});
    QVERIFY(r.code != 0);
    QVERIFY2(r.err.contains("--memory lots: expected a positive number of bytes"),
             r.err.constData());
    r = run_cli({"plan", project("lenet-fashion"), "--memory", "1GiB"});
    QVERIFY(r.code != 0);
    QVERIFY2(r.err.contains("--memory goes with --max-batch"), r.err.constData());
  }

  void badInputFailsClearly() {
    Result r = run_cli({"plan", "/nonexistent/project.json"});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("/nonexistent/project.json"));

    r = run_cli({"plan", project("lenet-fashion"), "--devices", "cpu:3"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("global batch 128 does not divide by 3 ranks (cpu:3); --batch 126 or "
                            "129 does"),
             qPrintable(r.err));

    r = run_cli({"plan", project("lenet-fashion"), "--batch", "100", "--devices", "cpu:8"});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("does not divide"));

    r = run_cli({"plan", project("lenet-fashion"), "--bogus"});
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("--bogus"));

    r = run_cli({"frobnicate"});
    QCOMPARE(r.code, 2);

    QTemporaryDir dir;
    const QString path = dir.filePath("cycle.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"format": 1, "name": "cycle", "model": {"nodes": [
      {"id": "in", "type": "Input", "params": {"height": 8, "width": 8, "channels": 1}},
      {"id": "a", "type": "Conv2d", "params": {"out_channels": 4, "kernel": 3, "padding": 1}},
      {"id": "b", "type": "Add"},
      {"id": "loss", "type": "SoftmaxCrossEntropy"}],
      "edges": [{"from": "in", "to": "a"}, {"from": "a", "to": "b"},
                {"from": "b", "to": "b", "to_port": 1}, {"from": "b", "to": "loss"}]}})");
    f.close();
    r = run_cli({"plan", path});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("cycle"), r.err.constData());
    QVERIFY(r.err.contains("'b' (Add)"));
  }
};

QTEST_GUILESS_MAIN(TestCliPlan)
#include "test_cli_plan.moc"
