// View → Cost Overlay: the editor's nodes tinted by their share of the
// predicted step time or memory (widgets/cost_overlay.h), with its metric
// and edge-label choices, remembered across sessions.
#include "gui/main_window.h"
#include "gui/project_context.h"
#include "gui/summary_panel.h"
#include "gui/training_panel.h"
#include "widgets/cost_overlay.h"
#include "widgets/graph_editor.h"
#include "widgets/node_scene.h"
#include "widgets/node_view.h"

#include <QAction>
#include <QActionGroup>
#include <QMenu>
#include <QSettings>

namespace dc::gui {

void MainWindow::createCostOverlay() {
  cost_overlay_ = new widgets::CostOverlay(editor_->model(), editor_->scene(), this);
  new widgets::CostLegend(cost_overlay_, view_);  // a child of the view, top left
  QSettings s;
  QAction* on = makeAction("actionCostOverlay", tr("&Cost Overlay"),
                           QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C), "cost");
  on->setCheckable(true);
  on->setStatusTip(
      tr("Colour each layer by its share of the predicted step time or training memory"));
  connect(on, &QAction::toggled, this, [this](bool checked) {
    cost_overlay_->setEnabled(checked);
    QSettings().setValue("editor/costOverlay", checked);
  });

  auto group = [this](QList<std::pair<QString, QString>> items, const QString& key, int current,
                      const std::function<void(int)>& set) {
    auto* g = new QActionGroup(this);
    int i = 0;
    for (const auto& [name, text] : items) {
      QAction* a = makeAction(name, text, {});
      a->setCheckable(true);
      a->setChecked(i == current);
      g->addAction(a);
      connect(a, &QAction::triggered, this, [key, i, set] {
        set(i);
        QSettings().setValue(key, i);
      });
      ++i;
    }
  };
  const int metric = std::clamp(s.value("editor/costMetric", 0).toInt(), 0, 1);
  group(
      {{"actionCostTime", tr("Share of Step &Time")}, {"actionCostMemory", tr("Share of &Memory")}},
      "editor/costMetric", metric, [this](int i) {
        cost_overlay_->setMetric(i == 0 ? widgets::CostMetric::Time : widgets::CostMetric::Memory);
      });
  const int bytes = std::clamp(s.value("editor/costEdgeBytes", 0).toInt(), 0, 2);
  group({{"actionEdgeBytesOff", tr("Edge Labels: &Shape Only")},
         {"actionEdgeBytesSample", tr("Edge Labels: Bytes per &Sample")},
         {"actionEdgeBytesBatch", tr("Edge Labels: Bytes at the &Batch")}},
        "editor/costEdgeBytes", bytes,
        [this](int i) { cost_overlay_->setEdgeBytes(widgets::EdgeBytes(i)); });
  cost_overlay_->setMetric(metric == 0 ? widgets::CostMetric::Time : widgets::CostMetric::Memory);
  cost_overlay_->setEdgeBytes(widgets::EdgeBytes(bytes));
  on->setChecked(s.value("editor/costOverlay", false).toBool());

  // The figures follow the project's batch, optimizer and dataset.
  auto sync = [this] {
    const TrainConfig c = training_panel_->config();
    cost_overlay_->setBatch(c.batch);
    cost_overlay_->setOptimizer(c.optimizer);
    summary_->setTraining(c.optimizer, ctx_->hasDataset() ? ctx_->trainSet()->size() : 0,
                          ctx_->residentBytes());
  };
  connect(training_panel_, &TrainingPanel::settingsChanged, this, sync);
  connect(ctx_, &ProjectContext::datasetChanged, this, sync);
  connect(ctx_, &ProjectContext::projectChanged, this, sync);
  sync();
}

void MainWindow::addCostOverlayMenu(QMenu* view) {
  QMenu* m = view->addMenu(tr("Cost Overla&y Shows"));
  for (const char* n : {"actionCostTime", "actionCostMemory", "", "actionEdgeBytesOff",
                        "actionEdgeBytesSample", "actionEdgeBytesBatch"}) {
    if (!*n)
      m->addSeparator();
    else
      m->addAction(action(n));
  }
}

}  // namespace dc::gui
