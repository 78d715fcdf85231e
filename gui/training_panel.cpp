#include "gui/training_panel.h"

#include "gui/evaluation_view.h"
#include "gui/process_stats.h"
#include "gui/run_follower.h"
#include "gui/run_history.h"
#include "gui/run_start.h"
#include "gui/settings_form.h"
#include "gui/training_diagnosis.h"
#include "gui/training_plots.h"
#include "gui/training_settings_view.h"
#include "widgets/live_plot.h"

#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/telemetry.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
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

// The settings' scroll area asks for the whole form: QScrollArea's own hint
// stops at 24 lines, so at 1920x1080 the settings scrolled beside an empty
// log. And it is never narrower than the form: with no horizontal scrolling
// a narrower one cut the editors (and the combo boxes' arrows) at its right
// edge.
class SettingsScrollArea : public QScrollArea {
 public:
  using QScrollArea::QScrollArea;
  QSize sizeHint() const override {
    const QWidget* w = widget();
    return w ? w->sizeHint() + chrome() : QScrollArea::sizeHint();
  }
  QSize minimumSizeHint() const override {
    const QWidget* w = widget();
    return {w ? w->minimumSizeHint().width() + chrome().width() : 0, 90};
  }

 private:
  QSize chrome() const {
    const int f = 2 * frameWidth();
    return {f + verticalScrollBar()->sizeHint().width(), f};
  }
};

}  // namespace

TrainingPanel::TrainingPanel(ProjectContext* ctx, QWidget* parent)
    : QWidget(parent),
      ctx_(ctx),
      session_(new TrainingSession(this)),
      follower_(new RunFollower(this)) {
  connect(follower_, &RunFollower::changed, this, &TrainingPanel::pollImportedRun);
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
  connect(session_, &TrainingSession::steps, diagnosis_, &RunDiagnosisView::addSteps);
  connect(session_, &TrainingSession::telemetry, diagnosis_, &RunDiagnosisView::addTelemetry);
  connect(ctx_, &ProjectContext::projectReplaced, this, &TrainingPanel::resetRuns);
  connect(session_, &TrainingSession::checkpointWritten, this, [this](const QString& path) {
    if (path.endsWith("last.safetensors")) eval_->setCheckpoint(path);
  });
  connect(settings_view_, &TrainingSettingsView::deviceChanged, this,
          &TrainingPanel::updateButtons);
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
  settings_view_ = new TrainingSettingsView(ctx_, left);
  // The settings scroll on their own when the window is short (1280x720
  // with a run's diagnosis below them), so Start, Pause, the progress and
  // the diagnosis stay in view and the page never scrolls.
  auto* settings_area = new SettingsScrollArea(left);
  settings_area->setObjectName("trainingSettingsArea");
  settings_area->setWidget(settings_view_);
  settings_area->setWidgetResizable(true);
  settings_area->setFrameShape(QFrame::NoFrame);
  settings_area->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  // Shown whole when there is room; the log below takes what is left.
  settings_area->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
  ll->addWidget(settings_area, 0);
  // Its height follows the settings' (shown or hidden).
  connect(settings_view_, &TrainingSettingsView::settingsShown, settings_area,
          [settings_area] { settings_area->updateGeometry(); });
  buildTuningUi(ll);
  connect(settings_view_, &TrainingSettingsView::changed, this, [this] {
    // Before the first run the empty plots show the epochs it will train.
    if (run_ == 0) plots_->setPlannedEpochs(settings_view_->config().epochs);
    Q_EMIT settingsChanged();
  });

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
  diagnosis_ = new RunDiagnosisView(left);
  ll->addWidget(diagnosis_);
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
  history_ = new RunHistory(tabs_);
  tabs_->addTab(history_, tr("Runs"));
  connect(history_, &RunHistory::overlaysToggled, plots_, &TrainingPlots::setOverlaysVisible);
  connect(history_, &RunHistory::runVisibilityChanged, plots_, &TrainingPlots::setRunVisible);
  split->addWidget(left);
  split->addWidget(tabs_);
  split->setCollapsible(1, false);
  split->setStretchFactor(0, 0);
  split->setStretchFactor(1, 1);
  split->setSizes({300, 980});
}

void TrainingPanel::setSettingsVisible(bool on) {
  settings_view_->setSettingsVisible(on);
}

QTableWidget* TrainingPanel::runHistory() const {
  return history_->table();
}

