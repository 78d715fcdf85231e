#include "gui/training_panel.h"

#include "gui/evaluation_view.h"
#include "gui/process_stats.h"
#include "gui/training_plots.h"
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
#include <QFileInfo>
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
#include <QScrollArea>
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

QString duration_text(double s) {
  if (!std::isfinite(s) || s < 0) return QStringLiteral("–");
  int t = int(s + 0.5);
  if (t >= 3600) return QString("%1 h %2 min").arg(t / 3600).arg((t % 3600) / 60);
  if (t >= 60) return QString("%1 min %2 s").arg(t / 60).arg(t % 60);
  return QString("%1 s").arg(t);
}

// Where runs go unless the user picks a folder: ~/.local/share/DeepCanvas/runs
// on Linux, as the README says (AppLocalDataLocation would add the
// application's name a second time: DeepCanvas/DeepCanvas).
QString default_runs_folder() {
  return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + "/DeepCanvas/runs";
}

enum RunColumn { kRun, kSettings, kEpochs, kTrainLoss, kHeldOut, kResult, kFolder };

}  // namespace

TrainingPanel::TrainingPanel(ProjectContext* ctx, QWidget* parent)
    : QWidget(parent), ctx_(ctx), session_(new TrainingSession(this)) {
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
  connect(session_, &TrainingSession::telemetry, plots_, &TrainingPlots::addTelemetry);
  connect(ctx_, &ProjectContext::projectReplaced, this, &TrainingPanel::resetRuns);
  connect(session_, &TrainingSession::checkpointWritten, this, [this](const QString& path) {
    if (path.endsWith("last.safetensors")) eval_->setCheckpoint(path);
  });
  connect(device_, &QComboBox::currentIndexChanged, this, &TrainingPanel::updateButtons);
  updateButtons();
}

TrainingPanel::~TrainingPanel() = default;

