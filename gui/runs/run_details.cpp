// SPDX-License-Identifier: GPL-3.0-or-later
// One run's details as HTML.
#include "runs/run_details.h"

#include <QObject>
#include <QStringList>
#include <algorithm>

#include <nlohmann/json.hpp>

#include "runs/run_text.h"

namespace tr::gui {

namespace {

QString esc(const std::string& text) {
  return QString::fromStdString(text).toHtmlEscaped();
}

QString cell(const QString& text, bool header = false) {
  const char* tag = header ? "th" : "td";
  // Numbers broken over lines in a narrow pane would be misread.
  return QStringLiteral("<%1 style='white-space: nowrap; padding: 0 8px 0 0'>%2</%1>")
      .arg(tag, text);
}

QString table(const std::vector<QStringList>& rows) {
  QString out = QStringLiteral("<table cellspacing='0'>");
  for (size_t r = 0; r < rows.size(); ++r) {
    out += QStringLiteral("<tr>");
    for (const QString& c : rows[r]) out += cell(c, r == 0);
    out += QStringLiteral("</tr>");
  }
  return out + QStringLiteral("</table>");
}

QString section(const QString& title) {
  return QStringLiteral("<h4>%1</h4>").arg(title.toHtmlEscaped());
}

QString configuration(const std::string& hyper_json) {
  const auto j = nlohmann::json::parse(hyper_json, nullptr, false);
  if (!j.is_object() || j.empty()) return {};
  std::vector<QStringList> rows{{QObject::tr("Setting"), QObject::tr("Value")}};
  const nlohmann::json flat = j.flatten();  // items() of a temporary would dangle
  for (const auto& [key, value] : flat.items())
    rows.push_back(
        {esc(key.substr(1)), esc(value.is_string() ? value.get<std::string>() : value.dump())});
  return section(QObject::tr("Configuration")) + table(rows);
}

QString epochs_html(const std::vector<store::EpochRecord>& epochs) {
  if (epochs.empty()) return {};
  std::vector<QStringList> rows{{QObject::tr("Epoch"), QObject::tr("Train loss"),
                                 QObject::tr("Train top-1"), QObject::tr("Val loss"),
                                 QObject::tr("Val top-1"), QObject::tr("Val top-5"),
                                 QObject::tr("Images/s"), QObject::tr("Time")}};
  for (const store::EpochRecord& e : epochs)
    rows.push_back({e.partial() ? QObject::tr("%1 (cut short: %2 of %3 steps)")
                                      .arg(e.epoch + 1)
                                      .arg(e.steps)
                                      .arg(e.batches)
                                : QString::number(e.epoch + 1),
                    loss_text(e.train_loss), percent_text(e.train_top1), loss_text(e.val_loss),
                    percent_text(e.val_top1), percent_text(e.val_top5),
                    QString::number(e.images_per_s, 'f', 0), run_duration_text(e.seconds)});
  QString out = section(QObject::tr("Epochs")) + table(rows);

  const auto with_classes = std::find_if(
      epochs.rbegin(), epochs.rend(), [](const auto& e) { return !e.per_class_accuracy.empty(); });
  if (with_classes == epochs.rend()) return out;
  out += section(QObject::tr("Per-class accuracy (epoch %1)").arg(with_classes->epoch + 1));
  QStringList head{QObject::tr("Class")}, accuracy{QObject::tr("Accuracy")};
  for (size_t c = 0; c < with_classes->per_class_accuracy.size(); ++c) {
    head << QString::number(c);
    accuracy << percent_text(with_classes->per_class_accuracy[c]);
  }
  out += table({head, accuracy});
  const int64_t k = store::confusion_classes(with_classes->confusion.size());
  // Larger matrices are unreadable as text; the CLI stops at the same size.
  if (k <= 0 || k > 20) return out;
  out += section(QObject::tr("Confusion matrix (epoch %1; row: true class, column: predicted)")
                     .arg(with_classes->epoch + 1));
  std::vector<QStringList> m{{QObject::tr("true \\ pred")}};
  for (int64_t c = 0; c < k; ++c) m[0] << QString::number(c);
  for (int64_t r = 0; r < k; ++r) {
    QStringList row{QString::number(r)};
    for (int64_t c = 0; c < k; ++c)
      row << QString::number(with_classes->confusion[static_cast<size_t>(r * k + c)]);
    m.push_back(row);
  }
  return out + table(m);
}

}  // namespace

QString run_details_html(const store::RunStore& store, int64_t run) {
  const store::RunDetail d = store.run(run);
  const store::RunSummary& r = d.summary;
  QString html =
      QStringLiteral("<h3>%1</h3>")
          .arg(
              QObject::tr("Run %1: %2 (%3)").arg(r.id).arg(esc(r.name), run_status_text(r.status)));
  QString times = QObject::tr("Started %1").arg(run_local_time(r.started_at));
  if (r.ended_at) times += QObject::tr(", ended %1").arg(run_local_time(*r.ended_at));
  times += QStringLiteral(" (%1)").arg(run_duration_text(run_seconds(r)));
  html += QStringLiteral("<p>%1<br>").arg(times);
  html += QObject::tr("Devices %1 (world size %2), %3, seed %4<br>")
              .arg(esc(r.devices))
              .arg(r.world_size)
              .arg(esc(r.precision))
              .arg(r.seed);
  html += QObject::tr("Engine %1 (git %2), written by pid %3 on %4</p>")
              .arg(esc(d.engine_version), esc(d.git_commit))
              .arg(d.writer_pid)
              .arg(esc(d.writer_host));
  if (!d.error.empty())
    html += QStringLiteral("<p style='color:#c62828'><b>%1</b> %2</p>")
                .arg(QObject::tr("Error:"), esc(d.error));
  if (!r.tags.empty()) {
    QStringList tags;
    for (const std::string& t : r.tags) tags << esc(t);
    html +=
        QStringLiteral("<p>%1 %2</p>").arg(QObject::tr("Tags:"), tags.join(QStringLiteral(", ")));
  }
  const std::vector<store::EpochRecord> epochs = store.epochs(run);
  // Whole epochs, and how far into the next a stop cut.
  QString epochs_done = QString::number(r.epochs);
  if (!epochs.empty() && epochs.back().partial())
    epochs_done = QObject::tr("%1 and %2 of %3 steps of epoch %4")
                      .arg(r.epochs)
                      .arg(epochs.back().steps)
                      .arg(epochs.back().batches)
                      .arg(epochs.back().epoch + 1);
  html += section(QObject::tr("Final metrics"));
  html += table({{QObject::tr("Steps"), QObject::tr("Epochs"), QObject::tr("Train loss"),
                  QObject::tr("Train top-1"), QObject::tr("Val loss"), QObject::tr("Val top-1"),
                  QObject::tr("Val top-5")},
                 {QString::number(r.steps), epochs_done, loss_text(r.final_train_loss),
                  percent_text(r.final_train_top1), loss_text(r.final_val_loss),
                  percent_text(r.final_val_top1), percent_text(r.final_val_top5)}});
  html += epochs_html(epochs);
  html += configuration(d.hyper_json);

  const auto checkpoints = store.checkpoints(run);
  if (!checkpoints.empty()) {
    html += section(QObject::tr("Checkpoints"));
    std::vector<QStringList> rows{{QObject::tr("File"), QObject::tr("After epoch"),
                                   QObject::tr("At step"), QObject::tr("Metrics")}};
    for (const store::CheckpointRecord& c : checkpoints)
      rows.push_back({esc(c.path), c.epoch ? QString::number(*c.epoch) : QString(),
                      c.step ? QString::number(*c.step) : QString(), esc(c.metrics_json)});
    html += table(rows);
  }
  const auto notes = store.notes(run);
  if (!notes.empty()) {
    html += section(QObject::tr("Notes"));
    for (const store::NoteRecord& n : notes)
      html += QStringLiteral("<p><i>%1</i><br>%2</p>")
                  .arg(run_local_time(n.created_at),
                       esc(n.text).replace(QLatin1Char('\n'), QStringLiteral("<br>")));
  }
  return html;
}

}  // namespace tr::gui
