// Renders the README's screenshots (docs/images/start.png, editor.png,
// templates.png) from the real window, without a display:
//   QT_QPA_PLATFORM=offscreen build/bin/editor_screenshots docs/images
// --dark uses View → Theme → Dark, --size=1920x1080 another window size,
// --problems adds editor-problems.png, --transfer templates-transfer.png and
// transfer_template.png (with the fetched base).
// Not a test: it only draws.
#include "gui/main_window.h"
#include "gui/template_dialog.h"
#include "gui/theme.h"
#include "widgets/graph_editor.h"
#include "widgets/node_item.h"
#include "widgets/node_scene.h"
#include "widgets/node_view.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QListWidget>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTest>
#include <QUndoStack>
#include <cstdio>

int main(int argc, char** argv) {
  QStandardPaths::setTestModeEnabled(true);  // no settings from a real session
  QApplication app(argc, argv);
  QApplication::setOrganizationName("DeepCanvasScreenshots");
  QString out = argc > 1 && argv[1][0] != '-' ? argv[1] : "docs/images";
  const QStringList args = QApplication::arguments();
  if (args.contains("--dark")) dc::gui::applyTheme(dc::gui::Theme::Dark);
  // --size=WxH: the window's size (default 1280x720, a small laptop screen).
  QSize size(1280, 720);
  for (const QString& a : args)
    if (a.startsWith("--size=")) {
      const QStringList wh = a.mid(7).split('x');
      if (wh.size() == 2) size = QSize(wh[0].toInt(), wh[1].toInt());
    }
  QDir().mkpath(out);

  dc::gui::MainWindow w;
  w.resize(size);
  w.show();
  QTest::qWait(50);
  bool ok = w.grab().save(out + "/start.png");  // the empty canvas' start page
  if (!w.openFile(QStringLiteral(DC_SOURCE_DIR "/sample_data/sample_project.dcproj"))) return 1;
  QTest::qWait(50);
  w.action("actionAutoLayout")->trigger();  // rows that fit the window
  const dc::Node* conv2 = w.editor()->graph().find_by_name("conv2");
  if (conv2) w.editor()->scene()->selectNodes({conv2->id});
  QTest::qWait(50);
  ok = w.grab().save(out + "/editor.png") && ok;

  // With --problems: the same with a broken shape rule, to check how
  // problems look.
  const dc::Node* pool1 = w.editor()->graph().find_by_name("pool1");
  if (pool1 && args.contains("--problems")) {
    w.editor()->setAttr(pool1->id, "kernel", std::vector<int64_t>{40, 40});
    w.editor()->scene()->selectNodes({pool1->id});
    if (auto* dock = w.findChild<QDockWidget*>("problemsDock")) dock->raise();
    QTest::qWait(50);
    ok = w.grab().save(out + "/editor-problems.png") && ok;
    w.editor()->undoStack()->undo();
  }

  dc::gui::TemplateDialog dlg;
  dlg.show();
  for (int i = 0; i < dlg.list()->count(); ++i)
    if (dlg.list()->item(i)->text().contains("LeNet", Qt::CaseInsensitive))
      dlg.list()->setCurrentRow(i);
  QTest::qWait(50);
  ok = dlg.grab().save(out + "/templates.png") && ok;
  // With --transfer: the transfer template (needs the fetched base,
  // installer/fetch-pretrained.sh) in the dialog and in the editor.
  if (args.contains("--transfer")) {
    for (int i = 0; i < dlg.list()->count(); ++i)
      if (dlg.list()->item(i)->text().startsWith("Transfer:")) dlg.list()->setCurrentRow(i);
    QTest::qWait(50);
    ok = dlg.grab().save(out + "/templates-transfer.png") && ok;
    dlg.hide();
    ok = w.newFromTemplate(QStringLiteral("transfer:efficientnet_lite0")) && ok;
    QTest::qWait(50);
    w.action("actionAutoLayout")->trigger();
    // Fitted, the base's 94 layers are too small to read: show the end of
    // the frozen base and the new head at their natural size instead, with
    // the new Dense selected (its properties say it trains).
    w.view()->resetZoom();
    const dc::Node* fc = w.editor()->graph().find_by_name("head_fc");
    if (fc) w.editor()->scene()->selectNodes({fc->id});
    if (fc) {
      // The head at the right, the base's last layers filling the rest.
      const QRectF r = w.editor()->scene()->nodeItem(fc->id)->sceneBoundingRect();
      const double half = w.view()->viewport()->width() / 2.0;
      // Left of the overview map, and half a row up: the base's row above
      // shows whole too.
      w.view()->centerOn(QPointF(r.right() + 200 - half, r.center().y() - 80));
    }
    w.statusBar()->clearMessage();  // not the sample project opened above
    QTest::qWait(50);
    ok = w.grab().save(out + "/transfer_template.png") && ok;
  }
  std::printf("%s\n", ok ? "written" : "failed");
  return ok ? 0 : 1;
}
