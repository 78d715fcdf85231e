#pragma once
// File → Export for Deployment…: the network in fp32, fp16 and int8 side by
// side (ONNX file size, test accuracy, CPU latency at batch 1 on one thread
// and at the project's batch on every core), measured here on a worker
// thread that can be cancelled, then the chosen model written as ONNX. The
// int8 model is the engine's (deepcanvas/quantize.h): calibrated on the
// training set, its QDQ arithmetic simulated on the test set, and refused
// above the maximum drop, as `deepcanvas-cli export --precision int8` does.
// "Fine-tune for int8 (QAT)…" then trains that int8 model with its
// arithmetic in the loop (deepcanvas/qat.h, as `train --qat`), on the same
// worker, and the fine-tuned model replaces it for the int8 export.
#include "gui/project_context.h"

#include <deepcanvas/graph.h>
#include <deepcanvas/quantize.h>

#include <QDialog>
#include <QString>
#include <array>
#include <atomic>
#include <memory>
#include <thread>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace dc::gui {

class DeployDialog : public QDialog {
  Q_OBJECT
 public:
  enum class Format { Fp32 = 0, Fp16 = 1, Int8 = 2 };
  enum Column { kPrecision, kSize, kAccuracy, kLatency1, kLatencyBatch, kColumns };

  struct Options {
    CalibrationMethod method = CalibrationMethod::Percentile;
    double percentile = 99.99;  // the share of |x| kept, with Percentile
    int calibrate = 256;        // training samples
    double max_drop = 1.0;      // points
    bool preprocessing = false;
    int test_samples = 0;  // 0: the whole test set
  };

  // What a measurement found; sizes and latencies are 0 where not measured.
  struct Result {
    std::array<int64_t, 3> bytes{};
    std::array<double, 3> latency1{}, latency_batch{};  // seconds per forward
    QString int8_latency_note;                          // what measured the int8 latency
    int64_t batch = 1;
    int threads = 1;
    QuantAccuracy accuracy;
    int64_t calibrated = 0;
    Options options;  // those it was measured with
    std::shared_ptr<const QuantizedNetwork> quantized;
    // > 0: `quantized` was fine-tuned for int8 (QAT) for these epochs;
    // accuracy.int8 is then the fine-tuned model's, ptq_int8 the
    // calibrated one's it started from.
    int qat_epochs = 0;
    double ptq_int8 = 0;
  };

  explicit DeployDialog(ProjectContext* ctx, QWidget* parent = nullptr);
  ~DeployDialog() override;  // cancels and joins the worker

  Options options() const;
  void setOptions(const Options& o);  // also remembered (QSettings)

  // Starts measuring (calibration, accuracy, latency) unless blocked or
  // running; false with the reason in statusText() when it cannot start.
  bool measure();
  void cancel();
  // Fine-tunes the measured int8 model (quantization-aware training on the
  // CPU, as `train --qat`): `epochs` (0: 3) at a tenth of the project's
  // learning rate, `steps_per_epoch` (0: all) batches each, with progress
  // and Cancel; the result replaces the int8 model Export writes. False
  // with the reason in statusText() when it cannot start.
  bool fineTuneInt8(int epochs = 0, int64_t steps_per_epoch = 0);
  // From measure() until its result (or cancellation) has been shown.
  bool running() const { return busy_; }
  // A reason measuring must not start now (training shares the cores and
  // the engine's thread count); empty: it may.
  void setBlocked(const QString& why);
  bool hasResult() const { return have_; }
  const Result& result() const { return result_; }
  // The int8 model's drop above the maximum: the engine's gate, refused
  // with its advice; empty when int8 may be exported.
  QString int8Refusal() const;
  // The engine's gate advice in the dialog's words (its controls, no CLI
  // flags).
  static QString gateAdvice(CalibrationMethod used, int64_t calibrate);

  // Writes the model to path (asked for when empty). False with the
  // reason in statusText() (and an error box unless quiet handling is set).
  bool exportModel(Format f, QString path = {});
  // Shows errors in the status line only, no message box (tests).
  void setQuietErrors(bool quiet) { quiet_ = quiet; }

  QString statusText() const;
  QTableWidget* table() const { return table_; }
  QProgressBar* progress() const { return progress_; }
  QPushButton* measureButton() const { return measure_; }
  QPushButton* cancelButton() const { return cancel_; }
  QPushButton* qatButton() const { return qat_; }
  QPushButton* exportButton(Format f) const { return export_[size_t(f)]; }

 signals:
  void measured(bool ok);
  void fineTuned(bool ok);

 private:
  struct Job;
  // Why a measurement or an export cannot run: no dataset, no trained
  // weights; empty when fine.
  QString missingInputs(bool need_dataset) const;
  // The opening status: what is missing, or that Measure can run.
  void showReadiness();
  void onProgress(int permille, const QString& stage);
  void onDone(bool ok, bool cancelled, const QString& error, Result r);
  void onQatDone(bool ok, bool cancelled, const QString& error, Result r);
  // The common end of a measurement or a fine-tuning run: on failure the
  // progress reset and the status (cancelled_text, or failed_text as an
  // error), then the table and the controls.
  void finishRun(bool ok, bool cancelled, const QString& cancelled_text,
                 const QString& failed_text);
  void fillTable();
  void updateControls();
  void markStale();
  void setStatus(const QString& text, bool error);
  void saveOptions();

  ProjectContext* ctx_;
  std::thread worker_;
  std::atomic<bool> cancel_flag_{false};
  Graph measured_graph_;  // the network the result describes
  Result result_;
  bool have_ = false, stale_ = false, quiet_ = false, busy_ = false;
  QString blocked_;

  QComboBox* method_;
  QSpinBox *calibrate_, *test_samples_;
  QDoubleSpinBox *percentile_, *max_drop_;
  QCheckBox* preprocessing_;
  QLabel* status_;
  QProgressBar* progress_;
  QTableWidget* table_;
  QPushButton *measure_, *cancel_, *qat_;
  std::array<QPushButton*, 3> export_{};
};

}  // namespace dc::gui
