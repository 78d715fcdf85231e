#include "gui/training_panel.h"

#include "gui/evaluation_view.h"
#include "gui/process_stats.h"
#include "widgets/live_plot.h"

#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/telemetry.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QScrollBar>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTableWidget>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>
#include <chrono>
#include <cmath>

namespace dc::gui {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

QString duration_text(double s) {
  if (!std::isfinite(s) || s < 0) return QStringLiteral("–");
  int t = int(s + 0.5);
  if (t >= 3600) return QString("%1 h %2 min").arg(t / 3600).arg((t % 3600) / 60);
  if (t >= 60) return QString("%1 min %2 s").arg(t / 60).arg(t % 60);
  return QString("%1 s").arg(t);
}

// Position of a step on the epoch axis, so runs of different lengths and
// batch sizes line up when overlaid.
double epoch_x(const TrainEvent& e) {
  if (e.steps_per_epoch <= 0) return e.epoch;
  return (e.epoch - 1) + double(e.step_in_epoch) / double(e.steps_per_epoch);
}

}  // namespace

TrainingPanel::TrainingPanel(ProjectContext* ctx, QWidget* parent)
    : QWidget(parent),
      ctx_(ctx),
      session_(new TrainingSession(this)),
      device_timer_(new QTimer(this)),
      proc_(std::make_unique<ProcessStats>()) {
  buildUi();
  loadSettings(ctx_->project().training);
  connect(ctx_, &ProjectContext::projectChanged, this,
          [this] { loadSettings(ctx_->project().training); });
  connect(session_, &TrainingSession::steps, this, &TrainingPanel::onSteps);
  connect(session_, &TrainingSession::progress, this, &TrainingPanel::onProgress);
  connect(session_, &TrainingSession::epochEnded, this, &TrainingPanel::onEpoch);
  connect(session_, &TrainingSession::finished, this, &TrainingPanel::onFinished);
  connect(session_, &TrainingSession::stateChanged, this, &TrainingPanel::onState);
  connect(session_, &TrainingSession::logMessage, this, &TrainingPanel::appendLog);
  connect(session_, &TrainingSession::telemetry, this, &TrainingPanel::onTelemetry);
  connect(session_, &TrainingSession::checkpointWritten, this, [this](const QString& path) {
    if (path.endsWith("last.safetensors")) eval_->setCheckpoint(path);
  });
  // Device readings are cheap (/proc or NVML's cached sample) and twice a
  // second is plenty for a utilisation curve.
  connect(device_, &QComboBox::currentIndexChanged, this, &TrainingPanel::updateButtons);
  device_timer_->setInterval(500);
  connect(device_timer_, &QTimer::timeout, this, &TrainingPanel::sampleDevice);
  updateButtons();
}

TrainingPanel::~TrainingPanel() = default;

