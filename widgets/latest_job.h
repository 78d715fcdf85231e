#pragma once
// Runs a computation off the GUI thread and hands its result back on it,
// keeping only the newest request: a burst of edits costs at most the
// computation already running plus one more, and the event loop never waits
// for either. Used by the cost overlay and the Model Summary's advice line.
#include <QObject>
#include <QThreadPool>
#include <functional>

namespace dc::widgets {

class LatestJob : public QObject {
  Q_OBJECT
 public:
  // What runs on the worker: computes, and returns what to run on the GUI
  // thread with the result (captured by value). An exception drops it.
  using Job = std::function<std::function<void()>()>;

  explicit LatestJob(QObject* parent = nullptr);
  // Waits for the running computation: its result is then dropped with the
  // queued hand-back, which Qt discards for a deleted receiver.
  ~LatestJob() override;

  // Replaces any request not yet started.
  void request(Job job);
  // Nothing running and nothing waiting to run.
  bool idle() const { return !running_ && !pending_; }

 private:
  void startNext();

  QThreadPool pool_;
  Job pending_;
  bool running_ = false;
};

}  // namespace dc::widgets