bool TrainingPanel::settingsVisible() const {
  return settings_view_->settingsVisible();
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

void TrainingPanel::loadSettings(const TrainConfig& c) {
  settings_view_->loadSettings(c);
  if (run_ == 0) plots_->setPlannedEpochs(c.epochs);
  shown_batch_ = c.batch;  // the hint compares later edits with this
  updateButtons();
}

TrainConfig TrainingPanel::config() const {
  return settings_view_->config();
}
SettingsForm* TrainingPanel::settingsForm(const QString& group) const {
  return settings_view_->form(group);
}
QStringList TrainingPanel::settingProblems() const {
  return settings_view_->problems();
}
void TrainingPanel::setEpochs(int n) {
  settings_view_->setEpochs(n);
}
void TrainingPanel::setStepsPerEpochLimit(int n) {
  settings_view_->setStepsPerEpochLimit(n);
}
void TrainingPanel::setBatch(int n) {
  settings_view_->setBatch(n);
}
void TrainingPanel::setCheckpointDir(const QString& dir) {
  settings_view_->setCheckpointDir(dir);
}
QString TrainingPanel::checkpointDir() const {
  return settings_view_->checkpointDir();
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
  follower_->stop();        // another project: an opened run is not followed any more
  import_row_ = -1;
  plots_->reset();
  diagnosis_->reset();
  eval_->clear();
  history_->clear();
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
  // The engine lists several problems of one network on separate lines;
  // rich text would run them together.
  for (const QString& p : problems)
    html += "<li>" + p.toHtmlEscaped().replace('\n', "<br>") + "</li>";
  problems_->setText(html + "</ul>");
  problems_->setVisible(true);
  for (const QString& p : problems) appendLog(tr("Cannot start: %1").arg(p));
  Q_EMIT problemsFound(problems);
}

void TrainingPanel::appendLog(const QString& line) {
  log_->appendPlainText(QDateTime::currentDateTime().toString("HH:mm:ss  ") + line);
}

QStringList TrainingPanel::problemsBeforeRun(const QString& sweep_running,
                                             const std::function<TrainConfig()>& settings,
                                             const std::optional<AppRunCheck>& run,
                                             TrainConfig* used) {
  RunStartCheck check{start_blocker_,
                      ProjectContext::BusyOwner::Sweep,
                      sweep_running,
                      {},
                      tr("The project's dataset could not be loaded: %1"),
                      [this] { return settingProblems(); },
                      run};
  return runStartProblems(ctx_, check, settings, used);
}

void TrainingPanel::startTraining() {
  if (session_->active()) return;
  // The settings as shown (a typed value the table refuses first), then
  // the engine's checks of these settings with this network and data.
  TrainConfig cfg;
  // The project's GPU missing here is a fallback, not a refusal: it was not
  // chosen in this session.
  const bool missing = settings_view_->missingDevice().cuda;
  AppRunCheck fallback;
  fallback.checkpoint_folder = checkpointDir().toStdString();
  fallback.device_chosen = false;
  const QStringList problems = problemsBeforeRun(
      tr("A sweep is running in the Experiments tab. Stop it there (it can be resumed later) "
         "before starting a training run."),
      [this] {
        // The engine's prepare_run() checks the folder the run writes
        // into, as the CLI checks its own checkpoint folder.
        TrainConfig c = config();
        c.checkpoint_dir = checkpointDir().toStdString();
        return c;
      },
      missing ? std::optional<AppRunCheck>(fallback) : std::nullopt, &cfg);
  if (!problems.isEmpty()) {
    showProblems(problems);
    return;
  }
  if (missing) {
    // As the CLI does with a project's GPU this machine lacks (the engine's
    // prepare_run); the project keeps asking for it.
    appendLog(tr("This project asks for %1, which this machine does not have: training on the "
                 "CPU in fp32.")
                  .arg(QString::fromStdString(cfg.device.str())));
    cfg.device = DeviceSpec{};
    cfg.precision = Precision::Fp32;
  }
  run_dir_ = checkpointDir() + "/" + QDateTime::currentDateTime().toString("yyyyMMdd-HHmmss") +
             QString("-run%1").arg(run_ + 1);
  cfg.checkpoint_dir = run_dir_.toStdString();
  cfg.init_weights = resolve_project_file(ctx_->project(), cfg.init_weights);
  session_->recordNextRun({cfg.checkpoint_dir, settings_view_->tensorBoard(), ctx_->project().name,
                           run_settings_text(cfg)});
  try {
    session_->start(ctx_->project().graph, cfg, ctx_->trainSet(), ctx_->testSet());
  } catch (const std::exception& e) {
    showProblems({QString::fromUtf8(e.what())});
    return;
  }
  showProblems({});
  ++run_;
  best_epoch_.clear();
  eval_->clear();
  progress_->setValue(0);
  // A followed run's plots are this run's overlay from now on.
  if (follower_->active()) stopFollowingRun(tr("no longer followed (run %1 started)").arg(run_));
  plots_->startRun(run_, cfg.device.cuda ? cfg.device.index : -1);
  plots_->setPlannedEpochs(cfg.epochs);
  plots_->setEpochScores(cfg.val_split > 0, ctx_->testSet() != nullptr);
  diagnosis_->startRun(ctx_->project().graph, cfg, ctx_->residentBytes());
  history_->addRun(
      run_,
      QString("%1 lr %2 %3, batch %4, %5, %6")
          .arg(enum_name(cfg.optimizer.type))
          .arg(cfg.optimizer.lr)
          .arg(enum_name(cfg.schedule.type))
          .arg(cfg.batch)
          .arg(QString::fromStdString(cfg.device.str()), QString(enum_name(cfg.precision))),
      run_dir_);
  appendLog(tr("Run %1: %2 on %3, checkpoints in %4")
                .arg(run_)
                .arg(ctx_->datasetDescription(), settings_view_->deviceText(), run_dir_));
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
  history_->setLastCell(RunHistory::kEpochs, QString("%1/%2").arg(e.epoch).arg(e.epochs));
  history_->setLastCell(RunHistory::kTrainLoss, QString::number(e.train_loss, 'f', 4));
  const double held = std::isfinite(e.val_accuracy) ? e.val_accuracy : e.test_accuracy;
  const QString which = std::isfinite(e.val_accuracy) ? tr("validation") : tr("test");
  if (std::isfinite(held))
    history_->setLastCell(RunHistory::kHeldOut,
                          QString("%1 % (%2)").arg(100.0 * held, 0, 'f', 2).arg(which));
  if (e.best)
    best_epoch_ = std::isfinite(held)
                      ? tr("epoch %1, %2 % %3").arg(e.epoch).arg(100.0 * held, 0, 'f', 2).arg(which)
                      : tr("epoch %1").arg(e.epoch);
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
  diagnosis_->endRun();
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
                 .arg(ctx_->weightsInUse().source);
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
      // A checkpoint chosen in the Inference tab stays chosen (and is what
      // the exports use): say so rather than claim the run's weights are in use.
      if (&ctx_->weightsInUse() != &ctx_->weights())
        line = (ok ? tr("Run %1 finished; its weights are the Inference tab's Latest, but it "
                        "still predicts with %2, chosen there.")
                   : tr("Run %1 stopped; its weights are the Inference tab's Latest, but it "
                        "still predicts with %2, chosen there."))
                   .arg(run_)
                   .arg(ctx_->weightsInUse().source);
      Q_EMIT weightsReady();
    }
    appendLog(line);
    Q_EMIT this->message(line);
  } else {
    Q_EMIT this->message(tr("Run %1 failed: %2").arg(run_).arg(message));
  }
  // Images found bad mid-run were skipped (counted by the engine): name them,
  // the run's numbers rest on the others.
  const QString bad = badImagesText(ctx_->trainSet().get());
  if (!bad.isEmpty()) appendLog(bad);
  status_->setText((ok ? tr("Finished") : tr("Ended: %1").arg(message)) +
                   (bad.isEmpty() ? QString() : " — " + bad.section(':', 0, 0)));
  history_->setLastCell(RunHistory::kResult, ok ? tr("finished") : message);
}

void TrainingPanel::onState(TrainingSession::State) {
  ctx_->setBusy(ProjectContext::BusyOwner::Training, session_->active());
  updateButtons();
}

void TrainingPanel::updateButtons() {
  using S = TrainingSession::State;
  S s = session_->state();
  start_->setEnabled(!session_->active());
  pause_->setEnabled(s == S::Running);
  resume_->setEnabled(s == S::Paused);
  stop_->setEnabled(s == S::Running || s == S::Paused);
  if (s == S::Paused)
    status_->setText(tr("Paused at %1 %").arg(progress_->value() / 10.0, 0, 'f', 1));
  settings_view_->setRunning(session_->active());
}

}  // namespace dc::gui
