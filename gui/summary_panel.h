#pragma once
// The model summary: per layer output shape, parameters, MACs and
// activation memory, then totals and the memory a training step needs at
// the project's batch size; with frozen layers, the trainable and frozen
// parameter counts and what freezing saves. Costs come from the engine's Plan, so they are
// the numbers training will actually see; while the graph is invalid the
// table still lists the shapes that are known.
#include <deepcanvas/advisor/advise.h>
#include <deepcanvas/optim.h>

#include <QWidget>

class QBoxLayout;
class QLabel;
class QResizeEvent;
class QSpinBox;
class QTreeWidget;
class QTimer;

namespace dc::widgets {
class GraphModel;
class LatestJob;
}  // namespace dc::widgets

namespace dc::gui {

class SummaryPanel : public QWidget {
  Q_OBJECT
 public:
  explicit SummaryPanel(widgets::GraphModel* model, QWidget* parent = nullptr);

  void setBatch(int64_t batch);
  // What the advice line needs beyond the graph: the optimizer (its state
  // is memory), the training samples per epoch (0: none loaded) and what a
  // GPU run keeps of the datasets on the device (advisor::cuda_resident_bytes).
  void setTraining(const OptimizerConfig& optimizer, int64_t train_samples,
                   int64_t resident_bytes = 0);
  // Recomputes now. Edits call scheduleRefresh(), which coalesces a burst
  // of changes into one recomputation when the event loop is next idle.
  void refresh();
  void scheduleRefresh();

  QTreeWidget* table() const { return table_; }
  const QString& totalsText() const { return totals_text_; }
  // "fits on: … / largest batch: … / epoch on H100 ≈ …", from advise(),
  // computed off the GUI thread after each change; empty until it arrives.
  const QString& adviceText() const { return advice_text_; }
  bool adviceIdle() const;
  // The line for an Advice (the largest batch is the advisor's memory
  // model's, the same as batch-fit's and advise's).
  static QString adviceLine(const advisor::Advice& a, bool measured);
  int64_t totalParams() const { return total_params_; }
  // Of the total: what training updates, and what frozen layers hold.
  int64_t trainableParams() const { return trainable_params_; }
  int64_t frozenParams() const { return frozen_params_; }

 signals:
  void nodeActivated(int id);

 private:
  widgets::GraphModel* model_;
  QTreeWidget* table_;
  QLabel* totals_;
  QSpinBox* batch_box_;
  QTimer* timer_;
  QString totals_text_, advice_text_;
  widgets::LatestJob* advice_job_;
  QTimer* bench_watch_;  // runs while the advice uses default device figures
  QString bench_stamp_;  // the benchmark cache the advice was computed with
  OptimizerConfig optimizer_;
  int64_t train_samples_ = 0;
  int64_t resident_bytes_ = 0;
  void requestAdvice();
  void showTotals();
  // Keeps the totals at least as tall as their wrapped text at the label's
  // width, so a short dock makes the table give way (or the dock grow)
  // rather than cut the last line off.
  void fitTotals();
  bool eventFilter(QObject* watched, QEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  // Totals beside the table (true) or under it.
  void arrange(bool beside);
  static constexpr int kBesideWidth = 1000;
  QBoxLayout* lay_;

  int64_t batch_ = 64;
  int64_t total_params_ = 0;
  int64_t trainable_params_ = 0, frozen_params_ = 0;
};

}  // namespace dc::gui
