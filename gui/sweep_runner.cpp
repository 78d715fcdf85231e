#include "gui/sweep_runner.h"

namespace dc::gui {

SweepRunner::SweepRunner(QObject* parent) : QObject(parent) {}

SweepRunner::~SweepRunner() {
  stop_flag_ = true;
  join();
}

void SweepRunner::start(std::unique_ptr<Sweep> sweep, const std::string& log_dir) {
  join();
  sweep_ = std::move(sweep);
  board_.reset();
  if (!log_dir.empty()) {
    board_ = std::make_unique<SweepBoard>(log_dir, sweep_->space());
    for (const Trial& t : sweep_->state().trials) board_->update(t);
    if (const std::string why = board_->take_problem(); !why.empty())
      QMetaObject::invokeMethod(
          this, [this, text = QString::fromStdString(why)] { Q_EMIT logProblem(text); },
          Qt::QueuedConnection);
  }
  stop_flag_ = false;
  finished_ = false;
  worker_error_.clear();
  Sweep* s = sweep_.get();
  SweepBoard* board = board_.get();
  const int gen = ++generation_;
  worker_ = std::thread([this, s, board, gen] {
    QString error;
    try {
      // Each update is a copy, shown on the GUI thread; the context object
      // (this) drops them when the runner is gone. The log is written here,
      // on the worker, so a slow disk never stalls the window.
      s->run(
          [this, board, gen](const Trial& t) {
            if (board) {
              board->update(t);
              if (const std::string why = board->take_problem(); !why.empty())
                QMetaObject::invokeMethod(
                    this,
                    [this, gen, text = QString::fromStdString(why)] {
                      if (gen == generation_) Q_EMIT logProblem(text);
                    },
                    Qt::QueuedConnection);
            }
            QMetaObject::invokeMethod(
                this,
                [this, t, gen] {
                  if (gen == generation_) Q_EMIT trialUpdated(t);
                },
                Qt::QueuedConnection);
          },
          &stop_flag_);
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
    worker_error_ = error;  // for stopAndWait(), which reads it after the join
    QMetaObject::invokeMethod(
        this,
        [this, error, gen] {
          if (gen == generation_ && !finished_) end(error);
        },
        Qt::QueuedConnection);
  });
}

void SweepRunner::stop() {
  stop_flag_ = true;
}

void SweepRunner::stopAndWait() {
  if (!running()) return;
  stop_flag_ = true;
  join();
  // At once rather than queued: the caller replaces the project next. The
  // worker's queued report is dropped (finished_ is set).
  end(worker_error_);
}

void SweepRunner::join() {
  if (worker_.joinable()) worker_.join();
}

void SweepRunner::end(const QString& error) {
  join();
  finished_ = true;
  Q_EMIT finished(error);
}

}  // namespace dc::gui
