// SPDX-License-Identifier: GPL-3.0-or-later
// The designer, driven as a user drives it: layers dropped from the palette
// (real drag-and-drop events), ports connected and nodes moved by mouse
// drags on the canvas, properties typed into the panel; every edit undone
// and redone; live shapes, parameter counts and problems from the engine.
#include <QApplication>
#include <QClipboard>
#include <QLabel>
#include <QLineEdit>
#include <QMimeData>
#include <QSpinBox>
#include <QtTest>
#include <cmath>
#include <memory>

#include <renaissance/project_io.h>
#include "canvas_driver.h"
#include "designer/auto_layout.h"
#include "designer/designer_scene.h"
#include "designer/designer_view.h"
#include "designer/edge_item.h"
#include "designer/model_editor.h"
#include "designer/node_item.h"
#include "designer/palette_widget.h"
#include "designer/port_item.h"
#include "designer/properties_panel.h"
#include "project_document.h"

using namespace tr;
using namespace tr::gui;

namespace {

Project empty_project() {
  return parse_project(R"({"format": 1, "name": "t", "model": {"nodes": [], "edges": []}})", "t");
}

Project load(const char* name) {
  return load_project(std::string(TR_PROJECTS_DIR) + "/" + name + ".json");
}

struct Designer {
  ProjectDocument doc;
  ModelEditor editor{&doc};
  DesignerView view{&doc, &editor};
  PropertiesPanel properties{&doc, &editor};
  PaletteWidget palette;
  QStringList refusals;

  explicit Designer(Project p = empty_project()) {
    doc.reset(std::move(p), QString());
    QObject::connect(view.designerScene(), &DesignerScene::currentNodeChanged, &properties,
                     &PropertiesPanel::showNode);
    QObject::connect(&editor, &ModelEditor::refused, [this](const QString& s) { refusals << s; });
    QObject::connect(&view, &DesignerView::refused, [this](const QString& s) { refusals << s; });
    view.resize(1100, 900);
    view.show();
    properties.show();
    view.resetZoom();
    view.centerOn(400, 300);
  }
  CanvasDriver canvas{&view, &palette, &doc};
  DesignerScene* scene() { return view.designerScene(); }
  QWidget* vp() { return view.viewport(); }
  QPoint at(QPointF scenePos) { return canvas.at(scenePos); }
  NodeItem* node(const char* id) { return canvas.node(id); }
  int index(const char* id) { return doc.nodeIndex(id); }
  int drop(LayerType t, QPointF scenePos) { return canvas.drop(t, scenePos); }
  void mouseDrag(QPoint from, QPoint to, int steps = 4) { canvas.mouseDrag(from, to, steps); }
  void connectByMouse(const char* from, const char* to, int port = 0) {
    canvas.connectByMouse(from, to, port);
  }

  QString graphJson() {
    Project p = doc.project();
    p.source_path.clear();
    return QString::fromStdString(project_to_json(p));
  }
};

}  // namespace

class TestDesigner : public QObject {
  Q_OBJECT

 private slots:
  void paletteDropCreatesSelectedNode() {
    Designer d;
    const int i = d.drop(LayerType::Conv2d, QPointF(300, 200));
    QCOMPARE(i, 0);
    const LayerNode& n = d.doc.project().model.nodes[0];
    QCOMPARE(n.type, LayerType::Conv2d);
    QCOMPARE(n.id, std::string("conv1"));
    QVERIFY(n.has_position);
    // The node is centred where it was dropped (one pixel of rounding at most).
    QVERIFY(std::abs(n.x + NodeItem::kWidth / 2 - 300) <= 1.0);
    QVERIFY(std::abs(n.y + NodeItem::kHeight / 2 - 200) <= 1.0);
    QCOMPARE(d.scene()->nodeCount(), 1);
    QCOMPARE(d.scene()->currentNode(), 0);
    QCOMPARE(d.properties.node(), 0);
    // A fresh Conv2d has usable parameters and a dangling input, marked on the node.
    QCOMPARE(n.params.out_channels, int64_t{16});
    QVERIFY(d.node("conv1")->hasProblems());
    QVERIFY(d.doc.undoStack()->canUndo());
    d.doc.undoStack()->undo();
    QCOMPARE(d.scene()->nodeCount(), 0);
    QVERIFY(d.doc.project().model.nodes.empty());
  }

