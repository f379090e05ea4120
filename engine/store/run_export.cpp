// SPDX-License-Identifier: GPL-3.0-or-later
#include <renaissance/run_export.h>

#include <cstdio>
#include <optional>
#include <string>

namespace tr::store {

const char* const kCurvesCsvHeader =
    "run_id,kind,epoch,step,loss,top1,lr,loss_scale,images_per_s,val_loss,val_top1,val_top5,"
    "seconds,epoch_steps,epoch_batches";

namespace {

// 17 significant digits: a double read back from the text is the same double.
void put(std::string& line, const std::optional<double>& v) {
  line += ',';
  if (!v) return;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", *v);
  line += buf;
}

void put(std::string& line, double v) {
  put(line, std::optional<double>(v));
}

void put(std::string& line, int64_t v) {
  line += ',';
  line += std::to_string(v);
}

}  // namespace

void write_curves_csv(const RunStore& store, const std::vector<int64_t>& runs, std::ostream& out) {
  for (const int64_t id : runs) (void)store.run(id);  // every id known before a byte is written
  out << kCurvesCsvHeader << '\n';
  std::string line;
  for (const int64_t id : runs) {
    for (const StepRecord& s : store.step_curve(id)) {
      line = std::to_string(id) + ",step";
      put(line, s.epoch);
      put(line, s.step);
      put(line, s.loss);
      put(line, s.top1);
      put(line, s.lr);
      put(line, s.loss_scale);
      put(line, s.images_per_s);
      line += ",,,,,,";  // val_loss, val_top1, val_top5, seconds, epoch_steps, epoch_batches
      out << line << '\n';
    }
    for (const EpochRecord& e : store.epochs(id)) {
      line = std::to_string(id) + ",epoch";
      put(line, e.epoch);
      line += ',';  // step
      put(line, e.train_loss);
      put(line, e.train_top1);
      line += ",,";  // lr, loss_scale
      put(line, e.images_per_s);
      put(line, e.val_loss);
      put(line, e.val_top1);
      put(line, e.val_top5);
      put(line, e.seconds);
      if (e.batches > 0) {
        put(line, e.steps);
        put(line, e.batches);
      } else {
        line += ",,";
      }
      out << line << '\n';
    }
  }
}

}  // namespace tr::store