void TrainingPanel::buildUi() {
  auto* root = new QHBoxLayout(this);
  root->setContentsMargins(4, 4, 4, 4);
  auto* split = new QSplitter(Qt::Horizontal, this);
  root->addWidget(split);

  // Left: settings (collapsible), controls, progress and log.
  auto* left = new QWidget(split);
  auto* ll = new QVBoxLayout(left);
  ll->setContentsMargins(0, 0, 4, 0);
  settings_toggle_ = new QToolButton(left);
  settings_toggle_->setCheckable(true);
  settings_toggle_->setChecked(true);
  settings_toggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  settings_toggle_->setArrowType(Qt::DownArrow);
  settings_toggle_->setText(tr("Training settings"));
  settings_toggle_->setAutoRaise(true);
  settings_toggle_->setToolTip(tr("Show or hide the settings, leaving more room for the log"));
  ll->addWidget(settings_toggle_);
  settings_ = new QGroupBox(left);
  auto* form = new QFormLayout(settings_);
  form->setContentsMargins(6, 4, 6, 4);
  form->setVerticalSpacing(3);
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  QGroupBox* settings = settings_;
  optimizer_ = new QComboBox(settings);
  for (const auto& n : optimizer_names()) optimizer_->addItem(QString::fromStdString(n));
  lr_ = new QDoubleSpinBox(settings);
  lr_->setDecimals(6);
  lr_->setRange(1e-6, 10.0);
  lr_->setSingleStep(1e-4);
  schedule_ = new QComboBox(settings);
  for (const auto& n : schedule_names()) schedule_->addItem(QString::fromStdString(n));
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
  // Long names (a GPU's, the precision's) must not widen the column.
  for (QComboBox* c : {optimizer_, schedule_, precision_, device_}) {
    c->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    c->setMinimumContentsLength(8);
  }
  checkpoint_dir_ = new QLineEdit(settings);
  setCheckpointDir(default_runs_folder());
  auto* browse = new QToolButton(settings);
  browse->setText("…");
  browse->setToolTip(tr("Choose the folder runs write their checkpoints to"));
  connect(browse, &QToolButton::clicked, this, [this] {
    QString d =
        QFileDialog::getExistingDirectory(this, tr("Checkpoint folder"), checkpoint_dir_->text());
    if (!d.isEmpty()) setCheckpointDir(d);
  });
  connect(checkpoint_dir_, &QLineEdit::textChanged, checkpoint_dir_,
          [this](const QString& t) { checkpoint_dir_->setToolTip(t); });
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
  connect(settings_toggle_, &QToolButton::toggled, this, &TrainingPanel::setSettingsVisible);
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
  for (auto* b : {start_, pause_, resume_, stop_}) {
    b->setMinimumWidth(0);
    buttons->addWidget(b);
  }
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
  log_->setMinimumHeight(60);
  ll->addWidget(log_, 1);

  // Right: plots, evaluation and the runs.
  tabs_ = new QTabWidget(split);
  plots_ = new TrainingPlots(tabs_);
  tabs_->addTab(plots_, tr("Curves"));
  eval_ = new EvaluationView(ctx_, tabs_);
  tabs_->addTab(eval_, tr("Evaluation"));
  auto* history = new QWidget(tabs_);
  auto* hl = new QVBoxLayout(history);
  show_overlays_ =
      new QCheckBox(tr("Overlay earlier runs on the plots (tick each run below)"), history);
  show_overlays_->setChecked(true);
  runs_ = new QTableWidget(0, 7, history);
  runs_->setHorizontalHeaderLabels({tr("Run"), tr("Settings"), tr("Epochs"), tr("Train loss"),
                                    tr("Held-out accuracy"), tr("Result"), tr("Checkpoints")});
  runs_->horizontalHeaderItem(kRun)->setToolTip(
      tr("Ticked runs are drawn on the plots, in the colour shown"));
  // Headers and values in full: columns fit their contents, the folder takes the rest.
  runs_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  runs_->horizontalHeader()->setStretchLastSection(true);
  runs_->verticalHeader()->setVisible(false);
  runs_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  runs_->setTextElideMode(Qt::ElideLeft);  // a folder's end names the run
  hl->addWidget(show_overlays_);
  hl->addWidget(runs_, 1);
  tabs_->addTab(history, tr("Runs"));
  connect(show_overlays_, &QCheckBox::toggled, plots_, &TrainingPlots::setOverlaysVisible);
  connect(runs_, &QTableWidget::itemChanged, this, [this](QTableWidgetItem* it) {
    if (it->column() != kRun || !(it->flags() & Qt::ItemIsUserCheckable)) return;
    plots_->setRunVisible(it->row() + 1, it->checkState() == Qt::Checked);
  });
  split->addWidget(left);
  split->addWidget(tabs_);
  split->setCollapsible(1, false);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setSizes({300, 980});
}

void TrainingPanel::setSettingsVisible(bool on) {
  settings_->setVisible(on);
  settings_toggle_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
  if (settings_toggle_->isChecked() != on) {
    const QSignalBlocker block(settings_toggle_);
    settings_toggle_->setChecked(on);
  }
}

bool TrainingPanel::settingsVisible() const {
  return !settings_->isHidden();
}