  void buildNetworkByDragsUndoRedo() {
    Designer d;
    const QString empty = d.graphJson();
    double y = 40;
    for (LayerType t : {LayerType::Input, LayerType::Conv2d, LayerType::ReLU, LayerType::Flatten,
                        LayerType::Linear, LayerType::SoftmaxCrossEntropy}) {
      QVERIFY(d.drop(t, QPointF(300, y)) >= 0);
      y += 110;
    }
    QCOMPARE(d.scene()->nodeCount(), 6);
    d.connectByMouse("input1", "conv1");
    d.connectByMouse("conv1", "relu1");
    d.connectByMouse("relu1", "flatten1");
    // Dragged the other way, from the input port to the output port.
    QTest::mousePress(d.vp(), Qt::LeftButton, Qt::NoModifier,
                      d.at(d.node("fc1")->inputPort(0)->scenePos()));
    QTest::mouseMove(d.vp(), d.at(d.node("flatten1")->outputPort(0)->scenePos()));
    QTest::mouseRelease(d.vp(), Qt::LeftButton, Qt::NoModifier,
                        d.at(d.node("flatten1")->outputPort(0)->scenePos()));
    d.connectByMouse("fc1", "loss1");
    QCOMPARE(d.doc.project().model.edges.size(), size_t{5});
    QCOMPARE(d.scene()->edgeCount(), 5);

    // The engine's shape inference, live: shapes on the edges, parameters on the nodes.
    const ModelAnalysis& a = d.doc.analysis();
    QVERIFY2(a.ok(), a.problems.empty() ? "" : a.problems.front().str().c_str());
    QCOMPARE(a.nodes[static_cast<size_t>(d.index("conv1"))].params, int64_t{160});
    QCOMPARE(a.nodes[static_cast<size_t>(d.index("fc1"))].params, int64_t{125450});
    QCOMPARE(a.total_params, int64_t{125610});
    QCOMPARE(d.scene()->edgeItem(1)->shapeText(), QStringLiteral("[128,28,28,16]"));
    QCOMPARE(d.scene()->edgeItem(3)->shapeText(), QStringLiteral("[128,1,1,12544]"));
    for (int i = 0; i < 6; ++i) QVERIFY(!d.scene()->nodeItem(i)->hasProblems());

    // Undo every step back to the empty canvas, then redo all of it.
    const QString built = d.graphJson();
    QCOMPARE(d.doc.undoStack()->count(), 11);  // 6 drops + 5 connections
    while (d.doc.undoStack()->canUndo()) d.doc.undoStack()->undo();
    QCOMPARE(d.graphJson(), empty);
    QCOMPARE(d.scene()->nodeCount(), 0);
    while (d.doc.undoStack()->canRedo()) d.doc.undoStack()->redo();
    QCOMPARE(d.graphJson(), built);
    QCOMPARE(d.scene()->edgeCount(), 5);
    QVERIFY(d.doc.analysis().ok());
  }

  void dragMovesNodesInOneUndoStep() {
    Designer d(load("lenet-fashion"));
    NodeItem* conv = d.node("conv2");
    const QPointF start = conv->pos();
    const int steps = d.doc.undoStack()->count();
    const QPoint grab = d.at(start + QPointF(40, 20));  // on the title, away from the ports
    d.mouseDrag(grab, grab + QPoint(120, 30), 6);
    QCOMPARE(conv->pos(), start + QPointF(120, 30));
    const LayerNode& n = d.doc.project().model.nodes[static_cast<size_t>(d.index("conv2"))];
    QCOMPARE(QPointF(n.x, n.y), start + QPointF(120, 30));
    QCOMPARE(d.doc.undoStack()->count(), steps + 1);  // six mouse moves, merged
    // The edges follow the node.
    EdgeItem* into = d.scene()->edgeItem(3);  // pool1 -> conv2
    QCOMPARE(into->to(), d.node("conv2"));
    QCOMPARE(into->path().pointAtPercent(1.0), d.node("conv2")->inputPort(0)->scenePos());

    // A second drag is a second step.
    const QPoint grab2 = d.at(conv->pos() + QPointF(40, 20));
    d.mouseDrag(grab2, grab2 + QPoint(0, 50));
    QCOMPARE(d.doc.undoStack()->count(), steps + 2);
    d.doc.undoStack()->undo();
    QCOMPARE(conv->pos(), start + QPointF(120, 30));
    d.doc.undoStack()->undo();
    QCOMPARE(d.node("conv2")->pos(), start);
    d.doc.undoStack()->redo();
    QCOMPARE(d.node("conv2")->pos(), start + QPointF(120, 30));
  }

