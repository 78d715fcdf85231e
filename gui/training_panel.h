#pragma once
// The training dashboard: settings (optimizer, learning rate and schedule,
// batch, epochs, precision, device, seed, early stopping), Start/Pause/Resume/Stop,
// progress with ETA and throughput, a log, live plots (loss, accuracy,
// throughput, learning rate, device utilisation and memory) and the
// evaluation view. Training itself runs in a TrainingSession; this panel
// only reacts to its batched signals.
#include "gui/project_context.h"
#include "gui/training_session.h"

#include <deepcanvas/lr_find.h>

#include <QWidget>
#include <functional>
#include <memory>
#include <optional>

class QPushButton;
class QProgressBar;
class QLabel;
class QPlainTextEdit;
class QTabWidget;
class QTableWidget;
class QFrame;
class QUndoStack;
class QVBoxLayout;

namespace dc::widgets {
class LivePlot;
}

namespace dc::gui {

class EvaluationView;
class LrFinderDialog;
class RunDiagnosisView;
class RunFollower;
class RunHistory;
class SettingsForm;
class TrainingPlots;
class TrainingSettingsView;

class TrainingPanel : public QWidget {
  Q_OBJECT
 public:
  explicit TrainingPanel(ProjectContext* ctx, QWidget* parent = nullptr);
  ~TrainingPanel() override;

  // The settings as the widgets show them.
  TrainConfig config() const;
  // Fills the widgets from the project's training settings.
  void loadSettings(const TrainConfig& c);
  // Typed values the settings table refuses, "<label> (training.<key>) <problem>".
  QStringList settingProblems() const;
  // The generated form of a group: "Run", "Optimizer" or "Schedule".
  SettingsForm* settingsForm(const QString& group) const;

  void setEpochs(int n);
  void setStepsPerEpochLimit(int n);  // 0: whole epochs
  void setBatch(int n);
  void setCheckpointDir(const QString& dir);
  QString checkpointDir() const;

  TrainingSession* session() const { return session_; }
  EvaluationView* evaluation() const { return eval_; }
  // The Curves / Evaluation tabs.
  QTabWidget* plotTabs() const { return tabs_; }
  // One row per run of this panel: settings, progress, results, folder.
  QTableWidget* runHistory() const;
  TrainingPlots* plots() const { return plots_; }
  widgets::LivePlot* lossPlot() const;
  widgets::LivePlot* accuracyPlot() const;
  widgets::LivePlot* throughputPlot() const;
  widgets::LivePlot* lrPlot() const;
  widgets::LivePlot* utilizationPlot() const;
  widgets::LivePlot* memoryPlot() const;
  // Shows or hides the settings column (the toggle above it).
  void setSettingsVisible(bool on);
  bool settingsVisible() const;
  QProgressBar* progressBar() const { return progress_; }
  // Predicted vs measured samples/s and memory, and the run's diagnosis.
  RunDiagnosisView* diagnosisView() const { return diagnosis_; }
  QPushButton* startButton() const { return start_; }
  QPushButton* pauseButton() const { return pause_; }
  QPushButton* resumeButton() const { return resume_; }
  QPushButton* stopButton() const { return stop_; }
  QString problemText() const;
  QString logText() const;
  QString statusText() const;
  // Back to a fresh panel: no runs, plots, log or progress (another project).
  void resetRuns();

  // File > Open Run...: a run folder an exported train.py wrote (here, on a
  // mounted volume, or copied back from a cluster). Its metrics.jsonl becomes
  // a run in the plots and the Runs table, overlaid on local runs, followed
  // live while it grows; its checkpoints are offered to the Inference tab.
  // Lines that cannot be read are skipped and listed in the log. Returns ""
  // or why the folder cannot be opened.
  QString openRun(const QString& dir);
  // Run with PyTorch…: like openRun for a run that is about to start, so its
  // metrics.jsonl may not exist yet; it is followed from when it appears.
  QString followRun(const QString& dir);
  // The process writing the run in `dir` ended: reads what is left (a last
  // line without its newline included) and stops following with `result`
  // in the Runs table, unless the run's end line already ended it. Nothing
  // when the followed run is another folder (one opened since with Open Run…).
  void endFollowedRun(const QString& dir, const QString& result);
  // Whether an opened run is still being followed (no "end" line yet).
  bool followingRun() const;
  // Reads what the followed run appended (the file watcher and a timer call it).
  void pollImportedRun();
  // Tuning aids (training_tuning.cpp). Edits they make (Use, Apply) go
  // through applySetting: one undoable command on the stack given here
  // (the editor's, so Edit > Undo takes them back), or a plain edit without one.
  void setUndoStack(QUndoStack* stack) { undo_ = stack; }
  // Sets training settings by key ("optimizer.lr") as one undoable step.
  void applySettings(const QVector<QPair<QString, dc::AttrValue>>& values, const QString& what);
  void setSettingValue(const QString& key, const dc::AttrValue& v);  // no undo entry
  QPushButton* lrFinderButton() const { return lr_find_; }
  // Opens (or raises) the LR finder and starts its test; null when it cannot
  // start (no data: the reason goes to the banner).
  LrFinderDialog* openLrFinder(const LrFindOptions& options = {});
  LrFinderDialog* lrFinder() const { return lr_dialog_; }
  // The hint offered when the batch changes: scaled learning rates, warm-up
  // and the largest batch that fits the device.
  QFrame* batchHint() const { return batch_hint_; }
  QString batchHintText() const;
  QPushButton* batchHintApplyLinear() const { return hint_linear_; }
  QPushButton* batchHintApplySqrt() const { return hint_sqrt_; }

