#pragma once
// Owns a dc::Trainer (which trains on its own thread) and turns its events
// into Qt signals on the UI thread. A QTimer drains the trainer's channel at
// ~30 Hz without ever blocking, and all step events that arrived since the
// last tick go out as one batch, so however fast training runs the UI does
// at most ~30 updates a second and never waits on the trainer.
#include <deepcanvas/run_log.h>
#include <deepcanvas/trainer.h>

#include <QObject>
#include <QString>
#include <QTimer>
#include <QVector>
#include <memory>
#include <optional>

namespace dc::gui {

// A GPU reading during a run (from the trainer's telemetry events): NVML's
// utilisation and memory, and the engine allocator's allocated and reserved
// bytes; -1 where not reported.
struct DeviceReading {
  double t = 0;  // seconds since the sampler started
  int utilization_pct = -1;
  qint64 memory_used = -1, memory_total = -1, allocated = -1, reserved = -1;
};

class TrainingSession : public QObject {
  Q_OBJECT
 public:
  enum class State { Idle, Running, Paused, Stopping, Finished, Cancelled, Failed };
  Q_ENUM(State)

  explicit TrainingSession(QObject* parent = nullptr);
  ~TrainingSession() override;  // cancels a running training and joins its thread

  // The next start() records its run into o.dir (metrics.jsonl and, when
  // o.tensorboard, a TensorBoard event file), as every CLI run does.
  void recordNextRun(RunRecordOptions o) { record_ = std::move(o); }
  // Builds the trainer (throws dc::Error with a message for the user when the
  // graph and data do not fit) and starts it. cfg.checkpoint_dir should be
  // set: a checkpoint is written there per epoch and when stopped.
  void start(const Graph& g, const TrainConfig& cfg, std::shared_ptr<Dataset> train,
             std::shared_ptr<Dataset> test);
  void pause();
  void resume();
  void stop();
  // stop(), then waits for the training thread and handles its last events
  // (the stopped checkpoint is written), for a window that closes or opens
  // another project.
  void stopAndWait();

  State state() const { return state_; }
  bool active() const {
    return state_ == State::Running || state_ == State::Paused || state_ == State::Stopping;
  }
  // The trainer of the current or last run (null before the first). Its plan
  // may only be read when !active() (the training thread has ended).
  Trainer* trainer() const { return trainer_.get(); }
  QString lastCheckpoint() const { return last_checkpoint_; }
  double fraction() const { return fraction_; }
  // Seconds the current epoch spent paused (the trainer's epoch clock runs on
  // through a pause; this is what the throughput and ETA leave out).
  double pausedSeconds() const { return paused_in_epoch_; }
  // A step event's samples/s and ETA as if the epoch had not been paused
  // for paused_s seconds (batch: the run's batch size).
  static void discountPause(TrainEvent& e, int64_t batch, double paused_s);
  int pollIntervalMs() const { return timer_.interval(); }
  void setPollIntervalMs(int ms) { timer_.setInterval(ms); }

 signals:
  void started(const QString& summary, int epochs, qint64 steps_total);
  // Step events since the last poll, oldest first (never empty).
  void steps(const QVector<dc::TrainEvent>& batch);
  void progress(double fraction, double eta_s, double samples_per_s, int epoch, int epochs);
  void epochEnded(const dc::TrainEvent& e);
  void checkpointWritten(const QString& path);
  void stateChanged(dc::gui::TrainingSession::State s);
  void logMessage(const QString& line);
  // GPU runs: the latest device reading, at most once per poll.
  void telemetry(const dc::gui::DeviceReading& r);
  // ok: all epochs ran; otherwise message says why (stopped by the user, or
  // the error).
  void finished(bool ok, const QString& message);

 private:
  void poll();
  void flushSteps(QVector<TrainEvent>& batch);  // steps() and progress(), then empties it
  void setState(State s);
  void handleEnd(const TrainEvent& e);
  void forwardTelemetry(const TrainEvent& e);

  std::unique_ptr<Trainer> trainer_;
  // The run folder's metrics.jsonl and TensorBoard event file (issue 35),
  // fed every event in poll(); options for the next start() (none: no log).
  std::unique_ptr<RunRecorder> recorder_;
  std::optional<RunRecordOptions> record_;
  QTimer timer_;
  State state_ = State::Idle;
  QString last_checkpoint_;
  double fraction_ = 0;
  int last_epoch_done_ = 0;
  int64_t last_step_ = 0;
  double paused_since_ = -1;  // steady-clock seconds when the Paused event was read
  double paused_in_epoch_ = 0;
  DeviceReading reading_;
  bool have_reading_ = false;
};

}  // namespace dc::gui

Q_DECLARE_METATYPE(dc::TrainEvent)
Q_DECLARE_METATYPE(dc::gui::DeviceReading)
