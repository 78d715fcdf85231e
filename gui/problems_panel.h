#pragma once
// The Problems list: one row per node whose shape rule fails (the engine's
// message) and one per whole-network problem (no Input, several outputs).
// Activating a row asks the window to select and centre that node.
#include <QWidget>

class QListWidget;

namespace dc::widgets {
class GraphModel;
}

namespace dc::gui {

class ProblemsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ProblemsPanel(widgets::GraphModel* model, QWidget* parent = nullptr);
  QListWidget* list() const { return list_; }
  int count() const;
  void refresh();

 signals:
  void nodeActivated(int id);
  void countChanged(int problems);

 private:
  widgets::GraphModel* model_;
  QListWidget* list_;
};

}  // namespace dc::gui