void TrainingPanel::buildUi() {
  auto* root = new QHBoxLayout(this);
  auto* split = new QSplitter(Qt::Horizontal, this);
  root->addWidget(split);

  // Left: settings, controls, progress and log.
  auto* left = new QWidget(split);
  auto* ll = new QVBoxLayout(left);
  auto* settings = new QGroupBox(tr("Training settings"), left);
  auto* form = new QFormLayout(settings);
  optimizer_ = new QComboBox(settings);
  for (const auto& n : enum_names<OptimizerType>()) optimizer_->addItem(QString::fromStdString(n));
  lr_ = new QDoubleSpinBox(settings);
  lr_->setDecimals(6);
  lr_->setRange(1e-6, 10.0);
  lr_->setSingleStep(1e-4);
  schedule_ = new QComboBox(settings);
  for (const auto& n : enum_names<ScheduleType>()) schedule_->addItem(QString::fromStdString(n));
  batch_ = new QSpinBox(settings);
  batch_->setRange(1, 65536);
  epochs_ = new QSpinBox(settings);
  epochs_->setRange(1, 10000);
  precision_ = new QComboBox(settings);
  precision_->addItem(tr("fp32"), "fp32");
  precision_->addItem(tr("bf16 mixed (GPU)"), "bf16");
  precision_->addItem(tr("fp16 mixed, loss scaling (GPU)"), "fp16");
  precision_->setToolTip(
      tr("16-bit compute with fp32 master weights; GPU runs only, the CPU "
         "computes in fp32."));
  device_ = new QComboBox(settings);
  seed_ = new QSpinBox(settings);
  seed_->setRange(0, std::numeric_limits<int>::max());
  steps_limit_ = new QSpinBox(settings);
  steps_limit_->setRange(0, 1000000);
  steps_limit_->setSpecialValueText(tr("whole epoch"));
  steps_limit_->setToolTip(tr("Stop each epoch after this many steps (a quick look)."));
  patience_ = new QSpinBox(settings);
  patience_->setRange(0, 1000);
  patience_->setSpecialValueText(tr("off"));
  patience_->setToolTip(tr("Early stopping: epochs without improvement before stopping."));
  checkpoint_dir_ = new QLineEdit(settings);
  checkpoint_dir_->setText(QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
                           "/runs");
  auto* browse = new QToolButton(settings);
  browse->setText("…");
  connect(browse, &QToolButton::clicked, this, [this] {
    QString d =
        QFileDialog::getExistingDirectory(this, tr("Checkpoint folder"), checkpoint_dir_->text());
    if (!d.isEmpty()) checkpoint_dir_->setText(d);
  });
  auto* ckrow = new QHBoxLayout;
  ckrow->addWidget(checkpoint_dir_, 1);
  ckrow->addWidget(browse);
  form->addRow(tr("Optimizer"), optimizer_);
  form->addRow(tr("Learning rate"), lr_);
  form->addRow(tr("Schedule"), schedule_);
  form->addRow(tr("Batch size"), batch_);
  form->addRow(tr("Epochs"), epochs_);
  form->addRow(tr("Precision"), precision_);
  form->addRow(tr("Device"), device_);
  form->addRow(tr("Seed"), seed_);
  form->addRow(tr("Steps per epoch"), steps_limit_);
  form->addRow(tr("Early stopping"), patience_);
  form->addRow(tr("Checkpoints"), ckrow);
  ll->addWidget(settings);
  fillDevices();
  // Saved with the project, so each edit can make it "modified".
  for (QComboBox* c : {optimizer_, schedule_, precision_, device_})
    connect(c, &QComboBox::currentIndexChanged, this, [this] { Q_EMIT settingsChanged(); });
  for (QSpinBox* b : {batch_, epochs_, seed_, steps_limit_, patience_})
    connect(b, &QSpinBox::valueChanged, this, [this] { Q_EMIT settingsChanged(); });
  connect(lr_, &QDoubleSpinBox::valueChanged, this, [this] { Q_EMIT settingsChanged(); });

  auto* buttons = new QHBoxLayout;
  start_ = new QPushButton(tr("Start"), left);
  pause_ = new QPushButton(tr("Pause"), left);
  resume_ = new QPushButton(tr("Resume"), left);
  stop_ = new QPushButton(tr("Stop"), left);
  start_->setDefault(true);
  for (auto* b : {start_, pause_, resume_, stop_}) buttons->addWidget(b);
  ll->addLayout(buttons);
  connect(start_, &QPushButton::clicked, this, &TrainingPanel::startTraining);
  connect(pause_, &QPushButton::clicked, session_, &TrainingSession::pause);
  connect(resume_, &QPushButton::clicked, session_, &TrainingSession::resume);
  connect(stop_, &QPushButton::clicked, session_, &TrainingSession::stop);

  progress_ = new QProgressBar(left);
  progress_->setRange(0, 1000);
  progress_->setValue(0);
  progress_->setFormat("%p %");
  ll->addWidget(progress_);
  status_ = new QLabel(tr("Ready"), left);
  status_->setWordWrap(true);
  ll->addWidget(status_);
  problems_ = new QLabel(left);
  problems_->setWordWrap(true);
  problems_->setTextFormat(Qt::RichText);
  problems_->setStyleSheet(
      "QLabel { background: #fdecea; color: #611a15; border: 1px solid #f5c2c0;"
      " border-radius: 4px; padding: 6px; }");
  problems_->setVisible(false);
  ll->addWidget(problems_);
  log_ = new QPlainTextEdit(left);
  log_->setReadOnly(true);
  log_->setMaximumBlockCount(5000);
  log_->setPlaceholderText(tr("Training log"));
  ll->addWidget(log_, 1);

  // Right: plots and evaluation.
  tabs_ = new QTabWidget(split);
  auto* curves = new QWidget(tabs_);
  auto* grid = new QGridLayout(curves);
  grid->setContentsMargins(2, 2, 2, 2);
  loss_plot_ = new widgets::LivePlot(tr("Loss"), tr("loss"), curves);
  acc_plot_ = new widgets::LivePlot(tr("Accuracy"), tr("%"), curves);
  speed_plot_ = new widgets::LivePlot(tr("Throughput"), tr("samples/s"), curves);
  lr_plot_ = new widgets::LivePlot(tr("Learning rate"), tr("lr"), curves);
  util_plot_ = new widgets::LivePlot(tr("Utilization"), tr("%"), curves);
  mem_plot_ = new widgets::LivePlot(tr("Memory"), tr("GiB"), curves);
  for (auto* p : {loss_plot_, acc_plot_, speed_plot_, lr_plot_}) p->setXLabel(tr("epoch"));
  s_loss_step_ = loss_plot_->addSeries(tr("train"), QColor(31, 119, 180));
  s_loss_epoch_ = loss_plot_->addSeries(tr("train (epoch)"), QColor(31, 119, 180),
                                        widgets::LivePlot::Style::Epochs);
  s_loss_val_ = loss_plot_->addSeries(tr("validation"), QColor(255, 127, 14),
                                      widgets::LivePlot::Style::Epochs);
  s_loss_test_ =
      loss_plot_->addSeries(tr("test"), QColor(44, 160, 44), widgets::LivePlot::Style::Epochs);
  s_acc_step_ = acc_plot_->addSeries(tr("train"), QColor(31, 119, 180));
  s_acc_epoch_ = acc_plot_->addSeries(tr("train (epoch)"), QColor(31, 119, 180),
                                      widgets::LivePlot::Style::Epochs);
  s_acc_val_ = acc_plot_->addSeries(tr("validation"), QColor(255, 127, 14),
                                    widgets::LivePlot::Style::Epochs);
  s_acc_test_ =
      acc_plot_->addSeries(tr("test"), QColor(44, 160, 44), widgets::LivePlot::Style::Epochs);
  acc_plot_->setYRange(0, 100);
  s_speed_ = speed_plot_->addSeries(tr("samples/s"), QColor(148, 103, 189));
  s_lr_ =
      lr_plot_->addSeries(tr("learning rate"), QColor(214, 39, 40), widgets::LivePlot::Style::Line);
  util_plot_->setYRange(0, 100);
  setupDevicePlots(false);
  grid->addWidget(loss_plot_, 0, 0);
  grid->addWidget(acc_plot_, 0, 1);
  grid->addWidget(util_plot_, 1, 0);
  grid->addWidget(mem_plot_, 1, 1);
  grid->addWidget(speed_plot_, 2, 0);
  grid->addWidget(lr_plot_, 2, 1);
  tabs_->addTab(curves, tr("Curves"));
  eval_ = new EvaluationView(ctx_, tabs_);
  tabs_->addTab(eval_, tr("Evaluation"));
  auto* history = new QWidget(tabs_);
  auto* hl = new QVBoxLayout(history);
  show_overlays_ = new QCheckBox(tr("Overlay earlier runs on the plots (dashed)"), history);
  show_overlays_->setChecked(true);
  runs_ = new QTableWidget(0, 7, history);
  runs_->setHorizontalHeaderLabels({tr("Run"), tr("Settings"), tr("Epochs"), tr("Train loss"),
                                    tr("Held-out accuracy"), tr("Result"), tr("Checkpoints")});
  runs_->horizontalHeader()->setSectionResizeMode(6, QHeaderView::Stretch);
  runs_->verticalHeader()->setVisible(false);
  runs_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  hl->addWidget(show_overlays_);
  hl->addWidget(runs_, 1);
  tabs_->addTab(history, tr("Runs"));
  connect(show_overlays_, &QCheckBox::toggled, this, [this](bool on) {
    for (auto* p : {loss_plot_, acc_plot_, speed_plot_, lr_plot_}) p->setOverlaysVisible(on);
  });
  split->addWidget(left);
  split->addWidget(tabs_);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 3);
  split->setSizes({330, 1000});
}

