#pragma once
// The Experiments tab (issue 15): hyperparameter sweeps of the project on
// the canvas, run by the engine's Sweep (engine/tune/sweep.cpp) on a worker
// thread (SweepRunner) so the window stays responsive. A search-space
// editor (SearchSpaceEditor), the sweep's options (SweepOptionsForm),
// Start/Stop/Resume, a sortable trials table, a parallel-coordinates plot
// and the trials' validation curves, and "Apply best", which writes the best
// trial's values into the project as one undoable step.
//
// The state lives in PROJECT.sweep.json beside the project (the CLI's file),
// written after every epoch: a sweep that was stopped, or whose app was
// killed, continues with Resume, its finished trials kept and the ones that
// were running started again with the same point.
#include <deepcanvas/project.h>
#include <deepcanvas/sweep.h>

#include <QAbstractTableModel>
#include <QKeySequence>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <functional>
#include <optional>
#include <vector>

class QCustomPlot;
class QLabel;
class QPushButton;
class QSortFilterProxyModel;
class QTableView;
class QTableWidget;
class QUndoStack;

namespace dc::gui {

class ProjectContext;
class SearchSpaceEditor;
class SweepOptionsForm;
class SweepRunner;

// The trials of a sweep as table rows: #, status, one column per parameter,
// best validation accuracy, epochs trained. Qt::UserRole holds numbers for
// sorting (a proxy sorts the view).
class TrialsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;
  void reset(const SearchSpace& space, const std::vector<Trial>& trials);
  void update(const Trial& t);  // adds or replaces the row of t.id
  const std::vector<Trial>& trials() const { return trials_; }
  const SearchSpace& space() const { return space_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  SearchSpace space_;
  std::vector<Trial> trials_;
};

// The best validation accuracy a trial reached (NaN when none).
double best_val_accuracy(const Trial& t);

// A change "Apply best" makes: a training setting by key, or an attribute
// of a node by name.
struct BestValue {
  std::string setting;  // "optimizer.lr", or empty for an attribute
  std::string node, attr;
  AttrValue value;
};

class ExperimentsPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ExperimentsPanel(ProjectContext* ctx, QWidget* parent = nullptr);
  ~ExperimentsPanel() override;

  // The project file (its PROJECT.sweep.json holds the state); empty for an
  // unsaved project, whose sweep is then kept in memory only. Loads an
  // existing state file into the editor and the table.
  void setProjectFile(const QString& path);
  // Where the trials' project comes from (the main window: the project as
  // edited, settings included); the context's project when not set.
  void setProjectSource(std::function<Project()> f) { project_source_ = std::move(f); }
  // Writes the best trial's values into the project as one undoable step;
  // returns "" or why not. Without one, Apply best says it cannot.
  void setApplier(std::function<QString(const std::vector<BestValue>&, const QString&)> f) {
    applier_ = std::move(f);
  }
  // The stack the applier pushes onto (the editor's): "Applied trial N…;
  // Ctrl+Z undoes it." goes once that step is undone or buried.
  void setUndoStack(QUndoStack* s) { undo_ = s; }
  // Start's key (a button's, not a menu action's: Help → Keyboard Shortcuts
  // lists it from here).
  static QKeySequence startShortcut();
  // Replaces the question asked before Start replaces a sweep (tests).
  void setConfirmHandler(std::function<bool(const QString&)> f) { confirm_ = std::move(f); }

  // The space editor: rows of (name, kind, low, high, choices).
  void setSpace(const QStringList& specs);  // "lr=log:1e-4:1e-2" each
  QStringList specs() const;                // the rows as spec texts
  // Checks the rows with the engine's parser; "" when they are a valid
  // space, else the message of the first bad row ("Row 2: ...").
  QString validate();
  QStringList completions() const;  // names offered in the name column
  void setOptions(const SweepOptions& o);
  SweepOptions options() const;

  // Start: a new sweep (asks before replacing a state file's trials);
  // Resume: continues the state file's sweep. False (reason in message())
  // when it cannot start.
  bool start();
  bool resume();
  void stop();  // stops the running trials; they stay resumable
  // Stops the sweep and waits for its worker, so that the project and the
  // dataset are free when it returns (closing, opening another project).
  void stopAndWait();
  bool running() const;
  // The window's reason not to start now (empty: none), e.g. the machine
  // benchmark measuring on the same cores.
  void setStartBlocker(std::function<QString()> f) { start_blocker_ = std::move(f); }
  bool canResume() const;
  // Applies the best completed trial (through the applier).
  bool applyBest();

  QString messageText() const;
  TrialsModel* trials() const { return model_; }
  QTableView* trialsView() const { return view_; }
  QTableWidget* spaceTable() const;
  QCustomPlot* parallelPlot() const { return parallel_; }
  QCustomPlot* curvesPlot() const { return curves_; }
  QPushButton* startButton() const { return start_; }
  QPushButton* stopButton() const { return stop_; }
  QPushButton* resumeButton() const { return resume_; }
  QPushButton* applyBestButton() const { return apply_; }
  QString statePath() const { return state_path_; }
  // The current or last sweep's TensorBoard HParams folder ("" : none was
  // written): a new folder of the runs folder per Start or Resume.
  QString logDir() const { return log_dir_; }
  // Where the current or last sweep keeps its best trial's weights: beside
  // the state file, or for an unsaved project in the sweep's run folder.
  QString weightsPath() const { return weights_path_; }
  // Tests and the screenshot: epochs cut to this many steps (0: whole).
  void setStepsPerEpochLimit(int64_t n) { steps_limit_ = n; }

 signals:
  void finished(bool completed);  // the worker ended (all trials done, or stopped)
  void trialUpdated(int id);
  void message(const QString& text);  // for the status bar

 private:
  void buildUi();
  bool launch(bool fresh);
  void onTrial(const Trial& t);
  void onFinished(const QString& error);
  void refreshPlots();
  void updateButtons();
  void setMessage(const QString& text, bool error);
  void loadState();
  // Offers the best trial's kept weights in the Inference tab's list, when
  // the file holds them.
  void offerBestWeights(const SweepState& s);
  void saveUiSettings() const;
  Project currentProject() const;
  SweepOptions resumeOptions() const;
  QString resumeMismatch(const SweepOptions& o) const;

  ProjectContext* ctx_;
  QString file_, state_path_, log_dir_, weights_path_;
  std::function<Project()> project_source_;
  std::function<QString(const std::vector<BestValue>&, const QString&)> applier_;
  std::function<bool(const QString&)> confirm_;
  std::function<QString()> start_blocker_;
  QUndoStack* undo_ = nullptr;
  QMetaObject::Connection applied_watch_;  // on undo_, while "Applied trial" shows
  int offered_trial_ = -1;                 // whose weights offerBestWeights offered

  SearchSpaceEditor* space_ = nullptr;
  SweepOptionsForm* form_ = nullptr;
  QPushButton *start_ = nullptr, *stop_ = nullptr, *resume_ = nullptr, *apply_ = nullptr;
  QLabel* message_ = nullptr;
  QLabel* summary_ = nullptr;
  TrialsModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* view_ = nullptr;
  QCustomPlot* parallel_ = nullptr;
  QCustomPlot* curves_ = nullptr;

  SweepRunner* runner_ = nullptr;
  int64_t steps_limit_ = 0;  // tests: shorter epochs
  // The options of the sweep in the state file (or of the last launch),
  // with those the tab does not show (ASHA's eta and minimum epochs, the
  // validation split, the steps limit): Resume keeps them, Start does not.
  std::optional<SweepOptions> loaded_;
};

}  // namespace dc::gui