  void connectionsAreCheckedAndReplaceInputs() {
    Designer d(load("lenet-fashion"));
    const size_t edges = d.doc.project().model.edges.size();
    // Output to output: refused with a reason, nothing changes.
    d.mouseDrag(d.at(d.node("conv1")->outputPort(0)->scenePos()),
                d.at(d.node("conv2")->outputPort(0)->scenePos()));
    QCOMPARE(d.doc.project().model.edges.size(), edges);
    QVERIFY(!d.refusals.isEmpty());
    QVERIFY(d.refusals.last().contains("output port to an input port"));
    // Into itself: refused.
    d.mouseDrag(d.at(d.node("relu1")->outputPort(0)->scenePos()),
                d.at(d.node("relu1")->inputPort(0)->scenePos()));
    QVERIFY(d.refusals.last().contains("cannot feed itself"));
    // A second edge into a connected input port replaces the first (one edge per port).
    d.connectByMouse("pool1", "fc1");
    QCOMPARE(d.doc.project().model.edges.size(), edges);
    const ModelGraph& g = d.doc.project().model;
    bool found = false;
    for (const Edge& e : g.edges)
      if (e.to == d.index("fc1")) {
        QCOMPARE(e.from, d.index("pool1"));
        found = true;
      }
    QVERIFY(found);
    // flatten now feeds nothing: the engine reports it and the node shows it.
    QVERIFY(d.node("flatten")->hasProblems());
    d.doc.undoStack()->undo();
    QVERIFY(!d.node("flatten")->hasProblems());
    QVERIFY(d.doc.analysis().ok());
  }

  void deleteCopyPasteAreUndoable() {
    Designer d(load("lenet-fashion"));
    const QString original = d.graphJson();
    // Delete a node in the middle: its edges go too, both ends become problems.
    d.scene()->selectNodes({d.index("relu2")});
    d.view.deleteSelection();
    QCOMPARE(d.doc.project().model.nodes.size(), size_t{13});
    QCOMPARE(d.doc.project().model.edges.size(), size_t{11});
    QVERIFY(d.node("pool2")->hasProblems());
    d.doc.undoStack()->undo();
    QCOMPARE(d.graphJson(), original);

    // Delete a selected edge only.
    d.scene()->clearSelection();
    d.scene()->edgeItem(0)->setSelected(true);
    d.view.deleteSelection();
    QCOMPARE(d.doc.project().model.edges.size(), size_t{12});
    QCOMPARE(d.doc.project().model.nodes.size(), size_t{14});
    d.doc.undoStack()->undo();

    // Copy conv2 and relu2 (connected), paste twice: new ids, the inner edge copied.
    d.scene()->selectNodes({d.index("conv2"), d.index("relu2")});
    d.view.copySelection();
    QVERIFY(QApplication::clipboard()->mimeData()->hasFormat(DesignerView::kFragmentMimeType));
    d.view.paste();
    QCOMPARE(d.doc.project().model.nodes.size(), size_t{16});
    QCOMPARE(d.doc.project().model.edges.size(), size_t{14});
    const int conv = d.index("conv3"), relu = d.index("relu5");
    QVERIFY(conv >= 0 && relu >= 0);
    const LayerNode& copy = d.doc.project().model.nodes[static_cast<size_t>(conv)];
    const LayerNode& orig = d.doc.project().model.nodes[static_cast<size_t>(d.index("conv2"))];
    QCOMPARE(copy.params.out_channels, orig.params.out_channels);
    QCOMPARE(copy.x, orig.x + 30);
    const Edge& inner = d.doc.project().model.edges.back();
    QCOMPARE(inner.from, conv);
    QCOMPARE(inner.to, relu);
    QCOMPARE(d.scene()->selectedNodes().size(), size_t{2});
    d.view.paste();
    QCOMPARE(d.doc.project().model.nodes.size(), size_t{18});
    d.doc.undoStack()->undo();
    d.doc.undoStack()->undo();
    QCOMPARE(d.graphJson(), original);

    // Cut removes and fills the clipboard; paste brings the layer back (its id is free again).
    d.scene()->selectNodes({d.index("fc3")});
    d.view.cutSelection();
    QCOMPARE(d.index("fc3"), -1);
    d.view.paste();
    QVERIFY(d.index("fc3") >= 0);

    // Nothing useful on the clipboard: a message, no change.
    QApplication::clipboard()->setText(QStringLiteral("not a project"));
    const size_t nodes = d.doc.project().model.nodes.size();
    d.view.paste();
    QCOMPARE(d.doc.project().model.nodes.size(), nodes);
    QVERIFY(d.refusals.last().contains("clipboard"));
  }

