#pragma once
// The three dashboard panels (Dataset, Training, Inference) in tabs over one
// ProjectContext, for a host that wants all of them in one place (the demo
// executable, or MainWindow as a single dock). Each panel also works alone.
#include "gui/project_context.h"

#include <QTabWidget>

namespace dc::gui {

class DatasetPanel;
class TrainingPanel;
class InferencePanel;

class DashboardWidget : public QTabWidget {
  Q_OBJECT
 public:
  explicit DashboardWidget(ProjectContext* ctx, QWidget* parent = nullptr);
  DatasetPanel* datasetPanel() const { return dataset_; }
  TrainingPanel* trainingPanel() const { return training_; }
  InferencePanel* inferencePanel() const { return inference_; }

 private:
  DatasetPanel* dataset_;
  TrainingPanel* training_;
  InferencePanel* inference_;
};

}  // namespace dc::gui
