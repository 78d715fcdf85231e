// deepcanvas-dashboard-demo: the dashboard panels on a project file, without
// the editor, for trying the panels on their own and for the screenshots in
// docs/images (--grab renders each panel at the right moment of a run).
//
//   deepcanvas-dashboard-demo [project.dcproj] [--train] [--epochs N] [--steps N]
//                             [--tab N] [--image FILE]... [--grab DIR]
#include "gui/dashboard_widget.h"
#include "gui/dataset_panel.h"
#include "gui/evaluation_view.h"
#include "gui/inference_panel.h"
#include "gui/training_panel.h"
#include "widgets/confusion_matrix_widget.h"

#include <deepcanvas/project.h>

#include <QApplication>
#include <QTabWidget>
#include <QTimer>
#include <cstdio>

namespace {

// Renders the window (not the screen) so the images do not depend on a
// window manager; used under Xvfb for docs/images.
void grab(QWidget* w, const QString& path) {
  QApplication::processEvents();
  if (!w->window()->grab().save(path))
    std::fprintf(stderr, "could not save %s\n", qPrintable(path));
}

void script_screenshots(dc::gui::DashboardWidget& w, const QString& dir, QStringList images) {
  using namespace dc::gui;
  TrainingPanel* tp = w.trainingPanel();
  QObject::connect(tp->session(), &TrainingSession::epochEnded, &w, [&w, tp, dir](const auto& e) {
    if (e.epoch != 1) return;
    QTimer::singleShot(1500, &w, [&w, tp, dir] {
      grab(&w, dir + "/dashboard-training.png");
      tp->plotTabs()->setCurrentIndex(1);
      auto* view = tp->evaluation();
      const auto& m = view->matrixWidget()->matrix();
      int bt = 0, bp = 1;
      for (size_t i = 0; i < m.size(); ++i)
        for (size_t j = 0; j < m.size(); ++j)
          if (i != j && m[i][j] > m[size_t(bt)][size_t(bp)]) bt = int(i), bp = int(j);
      QObject::connect(
          view, &EvaluationView::samplesListed, &w,
          [&w, tp, dir] {
            grab(&w, dir + "/dashboard-evaluation.png");
            tp->plotTabs()->setCurrentIndex(0);
          },
          Qt::SingleShotConnection);
      view->showCell(bt, bp);
    });
  });
  QObject::connect(tp, &TrainingPanel::weightsReady, &w, [&w, dir, images] {
    QTimer::singleShot(500, &w, [&w, dir, images] {
      grab(&w, dir + "/dashboard-finished.png");
      w.setCurrentWidget(w.inferencePanel());
      w.inferencePanel()->openPaths(images);
      w.inferencePanel()->selectImage(0);
      grab(&w, dir + "/inference.png");
      w.setCurrentWidget(w.datasetPanel());
      dc::AugmentConfig o;
      o.flip = true;
      o.crop_padding = 3;
      o.rotate = 15;
      o.brightness = 0.3;
      w.datasetPanel()->setAugmentOptions(o);
      grab(&w, dir + "/dataset.png");
      QApplication::quit();
    });
  });
}

}  // namespace

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("DeepCanvas");
  QStringList args = QApplication::arguments().mid(1);
  QString project =
      QString::fromStdString(dc::resource_dir()) + "/sample_data/sample_project.dcproj";
  bool train = false;
  int tab = 1, epochs = 0, steps = -1;
  QStringList images;
  QString grab_dir;
  for (int i = 0; i < args.size(); ++i) {
    const bool more = i + 1 < args.size();
    if (args[i] == "--train")
      train = true;
    else if (args[i] == "--tab" && more)
      tab = args[++i].toInt();
    else if (args[i] == "--epochs" && more)
      epochs = args[++i].toInt();
    else if (args[i] == "--steps" && more)
      steps = args[++i].toInt();
    else if (args[i] == "--image" && more)
      images << args[++i];
    else if (args[i] == "--grab" && more)
      grab_dir = args[++i];
    else
      project = args[i];
  }
  std::unique_ptr<dc::gui::ProjectContext> ctx;
  try {
    ctx = dc::gui::ProjectContext::load(project);
    ctx->loadDataset({});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  dc::gui::DashboardWidget w(ctx.get());
  w.setWindowTitle("DeepCanvas — " + ctx->projectName());
  w.resize(1580, 980);
  w.setCurrentIndex(tab);
  if (epochs > 0) w.trainingPanel()->setEpochs(epochs);
  if (steps >= 0) w.trainingPanel()->setStepsPerEpochLimit(steps);
  w.show();
  if (!grab_dir.isEmpty()) {
    script_screenshots(w, grab_dir, images);
    train = true;
  } else if (!images.isEmpty()) {
    w.inferencePanel()->openPaths(images);
  }
  if (train) QTimer::singleShot(300, w.trainingPanel(), &dc::gui::TrainingPanel::startTraining);
  return QApplication::exec();
}