void TrainingPanel::fillDevices() {
  device_->clear();
  device_->addItem(tr("CPU (%1 threads)").arg(ProcessStats::cores()), "cpu");
  std::string why;
  auto gpus = list_gpus(&why);
  for (const auto& g : gpus)
    device_->addItem(tr("GPU %1: %2 (%3 GiB)")
                         .arg(g.index)
                         .arg(QString::fromStdString(g.name))
                         .arg(double(g.total_bytes) / (1 << 30), 0, 'f', 1),
                     QString("cuda:%1").arg(g.index));
  device_->setToolTip(gpus.empty() ? tr("No GPU: %1").arg(QString::fromStdString(why)) : QString());
}

void TrainingPanel::setupDevicePlots(bool gpu) {
  // Rebuilt per run: a GPU run plots the GPU, a CPU run this process.
  util_plot_->clear();
  mem_plot_->clear();
  if (util_plot_->seriesCount() == 0) {
    s_util_ = util_plot_->addSeries(tr("utilization"), QColor(23, 190, 207),
                                    widgets::LivePlot::Style::Line);
    s_mem_ = mem_plot_->addSeries(tr("used"), QColor(188, 189, 34), widgets::LivePlot::Style::Line);
    s_mem_total_ =
        mem_plot_->addSeries(tr("total"), QColor(127, 127, 127), widgets::LivePlot::Style::Line);
    s_mem_alloc_ = mem_plot_->addSeries(tr("engine allocated"), QColor(214, 39, 40),
                                        widgets::LivePlot::Style::Line);
    s_mem_reserved_ = mem_plot_->addSeries(tr("engine reserved"), QColor(255, 152, 150),
                                           widgets::LivePlot::Style::Line);
    util_plot_->setXLabel(tr("seconds"));
    mem_plot_->setXLabel(tr("seconds"));
  }
  // A CPU run's process memory is a sliver of the machine's, so it gets its
  // own scale (MiB) and the machine's size goes in the note.
  for (int sr : {s_mem_total_, s_mem_alloc_, s_mem_reserved_}) mem_plot_->setSeriesVisible(sr, gpu);
  mem_plot_->setYLabel(gpu ? tr("GiB") : tr("MiB"));
  if (gpu) {
    util_plot_->setNote(tr("GPU utilization (NVML)"));
    mem_plot_->setNote(tr("GPU memory used / total (NVML), engine allocated / reserved"));
  } else {
    QString why = Nvml::instance().available() ? tr("training on the CPU") : tr("no GPU found");
    util_plot_->setNote(tr("CPU use of this process, 100 % = all %1 cores (%2)")
                            .arg(ProcessStats::cores())
                            .arg(why));
    mem_plot_->setNote(tr("resident memory of this process; the machine has %1 GiB (%2)")
                           .arg(double(ProcessStats::totalMemoryBytes()) / (1 << 30), 0, 'f', 1)
                           .arg(why));
  }
}

