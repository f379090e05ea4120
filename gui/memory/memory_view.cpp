// SPDX-License-Identifier: GPL-3.0-or-later
#include "memory_view.h"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableView>
#include <QTime>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <algorithm>

#include <renaissance/plan_report.h>
#include "device_fit.h"
#include "dtensor_table_model.h"
#include "lifetime_chart.h"
#include "plan_export.h"
#include "pool_band.h"
#include "pool_blocks.h"
#include "recompute_curve_view.h"
#include "region_bands.h"
#include "variant_agreement.h"
#include "widgets/bytes_text.h"
#include "widgets/count_text.h"
#include "widgets/tone.h"

namespace tr::gui {

MemoryView::MemoryView(QWidget* parent)
    : QWidget(parent),
      pages_(new QStackedWidget(this)),
      empty_(new QLabel(this)),
      staleBanner_(new QLabel(this)),
      variant_(new QComboBox(this)),
      rank_(new QComboBox(this)),
      scale_(new QComboBox(this)),
      exportJson_(new QPushButton(tr("Export JSON…"), this)),
      exportCsv_(new QPushButton(tr("Export CSV…"), this)),
      summary_(new QLabel(this)),
      agreement_(new QLabel(this)),
      legend_(new QLabel(this)),
      tabs_(new QTabWidget(this)),
      bands_(new RegionBands(this)),
      chart_(new LifetimeChart(this)),
      curve_(new RecomputeCurveView(this)),
      owners_(new QLabel(this)),
      tensorsTitle_(new QLabel(this)),
      allRegions_(new QPushButton(tr("All regions"), this)),
      model_(new DTensorTableModel(this)),
      proxy_(new QSortFilterProxyModel(this)),
      table_(new QTableView(this)),
      arenas_(new QTreeWidget(this)) {
  auto* outer = new QVBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  outer->addWidget(pages_);

  empty_->setAlignment(Qt::AlignCenter);
  empty_->setWordWrap(true);
  empty_->setText(
      tr("No memory plan yet.\n\nCompile the design (Build > Compile, F5) to see "
         "where every tensor lives in each device's arena."));
  pages_->addWidget(empty_);

  auto* page = new QWidget(this);
  auto* layout = new QVBoxLayout(page);
  staleBanner_->setText(
      tr("The design changed since this plan was compiled: compile again (F5) "
         "to bring it up to date."));
  set_tone(staleBanner_, Tone::Banner);
  staleBanner_->setWordWrap(true);
  staleBanner_->hide();
  layout->addWidget(staleBanner_);

  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("Variant"), page));
  bar->addWidget(variant_);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("Rank"), page));
  rank_->setToolTip(
      tr("Every rank's arena has this layout; a sharded tensor holds a different share of its "
         "values on each. The table's 'On rank' column says which."));
  bar->addWidget(rank_);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("Scale"), page));
  scale_->addItem(tr("Linear"));
  scale_->addItem(tr("Logarithmic"));
  bar->addWidget(scale_);
  bar->addStretch(1);
  bar->addWidget(exportJson_);
  bar->addWidget(exportCsv_);
  layout->addLayout(bar);

  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  agreement_->setWordWrap(true);
  layout->addWidget(summary_);
  layout->addWidget(agreement_);
  legend_->setObjectName(QStringLiteral("regionLegend"));
  legend_->setWordWrap(true);
  legend_->setTextFormat(Qt::RichText);
  QFont small = legend_->font();
  small.setPointSizeF(small.pointSizeF() * 0.9);
  legend_->setFont(small);
  layout->addWidget(legend_);

  // The bands and the chart share one pane: both are the arena, one by
  // region and one by time, and the table under them wants the height.
  auto* split = new QSplitter(Qt::Vertical, page);
  auto* scroll = new QScrollArea(tabs_);
  scroll->setWidget(bands_);
  scroll->setWidgetResizable(true);
  scroll->setFrameShape(QFrame::NoFrame);
  // The strip and four bands before scrolling: low enough that the view
  // leaves a bottom dock (Network analysis) room for rows at 1280x800.
  scroll->setMinimumHeight(130);
  tabs_->setDocumentMode(true);
  tabs_->addTab(scroll, tr("Arena"));
  tabs_->addTab(chart_, tr("Step lifetimes"));
  tabs_->setTabToolTip(1, tr("The step-local tensors over one step, at their bytes in the pool"));
  tabs_->addTab(curve_, tr("Memory against compute"));
  tabs_->setTabToolTip(2, tr("The plan's bytes as more of its saved features are recomputed in "
                             "the backward; click a point to make its bytes the memory budget"));
  connect(curve_, &RecomputeCurveView::budgetPicked, this, &MemoryView::budgetPicked);
  split->addWidget(tabs_);

  owners_->setObjectName(QStringLiteral("regionOwners"));
  owners_->setWordWrap(true);
  owners_->setTextFormat(Qt::RichText);
  owners_->setTextInteractionFlags(Qt::LinksAccessibleByMouse | Qt::TextSelectableByMouse);
  layout->addWidget(owners_);

  auto* lower = new QSplitter(Qt::Horizontal, split);
  auto* tensors = new QWidget(lower);
  auto* tl = new QVBoxLayout(tensors);
  tl->setContentsMargins(0, 0, 0, 0);
  auto* th = new QHBoxLayout;
  th->addWidget(tensorsTitle_, 1);
  th->addWidget(allRegions_);
  tl->addLayout(th);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(DTensorTableModel::SortRole);
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(DTensorTableModel::Offset, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->hide();
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(true);
  tl->addWidget(table_);
  lower->addWidget(tensors);

  arenas_->setRootIsDecorated(false);
  arenas_->setHeaderLabels({tr("Rank"), tr("Device"), tr("Arena"), tr("Layout")});
  arenas_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  lower->addWidget(arenas_);
  lower->setStretchFactor(0, 3);
  lower->setStretchFactor(1, 1);
  split->addWidget(lower);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);
  pages_->addWidget(page);

  connect(variant_, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
  connect(rank_, &QComboBox::currentIndexChanged, this,
          [this](int r) { model_->setRank(std::max(0, r)); });
  connect(scale_, &QComboBox::currentIndexChanged, this, [this](int i) {
    bands_->setScale(i == 1 ? RegionBands::Scale::Log : RegionBands::Scale::Linear);
  });
  connect(bands_, &RegionBands::regionClicked, this, &MemoryView::showRegion);
  connect(bands_, &RegionBands::tensorClicked, this, &MemoryView::showTensor);
  connect(bands_, &RegionBands::hovered, this, &MemoryView::status);
  // A block clicked goes the strip's way: its band, then its row.
  connect(chart_, &LifetimeChart::tensorClicked, this, [this](DTensorId id) {
    if (!cp_) return;
    const MemoryPlan& plan = cp_->plans()[static_cast<size_t>(std::max(0, variant()))];
    showRegion(band_of(plan, plan.get_dtensor(id)));
    showTensor(id);
  });
  connect(chart_, &LifetimeChart::tensorActivated, this, [this](DTensorId id) {
    if (!cp_) return;
    const int owner =
        cp_->plans()[static_cast<size_t>(std::max(0, variant()))].get_dtensor(id).owner;
    if (owner >= 0) emit layerRequested(owner);
  });
  connect(chart_, &LifetimeChart::hovered, this, &MemoryView::status);
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          [this] { chart_->setSelectedTensor(selectedTensor()); });
  connect(allRegions_, &QPushButton::clicked, this, [this] {
    model_->setLayerFilter({});
    bands_->setHighlightedLayers({});
    chart_->setHighlightedLayers({});
    showRegion(-1);
  });
  connect(owners_, &QLabel::linkActivated, this, [this](const QString& link) {
    bool ok = false;
    const int layer = link.mid(QStringLiteral("layer:").size()).toInt(&ok);
    if (ok) emit layerRequested(layer);
  });
  connect(table_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    if (!cp_) return;
    const DTensorId id = model_->tensorAt(proxy_->mapToSource(index).row());
    if (id == kNoTensor) return;
    const int owner =
        cp_->plans()[static_cast<size_t>(std::max(0, variant()))].get_dtensor(id).owner;
    if (owner >= 0) emit layerRequested(owner);
  });
  connect(exportJson_, &QPushButton::clicked, this, [this] { chooseExport(true); });
  connect(exportCsv_, &QPushButton::clicked, this, [this] { chooseExport(false); });
  pages_->setCurrentWidget(empty_);
}

