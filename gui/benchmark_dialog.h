#pragma once
// Help → Benchmark this machine…: the advisor's CPU micro-benchmark
// (advisor/device_bench.h) beside the GPU catalog's datasheet figures. The
// cached result shows at once; Re-measure (or the first visit) runs the
// benchmark on a worker thread with a busy indicator. Closing the dialog
// while it runs is safe: the measurement finishes in the background and
// lands in the cache (written atomically), which the next visit shows.
#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/advisor/gpu_catalog.h>
#include <deepcanvas/backend.h>

#include <QDialog>

class QCheckBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QTimer;

namespace dc::gui {

class BenchmarkDialog : public QDialog {
  Q_OBJECT
 public:
  explicit BenchmarkDialog(QWidget* parent = nullptr);

  // Starts a measurement unless one is running (in this dialog or one
  // closed earlier) or blocked (setBlocked).
  void measure();
  // A reason the benchmark must not run now (a training run shares the
  // cores and the engine's thread pool); empty: it may.
  void setBlocked(const QString& why);
  bool measuring() const;
  // Whether a measurement runs in this process (any dialog, open or closed).
  static bool anyMeasuring();
  // Joins the measurement's worker, if any (quitting does this too).
  static void waitForMeasurement();
  bool hasResult() const { return have_; }
  const advisor::DeviceBench& result() const { return bench_; }
  QTableWidget* table() const { return table_; }
  QPushButton* measureButton() const { return measure_; }
  QLabel* statusLabel() const { return status_; }
  QCheckBox* allGpusBox() const { return all_; }
  // The catalog GPUs shown when "all" is off.
  static QStringList featuredGpus();

 private:
  void loadCached();
  void poll();
  void fillTable();
  void updateControls();

  QLabel* status_;
  QProgressBar* busy_;
  QTableWidget* table_;
  QPushButton* measure_;
  QCheckBox* all_;
  QTimer* poll_;
  QString blocked_;
  advisor::DeviceBench bench_;
  bool have_ = false;
  std::vector<advisor::GpuSpec> catalog_;
  std::vector<GpuInfo> gpus_;  // this machine's CUDA GPUs (none without driver or plugin)
  QString catalog_error_;
};

}  // namespace dc::gui