void TrainingPanel::loadSettings(const TrainConfig& c) {
  optimizer_->setCurrentText(enum_name(c.optimizer.type));
  lr_->setValue(c.optimizer.lr);
  schedule_->setCurrentText(enum_name(c.schedule.type));
  batch_->setValue(int(c.batch));
  epochs_->setValue(c.epochs);
  seed_->setValue(int(c.seed));
  steps_limit_->setValue(int(c.steps_per_epoch_limit));
  patience_->setValue(c.early_stopping_patience);
  int d = device_->findData(QString::fromStdString(c.device.str()));
  device_->setCurrentIndex(d >= 0 ? d : 0);
  int pr = precision_->findData(QString(enum_name(c.precision)));
  precision_->setCurrentIndex(pr >= 0 ? pr : 0);
}

TrainConfig TrainingPanel::config() const {
  // The project carries what other panels own (loss, validation split,
  // normalisation); this panel overrides what it shows.
  TrainConfig c = ctx_->project().training;
  // The combo boxes hold exactly the enums' words.
  c.optimizer.type = *enum_from_name<OptimizerType>(optimizer_->currentText().toStdString());
  c.optimizer.lr = lr_->value();
  c.schedule.type = *enum_from_name<ScheduleType>(schedule_->currentText().toStdString());
  c.batch = batch_->value();
  c.epochs = epochs_->value();
  c.seed = uint64_t(seed_->value());
  c.steps_per_epoch_limit = steps_limit_->value();
  c.early_stopping_patience = patience_->value();
  c.device = parse_device(device_->currentData().toString().toStdString());
  c.precision = c.device.cuda
                    ? *enum_from_name<Precision>(precision_->currentData().toString().toStdString())
                    : Precision::Fp32;
  c.resume.clear();
  return c;
}