  void propertiesEditsAreUndoableAndChecked() {
    Designer d(load("lenet-fashion"));
    d.scene()->selectNodes({d.index("conv2")});
    QCOMPARE(d.properties.node(), d.index("conv2"));
    auto* channels = qobject_cast<QSpinBox*>(d.properties.fieldEditor("params.out_channels"));
    QVERIFY(channels);
    QCOMPARE(channels->value(), 16);
    const int64_t before = d.doc.analysis().total_params;
    // Typed, then confirmed with Enter (one change per value, not per digit).
    channels->setFocus();
    channels->selectAll();
    QTest::keyClicks(channels, "32");
    QTest::keyClick(channels, Qt::Key_Return);
    QCOMPARE(d.doc.project().model.nodes[static_cast<size_t>(d.index("conv2"))].params.out_channels,
             int64_t{32});
    // conv2: 5*5*6*32+32 = 4832 (was 2416); fc1 reads 5*5*32 = 800 inputs (was 400).
    QCOMPARE(d.doc.analysis().total_params, before + 2416 + 400 * 120);
    // Two arrow steps on the same field merge into one undo step.
    const int steps = d.doc.undoStack()->count();
    QTest::keyClick(channels, Qt::Key_Up);
    QTest::keyClick(channels, Qt::Key_Up);
    QCOMPARE(channels->value(), 34);
    QCOMPARE(d.doc.undoStack()->count(), steps);
    d.doc.undoStack()->undo();
    QCOMPARE(channels->value(), 16);
    QCOMPARE(d.doc.analysis().total_params, before);

    // A kernel larger than its input: the panel shows the input it has and
    // says the layer's own settings are wrong, not that the layers before it
    // are unconnected (they are fine).
    auto* kernel = qobject_cast<QSpinBox*>(d.properties.fieldEditor("params.kernel_h"));
    QVERIFY(kernel);
    kernel->setValue(40);
    QVERIFY2(!d.properties.infoText().contains(QStringLiteral("Shapes unknown")),
             qPrintable(d.properties.infoText()));
    QVERIFY2(d.properties.infoText().contains(QStringLiteral("Input: [")) &&
                 d.properties.infoText().contains(QStringLiteral("settings do not fit its input")),
             qPrintable(d.properties.infoText()));
    d.doc.undoStack()->undo();
    QVERIFY2(d.properties.infoText().startsWith(QStringLiteral("Input: [")),
             qPrintable(d.properties.infoText()));
    // A layer after it, whose input is unknown while conv2 is wrong, still says so.
    kernel->setValue(40);
    d.scene()->selectNodes({d.index("relu2")});
    QVERIFY2(d.properties.infoText().contains(QStringLiteral("Shapes unknown")),
             qPrintable(d.properties.infoText()));
    d.doc.undoStack()->undo();
    d.scene()->selectNodes({d.index("conv2")});

    // Rename: a taken id is refused with a message and nothing changes.
    auto* id = qobject_cast<QLineEdit*>(d.properties.fieldEditor("id"));
    QVERIFY(id);
    id->setText(QStringLiteral("conv1"));
    emit id->editingFinished();
    QCOMPARE(d.index("conv2") >= 0, true);
    QVERIFY(d.refusals.last().contains("already called 'conv1'"));
    id->setText(QStringLiteral("bad id!"));
    emit id->editingFinished();
    QVERIFY(d.refusals.last().contains("not a valid layer id"));
    id->setText(QStringLiteral("features2"));
    emit id->editingFinished();
    QCOMPARE(d.index("conv2"), -1);
    QVERIFY(d.index("features2") >= 0);
    QVERIFY(d.doc.analysis().ok());  // edges follow the node, not its name
    QVERIFY(d.node("features2"));
    d.doc.undoStack()->undo();
    QVERIFY(d.node("conv2"));
  }

