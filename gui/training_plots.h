#pragma once
// The Training tab's curves: loss and accuracy (per step, smoothed, and the
// per-epoch train/validation/test points), throughput, learning rate, and
// the device (GPU utilisation and memory from the trainer's telemetry, or
// this process's CPU and memory on a CPU run). Runs are told apart by
// colour, series by line style and marker; earlier runs stay as overlays
// that can be shown or hidden one by one.
#include "gui/training_session.h"

#include <QWidget>
#include <memory>

class QTimer;

namespace dc {
class GpuSampler;
}

namespace dc::widgets {
class LivePlot;
}

namespace dc::gui {

class ProcessStats;

class TrainingPlots : public QWidget {
  Q_OBJECT
 public:
  explicit TrainingPlots(QWidget* parent = nullptr);
  ~TrainingPlots() override;

  // A new run (1-based): the previous run's curves become an overlay, the
  // device plots restart for the run's device (gpu: its index, else -1)
  // and sample it until endRun, unless sample_device is false (a run read
  // from another machine's folder: this machine says nothing about it).
  void startRun(int run, int gpu, bool sample_device = true);
  void endRun();  // one last device reading, then no more
  // Which per-epoch scores this run has: the loss and accuracy plots draw
  // (and their legends list) validation and test only when it does.
  void setEpochScores(bool validation, bool test);
  // The epochs the run (or the next one) will train: the epoch plots span
  // 0..epochs from the start, so progress shows as the curves cross them;
  // 0: the data alone decide (a run read from another machine).
  void setPlannedEpochs(int epochs);
  void addSteps(const QVector<dc::TrainEvent>& batch);
  void addEpoch(const dc::TrainEvent& e);
  void addTelemetry(const DeviceReading& r);
  // Earlier run `run` (1-based) shown on or hidden from the plots.
  void setRunVisible(int run, bool on);
  void setOverlaysVisible(bool on);
  // Every curve and overlay gone (another project).
  void reset();

  widgets::LivePlot* loss() const { return loss_; }
  widgets::LivePlot* accuracy() const { return acc_; }
  widgets::LivePlot* throughput() const { return speed_; }
  widgets::LivePlot* learningRate() const { return lr_; }
  widgets::LivePlot* utilization() const { return util_; }
  widgets::LivePlot* memory() const { return mem_; }

 private:
  void setupDevicePlots(bool gpu);
  void sampleDevice();
  void sampleProcessMemory(double t);  // MiB resident, this process
  double runSeconds() const;

  widgets::LivePlot *loss_, *acc_, *speed_, *lr_, *util_, *mem_;
  QTimer* device_timer_;
  std::unique_ptr<ProcessStats> proc_;
  std::unique_ptr<GpuSampler> gpu_;
  int s_loss_step_ = 0, s_loss_epoch_ = 0, s_loss_val_ = 0, s_loss_test_ = 0;
  int s_acc_step_ = 0, s_acc_epoch_ = 0, s_acc_val_ = 0, s_acc_test_ = 0;
  int s_speed_ = 0, s_lr_ = 0, s_util_ = 0, s_mem_ = 0, s_mem_total_ = 0;
  int s_mem_alloc_ = 0, s_mem_reserved_ = 0;
  bool got_telemetry_ = false, gpu_run_ = false;
  int run_ = 0;
  double run_t0_ = 0;
};

}  // namespace dc::gui