void TrainingPanel::setEpochs(int n) {
  epochs_->setValue(n);
}
void TrainingPanel::setStepsPerEpochLimit(int n) {
  steps_limit_->setValue(n);
}
void TrainingPanel::setBatch(int n) {
  batch_->setValue(n);
}
void TrainingPanel::setCheckpointDir(const QString& dir) {
  checkpoint_dir_->setText(dir);
}
QString TrainingPanel::checkpointDir() const {
  return checkpoint_dir_->text();
}
QString TrainingPanel::problemText() const {
  return problems_->isHidden() ? QString() : problems_->text();
}
QString TrainingPanel::logText() const {
  return log_->toPlainText();
}

void TrainingPanel::showProblems(const QStringList& problems) {
  if (problems.isEmpty()) {
    problems_->clear();
    problems_->setVisible(false);
    return;
  }
  QString html = "<b>" + tr("Training cannot start:") + "</b><ul style='margin:0'>";
  for (const QString& p : problems) html += "<li>" + p.toHtmlEscaped() + "</li>";
  problems_->setText(html + "</ul>");
  problems_->setVisible(true);
  for (const QString& p : problems) appendLog(tr("Cannot start: %1").arg(p));
  Q_EMIT problemsFound(problems);
}

void TrainingPanel::appendLog(const QString& line) {
  log_->appendPlainText(QDateTime::currentDateTime().toString("HH:mm:ss  ") + line);
}

