// Renders the README's screenshots (docs/images/editor.png, templates.png)
// from the real window, without a display:
//   QT_QPA_PLATFORM=offscreen build/bin/editor_screenshots docs/images
// --dark uses a dark palette, --problems adds editor-problems.png.
// Not a test: it only draws.
#include "gui/main_window.h"
#include "gui/template_dialog.h"
#include "widgets/graph_editor.h"
#include "widgets/node_item.h"
#include "widgets/node_scene.h"
#include "widgets/node_view.h"

#include <QApplication>
#include <QDir>
#include <QDockWidget>
#include <QListWidget>
#include <QPalette>
#include <QStandardPaths>
#include <QTest>
#include <QUndoStack>
#include <cstdio>

int main(int argc, char** argv) {
  QStandardPaths::setTestModeEnabled(true);  // no settings from a real session
  QApplication app(argc, argv);
  QApplication::setOrganizationName("DeepCanvasScreenshots");
  QString out = argc > 1 && argv[1][0] != '-' ? argv[1] : "docs/images";
  const QStringList args = QApplication::arguments();
  if (args.contains("--dark")) {
    // A dark palette like a desktop's dark theme, to check both looks.
    QApplication::setStyle("Fusion");
    QPalette p;
    p.setColor(QPalette::Window, QColor(0x2b, 0x2d, 0x31));
    p.setColor(QPalette::WindowText, QColor(0xe6, 0xe6, 0xe6));
    p.setColor(QPalette::Base, QColor(0x1f, 0x21, 0x24));
    p.setColor(QPalette::AlternateBase, QColor(0x27, 0x29, 0x2d));
    p.setColor(QPalette::Text, QColor(0xe6, 0xe6, 0xe6));
    p.setColor(QPalette::Button, QColor(0x34, 0x36, 0x3b));
    p.setColor(QPalette::ButtonText, QColor(0xe6, 0xe6, 0xe6));
    p.setColor(QPalette::Highlight, QColor(0x3d, 0x8b, 0xfd));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::PlaceholderText, QColor(0x9a, 0x9a, 0x9a));
    p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x8a, 0x8a, 0x8a));
    p.setColor(QPalette::Disabled, QPalette::WindowText, QColor(0x8a, 0x8a, 0x8a));
    QApplication::setPalette(p);
  }
  QDir().mkpath(out);

  dc::gui::MainWindow w;
  w.resize(1480, 920);
  w.show();
  if (!w.openFile(QStringLiteral(DC_SOURCE_DIR "/sample_data/sample_project.dcproj"))) return 1;
  QTest::qWait(50);
  w.view()->resetZoom();
  w.view()->fitAll();
  const dc::Node* conv2 = w.editor()->graph().find_by_name("conv2");
  if (conv2) w.editor()->scene()->selectNodes({conv2->id});
  QTest::qWait(50);
  bool ok = w.grab().save(out + "/editor.png");

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
  std::printf("%s\n", ok ? "written" : "failed");
  return ok ? 0 : 1;
}