widgets::LivePlot* TrainingPanel::lossPlot() const {
  return plots_->loss();
}
widgets::LivePlot* TrainingPanel::accuracyPlot() const {
  return plots_->accuracy();
}
widgets::LivePlot* TrainingPanel::throughputPlot() const {
  return plots_->throughput();
}
widgets::LivePlot* TrainingPanel::lrPlot() const {
  return plots_->learningRate();
}
widgets::LivePlot* TrainingPanel::utilizationPlot() const {
  return plots_->utilization();
}
widgets::LivePlot* TrainingPanel::memoryPlot() const {
  return plots_->memory();
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

void TrainingPanel::loadSettings(const TrainConfig& c) {
  optimizer_->setCurrentText(QString::fromStdString(c.optimizer.type));
  lr_->setValue(c.optimizer.lr);
  schedule_->setCurrentText(QString::fromStdString(c.schedule.type));
  batch_->setValue(int(c.batch));
  epochs_->setValue(c.epochs);
  seed_->setValue(int(c.seed));
  steps_limit_->setValue(int(c.steps_per_epoch_limit));
  patience_->setValue(c.early_stopping_patience);
  int d = device_->findData(QString::fromStdString(c.device));
  device_->setCurrentIndex(d >= 0 ? d : 0);
  int pr = precision_->findData(QString::fromStdString(c.precision));
  precision_->setCurrentIndex(pr >= 0 ? pr : 0);
}

TrainConfig TrainingPanel::config() const {
  // The project carries what other panels own (loss, validation split,
  // normalisation); this panel overrides what it shows.
  TrainConfig c = ctx_->project().training;
  c.optimizer.type = optimizer_->currentText().toStdString();
  c.optimizer.lr = lr_->value();
  c.schedule.type = schedule_->currentText().toStdString();
  c.batch = batch_->value();
  c.epochs = epochs_->value();
  c.seed = uint64_t(seed_->value());
  c.steps_per_epoch_limit = steps_limit_->value();
  c.early_stopping_patience = patience_->value();
  c.device = device_->currentData().toString().toStdString();
  c.precision = c.device == "cpu" ? "fp32" : precision_->currentData().toString().toStdString();
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
  // The start of a path says where it is; QLineEdit would show its end.
  checkpoint_dir_->setCursorPosition(0);
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
QString TrainingPanel::statusText() const {
  return status_->text();
}

void TrainingPanel::resetRuns() {
  session_->stopAndWait();  // callers ask first; this only makes sure
  plots_->reset();
  eval_->clear();
  runs_->setRowCount(0);
  log_->clear();
  progress_->setValue(0);
  status_->setText(tr("Ready"));
  showProblems({});
  run_ = 0;
  run_dir_.clear();
  best_epoch_.clear();
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
  ++run_;
  best_epoch_.clear();
  eval_->clear();
  progress_->setValue(0);
  const bool gpu = cfg.device != "cpu";
  plots_->startRun(run_, gpu && cfg.device.size() > 5 ? std::stoi(cfg.device.substr(5))
                         : gpu                        ? 0
                                                      : -1);
  const int row = runs_->rowCount();
  {
    const QSignalBlocker block(runs_);  // the tick of a new row is not a user's choice
    // The previous run is an overlay now: its tick shows or hides it.
    if (QTableWidgetItem* prev = row > 0 ? runs_->item(row - 1, kRun) : nullptr)
      prev->setFlags(prev->flags() | Qt::ItemIsUserCheckable);
    runs_->insertRow(row);
    auto* run = new QTableWidgetItem(QString::number(run_));
    run->setData(Qt::DecorationRole, widgets::LivePlot::runColor(run_ - 1));
    run->setCheckState(Qt::Checked);
    run->setFlags(run->flags() & ~Qt::ItemIsUserCheckable);  // drawn while it runs
    runs_->setItem(row, kRun, run);
  }
  runs_->setItem(row, kSettings,
                 new QTableWidgetItem(QString("%1 lr %2 %3, batch %4, %5, %6")
                                          .arg(optimizer_->currentText())
                                          .arg(lr_->value())
                                          .arg(schedule_->currentText())
                                          .arg(batch_->value())
                                          .arg(QString::fromStdString(cfg.device),
                                               QString::fromStdString(cfg.precision))));
  setRunCell(kResult, tr("running"));
  setRunCell(kFolder, run_dir_);
  appendLog(tr("Run %1: %2 on %3, checkpoints in %4")
                .arg(run_)
                .arg(ctx_->datasetDescription(), device_->currentText(), run_dir_));
}

void TrainingPanel::onSteps(const QVector<TrainEvent>& batch) {
  plots_->addSteps(batch);
}

void TrainingPanel::onProgress(double fraction, double eta_s, double sps, int epoch, int epochs) {
  progress_->setValue(int(std::lround(fraction * 1000)));
  // Paused: no rate or ETA, they would describe a run that is not running.
  if (session_->state() == TrainingSession::State::Paused) return;
  status_->setText(tr("Epoch %1/%2 · %3 samples/s · ETA %4")
                       .arg(epoch)
                       .arg(epochs)
                       .arg(sps, 0, 'f', 0)
                       .arg(duration_text(eta_s)));
}

void TrainingPanel::onEpoch(const TrainEvent& e) {
  plots_->addEpoch(e);
  if (!e.confusion.empty()) eval_->setConfusion(e.confusion, e.epoch);
  setRunCell(kEpochs, QString("%1/%2").arg(e.epoch).arg(e.epochs));
  setRunCell(kTrainLoss, QString::number(e.train_loss, 'f', 4));
  const double held = std::isfinite(e.val_accuracy) ? e.val_accuracy : e.test_accuracy;
  const QString which = std::isfinite(e.val_accuracy) ? tr("validation") : tr("test");
  if (std::isfinite(held))
    setRunCell(kHeldOut, QString("%1 % (%2)").arg(100.0 * held, 0, 'f', 2).arg(which));
  if (e.best)
    best_epoch_ = std::isfinite(held)
                      ? tr("epoch %1, %2 % %3").arg(e.epoch).arg(100.0 * held, 0, 'f', 2).arg(which)
                      : tr("epoch %1").arg(e.epoch);
}

void TrainingPanel::setRunCell(int column, const QString& text) {
  const int row = runs_->rowCount() - 1;
  if (row < 0) return;
  runs_->setItem(row, column, new QTableWidgetItem(text));
}

void TrainingPanel::offerRunCheckpoints(bool finished) {
  QVector<RunCheckpoint> offered;
  auto offer = [&](const QString& file, const QString& label) {
    const QString path = run_dir_ + "/" + file;
    if (QFileInfo::exists(path)) offered.push_back({run_, label, path});
  };
  if (!best_epoch_.isEmpty())
    offer("best.safetensors", tr("Run %1: best (%2)").arg(run_).arg(best_epoch_));
  if (finished)
    offer("last.safetensors", tr("Run %1: last epoch").arg(run_));
  else
    offer("stopped.safetensors", tr("Run %1: as stopped").arg(run_));
  ctx_->addRunCheckpoints(offered);
}

void TrainingPanel::onFinished(bool ok, const QString& message) {
  plots_->endRun();
  Trainer* tr_ = session_->trainer();
  const bool stopped = session_->state() == TrainingSession::State::Cancelled;
  if (tr_ && (ok || stopped)) {
    offerRunCheckpoints(ok);
    QString line;
    if (stopped && ctx_->weights().valid()) {
      // A run cut short is usually worse than the one before: the Inference
      // tab keeps what it had, and offers this run's weights to choose.
      line = tr("Run %1 stopped. The Inference tab still uses %2; choose run %1's weights there.")
                 .arg(run_)
                 .arg(ctx_->weights().source);
    } else {
      // The thread has ended (the session joined it), so the plan is ours to read.
      ModelWeights w;
      w.state = tr_->plan().state();
      for (auto& [k, t] : w.state) t = t.clone();  // independent of the trainer's buffers
      w.mean = tr_->train_data().mean;
      w.stddev = tr_->train_data().stddev;
      for (const auto& n : tr_->train_data().class_names)
        w.class_names << QString::fromStdString(n);
      // At the end the trainer goes back to the best epoch's weights
      // (restore_best) when a later epoch was worse: say which they are.
      const TrainResult& r = tr_->result();
      const bool best =
          ok && tr_->config().restore_best && r.best_epoch > 0 && r.best_epoch != r.epochs_run;
      w.source = !ok    ? tr("run %1 as stopped").arg(run_)
                 : best ? tr("run %1, best epoch (%2)").arg(run_).arg(r.best_epoch)
                        : tr("run %1, last epoch").arg(run_);
      ctx_->setWeights(std::move(w));
      line =
          !ok ? tr("Run %1 stopped: the Inference tab now uses its weights as stopped.").arg(run_)
          : best ? tr("Run %1 finished: the Inference tab now uses its best epoch's (%2) "
                      "weights.")
                       .arg(run_)
                       .arg(r.best_epoch)
                 : tr("Run %1 finished: the Inference tab now uses its last epoch's weights.")
                       .arg(run_);
      Q_EMIT weightsReady();
    }
    appendLog(line);
    Q_EMIT this->message(line);
  } else {
    Q_EMIT this->message(tr("Run %1 failed: %2").arg(run_).arg(message));
  }
  status_->setText(ok ? tr("Finished") : tr("Ended: %1").arg(message));
  setRunCell(kResult, ok ? tr("finished") : message);
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
  if (s == S::Paused)
    status_->setText(tr("Paused at %1 %").arg(progress_->value() / 10.0, 0, 'f', 1));
  // Reduced precision exists on the GPU only.
  if (!session_->active()) {
    const bool gpu = device_->currentData().toString() != "cpu";
    precision_->setEnabled(gpu);
    if (!gpu) precision_->setCurrentIndex(0);
  }
}

}  // namespace dc::gui
