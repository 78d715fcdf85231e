#pragma once
// Help → Keyboard Shortcuts: every menu action that has a key, by menu, the
// canvas' mouse and key gestures, and a link to the user guide.
#include <QDialog>

class QMenuBar;
class QTreeWidget;

namespace dc::gui {

class ShortcutsDialog : public QDialog {
  Q_OBJECT
 public:
  ShortcutsDialog(const QMenuBar* menus, QWidget* parent = nullptr);
  QTreeWidget* table() const { return table_; }
  // The user guide (README.md) beside the installed or built app; empty
  // when it cannot be found.
  static QString guideFile();

 private:
  QTreeWidget* table_;
};

}  // namespace dc::gui