MemoryView::~MemoryView() = default;

void MemoryView::setCompiled(std::shared_ptr<const CompiledPlan> cp, const DeviceScan& scan) {
  const int previous = variant_->currentIndex();
  if (cp != cp_) compiledAt_ = QTime::currentTime();
  cp_ = std::move(cp);
  scan_ = scan;
  stale_ = false;
  staleBanner_->hide();
  if (!cp_) {
    pages_->setCurrentWidget(empty_);
    bands_->setPlan(nullptr, 0);
    chart_->setPlan(nullptr, 0);
    curve_->setPlan(nullptr);
    model_->setPlan(nullptr, 0, -1);
    return;
  }
  curve_->setPlan(cp_);
  const DeviceFit fit = check_device_fit(*cp_, scan_);
  fits_ = fit.fits;
  fitText_ = fit.text;
  {
    const QSignalBlocker block(variant_);
    variant_->clear();
    for (const ResolvedVariant& v : cp_->variants()) {
      QString label = tr("%1 (%2, batch %3)")
                          .arg(QString::fromStdString(v.name),
                               QString::fromUtf8(variant_kind_name(v.kind).data()))
                          .arg(v.batch);
      if (v.height > 0) label += QStringLiteral(" %1×%2").arg(v.height).arg(v.width);
      if (v.kind == VariantKind::Validation && cp_->validation_batch_written() > 0)
        label = tr("%1 (%2, batch %3 a pass of %4)")
                    .arg(QString::fromStdString(v.name),
                         QString::fromUtf8(variant_kind_name(v.kind).data()))
                    .arg(v.batch)
                    .arg(cp_->validation_batch_written());
      variant_->addItem(label);
    }
    variant_->setCurrentIndex(previous >= 0 && previous < variant_->count() ? previous : 0);
  }
  {
    const QSignalBlocker block(rank_);
    const int was = rank_->currentIndex();
    rank_->clear();
    const DeviceSet& devs = cp_->project().training.devices;
    for (int r = 0; r < cp_->world_size(); ++r)
      rank_->addItem(devs.kind == DeviceKind::CPU
                         ? tr("%1 (cpu)").arg(r)
                         : tr("%1 (cuda:%2)")
                               .arg(r)
                               .arg(r < devs.world_size() ? devs.ids[static_cast<size_t>(r)] : r));
    rank_->setCurrentIndex(was >= 0 && was < rank_->count() ? was : 0);
    rank_->setEnabled(cp_->world_size() > 1);
    model_->setRank(std::max(0, rank_->currentIndex()));
  }
  arenas_->clear();
  const DeviceSet& devs = cp_->project().training.devices;
  const bool shards = sharded();
  for (int rank = 0; rank < cp_->world_size(); ++rank) {
    const int id = rank < devs.world_size() ? devs.ids[static_cast<size_t>(rank)] : rank;
    const QString device = devs.kind == DeviceKind::CPU ? tr("cpu rank %1").arg(rank)
                                                        : QStringLiteral("cuda:%1").arg(id);
    auto* item = new QTreeWidgetItem(arenas_);
    item->setText(0, QString::number(rank));
    item->setText(1, device);
    item->setText(2, bytes_text(cp_->bytes_per_device()));
    // Sharded tensors lie at the same offsets on every rank, each holding its own share.
    item->setText(3, rank == 0 ? tr("blueprint")
                     : shards  ? tr("laid out as rank 0, its own share of the shards")
                               : tr("identical to rank 0"));
  }
  pages_->setCurrentIndex(1);
  refresh();
}

