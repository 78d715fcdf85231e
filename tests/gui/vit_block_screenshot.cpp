// Renders docs/images/vit_block.png (issue 33): the ViT template, whose
// encoder layers are two instances of one Block definition, in the editor
// at 1280x720 with block1 selected; and vit_block_open.png, the block
// opened, with the breadcrumb. Offscreen:
//   QT_QPA_PLATFORM=offscreen build/bin/vit_block_screenshot docs/images
// Not a test: it only draws.
#include "gui/main_window.h"
#include "widgets/graph_editor.h"
#include "widgets/node_scene.h"

#include <QAction>
#include <QApplication>
#include <QDir>
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
  if (!w.openFile(QStringLiteral(DC_SOURCE_DIR "/resources/templates/vit_tiny.dcproj"))) return 1;
  QTest::qWait(50);
  const dc::Node* block = w.editor()->graph().find_by_name("block1");
  if (!block) return 1;
  const dc::NodeId id = block->id;
  w.editor()->scene()->selectNodes({id});
  QTest::qWait(50);
  bool ok = w.grab().save(out + "/vit_block.png");
  if (!w.editor()->openBlock(id)) return 1;
  if (QAction* fit = w.action("actionFit")) fit->trigger();
  QTest::qWait(50);
  ok = w.grab().save(out + "/vit_block_open.png") && ok;
  return ok ? 0 : 1;
}
