#pragma once
// The Training tab's "Runs" page: one row per run of the panel (settings,
// epochs, losses, result, checkpoint folder), a tick per earlier run to
// overlay it on the plots, and the box that shows or hides all overlays.
#include <QString>
#include <QWidget>

class QCheckBox;
class QTableWidget;

namespace dc::gui {

class RunHistory : public QWidget {
  Q_OBJECT
 public:
  enum Column { kRun, kSettings, kEpochs, kTrainLoss, kHeldOut, kResult, kFolder, kColumns };

  explicit RunHistory(QWidget* parent = nullptr);

  // A row for run `run` (1-based), "running"; the previous run's tick
  // becomes the user's. Returns the row.
  int addRun(int run, const QString& settings, const QString& folder);
  void setCell(int row, int column, const QString& text);  // nothing for a row not there
  void setLastCell(int column, const QString& text);       // the newest run's row
  int runOf(int row) const;                                // the run number of a row (0: none)
  void clear();
  QTableWidget* table() const { return table_; }

 signals:
  void runVisibilityChanged(int run, bool visible);  // a run's tick
  void overlaysToggled(bool on);

 private:
  QCheckBox* show_overlays_;
  QTableWidget* table_;
};

}  // namespace dc::gui
