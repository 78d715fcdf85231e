#pragma once
// The metrics.jsonl of a run another process writes (an exported train.py,
// here or on a mounted volume), read as it grows. The Training tab shows
// what it reads; this class only watches and reads.
#include <deepcanvas/run_log.h>

#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>
#include <vector>

class QFileSystemWatcher;
class QTimer;

namespace dc::gui {

class RunFollower : public QObject {
  Q_OBJECT
 public:
  explicit RunFollower(QObject* parent = nullptr);
  ~RunFollower() override;

  // A reader of `dir`/metrics.jsonl with the events already there in
  // `first` (none when the file does not exist yet). Throws what the reader
  // throws, before anything is followed.
  static std::unique_ptr<RunLogReader> open(const QString& dir, std::vector<TrainEvent>& first);
  // Follows the run `reader` reads (the previous one, if any, stopped first).
  void begin(std::unique_ptr<RunLogReader> reader, const QString& dir);
  // Watches for appends (begin() leaves that to the caller, which may find
  // the run already ended in the first events).
  void watch();
  // What was appended since the last read; `final` counts a last line
  // without its newline. Throws what the reader throws. Nothing while the
  // file has not appeared.
  std::vector<TrainEvent> read(bool final);
  // Warnings about skipped lines not returned before.
  QStringList newWarnings();
  // Stops watching and forgets the run.
  void stop();

  bool active() const { return reader_ != nullptr; }
  const QString& dir() const { return dir_; }
  QString metricsPath() const;
  bool fileExists() const;
  // No start line read yet (the run's words are not known).
  bool waiting() const { return waiting_; }
  // Marks the start line as shown; true the first time it has been read.
  bool takeSummary();
  QString summary() const;
  bool finished() const { return reader_ && reader_->finished(); }

 signals:
  // The file or its folder changed, or the poll timer fired: read().
  void changed();

 private:
  std::unique_ptr<RunLogReader> reader_;
  QString dir_;
  size_t warned_ = 0;
  bool waiting_ = false;
  QTimer* timer_;
  QFileSystemWatcher* watch_;
};

}  // namespace dc::gui