void MemoryView::setStale(bool stale) {
  stale_ = stale && cp_;
  staleBanner_->setVisible(stale_);
}

int MemoryView::variant() const {
  return variant_->currentIndex();
}

void MemoryView::setVariant(int index) {
  variant_->setCurrentIndex(index);
}

bool MemoryView::sharded() const {
  return cp_ && sharded_bytes(cp_->plans().front()).whole > 0;
}

QString MemoryView::summaryText() const {
  return summary_->text();
}

QString MemoryView::legendText() const {
  return legend_->text();
}

QString MemoryView::agreementText() const {
  return agreement_->text();
}

void MemoryView::refresh() {
  if (!cp_) return;
  const int v = std::max(0, variant_->currentIndex());
  const MemoryPlan& plan = cp_->plans()[static_cast<size_t>(v)];
  const uint64_t per_device = cp_->bytes_per_device();
  // Packed, each figure says what packing saved: the variant as the CLI puts
  // it (every step-local tensor in its own slot), the arena as with packing off.
  const QString variantBytes =
      plan.packed() ? tr("%1 (%2 before packing)")
                          .arg(bytes_text(plan.total_bytes()),
                               bytes_text(plan.pool().offset + plan.step_local_slot_bytes()))
                    : bytes_text(plan.total_bytes());
  const QString largest = plan.packed()
                              ? tr("the largest variant, packed by lifetime; %1 with packing off")
                                    .arg(bytes_text(unpacked_bytes_per_device(*cp_)))
                              : tr("the largest variant");
  QString text =
      tr("Plan of %1, compiled at %2. This variant: %3 · per device: %4 (%5) · "
         "%6: %7 in all.\n%8")
          .arg(QString::fromStdString(cp_->project().name),
               compiledAt_.toString(QStringLiteral("HH:mm:ss")), variantBytes,
               bytes_text(per_device), largest,
               count_text(cp_->world_size(), tr("%1 rank"), tr("%1 ranks")),
               bytes_text(per_device * static_cast<uint64_t>(cp_->world_size())), fitText_);
  if (const uint64_t budget = cp_->memory_budget(); budget > 0) {
    const std::string what = recompute_summary(*cp_);
    text += tr("\nMemory budget %1 a device: %2; %3.")
                .arg(bytes_text(budget), cp_->fits_budget() ? tr("fits") : tr("does NOT fit"),
                     what.empty() ? tr("recomputes nothing") : QString::fromStdString(what));
  }
  // What sharding saves each rank.
  const ShardedBytes shares = sharded_bytes(plan);
  if (shares.whole > 0 && cp_->project().training.sharding == Sharding::OptimizerAndGradients)
    text += tr("\nOptimizer state and gradients sharded over the ranks (ZeRO-2): each keeps %1 "
               "of their %2 for the run (the moments' and the summed gradients' shares), and %3.")
                .arg(bytes_text(shares.moments + shares.gradients),
                     bytes_text(shares.moments_whole + shares.gradients_whole),
                     shares.pooled_gradients > 0
                         ? tr("the full gradients live in the pool until their bucket's "
                              "reduce-scatter")
                         : tr("the full gradients keep bytes of their own, as in the pool they "
                              "would make the plan larger"));
  else if (shares.whole > 0)
    text += tr("\nOptimizer state sharded over the ranks (ZeRO-1): each holds %1 of the moments' "
               "%2 and updates its share of the weights.")
                .arg(bytes_text(shares.moments), bytes_text(shares.moments_whole));
  // What tensor parallel saves each rank.
  if (const int tensor = cp_->tensor_ranks(); tensor > 1) {
    const TensorSplitBytes split = tensor_split_bytes(plan, tensor);
    text += tr("\nTensor parallel, mesh data=%1 x tensor=%2: each rank holds %3 of the layers' "
               "%4 of parameters, gradients and optimizer state and %5 of their %6 of features "
               "(before packing), with %7 of communication buffers for the group's samples; "
               "the split layers are marked in the designer.")
                .arg(cp_->data_ranks())
                .arg(tensor)
                .arg(bytes_text(split.params), bytes_text(split.params_whole),
                     bytes_text(split.features), bytes_text(split.features_whole),
                     bytes_text(split.communication));
  }
  summary_->setText(text);
  set_tone(summary_, fits_ ? Tone::Normal : Tone::Error);

  const VariantAgreement agreement = check_variant_agreement(*cp_);
  if (agreement.holds() && agreement.per_variant > 0) {
    agreement_->setText(
        tr("Offsets agree: all %1 DTensors outside the step-local pool have the same offset and "
           "slot in %2; the pool's %3 features, gradient slots, scratch tensors and what "
           "forwards save for their backwards are placed per variant by their lifetimes.")
            .arg(agreement.tensors)
            .arg(cp_->plans().size() == 1 ? tr("its one variant")
                                          : tr("all %1 variants").arg(cp_->plans().size()))
            .arg(agreement.per_variant));
    set_tone(agreement_, Tone::Normal);
  } else if (agreement.holds()) {
    agreement_->setText(tr("Offsets agree: all %1 DTensors have the same offset and slot in %2.")
                            .arg(agreement.tensors)
                            .arg(cp_->plans().size() == 1
                                     ? tr("its one variant")
                                     : tr("all %1 variants").arg(cp_->plans().size())));
    set_tone(agreement_, Tone::Normal);
  } else {
    agreement_->setText(tr("Offsets DIFFER between variants for %1 of %2 DTensors (first: id %3)")
                            .arg(agreement.differing.size())
                            .arg(agreement.tensors)
                            .arg(agreement.differing.front()));
    set_tone(agreement_, Tone::Error);
  }
  // One lifetime analysis for the strip's pool and the chart.
  auto blocks = std::make_shared<const PoolBlocks>(*cp_, v);
  bands_->setPlan(cp_, v, blocks);
  chart_->setPlan(cp_, v, std::move(blocks));
  // The engine's region names start with their series letter: say what each
  // means, the pool's F and T included (its title names both, whether or
  // not this plan has temporaries).
  std::vector<Region> named;
  for (int b : bands_->shownBands()) {
    if (b != kPoolBand) {
      named.push_back(static_cast<Region>(b));
      continue;
    }
    for (int r = 0; r < kNumRegions; ++r)
      if (cp_->plans()[static_cast<size_t>(v)].step_local(static_cast<Region>(r)))
        named.push_back(static_cast<Region>(r));
  }
  QStringList series;
  for (Region r : named) {
    const char s = region_series(r);
    const QString entry =
        QStringLiteral("<b>%1</b> %2")
            .arg(QLatin1Char(s))
            .arg(QString::fromUtf8(region_series_title(s).data()).toHtmlEscaped());
    if (!series.contains(entry)) series << entry;
  }
  legend_->setText(tr("Regions by series (the first letter of their engine names): %1")
                       .arg(series.join(QStringLiteral(" · "))));
  refreshTensors();
}