  void residualAddAndShapeProblems() {
    Designer d;
    ModelEditor& e = d.editor;
    const int in = e.addLayer(LayerType::Input, {0, 0});
    const int c1 = e.addLayer(LayerType::Conv2d, {0, 90});
    const int r1 = e.addLayer(LayerType::ReLU, {0, 180});
    const int c2 = e.addLayer(LayerType::Conv2d, {0, 270});
    const int add = e.addLayer(LayerType::Add, {0, 360});
    const int gap = e.addLayer(LayerType::GlobalAvgPool, {0, 450});
    const int fc = e.addLayer(LayerType::Linear, {0, 540});
    const int loss = e.addLayer(LayerType::SoftmaxCrossEntropy, {0, 630});
    QVERIFY(e.connectPorts(in, 0, c1, 0));
    QVERIFY(e.connectPorts(c1, 0, r1, 0));
    QVERIFY(e.connectPorts(r1, 0, c2, 0));
    QVERIFY(e.connectPorts(c2, 0, add, 0));
    QVERIFY(e.connectPorts(gap, 0, fc, 0));
    QVERIFY(e.connectPorts(fc, 0, loss, 0));
    QVERIFY(e.connectPorts(add, 0, gap, 0));
    // The skip connection, dragged by mouse into the Add's second port.
    d.connectByMouse("relu1", "add1", 1);
    QVERIFY2(d.doc.analysis().ok(), d.doc.analysis().problems.empty()
                                        ? ""
                                        : d.doc.analysis().problems.front().str().c_str());
    QCOMPARE(d.doc.project().model.edges.size(), size_t{8});

    // Different widths on the two branches: the Add reports it.
    LayerNode wider = d.doc.project().model.nodes[static_cast<size_t>(c2)];
    wider.params.out_channels = 32;
    QVERIFY(e.editNode(c2, wider, QStringLiteral("params.out_channels")));
    QVERIFY(d.node("add1")->hasProblems());
    const auto& problems = d.doc.problemsOf(add);
    QCOMPARE(problems.size(), size_t{1});
    QVERIFY(d.doc.analysis().problems[static_cast<size_t>(problems[0])].message.find(
                "input shapes differ") != std::string::npos);
    d.doc.undoStack()->undo();
    QVERIFY(d.doc.analysis().ok());

    // The ResNet-8 project keeps its two-input Add nodes in the designer.
    Designer r(load("resnet8-fashion"));
    QVERIFY(r.doc.analysis().ok());
    NodeItem* a = r.node("s2b1_add");
    QVERIFY(a && a->inputPort(1));
    int into = 0;
    for (const Edge& edge : r.doc.project().model.edges)
      if (edge.to == r.index("s2b1_add")) ++into;
    QCOMPARE(into, 2);
  }

