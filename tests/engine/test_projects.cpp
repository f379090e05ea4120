// SPDX-License-Identifier: GPL-3.0-or-later
// The ready-made projects load, compile and have exactly the architectures
// (parameter counts) other frameworks are compared against; the layer
// table in docs/project-format.md is the engine's own.
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <renaissance/layer_spec.h>
#include <renaissance/project_io.h>
#include <renaissance/setting_spec.h>
#include "compile/compiler.h"

using namespace tr;

namespace {

Project load(const char* name) {
  return load_project(std::string(TR_PROJECTS_DIR) + "/" + name + ".json");
}

// What docs/project-format.md holds between "<!-- NAME: ... engine.projects
// checks it -->" and "<!-- end of NAME -->": a generated table.
std::string documented(const std::string& name) {
  std::ifstream f(std::string(TR_PROJECTS_DIR) + "/../docs/project-format.md");
  std::stringstream text;
  text << f.rdbuf();
  const std::string doc = text.str();
  const size_t start = doc.find("<!-- " + name + ": ");
  const std::string begin = "engine.projects checks it -->\n";
  const size_t a = start == std::string::npos ? start : doc.find(begin, start);
  const size_t b = doc.find("<!-- end of " + name + " -->");
  if (a == std::string::npos || b == std::string::npos || b < a)
    return "docs/project-format.md lacks the markers of the generated " + name + " table";
  return doc.substr(a + begin.size(), b - a - begin.size());
}

}  // namespace

class TestProjects : public QObject {
  Q_OBJECT

 private slots:
  // The document shows what `renaissance-cli layers` prints, so a layer
  // added to model/layer_spec.cpp without regenerating the docs fails here.
  void documentedLayerTableIsTheEngines() {
    QVERIFY2(documented("layers") == layer_table_markdown(),
             "docs/project-format.md's layer table is out of date: replace it with the output "
             "of `renaissance-cli layers`");
  }

  // The same for the settings: a setting added to model/setting_spec.cpp
  // without regenerating the docs fails here.
  void documentedSettingsTableIsTheEngines() {
    QVERIFY2(documented("settings") == settings_table_markdown(),
             "docs/project-format.md's settings table is out of date: replace it with the "
             "output of `renaissance-cli settings`");
  }

  // Every project file the tree holds (the samples, the templates, the test
  // projects and one per group of settings, each away from its defaults)
  // reads and writes to exactly the text it wrote when the table-driven
  // settings came in (tests/data/projects/written/, made by the writer
  // before: TR_UPDATE_WRITTEN=1 writes them anew after a deliberate change),
  // and that text reads back to the same project.
  void everyProjectFileWritesAsItDid() {
    const std::filesystem::path root(TR_PROJECTS_DIR "/..");
    const std::filesystem::path written(TR_TEST_DATA "/projects/written");
    const bool update = qEnvironmentVariableIsSet("TR_UPDATE_WRITTEN");
    int files = 0;
    for (const std::filesystem::path& folder :
         {root / "projects", root / "resources" / "templates",
          std::filesystem::path(TR_TEST_DATA "/projects"),
          std::filesystem::path(TR_TEST_DATA "/projects/settings")}) {
      for (const auto& entry : std::filesystem::directory_iterator(folder)) {
        if (entry.path().extension() != ".json") continue;
        ++files;
        const Project p = load_project(entry.path().string());
        const std::string text = project_to_json(p);
        const std::filesystem::path golden = written / entry.path().filename();
        if (update) {
          std::filesystem::create_directories(written);
          std::ofstream(golden, std::ios::binary) << text;
          continue;
        }
        std::ifstream f(golden, std::ios::binary);
        QVERIFY2(f, golden.c_str());
        std::stringstream before;
        before << f.rdbuf();
        QVERIFY2(text == before.str(),
                 qPrintable(QString::fromStdString(entry.path().string() +
                                                   ": written differently than before:\n" + text)));
        QCOMPARE(project_to_json(parse_project(text, golden.string())), text);
      }
    }
    QCOMPARE(files, 15);
  }