void MemoryView::refreshTensors() {
  if (!cp_) return;
  const int v = std::max(0, variant_->currentIndex());
  const int region = bands_->selectedRegion();
  model_->setPlan(cp_, v, region);
  const MemoryPlan& plan = cp_->plans()[static_cast<size_t>(v)];
  chart_->setSelectedTensor(kNoTensor);  // the rows are new: nothing is selected
  if (region < 0) {
    tensorsTitle_->setText(
        tr("All %1 DTensors of variant %2")
            .arg(plan.dtensors().size())
            .arg(QString::fromStdString(cp_->variants()[static_cast<size_t>(v)].name)));
  } else if (region == kPoolBand) {
    tensorsTitle_->setText(
        tr("%1: %2 in use, offset %3, %4 (%5 before packing)")
            .arg(band_title(region))
            .arg(count_text(model_->rowCount(), tr("%1 DTensor"), tr("%1 DTensors")))
            .arg(plan.pool().offset)
            .arg(bytes_text(plan.pool().bytes), bytes_text(plan.step_local_slot_bytes())));
  } else {
    const RegionInfo& info = plan.region(static_cast<Region>(region));
    tensorsTitle_->setText(
        tr("%1: %2, offset %3, %4")
            .arg(QString::fromUtf8(region_title(static_cast<Region>(region)).data()))
            .arg(count_text(static_cast<qint64>(info.tensors.size()), tr("%1 DTensor"),
                            tr("%1 DTensors")))
            .arg(info.base_offset)
            .arg(bytes_text(info.total_bytes)));
  }
  const std::vector<int>& layers = model_->layerFilter();
  if (!layers.empty()) {
    QStringList names;
    for (int l : layers)
      if (l >= 0 && static_cast<size_t>(l) < cp_->project().model.nodes.size())
        names << QString::fromStdString(cp_->project().model.nodes[static_cast<size_t>(l)].id);
    QString title = tr("%1 of %2 in variant %3")
                        .arg(count_text(model_->rowCount(), tr("%1 DTensor"), tr("%1 DTensors")),
                             names.join(QStringLiteral(", ")),
                             QString::fromStdString(cp_->variants()[static_cast<size_t>(v)].name));
    if (region >= 0) title += tr(", region %1").arg(band_title(region));
    tensorsTitle_->setText(title);
  }
  allRegions_->setEnabled(region >= 0 || !layers.empty());
  refreshOwners();
}

