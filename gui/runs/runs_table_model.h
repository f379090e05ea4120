// SPDX-License-Identifier: GPL-3.0-or-later
// RunsTableModel: the runs of the store as table rows (id, project, status,
// start, duration, devices, precision, steps, epochs, final val top-1, final
// train loss, number of notes, tags). Updating it with a new listing inserts, removes
// and changes rows in place, so a poll keeps the selection and the scroll
// position.
#pragma once

#include <QAbstractTableModel>
#include <cstdint>
#include <vector>

#include <renaissance/run_records.h>

namespace tr::gui {

class RunsTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column {
    Id,
    Name,
    Status,
    Started,
    Duration,
    Devices,
    Precision,
    Steps,
    Epochs,
    ValTop1,
    TrainLoss,
    Notes,
    Tags,  // last: it takes the spare width
    ColumnCount
  };
  // Raw values for sorting: numbers as doubles, so numeric columns sort numerically.
  static constexpr int SortRole = Qt::UserRole;
  static constexpr int RunIdRole = Qt::UserRole + 1;

  struct Row {
    store::RunSummary summary;
    int notes = 0;
  };

  explicit RunsTableModel(QObject* parent = nullptr);

  // `rows` ordered by id, as the store lists them.
  void setRuns(std::vector<Row> rows);
  int64_t runAt(int row) const;  // 0 when out of range
  int rowOf(int64_t id) const;   // -1 when not listed
  const Row* find(int64_t id) const;
  const std::vector<Row>& runs() const { return rows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

 private:
  std::vector<Row> rows_;
};

}  // namespace tr::gui
