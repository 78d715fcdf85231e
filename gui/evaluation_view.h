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
  // a double-click or Enter on it does), with the dataset and weights the
  // listing came from; false (the reason on the cell's line) when there is
  // no such row, the samples are not pictures, or its file cannot be read.
  bool inspect(int row);

 signals:
  void samplesListed(int count);
  void inspectRequested(const InspectedSample& sample);

 private:
  void list(int t, int p);
  // Said under a listing once a newer epoch's checkpoint has arrived.
  QString staleNote() const;

  ProjectContext* ctx_;
  widgets::ConfusionMatrixWidget* matrix_;
  widgets::ImageGrid* grid_;
  QLabel* title_;
  QLabel* cell_label_;
  // Whether the listed samples are pictures the Inference tab can show.
  bool inspectable() const;

  QString checkpoint_, predicted_for_;
  std::vector<SamplePrediction> preds_, listed_;
  // What preds_ were computed from: the test set and the checkpoint's
  // weights as read then (a later epoch rewrites the file).
  std::shared_ptr<Dataset> preds_ds_;
  std::shared_ptr<const ModelWeights> preds_weights_;
  std::thread worker_;
  int pending_t_ = -1, pending_p_ = -1;
};

}  // namespace dc::gui