void TrainingPanel::startTraining() {
  if (session_->active()) return;
  // Convenience: a project names its dataset, so Start works without a visit
  // to the Dataset tab.
  if (!ctx_->hasDataset()) {
    try {
      ctx_->loadDataset({});
    } catch (const std::exception& e) {
      showProblems(
          {tr("The project's dataset could not be loaded: %1").arg(QString::fromUtf8(e.what()))});
      return;
    }
  }
  QStringList problems = ctx_->trainingProblems();
  if (!problems.isEmpty()) {
    showProblems(problems);
    return;
  }
  TrainConfig cfg = config();
  run_dir_ = checkpoint_dir_->text() + "/" +
             QDateTime::currentDateTime().toString("yyyyMMdd-HHmmss") +
             QString("-run%1").arg(run_ + 1);
  cfg.checkpoint_dir = run_dir_.toStdString();
  try {
    session_->start(ctx_->project().graph, cfg, ctx_->trainingSet(), ctx_->testSet());
  } catch (const std::exception& e) {
    showProblems({QString::fromUtf8(e.what())});
    return;
  }
  showProblems({});
  if (run_ > 0) {
    QString name = tr("run %1").arg(run_);
    for (auto* p : {loss_plot_, acc_plot_, speed_plot_, lr_plot_}) {
      p->archiveRun(name);
      p->setOverlaysVisible(show_overlays_->isChecked());
    }
  }
  ++run_;
  eval_->clear();
  progress_->setValue(0);
  gpu_run_ = cfg.device.cuda && Nvml::instance().available();
  setupDevicePlots(gpu_run_);
  if (gpu_run_) {
    gpu_ = std::make_unique<GpuSampler>(cfg.device.index, 4.0);
  } else {
    gpu_.reset();
  }
  run_t0_ = now_s();
  got_telemetry_ = false;
  proc_->cpuPercent();  // starts the interval the first reading covers
  device_timer_->start();
  const int row = runs_->rowCount();
  runs_->insertRow(row);
  runs_->setItem(row, 0, new QTableWidgetItem(QString::number(run_)));
  runs_->setItem(row, 1,
                 new QTableWidgetItem(QString("%1 lr %2 %3, batch %4, %5, %6")
                                          .arg(optimizer_->currentText())
                                          .arg(lr_->value())
                                          .arg(schedule_->currentText())
                                          .arg(batch_->value())
                                          .arg(QString::fromStdString(cfg.device.str()),
                                               QString(enum_name(cfg.precision)))));
  setRunCell(5, tr("running"));
  setRunCell(6, run_dir_);
  appendLog(tr("Run %1: %2 on %3, checkpoints in %4")
                .arg(run_)
                .arg(ctx_->datasetDescription(), device_->currentText(), run_dir_));
}

void TrainingPanel::onSteps(const QVector<TrainEvent>& batch) {
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
  loss_plot_->addPoints(s_loss_step_, x, loss);
  acc_plot_->addPoints(s_acc_step_, x, acc);
  speed_plot_->addPoints(s_speed_, x, sps);
  lr_plot_->addPoints(s_lr_, x, lr);
}

void TrainingPanel::onProgress(double fraction, double eta_s, double sps, int epoch, int epochs) {
  progress_->setValue(int(std::lround(fraction * 1000)));
  status_->setText(tr("Epoch %1/%2 · %3 samples/s · ETA %4")
                       .arg(epoch)
                       .arg(epochs)
                       .arg(sps, 0, 'f', 0)
                       .arg(duration_text(eta_s)));
}

void TrainingPanel::onEpoch(const TrainEvent& e) {
  const double x = e.epoch;
  loss_plot_->addPoint(s_loss_epoch_, x, e.train_loss);
  loss_plot_->addPoint(s_loss_val_, x, e.val_loss);
  loss_plot_->addPoint(s_loss_test_, x, e.test_loss);
  acc_plot_->addPoint(s_acc_epoch_, x, 100.0 * e.train_accuracy);
  acc_plot_->addPoint(s_acc_val_, x, 100.0 * e.val_accuracy);
  acc_plot_->addPoint(s_acc_test_, x, 100.0 * e.test_accuracy);
  if (!e.confusion.empty()) eval_->setConfusion(e.confusion, e.epoch);
  setRunCell(2, QString("%1/%2").arg(e.epoch).arg(e.epochs));
  setRunCell(3, QString::number(e.train_loss, 'f', 4));
  const double held = std::isfinite(e.val_accuracy) ? e.val_accuracy : e.test_accuracy;
  if (std::isfinite(held))
    setRunCell(4, QString("%1 % (%2)")
                      .arg(100.0 * held, 0, 'f', 2)
                      .arg(std::isfinite(e.val_accuracy) ? tr("validation") : tr("test")));
}

void TrainingPanel::setRunCell(int column, const QString& text) {
  const int row = runs_->rowCount() - 1;
  if (row < 0) return;
  runs_->setItem(row, column, new QTableWidgetItem(text));
}

