#include "gui/dashboard_widget.h"

#include "gui/dataset_panel.h"
#include "gui/evaluation_view.h"
#include "gui/inference_panel.h"
#include "gui/training_panel.h"

namespace dc::gui {

DashboardWidget::DashboardWidget(ProjectContext* ctx, QWidget* parent)
    : QTabWidget(parent),
      dataset_(new DatasetPanel(ctx, this)),
      training_(new TrainingPanel(ctx, this)),
      inference_(new InferencePanel(ctx, this)) {
  addTab(dataset_, tr("Dataset"));
  addTab(training_, tr("Training"));
  addTab(inference_, tr("Inference"));
  // Problems found at Start usually concern the data: show them where the
  // data is chosen as well (the training panel's banner has them too).
  connect(training_, &TrainingPanel::problemsFound, this, [this] { setCurrentWidget(training_); });
  // A sample double-clicked under the confusion matrix, as in the main window.
  connect(training_->evaluation(), &EvaluationView::inspectRequested, this,
          [this](const InspectedSample& sample) {
            if (inference_->inspectSample(sample)) setCurrentWidget(inference_);
          });
}

}  // namespace dc::gui
