#pragma once
// The Training tab's LR finder: runs the engine's range test (lr_find.h) on
// a worker thread, plots loss against learning rate on a log axis with the
// suggestion marked, and offers "Use", which the panel applies through its
// undoable settings path. Non-modal: training settings stay editable.
#include <deepcanvas/graph.h>
#include <deepcanvas/lr_find.h>
#include <deepcanvas/train_config.h>

#include <QDialog>
#include <atomic>
#include <memory>
#include <thread>

class QCustomPlot;
class QLabel;
class QPushButton;

namespace dc::gui {

class LrFinderDialog : public QDialog {
  Q_OBJECT
 public:
  // The test trains a copy of g on a copy of `train` from the network's
  // initial weights (fresh, drawn with c.seed), as `deepcanvas-cli lr-find`
  // and the first step of a training run do: weights a run left behind sit
  // past the steep part of the curve, whose minimum then lies at the start
  // of the range and suggests a uselessly small rate. Nothing of the
  // caller's is touched.
  LrFinderDialog(Graph g, TrainConfig c, std::shared_ptr<const Dataset> train,
                 LrFindOptions options = {}, QWidget* parent = nullptr);
  ~LrFinderDialog() override;  // stops and joins the worker

  void start();
  bool running() const { return worker_.joinable() && !done_; }
  const LrFindResult& result() const { return result_; }
  QCustomPlot* plot() const { return plot_; }
  QPushButton* useButton() const { return use_; }
  QString statusText() const;
  // Which weights the test starts from, as the dialog states it.
  QString weightsText() const;

 signals:
  void finished(bool ok);
  void useRequested(double lr);

 private:
  void onPoint(double lr, double smoothed);
  void onDone(bool ok, const QString& error);
  void drawResult();

  Graph graph_;
  TrainConfig config_;
  std::shared_ptr<const Dataset> train_;
  LrFindOptions options_;
  LrFindResult result_;
  std::thread worker_;
  std::atomic<bool> stop_{false}, done_{false};
  QCustomPlot* plot_;
  QLabel* status_;
  QPushButton *use_, *rerun_;
};

}  // namespace dc::gui