  // Every node of the shipped projects reads whole: a type name as long as
  // MultiHeadSelfAttention moves to the summary's line rather than cut the id
  // short, and one dropped from the palette reads whole too.
  void everyShippedNodeReadsWhole() {
    for (const char* name : {"vit-tiny-fashion", "resnet8-fashion", "cnn-bn-fashion"}) {
      Designer d(load(name));
      int nodes = 0;
      for (const LayerNode& n : d.doc.project().model.nodes) {
        NodeItem* item = d.node(n.id.c_str());
        QVERIFY2(item, n.id.c_str());
        const QStringList cut = item->cutTexts(d.view.font());
        QVERIFY2(cut.isEmpty(), qPrintable(QString::fromStdString(n.id) + ": " + cut.join(", ")));
        ++nodes;
      }
      QVERIFY(nodes > 10);
    }
    Designer d;
    const int mhsa = d.drop(LayerType::MultiHeadSelfAttention, {300, 200});
    QVERIFY(mhsa >= 0);
    const std::string id = d.doc.project().model.nodes[static_cast<size_t>(mhsa)].id;
    QCOMPARE(d.node(id.c_str())->cutTexts(d.view.font()), QStringList{});
  }

  void concatInputsSetItsPorts() {
    // A Concat's inputs, set in the properties panel: the node redraws with
    // that many ports; fewer ports drop the edges into the ones that go, in
    // one undo step that brings them back.
    Designer d;
    ModelEditor& e = d.editor;
    const int in = e.addLayer(LayerType::Input, {0, 0});
    const int c1 = e.addLayer(LayerType::Conv2d, {0, 90});
    const int r1 = e.addLayer(LayerType::ReLU, {-150, 180});
    const int t1 = e.addLayer(LayerType::Tanh, {150, 180});
    const int cat = e.addLayer(LayerType::Concat, {0, 270});
    QVERIFY(e.connectPorts(in, 0, c1, 0));
    QVERIFY(e.connectPorts(c1, 0, r1, 0));
    QVERIFY(e.connectPorts(c1, 0, t1, 0));
    QVERIFY(e.connectPorts(r1, 0, cat, 0));
    QVERIFY(e.connectPorts(t1, 0, cat, 1));
    QVERIFY(d.node("concat1") && !d.node("concat1")->inputPort(2));
    QVERIFY(!e.connectPorts(c1, 0, cat, 2));
    QVERIFY(d.refusals.last().contains("has no input port 2"));

    d.scene()->selectNodes({cat});
    auto* inputs = qobject_cast<QSpinBox*>(d.properties.fieldEditor("params.inputs"));
    QVERIFY(inputs);
    QCOMPARE(inputs->value(), 2);
    QCOMPARE(inputs->minimum(), 2);
    QCOMPARE(inputs->maximum(), 8);
    inputs->setValue(3);
    QVERIFY(d.node("concat1")->inputPort(2));
    d.connectByMouse("conv1", "concat1", 2);
    QCOMPARE(d.doc.project().model.edges.size(), size_t{6});
    const ModelAnalysis& a = d.doc.analysis();
    QCOMPARE(a.nodes[static_cast<size_t>(cat)].output.c, int64_t{3 * 16});

    const int steps = d.doc.undoStack()->count();
    d.scene()->selectNodes({cat});
    inputs = qobject_cast<QSpinBox*>(d.properties.fieldEditor("params.inputs"));
    QVERIFY(inputs);
    inputs->setValue(2);
    QVERIFY(!d.node("concat1")->inputPort(2));
    QCOMPARE(d.doc.project().model.edges.size(), size_t{5});
    QCOMPARE(d.doc.undoStack()->count(), steps + 1);
    QVERIFY2(d.doc.undoStack()->undoText().contains("dropping 1 connection"),
             qPrintable(d.doc.undoStack()->undoText()));
    d.doc.undoStack()->undo();
    QCOMPARE(d.doc.project().model.edges.size(), size_t{6});
    QVERIFY(d.node("concat1")->inputPort(2));
    QCOMPARE(d.doc.project().model.nodes[static_cast<size_t>(cat)].params.inputs, int64_t{3});
  }

