#include "gui_test_util.h"

#include "gui/main_window.h"
#include "widgets/graph_editor.h"
#include "widgets/layer_palette.h"

#include <QApplication>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>
#include <memory>
#include <vector>

namespace dc::test {

void ensureApp() {
  if (QApplication::instance()) return;
  qputenv("QT_QPA_PLATFORM", "offscreen");
  // Test-mode paths keep settings, recent files and recovery files away
  // from the user's own; a home of its own keeps them away from other test
  // processes too (ctest -j, other checkouts), which would otherwise read
  // and clear the same ~/.qttest settings while a test restarts a window.
  static QTemporaryDir home;
  if (home.isValid()) qputenv("HOME", home.path().toLocal8Bit());
  QStandardPaths::setTestModeEnabled(true);
  QApplication::setOrganizationName("DeepCanvasTests");
  QApplication::setApplicationName("DeepCanvasEditorTests");
  static int argc = 1;
  static char arg0[] = "editor_tests";
  static char* argv[] = {arg0, nullptr};
  new QApplication(argc, argv);  // lives for the whole test binary
  QSettings().clear();
}

QString tempDir() {
  static std::vector<std::unique_ptr<QTemporaryDir>> dirs;
  dirs.push_back(std::make_unique<QTemporaryDir>());
  return dirs.back()->path();
}

QString sourcePath(const QString& rel) {
  return QStringLiteral(DC_SOURCE_DIR "/") + rel;
}

NodeId idOf(const Graph& g, const std::string& name) {
  const Node* n = g.find_by_name(name);
  if (!n) throw std::runtime_error("no node named " + name);
  return n->id;
}

NodeId addFromPalette(gui::MainWindow& w, const QString& type) {
  // A real double-click needs laid-out widgets.
  if (!w.isVisible()) w.show();
  QTreeWidget* tree = w.palette()->tree();
  QTreeWidgetItem* item = w.palette()->itemFor(type);
  if (!item) return -1;
  tree->scrollToItem(item);
  tree->setCurrentItem(item);
  auto before = w.editor()->graph().nodes().size();
  // Enter on the row: the keyboard twin of a double-click (both activate it).
  tree->setFocus();
  QTest::keyClick(tree, Qt::Key_Return);
  if (w.editor()->graph().nodes().size() != before + 1) return -1;
  return w.editor()->graph().nodes().rbegin()->first;
}

bool sameStructure(const Graph& a, const Graph& b) {
  Graph x = a, y = b;
  for (const auto& [id, n] : a.nodes()) x.move(id, 0, 0);
  for (const auto& [id, n] : b.nodes()) y.move(id, 0, 0);
  return x == y;
}

}  // namespace dc::test
