// GoogleTest main for the dashboard tests: one QApplication for the whole
// run (widgets need it), offscreen unless the environment says otherwise.
#include <gtest/gtest.h>

#include <QApplication>
#include <QStandardPaths>
#include <QTemporaryDir>

int main(int argc, char** argv) {
  if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  // Settings (remembered folders, checkboxes) and caches of the tests' own,
  // away from the user's and from other test processes (ctest -j), as the
  // editor tests keep theirs (gui_test_util.cpp).
  QTemporaryDir home;
  if (home.isValid()) qputenv("HOME", home.path().toLocal8Bit());
  QStandardPaths::setTestModeEnabled(true);
  QApplication::setOrganizationName("DeepCanvasTests");
  QApplication::setApplicationName("DeepCanvasDashboardTests");
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
