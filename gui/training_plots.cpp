#include "gui/training_plots.h"

#include "gui/process_stats.h"
#include "widgets/live_plot.h"

#include <deepcanvas/telemetry.h>

#include <QGridLayout>
#include <QTimer>
#include <chrono>

namespace dc::gui {

namespace {

using widgets::LivePlot;

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Position of a step on the epoch axis, so runs of different lengths and
// batch sizes line up when overlaid.
double epoch_x(const TrainEvent& e) {
  if (e.steps_per_epoch <= 0) return e.epoch;
  return (e.epoch - 1) + double(e.step_in_epoch) / double(e.steps_per_epoch);
}

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

TrainingPlots::TrainingPlots(QWidget* parent)
    : QWidget(parent), device_timer_(new QTimer(this)), proc_(std::make_unique<ProcessStats>()) {
  auto* grid = new QGridLayout(this);
  grid->setContentsMargins(2, 2, 2, 2);
  grid->setSpacing(2);
  loss_ = new LivePlot(tr("Loss"), tr("loss"), this);
  acc_ = new LivePlot(tr("Accuracy"), tr("%"), this);
  speed_ = new LivePlot(tr("Throughput"), tr("samples/s"), this);
  lr_ = new LivePlot(tr("Learning rate"), tr("lr"), this);
  util_ = new LivePlot(tr("Utilization"), tr("%"), this);
  mem_ = new LivePlot(tr("Memory"), tr("GiB"), this);
  for (auto* p : {loss_, acc_, speed_, lr_}) {
    p->setXLabel(tr("epoch"));
    p->setColorsByRun(true);
  }
  // Series told apart by look, since all of a run's series share its colour.
  auto epoch_series = [](LivePlot* p, int(&ids)[4]) {
    ids[0] = p->addSeries(tr("train"), {});
    ids[1] = p->addSeries(tr("train (epoch)"), {}, LivePlot::Style::Epochs);
    ids[2] = p->addSeries(tr("validation"), {}, LivePlot::Style::Epochs);
    ids[3] = p->addSeries(tr("test"), {}, LivePlot::Style::Epochs);
    p->setSeriesLook(ids[2], Qt::DashLine, LivePlot::Marker::Square);
    p->setSeriesLook(ids[3], Qt::DotLine, LivePlot::Marker::Triangle);
  };
  int l[4], a[4];
  epoch_series(loss_, l);
  epoch_series(acc_, a);
  s_loss_step_ = l[0], s_loss_epoch_ = l[1], s_loss_val_ = l[2], s_loss_test_ = l[3];
  s_acc_step_ = a[0], s_acc_epoch_ = a[1], s_acc_val_ = a[2], s_acc_test_ = a[3];
  acc_->setYRange(0, 100);
  s_speed_ = speed_->addSeries(tr("samples/s"), {});
  s_lr_ = lr_->addSeries(tr("learning rate"), {}, LivePlot::Style::Line);
  util_->setYRange(0, 100);
  setupDevicePlots(false);
  grid->addWidget(loss_, 0, 0);
  grid->addWidget(acc_, 0, 1);
  grid->addWidget(util_, 1, 0);
  grid->addWidget(mem_, 1, 1);
  grid->addWidget(speed_, 2, 0);
  grid->addWidget(lr_, 2, 1);
  // Loss and accuracy are what people watch: they get the most height.
  grid->setRowStretch(0, 3);
  grid->setRowStretch(1, 2);
  grid->setRowStretch(2, 2);
  // Device readings are cheap (/proc or NVML's cached sample) and twice a
  // second is plenty for a utilisation curve.
  device_timer_->setInterval(500);
  connect(device_timer_, &QTimer::timeout, this, &TrainingPlots::sampleDevice);
}

TrainingPlots::~TrainingPlots() = default;

void TrainingPlots::setupDevicePlots(bool gpu) {
  // Rebuilt per run: a GPU run plots the GPU, a CPU run this process.
  util_->clear();
  mem_->clear();
  if (util_->seriesCount() == 0) {
    s_util_ = util_->addSeries(tr("utilization"), QColor(23, 190, 207), LivePlot::Style::Line);
    s_mem_ = mem_->addSeries(tr("used"), QColor(188, 189, 34), LivePlot::Style::Line);
    s_mem_total_ = mem_->addSeries(tr("total"), QColor(127, 127, 127), LivePlot::Style::Line);
    s_mem_alloc_ =
        mem_->addSeries(tr("engine allocated"), QColor(214, 39, 40), LivePlot::Style::Line);
    s_mem_reserved_ =
        mem_->addSeries(tr("engine reserved"), QColor(255, 152, 150), LivePlot::Style::Line);
    util_->setXLabel(tr("seconds"));
    mem_->setXLabel(tr("seconds"));
  }
  // A CPU run's process memory is a sliver of the machine's, so it gets its
  // own scale (MiB) and the machine's size goes in the note.
  for (int sr : {s_mem_total_, s_mem_alloc_, s_mem_reserved_}) mem_->setSeriesVisible(sr, gpu);
  mem_->setYLabel(gpu ? tr("GiB") : tr("MiB"));
  if (gpu) {
    util_->setNote(tr("GPU utilization (NVML)"));
    mem_->setNote(tr("GPU memory used / total (NVML), engine allocated / reserved"));
  } else {
    QString why = Nvml::instance().available() ? tr("training on the CPU") : tr("no GPU found");
    util_->setNote(tr("CPU use of this process, 100 % = all %1 cores (%2)")
                       .arg(ProcessStats::cores())
                       .arg(why));
    mem_->setNote(tr("resident memory of this process; the machine has %1 GiB (%2)")
                      .arg(double(ProcessStats::totalMemoryBytes()) / kGiB, 0, 'f', 1)
                      .arg(why));
  }
}

void TrainingPlots::startRun(int run, int gpu, bool sample_device) {
  if (run_ > 0)
    for (auto* p : {loss_, acc_, speed_, lr_}) p->archiveRun(tr("run %1").arg(run_));
  run_ = run;
  for (auto* p : {loss_, acc_, speed_, lr_}) {
    p->setRunName(tr("run %1").arg(run));
    p->setKeySpan(0, 0);  // until the caller says how long this run is
  }
  gpu_run_ = gpu >= 0 && Nvml::instance().available();
  setupDevicePlots(gpu_run_);
  if (gpu_run_)
    gpu_ = std::make_unique<GpuSampler>(gpu, 4.0);
  else
    gpu_.reset();
  run_t0_ = now_s();
  got_telemetry_ = false;
  if (!sample_device) {
    device_timer_->stop();
    return;
  }
  proc_->cpuPercent();  // starts the interval the first reading covers
  // The process's memory as the run starts: with the last reading at its
  // end, even a run shorter than the timer's interval draws a line.
  if (!gpu_run_) sampleProcessMemory(0.0);
  device_timer_->start();
}

void TrainingPlots::setPlannedEpochs(int epochs) {
  for (auto* p : {loss_, acc_, speed_, lr_}) p->setKeySpan(0, std::max(0, epochs));
}

void TrainingPlots::endRun() {
  // A last reading, so that a run shorter than the timer's interval still
  // shows where it ended and not a lone point at zero.
  if (device_timer_->isActive()) sampleDevice();
  device_timer_->stop();
  gpu_.reset();
}

void TrainingPlots::setEpochScores(bool validation, bool test) {
  loss_->setSeriesVisible(s_loss_val_, validation);
  acc_->setSeriesVisible(s_acc_val_, validation);
  loss_->setSeriesVisible(s_loss_test_, test);
  acc_->setSeriesVisible(s_acc_test_, test);
}

void TrainingPlots::reset() {
  setEpochScores(true, true);
  endRun();
  for (auto* p : {loss_, acc_, speed_, lr_}) {
    p->clear();
    p->clearOverlays();
    p->setRunName({});
  }
  setupDevicePlots(false);
  run_ = 0;
}

void TrainingPlots::setRunVisible(int run, bool on) {
  for (auto* p : {loss_, acc_, speed_, lr_}) p->setOverlayVisible(run - 1, on);
}

void TrainingPlots::setOverlaysVisible(bool on) {
  for (auto* p : {loss_, acc_, speed_, lr_}) p->setOverlaysVisible(on);
}

double TrainingPlots::runSeconds() const {
  return now_s() - run_t0_;
}

void TrainingPlots::addSteps(const QVector<TrainEvent>& batch) {
  QVector<double> x, loss, acc, sps, lr;
  x.reserve(batch.size());
  for (const TrainEvent& e : batch) {
    x.push_back(epoch_x(e));
    // The step's own values (the plot smooths them); the epoch's running
    // means would lag and jump at every epoch boundary.
    loss.push_back(e.batch_loss);
    acc.push_back(100.0 * e.batch_accuracy);
    sps.push_back(e.samples_per_s);
    lr.push_back(e.lr);
  }
  loss_->addPoints(s_loss_step_, x, loss);
  acc_->addPoints(s_acc_step_, x, acc);
  speed_->addPoints(s_speed_, x, sps);
  lr_->addPoints(s_lr_, x, lr);
}

void TrainingPlots::addEpoch(const TrainEvent& e) {
  const double x = e.epoch;
  loss_->addPoint(s_loss_epoch_, x, e.train_loss);
  loss_->addPoint(s_loss_val_, x, e.val_loss);
  loss_->addPoint(s_loss_test_, x, e.test_loss);
  acc_->addPoint(s_acc_epoch_, x, 100.0 * e.train_accuracy);
  acc_->addPoint(s_acc_val_, x, 100.0 * e.val_accuracy);
  acc_->addPoint(s_acc_test_, x, 100.0 * e.test_accuracy);
}

void TrainingPlots::sampleDevice() {
  const double t = runSeconds();
  if (gpu_run_ && got_telemetry_) return;  // the trainer's own readings are plotted
  if (gpu_run_ && gpu_) {
    GpuSample s = gpu_->latest();
    if (s.utilization_pct >= 0) util_->addPoint(s_util_, t, s.utilization_pct);
    if (s.memory_used >= 0) mem_->addPoint(s_mem_, t, double(s.memory_used) / kGiB);
    if (s.memory_total > 0) mem_->addPoint(s_mem_total_, t, double(s.memory_total) / kGiB);
  } else {
    double cpu = proc_->cpuPercent();
    if (cpu >= 0) util_->addPoint(s_util_, t, cpu);
    sampleProcessMemory(t);
  }
}

void TrainingPlots::sampleProcessMemory(double t) {
  const int64_t rss = ProcessStats::residentBytes();
  if (rss >= 0) mem_->addPoint(s_mem_, t, double(rss) / (1024.0 * 1024.0));
}

void TrainingPlots::addTelemetry(const DeviceReading& r) {
  got_telemetry_ = true;
  const double t = runSeconds();
  if (r.utilization_pct >= 0) util_->addPoint(s_util_, t, r.utilization_pct);
  if (r.memory_used >= 0) mem_->addPoint(s_mem_, t, double(r.memory_used) / kGiB);
  if (r.memory_total > 0) mem_->addPoint(s_mem_total_, t, double(r.memory_total) / kGiB);
  if (r.allocated >= 0) mem_->addPoint(s_mem_alloc_, t, double(r.allocated) / kGiB);
  if (r.reserved >= 0) mem_->addPoint(s_mem_reserved_, t, double(r.reserved) / kGiB);
}

}  // namespace dc::gui
