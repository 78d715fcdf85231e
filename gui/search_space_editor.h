#pragma once
// The Experiments tab's search-space editor: one row per swept parameter
// (name, kind, low, high, choices), checked with the engine's parser so the
// app shows the engine's reasons, worded without the CLI's --param flag and
// pointing at the row.
#include <deepcanvas/graph.h>

#include <QStringList>
#include <QWidget>
#include <functional>

class QPushButton;
class QTableWidget;

namespace dc::gui {

class SearchSpaceEditor : public QWidget {
  Q_OBJECT
 public:
  // graph: the network whose layers the rows may name (the project as edited).
  explicit SearchSpaceEditor(std::function<Graph()> graph, QWidget* parent = nullptr);

  void setSpace(const QStringList& specs);  // "lr=log:1e-4:1e-2" each
  QStringList specs() const;                // the rows as spec texts
  // "" when the rows are a valid space, else why the first bad row is not
  // ("Row 2: ...").
  QString problem() const;
  QStringList completions() const;  // names offered in the name column
  QTableWidget* table() const { return table_; }
  // Enables or greys out the rows and their buttons while a sweep runs.
  void setEditable(bool on);

 signals:
  void edited();  // a row was added, removed or changed

 private:
  void addRow(const QString& spec = {});
  void updateKindRow(int row);

  std::function<Graph()> graph_;
  QTableWidget* table_ = nullptr;
  QPushButton *add_row_ = nullptr, *remove_row_ = nullptr;
};

// The settings and layer attributes a space may name: the training
// settings' keys and flags and every attribute of the project's layers.
QStringList searchSpaceNames(const Graph& g);

}  // namespace dc::gui