QList<int> MemoryView::regionOwners(int region) const {
  QList<int> owners;
  if (!cp_ || region < 0) return owners;
  const MemoryPlan& plan = cp_->plans()[static_cast<size_t>(std::max(0, variant()))];
  for (const DTensor& t : plan.dtensors())
    if (in_band(plan, t, region) && !owners.contains(t.owner)) owners << t.owner;
  std::sort(owners.begin(), owners.end());
  return owners;
}

QString MemoryView::ownersText() const {
  return owners_->text();
}

void MemoryView::refreshOwners() {
  const int region = bands_->selectedRegion();
  if (!cp_ || region < 0) {
    owners_->setText(tr("Click a region to see which layers own its tensors."));
    return;
  }
  QStringList links;
  bool engine = false;
  for (int owner : regionOwners(region)) {
    if (owner < 0 || static_cast<size_t>(owner) >= cp_->project().model.nodes.size()) {
      engine = true;
      continue;
    }
    const QString id =
        QString::fromStdString(cp_->project().model.nodes[static_cast<size_t>(owner)].id)
            .toHtmlEscaped();
    links << QStringLiteral("<a href=\"layer:%1\">%2</a>").arg(owner).arg(id);
  }
  if (engine) links << tr("the engine");
  const QString engineName =
      region == kPoolBand ? tr("F and T, in use in this variant")
                          : QString::fromUtf8(region_name(static_cast<Region>(region)).data());
  owners_->setText(tr("Tensors of %1 (%2) belong to: %3")
                       .arg(band_title(region), engineName,
                            links.isEmpty() ? tr("nobody") : links.join(QStringLiteral(", "))));
}

