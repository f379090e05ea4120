// SPDX-License-Identifier: GPL-3.0-or-later
#include "dtensor_table_model.h"

#include <QBrush>
#include <QColor>
#include <QLocale>
#include <algorithm>

#include "pool_band.h"
#include "variant_agreement.h"

namespace tr::gui {

DTensorTableModel::DTensorTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void DTensorTableModel::setPlan(std::shared_ptr<const CompiledPlan> cp, int variant, int region) {
  beginResetModel();
  cp_ = std::move(cp);
  variant_ = variant;
  region_ = region;
  rows_.clear();
  agrees_.clear();
  if (cp_ && variant_ >= 0 && static_cast<size_t>(variant_) < cp_->plans().size()) {
    const MemoryPlan& plan = cp_->plans()[static_cast<size_t>(variant_)];
    for (const DTensor& t : plan.dtensors()) {
      agrees_.push_back(placed_per_variant(*cp_, t.id) || agrees_in_all_variants(*cp_, t.id));
      const bool in_region = in_band(plan, t, region_);
      const bool of_layer =
          layers_.empty() || std::find(layers_.begin(), layers_.end(), t.owner) != layers_.end();
      if (in_region && of_layer) rows_.push_back(t.id);
    }
    // Address order, as the arena lays them out.
    std::sort(rows_.begin(), rows_.end(), [&](DTensorId a, DTensorId b) {
      return plan.get_dtensor(a).offset < plan.get_dtensor(b).offset;
    });
  }
  endResetModel();
}

void DTensorTableModel::setRank(int rank) {
  if (rank == rank_) return;
  rank_ = rank;
  if (!rows_.empty()) emit dataChanged(index(0, RankColumn), index(rowCount() - 1, RankColumn));
  emit headerDataChanged(Qt::Horizontal, RankColumn, RankColumn);
}

namespace {

QString slice_text(const ShareSlice& s) {
  return QString::fromStdString(share_slice_text(s));
}

}  // namespace

DTensorId DTensorTableModel::tensorAt(int row) const {
  return row >= 0 && static_cast<size_t>(row) < rows_.size() ? rows_[static_cast<size_t>(row)]
                                                             : kNoTensor;
}

int DTensorTableModel::rowOf(DTensorId id) const {
  const auto it = std::find(rows_.begin(), rows_.end(), id);
  return it == rows_.end() ? -1 : static_cast<int>(it - rows_.begin());
}

int DTensorTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int DTensorTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant DTensorTableModel::data(const QModelIndex& index, int role) const {
  const DTensorId id = tensorAt(index.row());
  if (id == kNoTensor || !cp_) return {};
  const DTensor& t = cp_->plans()[static_cast<size_t>(variant_)].get_dtensor(id);
  const bool agrees = static_cast<size_t>(id) < agrees_.size() && agrees_[static_cast<size_t>(id)];
  const QLocale c(QLocale::English);
  if (role == Qt::TextAlignmentRole) {
    switch (index.column()) {
      case Id:
      case PaddedC:
      case Offset:
      case SlotBytes:
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
      default:
        return {};
    }
  }
  // What the plan does not hold says as much as what it does: attention's
  // one saved number per token and head stands for its T x T scores.
  if (role == Qt::ToolTipRole && index.column() == Name && t.owner >= 0 &&
      t.region == Region::S_BN_SAVED &&
      cp_->project().model.nodes[static_cast<size_t>(t.owner)].type == LayerType::SelfAttention)
    return tr("The log-sum-exp of each token's attention scores, per head: all the backward "
              "keeps of the softmax. The %1 x %1 scores of each head are never stored, in this "
              "plan or anywhere else: both passes recompute them.")
        .arg(t.shape.h * t.shape.w);
  const int tensor = cp_->tensor_ranks();
  const bool part = tensor > 1 && t.tensor_placement.kind == PlacementKind::Shard;
  if (role == Qt::ToolTipRole && index.column() == PlacementColumn && tensor > 1) {
    // Over a mesh: the data-parallel placement, then the tensor-parallel one.
    const bool feature = region_series(t.region) == 'F' || t.owner < 0;
    const QString by = t.tensor_placement.dim == 3 ? tr("channels")
                       : feature                   ? tr("samples: its own")
                                                   : tr("rows: a layer's outputs");
    QString over_tensor;
    if (part)
      over_tensor = tr("over the mesh's tensor dimension, split: each of the %1 tensor ranks holds "
                       "its part %2 of the whole %3 (by %4)")
                        .arg(tensor)
                        .arg(QString::fromStdString(t.shape.str()),
                             QString::fromStdString(cp_->whole_shape(id).str()), by);
    else if (t.tensor_placement.kind == PlacementKind::Partial)
      over_tensor = tr("over the mesh's tensor dimension, a pending sum: each of the %1 tensor "
                       "ranks holds its addend for the group's samples, and the reduce-scatter "
                       "leaves each rank the sum for its own")
                        .arg(tensor);
    else if (feature)
      over_tensor = tr("over the mesh's tensor dimension, gathered: each of the %1 tensor ranks "
                       "holds the group's samples of it, from its collective to the kernel "
                       "that reads it")
                        .arg(tensor);
    else
      over_tensor = tr("over the mesh's tensor dimension, whole: each of the %1 tensor ranks "
                       "holds all of it, its gradients summed over the group")
                        .arg(tensor);
    return tr("%1 over the %2 data-parallel ranks; %3")
        .arg(QString::fromStdString(t.placement.str()))
        .arg(cp_->world_size() / tensor)
        .arg(over_tensor);
  }
  if (role == Qt::ToolTipRole && index.column() == PlacementColumn) {
    const int ranks = cp_->world_size();
    switch (t.placement.kind) {
      case PlacementKind::Replicate:
        return tr("Replicated: each of the %n rank(s) holds all of it", nullptr, ranks);
      case PlacementKind::Partial:
        return tr(
            "Partial: each rank holds its own addend, summed over the %n rank(s) by its "
            "gradient bucket's all-reduce (reduce-scatter, when the gradients are sharded)",
            nullptr, ranks);
      case PlacementKind::Shard:
        return tr("Sharded: each of the %1 ranks holds a share of the %2 values (this one's "
                  "largest: %3); each rank updates its share of the weights with it")
            .arg(ranks)
            .arg(QLocale(QLocale::English).toString(static_cast<qlonglong>(t.global_elements)))
            .arg(QLocale(QLocale::English).toString(static_cast<qlonglong>(t.shape.elements())));
    }
  }
  if (index.column() == RankColumn && t.placement.kind == PlacementKind::Shard &&
      (role == Qt::ToolTipRole || role == Qt::DisplayRole || role == SortRole)) {
    const std::vector<ShareSlice> share = cp_->rank_share(id, rank_);
    int64_t values = 0;
    for (const ShareSlice& s : share) values += s.count;
    if (role == SortRole) return static_cast<qlonglong>(values);
    if (share.empty())
      return tr("nothing: rank %1's share starts past the end of this bucket").arg(rank_);
    if (role == Qt::DisplayRole) {
      const QString values_text = QLocale(QLocale::English).toString(values);
      if (share.size() == 1) return tr("%1 values: %2").arg(values_text, slice_text(share[0]));
      return tr("%1 values of %n parameter(s): %2 … %3", nullptr, static_cast<int>(share.size()))
          .arg(values_text, slice_text(share.front()), slice_text(share.back()));
    }
    QStringList lines{tr("Rank %1 holds the values of these parameters here:").arg(rank_)};
    constexpr size_t kShown = 12;
    for (size_t i = 0; i < share.size() && i < kShown; ++i) lines << slice_text(share[i]);
    if (share.size() > kShown)
      lines << tr("… and %n more", nullptr, static_cast<int>(share.size() - kShown));
    return lines.join(QLatin1Char('\n'));
  }
  if (role == Qt::ToolTipRole && index.column() == ShapeColumn && t.is_blocked())
    return tr("Stored in channel blocks of %1, [N, C/%1, H, W, %1] (%2 blocks a sample): "
              "the layout oneDNN's convolutions take (training.feature_layout); the same "
              "bytes as NHWC")
        .arg(t.channel_block)
        .arg(t.shape.c / t.channel_block);
  if (role == Qt::ToolTipRole && index.column() == RegionColumn)
    return tr("%1: %2").arg(QString::fromUtf8(region_name(t.region).data()),
                            QString::fromUtf8(region_series_title(region_series(t.region)).data()));
  if (role == Qt::ForegroundRole && index.column() == Variants && !agrees)
    return QBrush(QColor(0xc6, 0x28, 0x28));
  if (role != Qt::DisplayRole && role != SortRole) return {};
  const bool raw = role == SortRole;
  switch (index.column()) {
    case Id:
      return t.id;
    case Name:
      return QString::fromStdString(t.name);
    case Layer:
      return t.owner >= 0 ? QString::fromStdString(
                                cp_->project().model.nodes[static_cast<size_t>(t.owner)].id)
                          : tr("(engine)");
    case RegionColumn:
      return raw ? QVariant(region_index(t.region))
                 : QVariant(QString::fromUtf8(region_title(t.region).data()));
    case ShapeColumn:
      if (raw) return static_cast<qlonglong>(t.shape.elements());
      if (t.is_blocked())
        return tr("%1 in blocks of %2")
            .arg(QString::fromStdString(t.shape.str()))
            .arg(t.channel_block);
      return QString::fromStdString(t.shape.str());
    case DTypeColumn:
      return QString::fromUtf8(dtype_name(t.dtype).data());
    case PaddedC:
      return static_cast<qlonglong>(t.padded_c());
    case PlacementColumn:
      if (tensor > 1)
        return QString::fromStdString(t.placement.str() + ", " + t.tensor_placement.str());
      return QString::fromStdString(t.placement.str());
    case RankColumn:
      if (raw) return 0;
      if (part)
        return tr("its part: %1 of %2")
            .arg(QString::fromStdString(t.shape.str()),
                 QString::fromStdString(cp_->whole_shape(id).str()));
      return t.placement.kind == PlacementKind::Replicate ? tr("all of it") : tr("its own addend");
    case Offset:
      return raw ? QVariant(static_cast<qulonglong>(t.offset))
                 : QVariant(c.toString(static_cast<qulonglong>(t.offset)));
    case SlotBytes:
      return raw ? QVariant(static_cast<qulonglong>(t.slot_bytes))
                 : QVariant(c.toString(static_cast<qulonglong>(t.slot_bytes)));
    case Variants:
      if (raw) return agrees;
      if (placed_per_variant(*cp_, id))
        return cp_->plans()[static_cast<size_t>(variant_)].in_use(id)
                   ? tr("per variant, by lifetime")
                   : tr("unused here");
      return agrees ? tr("same in all %n", nullptr, static_cast<int>(cp_->plans().size()))
                    : tr("DIFFERS");
  }
  return {};
}

QVariant DTensorTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case Id:
      return tr("Id");
    case Name:
      return tr("Name");
    case Layer:
      return tr("Layer");
    case RegionColumn:
      return tr("Region");
    case ShapeColumn:
      return tr("Shape (NHWC)");
    case DTypeColumn:
      return tr("DType");
    case PaddedC:
      return tr("Padded C");
    case PlacementColumn:
      return tr("Placement");
    case RankColumn:
      return tr("On rank %1").arg(rank_);
    case Offset:
      return tr("Offset");
    case SlotBytes:
      return tr("Slot bytes");
    case Variants:
      return tr("Offset across variants");
  }
  return {};
}

}  // namespace tr::gui