void TrainingPanel::sampleDevice() {
  const double t = now_s() - run_t0_;
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  if (gpu_run_ && got_telemetry_) return;  // the trainer's own readings are plotted
  if (gpu_run_ && gpu_) {
    GpuSample s = gpu_->latest();
    if (s.utilization_pct >= 0) util_plot_->addPoint(s_util_, t, s.utilization_pct);
    if (s.memory_used >= 0) mem_plot_->addPoint(s_mem_, t, double(s.memory_used) / GiB);
    if (s.memory_total > 0) mem_plot_->addPoint(s_mem_total_, t, double(s.memory_total) / GiB);
  } else {
    double cpu = proc_->cpuPercent();
    if (cpu >= 0) util_plot_->addPoint(s_util_, t, cpu);
    int64_t rss = ProcessStats::residentBytes();
    if (rss >= 0) mem_plot_->addPoint(s_mem_, t, double(rss) / (1024.0 * 1024.0));
  }
}

void TrainingPanel::onTelemetry(const DeviceReading& r) {
  got_telemetry_ = true;
  const double t = now_s() - run_t0_;
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  if (r.utilization_pct >= 0) util_plot_->addPoint(s_util_, t, r.utilization_pct);
  if (r.memory_used >= 0) mem_plot_->addPoint(s_mem_, t, double(r.memory_used) / GiB);
  if (r.memory_total > 0) mem_plot_->addPoint(s_mem_total_, t, double(r.memory_total) / GiB);
  if (r.allocated >= 0) mem_plot_->addPoint(s_mem_alloc_, t, double(r.allocated) / GiB);
  if (r.reserved >= 0) mem_plot_->addPoint(s_mem_reserved_, t, double(r.reserved) / GiB);
}

void TrainingPanel::onFinished(bool ok, const QString& message) {
  device_timer_->stop();
  gpu_.reset();
  Trainer* tr_ = session_->trainer();
  const bool usable = ok || session_->state() == TrainingSession::State::Cancelled;
  if (tr_ && usable) {
    // The thread has ended (the session joined it), so the plan is ours to read.
    ModelWeights w;
    w.state = tr_->plan().state();
    for (auto& [k, t] : w.state) t = t.clone();  // independent of the trainer's buffers
    w.mean = tr_->train_data().mean;
    w.stddev = tr_->train_data().stddev;
    for (const auto& n : tr_->train_data().class_names) w.class_names << QString::fromStdString(n);
    w.source = ok ? tr("weights of run %1").arg(run_) : tr("weights of run %1 (stopped)").arg(run_);
    ctx_->setWeights(std::move(w));
    Q_EMIT weightsReady();
  }
  status_->setText(ok ? tr("Finished") : tr("Ended: %1").arg(message));
  setRunCell(5, ok ? tr("finished") : message);
}

void TrainingPanel::onState(TrainingSession::State) {
  ctx_->setBusy(session_->active());
  updateButtons();
}

void TrainingPanel::updateButtons() {
  using S = TrainingSession::State;
  S s = session_->state();
  start_->setEnabled(!session_->active());
  pause_->setEnabled(s == S::Running);
  resume_->setEnabled(s == S::Paused);
  stop_->setEnabled(s == S::Running || s == S::Paused);
  for (QWidget* w : {static_cast<QWidget*>(optimizer_), static_cast<QWidget*>(lr_),
                     static_cast<QWidget*>(schedule_), static_cast<QWidget*>(batch_),
                     static_cast<QWidget*>(epochs_), static_cast<QWidget*>(device_),
                     static_cast<QWidget*>(seed_), static_cast<QWidget*>(steps_limit_),
                     static_cast<QWidget*>(precision_), static_cast<QWidget*>(patience_),
                     static_cast<QWidget*>(checkpoint_dir_)})
    w->setEnabled(!session_->active());
  if (s == S::Paused) status_->setText(tr("Paused"));
  // Reduced precision exists on the GPU only.
  if (!session_->active()) {
    const bool gpu = device_->currentData().toString() != "cpu";
    precision_->setEnabled(gpu);
    if (!gpu) precision_->setCurrentIndex(0);
  }
}

}  // namespace dc::gui