void MemoryView::highlightLayers(const QList<int>& layers) {
  std::vector<int> v(layers.begin(), layers.end());
  model_->setLayerFilter(v);
  chart_->setHighlightedLayers(v);
  bands_->setHighlightedLayers(std::move(v));
  if (!layers.isEmpty()) bands_->setSelectedRegion(-1);
  refreshTensors();
}

QList<int> MemoryView::highlightedLayers() const {
  const std::vector<int>& v = model_->layerFilter();
  return QList<int>(v.begin(), v.end());
}

void MemoryView::showRegion(int region) {
  bands_->setSelectedRegion(region);
  refreshTensors();
}

void MemoryView::showTensor(DTensorId id) {
  if (!cp_) return;
  if (model_->rowOf(id) < 0) showRegion(-1);
  const int row = model_->rowOf(id);
  if (row < 0) return;
  const QModelIndex index = proxy_->mapFromSource(model_->index(row, 0));
  table_->selectRow(index.row());
  table_->scrollTo(index);
}

DTensorId MemoryView::selectedTensor() const {
  const QModelIndexList rows = table_->selectionModel()->selectedRows();
  if (rows.isEmpty()) return kNoTensor;
  return model_->tensorAt(proxy_->mapToSource(rows.front()).row());
}

bool MemoryView::exportJson(const QString& path, QString* error) {
  if (!cp_) {
    if (error) *error = tr("Nothing to export: compile the design first");
    return false;
  }
  return write_export(path, plan_json(*cp_, fitText_), error);
}

bool MemoryView::exportCsv(const QString& path, QString* error) {
  if (!cp_) {
    if (error) *error = tr("Nothing to export: compile the design first");
    return false;
  }
  return write_export(path, plan_csv(*cp_), error);
}

void MemoryView::chooseExport(bool json) {
  const QString name = QString::fromStdString(cp_ ? cp_->project().name : std::string("plan")) +
                       (json ? QStringLiteral("-plan.json") : QStringLiteral("-plan.csv"));
  const QString path = QFileDialog::getSaveFileName(
      this, json ? tr("Export the plan as JSON") : tr("Export the plan as CSV"), name,
      json ? tr("JSON (*.json)") : tr("CSV (*.csv)"));
  if (path.isEmpty()) return;
  QString error;
  if (!(json ? exportJson(path, &error) : exportCsv(path, &error)))
    QMessageBox::warning(this, tr("Export failed"), error);
  else
    emit status(tr("Plan written to %1").arg(path));
}

}  // namespace tr::gui
