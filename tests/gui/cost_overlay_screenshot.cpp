// Renders docs/images/cost-overlay.png: the sample project with View → Cost
// Overlay on (share of step time, edge labels with the bytes at the batch)
// and the Model Summary's advice line, at 1280×720:
//   QT_QPA_PLATFORM=offscreen build/bin/cost_overlay_screenshot docs/images
// Not a test: it only draws.
#include "gui/main_window.h"
#include "gui/summary_panel.h"
#include "widgets/cost_overlay.h"
#include "widgets/node_view.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QScrollBar>
#include <QStandardPaths>
#include <QTest>

int main(int argc, char** argv) {
  QStandardPaths::setTestModeEnabled(true);  // no settings from a real session
  QApplication app(argc, argv);
  QApplication::setOrganizationName("DeepCanvasScreenshots");
  const QString out = argc > 1 ? argv[1] : "docs/images";
  QDir().mkpath(out);
  dc::gui::MainWindow w;
  w.resize(1280, 720);
  w.show();
  QTest::qWait(50);
  if (!w.openFile(QStringLiteral(DC_SOURCE_DIR "/sample_data/sample_project.dcproj"))) return 1;
  w.action("actionAutoLayout")->trigger();
  w.action("actionEdgeBytesBatch")->trigger();
  w.action("actionCostOverlay")->setChecked(true);
  QElapsedTimer t;
  t.start();
  while ((!w.costOverlay()->idle() || !w.summary()->adviceIdle()) && t.elapsed() < 30000)
    QTest::qWait(20);
  w.action("actionFit")->trigger();
  w.action("actionZoomOut")->trigger();  // room for the legend below the layers
  QScrollBar* v = w.view()->verticalScrollBar();
  v->setValue(v->value() + 50);
  QTest::qWait(100);
  return w.grab().save(out + "/cost-overlay.png") ? 0 : 1;
}