 public slots:
  void startTraining();  // problems go to the banner and the log, never a modal dialog
  // Asked before each start: a non-empty answer refuses it with that reason
  // (the main window: not while Help → Benchmark This Machine measures).
  void setStartBlocker(std::function<QString()> f) { start_blocker_ = std::move(f); }

 signals:
  // After a run ends with weights worth using (finished or stopped); the
  // weights are already in the ProjectContext.
  void weightsReady();
  // Problems that stopped Start (also shown in the panel's banner).
  void problemsFound(const QStringList& problems);
  // A training setting was edited (the project's unsaved-changes marker).
  void settingsChanged();
  // A line for the status bar: how a run ended and which weights the
  // Inference tab uses now.
  void message(const QString& text);

 private:
  void buildUi();
  void onSteps(const QVector<dc::TrainEvent>& batch);
  void onProgress(double fraction, double eta_s, double sps, int epoch, int epochs);
  void onEpoch(const dc::TrainEvent& e);
  void onFinished(bool ok, const QString& message);
  void onState(TrainingSession::State s);
  void showProblems(const QStringList& problems);
  // Start's and the LR finder's shared checks (run_start.h): the window's
  // blocker, a running sweep (`sweep_running` says so), the data loaded on
  // demand, the settings as shown, then the engine's checks of what
  // `settings` returns (to *used) for `run` (unset: a training run).
  QStringList problemsBeforeRun(const QString& sweep_running,
                                const std::function<TrainConfig()>& settings,
                                const std::optional<AppRunCheck>& run, TrainConfig* used);
  void appendLog(const QString& line);
  void updateButtons();
  void offerRunCheckpoints(bool finished);
  void stopFollowingRun(const QString& result);
  QString beginImport(const QString& dir, bool wait);
  void readImportedRun(bool final);
  // Plots and logs an opened run's events; true when they hold its end.
  bool showImportedEvents(std::vector<TrainEvent>& events);
  void buildTuningUi(QVBoxLayout* column);
  // The banner for the LR finder's refusal, under its own heading; an empty
  // list clears only a refusal of the finder's.
  void showLrFinderProblems(const QStringList& problems);
  void onBatchMaybeChanged();

  ProjectContext* ctx_;
  TrainingSession* session_;
  TrainingSettingsView* settings_view_;
  QPushButton *start_, *pause_, *resume_, *stop_;
  QProgressBar* progress_;
  QLabel *status_, *problems_;
  RunDiagnosisView* diagnosis_;
  QPlainTextEdit* log_;
  QTabWidget* tabs_;
  RunHistory* history_;
  TrainingPlots* plots_;
  EvaluationView* eval_;
  int run_ = 0;
  QString run_dir_;
  QString best_epoch_;  // "epoch 3, 85.21 % validation" of the current run
  // The opened run being followed, and its row in the Runs table.
  RunFollower* follower_;
  int import_row_ = -1;
  QUndoStack* undo_ = nullptr;
  std::function<QString()> start_blocker_;
  QPushButton* lr_find_ = nullptr;
  LrFinderDialog* lr_dialog_ = nullptr;
  QFrame* batch_hint_ = nullptr;
  QLabel* batch_hint_text_ = nullptr;
  QPushButton *hint_linear_ = nullptr, *hint_sqrt_ = nullptr;
  int64_t shown_batch_ = 0;        // the batch the hint compares against
  bool applying_setting_ = false;  // an edit of ours, not the user's
};

}  // namespace dc::gui
