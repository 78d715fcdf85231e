#include "gui/training_session.h"

#include <deepcanvas/errors.h>

#include <QDir>
#include <chrono>

namespace dc::gui {

namespace {
bool read_telemetry(const TrainEvent& e, DeviceReading& r) {
  if (e.kind != TrainEvent::Kind::Telemetry) return false;
  r.t = e.gpu.t;
  r.utilization_pct = e.gpu.utilization_pct;
  r.memory_used = e.gpu.memory_used;
  r.memory_total = e.gpu.memory_total;
  r.allocated = e.device_allocated;
  r.reserved = e.device_reserved;
  return true;
}
}  // namespace

namespace {
double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

void TrainingSession::discountPause(TrainEvent& e, int64_t batch, double paused_s) {
  if (paused_s <= 0 || e.samples_per_s <= 0 || e.step_in_epoch <= 0 || batch <= 0) return;
  // The trainer reports samples since the epoch began over the wall time
  // since then, pause included.
  const double samples = double(e.step_in_epoch) * double(batch);
  const double active = samples / e.samples_per_s - paused_s;
  if (active <= 0) return;  // the two clocks disagree; keep the trainer's figure
  e.samples_per_s = samples / active;
  e.eta_s = double(e.steps_total - e.step) * (active / double(e.step_in_epoch));
}

void TrainingSession::forwardTelemetry(const TrainEvent& e) {
  DeviceReading r;
  if (!read_telemetry(e, r)) return;
  reading_ = r;
  have_reading_ = true;
}

TrainingSession::TrainingSession(QObject* parent) : QObject(parent) {
  qRegisterMetaType<dc::TrainEvent>();
  qRegisterMetaType<dc::gui::DeviceReading>();
  timer_.setInterval(33);
  connect(&timer_, &QTimer::timeout, this, &TrainingSession::poll);
}

TrainingSession::~TrainingSession() {
  timer_.stop();
  if (trainer_) {
    trainer_->cancel();
    trainer_->wait();
  }
}

void TrainingSession::start(const Graph& g, const TrainConfig& cfg, std::shared_ptr<Dataset> train,
                            std::shared_ptr<Dataset> test) {
  if (active()) throw Error("training is already running; stop it first");
  if (trainer_) {
    trainer_->wait();
    trainer_.reset();
  }
  if (!cfg.checkpoint_dir.empty()) QDir().mkpath(QString::fromStdString(cfg.checkpoint_dir));
  // The constructor checks graph against data and throws before any thread starts.
  trainer_ = std::make_unique<Trainer>(g, cfg, std::move(train), std::move(test));
  recorder_.reset();
  if (record_) recorder_ = std::make_unique<RunRecorder>(std::move(*record_));
  record_.reset();
  last_checkpoint_.clear();
  fraction_ = 0;
  last_epoch_done_ = 0;
  last_step_ = 0;
  paused_since_ = -1;
  paused_in_epoch_ = 0;
  trainer_->start();
  setState(State::Running);
  timer_.start();
}

void TrainingSession::pause() {
  if (trainer_ && state_ == State::Running) trainer_->pause();
}

void TrainingSession::resume() {
  if (trainer_ && state_ == State::Paused) trainer_->resume();
}

void TrainingSession::stop() {
  if (!trainer_ || !active()) return;
  trainer_->cancel();
  setState(State::Stopping);
  Q_EMIT logMessage(tr("Stopping at the end of the current step…"));
}

void TrainingSession::stopAndWait() {
  if (!trainer_ || !active()) return;
  stop();
  trainer_->wait();
  // The thread has ended, so every event is queued: poll until the final one.
  for (int i = 0; i < 10000 && active(); ++i) poll();
}

void TrainingSession::setState(State s) {
  if (s == state_) return;
  state_ = s;
  Q_EMIT stateChanged(s);
}

void TrainingSession::poll() {
  if (!trainer_) return;
  QVector<TrainEvent> batch;
  // Bounded per tick so a flood of tiny steps cannot stall one UI frame.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(8);
  while (std::chrono::steady_clock::now() < deadline) {
    auto ev = trainer_->events().try_pop();
    if (!ev) break;
    TrainEvent& e = *ev;
    // Before the switch, which moves step events on.
    if (recorder_) {
      recorder_->add(e);
      if (const std::string p = recorder_->take_problem(); !p.empty())
        Q_EMIT logMessage(QString::fromStdString(p));
    }
    switch (e.kind) {
      case TrainEvent::Kind::Step:
        last_step_ = e.step;
        discountPause(e, trainer_->config().batch, paused_in_epoch_);
        batch.push_back(std::move(e));
        break;
      case TrainEvent::Kind::Started:
        Q_EMIT logMessage(tr("Started: %1").arg(QString::fromStdString(e.message)));
        Q_EMIT started(QString::fromStdString(e.message), e.epochs, e.steps_total);
        break;
      case TrainEvent::Kind::Epoch: {
        if (!batch.isEmpty()) Q_EMIT steps(batch);
        batch.clear();
        last_epoch_done_ = e.epoch;
        paused_in_epoch_ = 0;  // the next epoch's clock starts afresh
        QString line = tr("Epoch %1/%2: train loss %3, accuracy %4 %")
                           .arg(e.epoch)
                           .arg(e.epochs)
                           .arg(e.train_loss, 0, 'f', 4)
                           .arg(100 * e.train_accuracy, 0, 'f', 2);
        if (std::isfinite(e.val_accuracy))
          line += tr("; validation %1 %").arg(100 * e.val_accuracy, 0, 'f', 2);
        if (std::isfinite(e.test_accuracy))
          line += tr("; test %1 %").arg(100 * e.test_accuracy, 0, 'f', 2);
        if (e.best) line += tr(" (best so far)");
        Q_EMIT logMessage(line);
        if (!e.message.empty()) Q_EMIT logMessage(QString::fromStdString(e.message));
        Q_EMIT epochEnded(e);
        break;
      }
      case TrainEvent::Kind::Checkpoint:
        last_checkpoint_ = QString::fromStdString(e.message);
        Q_EMIT logMessage(tr("Checkpoint written: %1").arg(last_checkpoint_));
        Q_EMIT checkpointWritten(last_checkpoint_);
        break;
      case TrainEvent::Kind::Paused:
        paused_since_ = steady_s();
        // Steps read before the pause go out first, so their figures do
        // not replace the paused state on screen.
        flushSteps(batch);
        setState(State::Paused);
        Q_EMIT logMessage(tr("Paused"));
        break;
      case TrainEvent::Kind::Resumed:
        if (paused_since_ >= 0) paused_in_epoch_ += steady_s() - paused_since_;
        paused_since_ = -1;
        if (state_ == State::Paused) setState(State::Running);
        Q_EMIT logMessage(tr("Resumed"));
        break;
      case TrainEvent::Kind::Finished:
      case TrainEvent::Kind::Failed:
      case TrainEvent::Kind::Cancelled:
        if (!batch.isEmpty()) Q_EMIT steps(batch);
        batch.clear();
        handleEnd(e);
        return;
      default:
        // Kinds newer than this session (device telemetry) are read by the
        // panels through telemetry(); ignoring one here loses nothing.
        forwardTelemetry(e);
        break;
    }
  }
  if (have_reading_) {
    have_reading_ = false;
    Q_EMIT telemetry(reading_);
  }
  flushSteps(batch);
}

void TrainingSession::flushSteps(QVector<TrainEvent>& batch) {
  if (batch.isEmpty()) return;
  const TrainEvent& last = batch.back();
  fraction_ = last.steps_total ? double(last.step) / double(last.steps_total) : 0;
  Q_EMIT steps(batch);
  Q_EMIT progress(fraction_, last.eta_s, last.samples_per_s, last.epoch, last.epochs);
  batch.clear();
}

void TrainingSession::handleEnd(const TrainEvent& e) {
  timer_.stop();
  // The thread has published its last event and is returning; joining
  // takes microseconds, and afterwards its plan may be read here.
  trainer_->wait();
  const std::string& dir = trainer_->config().checkpoint_dir;
  if (e.kind == TrainEvent::Kind::Finished) {
    fraction_ = 1.0;
    Q_EMIT progress(1.0, 0, e.samples_per_s, e.epoch, trainer_->config().epochs);
    Q_EMIT logMessage(tr("Finished %1 epoch(s) in %2 s").arg(e.epoch).arg(e.elapsed_s, 0, 'f', 1));
    setState(State::Finished);
    Q_EMIT finished(true, tr("finished"));
  } else if (e.kind == TrainEvent::Kind::Cancelled) {
    // Keep what was learnt so far: the stopped weights are worth inspecting.
    if (!dir.empty()) {
      try {
        std::string path = dir + "/stopped.safetensors";
        trainer_->save_checkpoint(path, last_epoch_done_, last_step_);
        last_checkpoint_ = QString::fromStdString(path);
        Q_EMIT logMessage(tr("Checkpoint written: %1").arg(last_checkpoint_));
        Q_EMIT checkpointWritten(last_checkpoint_);
      } catch (const std::exception& ex) {
        Q_EMIT logMessage(tr("Could not save the stopped weights: %1").arg(ex.what()));
      }
    }
    Q_EMIT logMessage(tr("Stopped by the user"));
    setState(State::Cancelled);
    Q_EMIT finished(false, tr("stopped by the user"));
  } else {
    QString msg = QString::fromStdString(e.message);
    Q_EMIT logMessage(tr("Training failed: %1").arg(msg));
    setState(State::Failed);
    Q_EMIT finished(false, msg);
  }
}

}  // namespace dc::gui
