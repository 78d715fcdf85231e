#pragma once
// Runs a dc::Sweep on a worker thread for the Experiments tab, as
// TrainingSession does a Trainer for the Training tab: it owns the sweep,
// its thread, the stop flag and a generation counter, and hands each trial
// update and the end of the run to the UI thread as signals. Updates still
// queued from a run that stopAndWait() already ended are dropped. With a
// log folder it also writes TensorBoard's HParams data (dc::SweepBoard, as
// the CLI's sweep does).
#include <deepcanvas/sweep.h>
#include <deepcanvas/sweep_board.h>

#include <QObject>
#include <QString>
#include <atomic>
#include <memory>
#include <thread>

namespace dc::gui {

class SweepRunner : public QObject {
  Q_OBJECT
 public:
  explicit SweepRunner(QObject* parent = nullptr);
  // Stops a running sweep and joins its worker: its running trials stay
  // "running" in the state file and resume later.
  ~SweepRunner() override;

  // Runs `sweep` (built, its state file read) on a new worker thread; with
  // `log_dir`, TensorBoard's HParams summaries of its trials go there (the
  // trials of a resumed sweep's earlier run included).
  void start(std::unique_ptr<Sweep> sweep, const std::string& log_dir = {});
  // Asks the running trials to stop at their next step; they stay resumable.
  void stop();
  // stop(), then waits for the worker and reports its end at once (finished
  // is emitted before this returns), so that the project and the dataset
  // are free when it returns.
  void stopAndWait();

  bool running() const { return worker_.joinable() && !finished_; }
  bool stopping() const { return stop_flag_; }
  // The sweep of the current or last run (null before the first); read its
  // state() at any time.
  const Sweep* sweep() const { return sweep_.get(); }

 signals:
  void trialUpdated(const dc::Trial& t);
  // The HParams log cannot be written (said once a run); the sweep goes on.
  void logProblem(const QString& text);
  // The worker ended: all trials done, stopped, or `error`.
  void finished(const QString& error);

 private:
  void join();
  void end(const QString& error);

  std::unique_ptr<Sweep> sweep_;
  // Written by the worker only while it runs (Sweep::run's updates come one
  // at a time), by start() before.
  std::unique_ptr<SweepBoard> board_;
  std::thread worker_;
  std::atomic<bool> stop_flag_{false};
  bool finished_ = true;
  // Which start the worker's queued updates belong to.
  int generation_ = 0;
  QString worker_error_;  // written by the worker before it ends
};

}  // namespace dc::gui

Q_DECLARE_METATYPE(dc::Trial)