  void problemsAreMarkedOnNodes() {
    Designer d;
    const int conv = d.editor.addLayer(LayerType::Conv2d, {0, 0});
    QVERIFY(d.scene()->nodeItem(conv)->hasProblems());
    bool dangling = false;
    for (int i : d.doc.problemsOf(conv))
      dangling |= d.doc.analysis().problems[static_cast<size_t>(i)].message.find(
                      "input port 0 is not connected") != std::string::npos;
    QVERIFY(dangling);
    QVERIFY(d.scene()->nodeItem(conv)->toolTip().contains("not connected"));
    // Model-level problems name no node but are still reported.
    bool no_input = false;
    for (const Diagnostic& p : d.doc.analysis().problems) no_input |= p.node_id.empty();
    QVERIFY(no_input);
  }

  void autoLayoutFlowsDownward() {
    Project p = load("resnet8-fashion");
    for (LayerNode& n : p.model.nodes) n.has_position = false;
    const std::vector<NodePosition> pos = auto_layout(p.model);
    QCOMPARE(pos.size(), p.model.nodes.size());
    for (const Edge& e : p.model.edges)
      QVERIFY(pos[static_cast<size_t>(e.to)].y > pos[static_cast<size_t>(e.from)].y);
    for (size_t i = 0; i < pos.size(); ++i)
      for (size_t j = i + 1; j < pos.size(); ++j)
        QVERIFY(pos[i].x != pos[j].x || pos[i].y != pos[j].y);
    // The projection shortcut sits beside the main path.
    const int sc = p.model.find("s2b1_sc_conv"), main = p.model.find("s2b1_conv1");
    QCOMPARE(pos[static_cast<size_t>(sc)].y, pos[static_cast<size_t>(main)].y);
    QVERIFY(pos[static_cast<size_t>(sc)].x > pos[static_cast<size_t>(main)].x);

    // Arrange is one undoable step.
    Designer d(load("lenet-fashion"));
    const QString before = d.graphJson();
    LayerNode moved = d.doc.project().model.nodes[3];
    d.editor.moveNodes(d.editor.nextDragSerial(), {{3, moved.x, moved.y}}, {{3, 500, 500}});
    d.editor.arrange();
    QCOMPARE(d.node("pool1")->pos(), QPointF(0, 3 * kLayoutRowPitch));
    d.doc.undoStack()->undo();
    QCOMPARE(d.node("pool1")->pos(), QPointF(500, 500));
    d.doc.undoStack()->undo();
    QCOMPARE(d.graphJson(), before);
  }

  void zoomAndPan() {
    Designer d(load("lenet-fashion"));
    QCOMPARE(d.view.zoomFactor(), 1.0);
    d.view.zoomIn();
    QVERIFY(qAbs(d.view.zoomFactor() - 1.25) < 1e-9);
    d.view.zoomOut();
    QVERIFY(qAbs(d.view.zoomFactor() - 1.0) < 1e-9);
    // Ctrl+wheel zooms; the wheel alone scrolls.
    QWheelEvent wheel(QPointF(200, 200), d.view.mapToGlobal(QPoint(200, 200)), QPoint(),
                      QPoint(0, 120), Qt::NoButton, Qt::ControlModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(d.vp(), &wheel);
    QVERIFY(d.view.zoomFactor() > 1.1);
    d.view.zoomToFit();
    QVERIFY(d.view.zoomFactor() <= 1.0);
    const QRectF visible = d.view.mapToScene(d.vp()->rect()).boundingRect();
    QVERIFY(visible.contains(d.scene()->itemsBoundingRect().center()));
    // Middle-button drag pans.
    d.view.resetZoom();
    const QPointF centre = d.view.mapToScene(d.vp()->rect().center());
    QTest::mousePress(d.vp(), Qt::MiddleButton, Qt::NoModifier, QPoint(300, 300));
    QTest::mouseMove(d.vp(), QPoint(250, 200));
    QTest::mouseRelease(d.vp(), Qt::MiddleButton, Qt::NoModifier, QPoint(250, 200));
    const QPointF moved = d.view.mapToScene(d.vp()->rect().center());
    QVERIFY(qAbs(moved.y() - centre.y() - 100) <= 2);
  }
};

QTEST_MAIN(TestDesigner)
#include "test_designer.moc"
