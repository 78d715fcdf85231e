#pragma once
// Evaluation after each epoch: the confusion matrix on the test set (or the
// validation split) and, for a clicked cell, the samples behind it sorted by
// the network's confidence, so the most confident mistakes come first.
// Per-sample predictions are computed from the latest checkpoint on a worker
// thread, never from the weights the trainer is updating.
#include "gui/project_context.h"

#include <deepcanvas/probe.h>

#include <QWidget>
#include <thread>
#include <vector>

class QLabel;

namespace dc::widgets {
class ConfusionMatrixWidget;
class ImageGrid;
}  // namespace dc::widgets

namespace dc::gui {

class EvaluationView : public QWidget {
  Q_OBJECT
 public:
  explicit EvaluationView(ProjectContext* ctx, QWidget* parent = nullptr);
  ~EvaluationView() override;

  void setConfusion(const std::vector<std::vector<int64_t>>& m, int epoch);
  // The checkpoint whose weights explain the matrix (last.safetensors).
  void setCheckpoint(const QString& path);
  // Lists the samples of cell (true, predicted); asynchronous when the
  // predictions for the current checkpoint are not computed yet.
  void showCell(int true_class, int predicted);
  // Back to an empty view (a new run): no matrix, samples or cell text.
  void clear();
  // The line above the samples: the prompt, or the cell listed and why.
  QString cellText() const;

  widgets::ConfusionMatrixWidget* matrixWidget() const { return matrix_; }
  widgets::ImageGrid* samplesGrid() const { return grid_; }
  // Indices (into the evaluated set) of the samples listed, in order.
  const std::vector<SamplePrediction>& listed() const { return listed_; }
  // Asks for listed sample `row` to be inspected in the Inference tab (what
  // a double-click or Enter on it does); false when there is no such row
  // or its bytes cannot be read.
  bool inspect(int row);

 signals:
  void samplesListed(int count);
  // A listed sample to inspect: its name (the file, or "test #N"),
  // bytes at the dataset's sample shape, true class, and the checkpoint
  // whose predictions the listing shows.
  void inspectRequested(const QString& name, const std::vector<uint8_t>& chw, int true_class,
                        const QString& checkpoint);

 private:
  void list(int t, int p);

  ProjectContext* ctx_;
  widgets::ConfusionMatrixWidget* matrix_;
  widgets::ImageGrid* grid_;
  QLabel* title_;
  QLabel* cell_label_;
  QString checkpoint_, predicted_for_;
  std::vector<SamplePrediction> preds_, listed_;
  std::thread worker_;
  int pending_t_ = -1, pending_p_ = -1;
};

}  // namespace dc::gui
