#pragma once
// Shared helpers for the editor tests: a lazily created QApplication on the
// offscreen platform, isolated settings and data folders, and small finders.
#include "gui/main_window.h"
#include "widgets/graph_editor.h"
#include "widgets/property_editor.h"

#include <deepcanvas/graph.h>
#include <gtest/gtest.h>

#include <QString>
#include <QStringList>
#include <memory>
#include <string>

namespace dc::test {

// Creates the QApplication on first use (offscreen, test-mode paths).
void ensureApp();
// A fresh temporary folder for this test.
QString tempDir();
QString sourcePath(const QString& rel);
// The node with this name (throws if none).
NodeId idOf(const Graph& g, const std::string& name);
// Adds a layer the way a user does: double-clicking its palette row.
NodeId addFromPalette(gui::MainWindow& w, const QString& type);
// A child widget of the property editor by object name ("attr:filters").
template <typename T>
T* propertyWidget(gui::MainWindow& w, const QString& name) {
  return w.properties()->findChild<T*>(name);
}
// Graph equality without positions (a rebuilt network need not be laid out
// exactly like the original).
bool sameStructure(const Graph& a, const Graph& b);

// A main window with the sample project open; errors it reports are
// collected instead of shown in a dialog.
class SampleWindowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ensureApp();
    w = std::make_unique<gui::MainWindow>();
    w->setErrorHandler([this](const QString& e) { errors << e; });
    ASSERT_TRUE(w->openFile(sourcePath("sample_data/sample_project.dcproj")));
  }
  const Graph& g() const { return w->editor()->graph(); }
  NodeId id(const char* name) const { return idOf(g(), name); }
  widgets::NodeScene* scene() const { return w->editor()->scene(); }

  std::unique_ptr<gui::MainWindow> w;
  QStringList errors;
};

}  // namespace dc::test
