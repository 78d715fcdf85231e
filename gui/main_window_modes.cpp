// MainWindow's modes: the model editor, the dashboard's Dataset, Training
// and Inference panels and the Experiments tab (sweeps) as tabs of the central area, over one
// ProjectContext that follows the editor. The editor's docks belong to the Model tab; the other
// tabs need the width for their plots and images, so the docks step aside there and come back as
// they were.
#include "gui/dataset_panel.h"
#include "gui/evaluation_view.h"
#include "gui/experiments_panel.h"
#include "gui/inference_panel.h"
#include "gui/main_window.h"

#include "gui/deploy_dialog.h"

#include "gui/benchmark_dialog.h"
#include "gui/project_context.h"
#include "gui/training_panel.h"
#include "widgets/graph_editor.h"
#include "widgets/graph_model.h"
#include "widgets/node_view.h"

#include <QAction>
#include <QDockWidget>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollArea>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QUndoStack>

namespace dc::gui {

void MainWindow::createModes() {
  ctx_ = new ProjectContext(Project{}, this);
  modes_ = new QTabWidget(this);
  modes_->setObjectName("modes");
  modes_->setDocumentMode(true);
  modes_->setTabPosition(QTabWidget::North);
  dataset_panel_ = new DatasetPanel(ctx_, modes_);
  training_panel_ = new TrainingPanel(ctx_, modes_);
  // The benchmark would measure a machine busy with the run, and the run
  // would share its cores: both would be off.
  training_panel_->setStartBlocker([this] {
    if (deploy_ && deploy_->running())
      return tr(
          "Export for Deployment is measuring the models: start the run when it has "
          "finished, or cancel it there.");
    return benchmarkMeasuring()
               ? tr("The machine benchmark (Help → Benchmark This Machine) is measuring: start "
                    "the run when it has finished, in a few seconds.")
               : QString();
  });
  // "Use" in the LR finder and the batch hint's Apply are undoable edits.
  training_panel_->setUndoStack(editor_->undoStack());
  // So is the choice of a dataset (recorded in the project).
  dataset_panel_->setUndoStack(editor_->undoStack());
  inference_panel_ = new InferencePanel(ctx_, modes_);
  experiments_panel_ = new ExperimentsPanel(ctx_, modes_);
  experiments_panel_->setStartBlocker([this] {
    if (deploy_ && deploy_->running())
      return tr(
          "Export for Deployment is measuring the models: start the sweep when it has "
          "finished, or cancel it there.");
    return benchmarkMeasuring()
               ? tr("The machine benchmark (Help → Benchmark This Machine) is measuring: start "
                    "the sweep when it has finished, in a few seconds.")
               : QString();
  });
  // Trials train the project as edited, with the Training tab's settings.
  experiments_panel_->setProjectSource([this] { return project(); });
  experiments_panel_->setApplier([this](const std::vector<BestValue>& v, const QString& what) {
    return applySweepValues(v, what);
  });
  experiments_panel_->setUndoStack(editor_->undoStack());  // where the applier pushes
  // The dashboard pages need more room than the canvas; in a scroll area
  // their minimum size stays theirs instead of squeezing the editor's docks.
  auto scrolled = [this](QWidget* page) {
    auto* area = new QScrollArea(modes_);
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    area->setWidget(page);
    return area;
  };
  modes_->addTab(view_, tr("Model"));
  modes_->addTab(scrolled(dataset_panel_), tr("Dataset"));
  modes_->addTab(scrolled(training_panel_), tr("Training"));
  modes_->addTab(scrolled(inference_panel_), tr("Inference"));
  modes_->addTab(experiments_panel_, tr("Experiments"));
  setCentralWidget(modes_);

  connect(modes_, &QTabWidget::currentChanged, this, &MainWindow::modeChanged);
  // Every structural edit reaches the panels (moves change no shapes and are
  // not sent); they rebuild what depends on the graph lazily.
  connect(editor_->model(), &widgets::GraphModel::shapesChanged, this, &MainWindow::syncContext);
  connect(training_panel_, &TrainingPanel::settingsChanged, this, &MainWindow::updateTitle);
  connect(dataset_panel_, &DatasetPanel::settingsChanged, this, &MainWindow::updateTitle);
  // The Dataset tab's "Use a 3×64×64 Input": an edit of the network (undoable),
  // after which the panel reads the pictures again at the new shape.
  connect(dataset_panel_, &DatasetPanel::inputShapeRequested, this,
          [this](const std::vector<int64_t>& shape) {
            const std::vector<NodeId> inputs = editor_->graph().inputs();
            QString why = tr("the network has %1 Input layers, not one").arg(inputs.size());
            if (inputs.size() != 1 || !editor_->setAttr(inputs.front(), "shape", shape, &why))
              reportError(tr("Could not change the Input's shape: %1").arg(why));
          });
  // A sample double-clicked under the confusion matrix: why the network
  // thought so, in the Inference tab (saliency, top 5, activations).
  connect(training_panel_->evaluation(), &EvaluationView::inspectRequested, this,
          [this](const InspectedSample& sample) {
            if (inference_panel_->inspectSample(sample))
              showMode(Mode::Inference);
            else
              statusBar()->showMessage(inference_panel_->messageText(), 10000);
          });
  // Problems found at Start usually concern the data: show them.
  connect(training_panel_, &TrainingPanel::problemsFound, this,
          [this] { showMode(Mode::Training); });
  // How a run ended and whose weights the Inference tab uses now.
  connect(training_panel_, &TrainingPanel::message, this,
          [this](const QString& text) { statusBar()->showMessage(text, 10000); });
  // The tab shows its own message; the status bar tells it from elsewhere.
  connect(experiments_panel_, &ExperimentsPanel::message, this, [this](const QString& text) {
    if (mode() != Mode::Experiments) statusBar()->showMessage(text, 10000);
  });
}

void MainWindow::createModeActions(QMenu* view) {
  view->addSeparator();
  const std::pair<Mode, QString> modes[] = {{Mode::Model, tr("&Model")},
                                            {Mode::Dataset, tr("&Dataset")},
                                            {Mode::Training, tr("&Training")},
                                            {Mode::Inference, tr("&Inference")},
                                            {Mode::Experiments, tr("&Experiments")}};
  int key = Qt::Key_1;
  for (const auto& [m, text] : modes) {
    QAction* a = view->addAction(text);
    a->setObjectName(QStringLiteral("actionMode%1").arg(int(m)));
    a->setShortcut(QKeySequence(Qt::CTRL | Qt::Key(key++)));
    connect(a, &QAction::triggered, this, [this, m = m] { showMode(m); });
  }
}

void MainWindow::showMode(Mode m) {
  modes_->setCurrentIndex(int(m));
}

MainWindow::Mode MainWindow::mode() const {
  return Mode(modes_->currentIndex());
}

void MainWindow::modeChanged(int index) {
  setDocksForModel(index == int(Mode::Model));
  // The canvas' view actions would act on a canvas that is not shown (Fit
  // may even lay the network out anew): only on the Model tab.
  for (const char* n :
       {"actionZoomIn", "actionZoomOut", "actionActualSize", "actionFit", "actionAutoLayout"})
    if (QAction* a = action(n)) a->setEnabled(index == int(Mode::Model));
}

void MainWindow::setDocksForModel(bool model) {
  if (model == docks_for_model_) return;
  docks_for_model_ = model;
  // Of docks tabbed together the last one shown ends on top: the tab that
  // was current is raised again (Problems hid the Model Summary).
  QStringList on_top;
  if (!model)
    for (const QTabBar* tb : findChildren<QTabBar*>(Qt::FindDirectChildrenOnly))
      if (tb->count() > 0) on_top << tb->tabText(tb->currentIndex());
  for (QDockWidget* d : findChildren<QDockWidget*>()) {
    if (d->property("everyTab").toBool()) continue;  // the PyTorch console follows a run
    if (!model) {
      // isVisible() is false for every dock before the window is first
      // shown (a tab restored at start-up), which would lose them all.
      d->setProperty("shownInModel", d->isVisibleTo(this));
      d->setProperty("onTopInModel", on_top.contains(d->windowTitle()));
      d->hide();
    } else if (d->property("shownInModel").toBool()) {
      d->show();
    }
  }
  if (model)
    for (QDockWidget* d : findChildren<QDockWidget*>())
      if (d->property("onTopInModel").toBool()) d->raise();
}

QByteArray MainWindow::modelLayoutState() {
  // Saved as the other tabs leave them (stepped aside), the docks would come
  // back hidden and the editor without its palette.
  if (docks_for_model_) return saveState(kLayoutVersion);
  setDocksForModel(true);
  QByteArray state = saveState(kLayoutVersion);
  setDocksForModel(false);
  return state;
}

void MainWindow::syncContext() {
  if (!ctx_ || syncing_) return;
  syncing_ = true;
  ctx_->setProject(project());
  syncing_ = false;
}

bool MainWindow::trainingActive() const {
  // A sweep trains too: closing, Run with PyTorch and the benchmark ask or wait.
  return (training_panel_ && training_panel_->session()->active()) ||
         (experiments_panel_ && experiments_panel_->running());
}

bool MainWindow::benchmarkMeasuring() const {
  return BenchmarkDialog::anyMeasuring();
}

bool MainWindow::confirmStopTraining(const QString& why) {
  if (!trainingActive()) return true;
  const bool sweep = experiments_panel_ && experiments_panel_->running();
  const QString q =
      sweep ? tr("A sweep is running in the Experiments tab. Stop it to %1? Resume continues it "
                 "later.")
                  .arg(why)
            : tr("A training run is in progress. Stop it to %1? Its last checkpoint is kept.")
                  .arg(why);
  Answer a;
  if (on_confirm_) {
    a = on_confirm_(q);
  } else {
    // Buttons that say what they do: "Discard" would suggest losing the run.
    QMessageBox box(QMessageBox::Question, tr("Training in progress"), q, QMessageBox::NoButton,
                    this);
    QPushButton* stop = box.addButton(tr("Stop training and %1").arg(why), QMessageBox::AcceptRole);
    box.setDefaultButton(box.addButton(QMessageBox::Cancel));
    box.exec();
    a = box.clickedButton() == stop ? Answer::Discard : Answer::Cancel;
  }
  if (a == Answer::Cancel) return false;
  training_panel_->session()->stopAndWait();
  if (experiments_panel_) experiments_panel_->stopAndWait();  // resumable later
  return true;
}

QString MainWindow::applySweepValues(const std::vector<BestValue>& values, const QString& what) {
  // Check every attribute first, on a copy with the engine's own set_attr
  // (the validator the editor's command runs), so a refused one pushes
  // nothing: no half-applied step on the undo or the redo stack. Settings
  // were checked by the sweep's own parser.
  Graph trial = editor_->graph();
  for (const BestValue& v : values) {
    if (!v.setting.empty()) continue;
    const Node* n = trial.find_by_name(v.node);
    if (!n)
      return tr("the network has no layer named %1 any more").arg(QString::fromStdString(v.node));
    try {
      trial.set_attr(n->id, v.attr, v.value);
    } catch (const std::exception& e) {
      return QString::fromUtf8(e.what());
    }
  }
  // One macro on the editor's stack: Edit > Undo (Ctrl+Z) takes the
  // settings and the attributes back together.
  QUndoStack* undo = editor_->undoStack();
  undo->beginMacro(what);
  QVector<QPair<QString, AttrValue>> settings;
  for (const BestValue& v : values)
    if (!v.setting.empty()) settings.append({QString::fromStdString(v.setting), v.value});
  if (!settings.isEmpty()) training_panel_->applySettings(settings, what);
  QString why;
  for (const BestValue& v : values) {
    if (v.setting.empty() &&
        !editor_->setAttr(editor_->graph().find_by_name(v.node)->id, v.attr, v.value, &why))
      break;
  }
  undo->endMacro();
  if (!why.isEmpty()) {
    // Not reached after the check above; should the editor ever refuse what
    // the engine took, the applied part is at least taken back.
    undo->undo();
    return why;
  }
  updateTitle();
  return {};
}

std::string MainWindow::settingsJson() const {
  if (!training_panel_) return {};
  Project q;
  q.training = training_panel_->config();
  if (ctx_) q.dataset = ctx_->project().dataset;  // the Dataset tab's choice
  return project_to_json(q);
}

}  // namespace dc::gui
