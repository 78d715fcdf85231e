// deepcanvas-dashboard-demo: the dashboard panels on a project file, without
// the editor (for screenshots and trying the panels on their own).
//   deepcanvas-dashboard-demo [project.dcproj] [--train] [--tab N] [--image FILE]...
#include "gui/dashboard_widget.h"
#include "gui/inference_panel.h"
#include "gui/training_panel.h"

#include <deepcanvas/project.h>

#include <QApplication>
#include <QMessageBox>
#include <QTimer>
#include <cstdio>

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("DeepCanvas");
  QStringList args = QApplication::arguments().mid(1);
  QString project =
      QString::fromStdString(dc::resource_dir()) + "/sample_data/sample_project.dcproj";
  bool train = false;
  int tab = 1;
  QStringList images;
  for (int i = 0; i < args.size(); ++i) {
    if (args[i] == "--train")
      train = true;
    else if (args[i] == "--tab" && i + 1 < args.size())
      tab = args[++i].toInt();
    else if (args[i] == "--image" && i + 1 < args.size())
      images << args[++i];
    else
      project = args[i];
  }
  std::unique_ptr<dc::gui::ProjectContext> ctx;
  try {
    ctx = dc::gui::ProjectContext::load(project);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  dc::gui::DashboardWidget w(ctx.get());
  w.setWindowTitle("DeepCanvas — " + ctx->projectName());
  w.resize(1580, 980);
  w.setCurrentIndex(tab);
  w.show();
  if (!images.isEmpty()) w.inferencePanel()->openPaths(images);
  if (train) QTimer::singleShot(300, w.trainingPanel(), &dc::gui::TrainingPanel::startTraining);
  return QApplication::exec();
}
