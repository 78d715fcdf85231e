#pragma once
// The training dashboard: settings (optimizer, learning rate and schedule,
// batch, epochs, precision, device, seed, early stopping), Start/Pause/Resume/Stop,
// progress with ETA and throughput, a log, live plots (loss, accuracy,
// throughput, learning rate, device utilisation and memory) and the
// evaluation view. Training itself runs in a TrainingSession; this panel
// only reacts to its batched signals.
#include "gui/project_context.h"
#include "gui/training_session.h"

#include <QWidget>
#include <memory>

class QComboBox;
class QDoubleSpinBox;
class QSpinBox;
class QLineEdit;
class QPushButton;
class QProgressBar;
class QLabel;
class QPlainTextEdit;
class QTabWidget;
class QTimer;
class QTableWidget;
class QCheckBox;

namespace dc {
class GpuSampler;
}

namespace dc::widgets {
class LivePlot;
}

namespace dc::gui {

class EvaluationView;
class ProcessStats;

class TrainingPanel : public QWidget {
  Q_OBJECT
 public:
  explicit TrainingPanel(ProjectContext* ctx, QWidget* parent = nullptr);
  ~TrainingPanel() override;

  // The settings as the widgets show them.
  TrainConfig config() const;
  // Fills the widgets from the project's training settings.
  void loadSettings(const TrainConfig& c);

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
  QTableWidget* runHistory() const { return runs_; }
  widgets::LivePlot* lossPlot() const { return loss_plot_; }
  widgets::LivePlot* accuracyPlot() const { return acc_plot_; }
  widgets::LivePlot* throughputPlot() const { return speed_plot_; }
  widgets::LivePlot* lrPlot() const { return lr_plot_; }
  widgets::LivePlot* utilizationPlot() const { return util_plot_; }
  widgets::LivePlot* memoryPlot() const { return mem_plot_; }
  QProgressBar* progressBar() const { return progress_; }
  QPushButton* startButton() const { return start_; }
  QPushButton* pauseButton() const { return pause_; }
  QPushButton* resumeButton() const { return resume_; }
  QPushButton* stopButton() const { return stop_; }
  QString problemText() const;
  QString logText() const;

 public slots:
  void startTraining();  // problems go to the banner and the log, never a modal dialog

 signals:
  // After a run ends with weights worth using (finished or stopped); the
  // weights are already in the ProjectContext.
  void weightsReady();
  // Problems that stopped Start (also shown in the panel's banner).
  void problemsFound(const QStringList& problems);
  // A training setting was edited (the project's unsaved-changes marker).
  void settingsChanged();

 private:
  void buildUi();
  void onSteps(const QVector<dc::TrainEvent>& batch);
  void onProgress(double fraction, double eta_s, double sps, int epoch, int epochs);
  void onEpoch(const dc::TrainEvent& e);
  void onFinished(bool ok, const QString& message);
  void onState(TrainingSession::State s);
  void sampleDevice();
  void onTelemetry(const DeviceReading& r);
  void showProblems(const QStringList& problems);
  void appendLog(const QString& line);
  void fillDevices();
  void updateButtons();
  void setupDevicePlots(bool gpu);
  void setRunCell(int column, const QString& text);

  ProjectContext* ctx_;
  TrainingSession* session_;
  QComboBox *optimizer_, *schedule_, *device_, *precision_;
  QDoubleSpinBox* lr_;
  QSpinBox *batch_, *epochs_, *seed_, *steps_limit_, *patience_;
  QLineEdit* checkpoint_dir_;
  QPushButton *start_, *pause_, *resume_, *stop_;
  QProgressBar* progress_;
  QLabel *status_, *problems_;
  QPlainTextEdit* log_;
  QTabWidget* tabs_;
  QTableWidget* runs_;
  QCheckBox* show_overlays_;
  widgets::LivePlot *loss_plot_, *acc_plot_, *speed_plot_, *lr_plot_, *util_plot_, *mem_plot_;
  EvaluationView* eval_;
  QTimer* device_timer_;
  std::unique_ptr<ProcessStats> proc_;
  std::unique_ptr<GpuSampler> gpu_;
  int s_loss_step_ = 0, s_loss_epoch_ = 0, s_loss_val_ = 0, s_loss_test_ = 0;
  int s_acc_step_ = 0, s_acc_epoch_ = 0, s_acc_val_ = 0, s_acc_test_ = 0;
  int s_speed_ = 0, s_lr_ = 0, s_util_ = 0, s_mem_ = 0, s_mem_total_ = 0;
  int s_mem_alloc_ = 0, s_mem_reserved_ = 0;
  bool got_telemetry_ = false;
  int run_ = 0;
  double run_t0_ = 0;
  bool gpu_run_ = false;
  QString run_dir_;
};

}  // namespace dc::gui