  void parameterCounts_data() {
    QTest::addColumn<QString>("name");
    QTest::addColumn<qlonglong>("params");
    QTest::newRow("lenet") << "lenet-fashion" << 61706LL;
    QTest::newRow("cnn-bn") << "cnn-bn-fashion" << 65834LL;
    QTest::newRow("resnet8") << "resnet8-fashion" << 77754LL;
    QTest::newRow("resnet20") << "resnet20" << 272474LL;
    QTest::newRow("resnet50") << "resnet50" << 25557032LL;
    QTest::newRow("vit-tiny") << "vit-tiny-fashion" << 205898LL;
    QTest::newRow("vit-b16") << "vit-b16" << 86566888LL;
  }

  void parameterCounts() {
    QFETCH(QString, name);
    QFETCH(qlonglong, params);
    const Project p = load(name.toUtf8().constData());
    QCOMPARE(p.name, name.toStdString());
    const CompiledProject cp = compile_project(p);
    QCOMPARE(static_cast<qlonglong>(cp.analysis.total_params), params);
    // the W series holds exactly the parameters, one FP32 slot each
    uint64_t w_elems = 0;
    const MemoryPlan& plan = cp.plans.front();
    for (const DTensor& t : plan.dtensors())
      if (region_series(t.region) == 'W') w_elems += static_cast<uint64_t>(t.shape.elements());
    QCOMPARE(static_cast<qlonglong>(w_elems), params);
  }

  void defaultProjectIsLenetOnFashionMnist() {
    const Project p = load("lenet-fashion");
    QCOMPARE(p.dataset.kind, DatasetKind::FashionMnist);
    QCOMPARE(p.dataset.mean.size(), size_t{1});
    QCOMPARE(p.dataset.mean[0], 0.286041);
    QCOMPARE(p.dataset.std[0], 0.353024);
    QCOMPARE(p.training.global_batch, int64_t{128});
    QCOMPARE(p.training.optimizer.kind, OptimizerKind::SGD);
    QCOMPARE(p.training.optimizer.momentum, 0.9);
    QCOMPARE(p.training.optimizer.weight_decay, 5e-4);
  }

  void resnetsHaveResidualAdds() {
    for (const char* name : {"resnet8-fashion", "resnet20", "resnet50"}) {
      const Project p = load(name);
      int adds = 0;
      for (const LayerNode& n : p.model.nodes) adds += n.type == LayerType::Add;
      QVERIFY2(adds >= 3, name);
    }
  }

  void resnet50Plan() {
    const CompiledProject cp = compile_project(load("resnet50"));
    QCOMPARE(cp.project.training.precision, Precision::AMP);
    // AMP: FP32 master weights are exactly twice the FP16 copy, which
    // leaves out batch norm's scale and shift (FP32 at every precision)
    const MemoryPlan& plan = cp.plans.front();
    QCOMPARE(plan.region_range(Region::W_FC_BIAS, Region::W_DEEP_CONV).bytes,
             2 * plan.region_range(Region::A_BN_BIAS, Region::A_DEEP_CONV).bytes);
    QCOMPARE(plan.region_range(Region::A_BN_BIAS, Region::A_BN_WEIGHT).bytes, uint64_t{0});
    // 25.6 M parameters in W alone take at least 102 MB
    QVERIFY(plan.region_range(Region::W_BN_BIAS, Region::W_DEEP_CONV).bytes >= 25557032ull * 4);
    for (const MemoryPlan& mp : cp.plans) QVERIFY(mp.total_bytes() <= cp.bytes_per_device());
    // The plan by lifetime fits a 12 GB card: AMP ResNet-50 at batch 256.
    QVERIFY2(cp.bytes_per_device() <= 12ull << 30, std::to_string(cp.bytes_per_device()).c_str());
  }
};

QTEST_APPLESS_MAIN(TestProjects)
#include "test_projects.moc"
