// SPDX-License-Identifier: GPL-3.0-or-later
#include "analysis/layer_table_model.h"

#include <QApplication>
#include <QStyle>

#include "designer/layer_catalog.h"
#include "widgets/bytes_text.h"

namespace tr::gui {

LayerTableModel::LayerTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void LayerTableModel::setTable(LayerTable table) {
  beginResetModel();
  table_ = std::move(table);
  endResetModel();
}

int LayerTableModel::warningCount() const {
  int n = 0;
  for (const LayerRow& r : table_.rows) n += static_cast<int>(r.warnings.size());
  return n;
}

int LayerTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || table_.variants.empty() ? 0 : static_cast<int>(table_.rows.size());
}

int LayerTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : warningsColumn() + 1;
}

QVariant LayerTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const LayerRow& r = table_.rows[static_cast<size_t>(index.row())];
  const int c = index.column();
  if (role == NodeRole) return r.node;
  const bool variant = c >= FirstVariant && c < compilerColumn();
  const size_t v = static_cast<size_t>(c - FirstVariant);
  if (role == SortRole) {
    if (c == Parameters) return static_cast<qlonglong>(r.parameters);
    if (c == Flops) return static_cast<qlonglong>(r.flops);
    if (variant) return static_cast<qulonglong>(r.activation_bytes[v]);
    if (c == warningsColumn()) return static_cast<int>(r.warnings.size());
    if (c == Layer) return index.row();  // the model's order
    return data(index, Qt::DisplayRole);
  }
  if (role == Qt::TextAlignmentRole)
    return c == Parameters || c == Flops || variant ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                                                    : QVariant(Qt::AlignLeft | Qt::AlignVCenter);
  if (role == Qt::DecorationRole && c == Layer && !r.warnings.empty())
    return QApplication::style()->standardIcon(QStyle::SP_MessageBoxWarning);
  if (role == Qt::ToolTipRole && (c == warningsColumn() || c == Layer) && !r.warnings.empty()) {
    QStringList lines;
    for (const std::string& w : r.warnings) lines << QString::fromStdString(w);
    return lines.join(QLatin1Char('\n'));
  }
  if (role != Qt::DisplayRole) return {};
  if (c == Layer) return QString::fromStdString(r.id);
  if (c == Type) return QString::fromStdString(r.type);
  if (c == Settings) return QString::fromStdString(r.settings);
  if (c == Output) return r.has_output ? shape_text(r.output) : QString();
  if (c == Parameters) return grouped_number(r.parameters);
  if (c == Flops) return grouped_number(r.flops);
  if (variant) return bytes_text(r.activation_bytes[v]);
  if (c == compilerColumn()) return QString::fromStdString(r.rewrites);
  if (c == warningsColumn()) {
    QStringList all;
    for (const std::string& w : r.warnings) all << QString::fromStdString(w);
    return all.join(QStringLiteral("; "));
  }
  return {};
}

QVariant LayerTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  const bool variant = section >= FirstVariant && section < compilerColumn();
  if (role == Qt::ToolTipRole) {
    if (variant)
      return tr("Bytes of the features, gradient slots, masks and saved statistics the layer "
                "owns in variant %1 (a packed plan shares some of them over the step)")
          .arg(
              QString::fromStdString(table_.variants[static_cast<size_t>(section - FirstVariant)]));
    if (section == Flops) return tr("Forward FLOPs per device at the training batch");
    return {};
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case Layer:
      return tr("Layer");
    case Type:
      return tr("Type");
    case Settings:
      return tr("Settings");
    case Output:
      return tr("Output");
    case Parameters:
      return tr("Parameters");
    case Flops:
      return tr("Forward FLOPs");
    default:
      break;
  }
  if (variant)
    return tr("%1 activations")
        .arg(QString::fromStdString(table_.variants[static_cast<size_t>(section - FirstVariant)]));
  if (section == compilerColumn()) return tr("Compiler");
  if (section == warningsColumn()) return tr("Warnings");
  return {};
}

}  // namespace tr::gui
