// File > Open Run...: a run an exported train.py wrote, read back from its
// metrics.jsonl into the plots and the Runs table, followed while it grows.
#include <deepcanvas/errors.h>

#include <QDir>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QTableWidget>
#include <QTimer>
#include <cmath>

#include "gui/run_history.h"
#include "gui/training_panel.h"
#include "gui/training_plots.h"

namespace dc::gui {

QString TrainingPanel::openRun(const QString& dir) {
  return beginImport(dir, false);
}

QString TrainingPanel::followRun(const QString& dir) {
  return beginImport(dir, true);
}

QString TrainingPanel::beginImport(const QString& dir, bool wait) {
  const QString metrics = QDir(dir).filePath("metrics.jsonl");
  const bool there = QFileInfo(metrics).isFile();
  if (!there && !wait)
    return tr("%1 has no metrics.jsonl; choose the --out folder of an exported train.py run")
        .arg(QDir::toNativeSeparators(dir));
  if (session_->active()) return tr("a run is training here; open the run when it has ended");
  auto reader = std::make_unique<RunLogReader>(metrics.toStdString());
  std::vector<TrainEvent> first;
  try {
    if (there) first = reader->poll();
  } catch (const std::exception& e) {
    return QString::fromUtf8(e.what());
  }
  if (import_) stopFollowingRun(tr("no longer followed (another run opened)"));
  import_ = std::move(reader);
  import_dir_ = QDir(dir).absolutePath();
  import_warned_ = 0;
  ++run_;
  best_epoch_.clear();
  plots_->startRun(run_, -1);
  plots_->endRun();  // this machine's CPU and GPU say nothing about that run
  import_waiting_ = import_->summary().empty();  // the row's words come with the start line
  import_row_ = history_->addRun(
      run_,
      import_waiting_ ? tr("imported: waiting for metrics.jsonl")
                      : tr("imported: %1").arg(QString::fromStdString(import_->summary())),
      import_dir_);
  appendLog(tr("Run %1: opened %2").arg(run_).arg(QDir::toNativeSeparators(import_dir_)));
  if (!import_timer_) {
    import_timer_ = new QTimer(this);
    import_timer_->setInterval(1000);  // also catches appends the watcher misses (NFS mounts)
    connect(import_timer_, &QTimer::timeout, this, &TrainingPanel::pollImportedRun);
    import_watch_ = new QFileSystemWatcher(this);
    connect(import_watch_, &QFileSystemWatcher::fileChanged, this, &TrainingPanel::pollImportedRun);
    // A run started from the app has no metrics.jsonl yet: its folder tells when it appears.
    connect(import_watch_, &QFileSystemWatcher::directoryChanged, this,
            &TrainingPanel::pollImportedRun);
  }
  // The first lines are already read; feed them through the same path.
  QVector<TrainEvent> steps;
  bool ended = false;
  for (TrainEvent& e : first) {
    if (e.kind == TrainEvent::Kind::Step) {
      steps.push_back(std::move(e));
      continue;
    }
    if (!steps.isEmpty()) plots_->addSteps(steps);
    steps.clear();
    if (e.kind == TrainEvent::Kind::Epoch) onEpoch(e);
    ended = ended || e.kind == TrainEvent::Kind::Finished;
  }
  if (!steps.isEmpty()) plots_->addSteps(steps);
  if (ended) {
    pollImportedRun();  // reports warnings and ends the following
  } else {
    import_watch_->addPath(there ? metrics : import_dir_);
    import_timer_->start();
    history_->setCell(import_row_, RunHistory::kResult, tr("following"));
    pollImportedRun();
  }
  return {};
}

void TrainingPanel::pollImportedRun() {
  readImportedRun(false);
}

void TrainingPanel::endFollowedRun(const QString& dir, const QString& result) {
  if (!import_ || QDir(dir).absolutePath() != import_dir_) return;
  if (QFileInfo(QString::fromStdString(import_->path())).isFile()) {
    readImportedRun(true);  // a last line without its newline counts now
  }
  stopFollowingRun(result);  // nothing when the run's end line was read
}

void TrainingPanel::readImportedRun(bool final) {
  if (!import_) return;
  const QString metrics = QString::fromStdString(import_->path());
  if (!QFileInfo(metrics).isFile()) {
    if (import_waiting_) return;  // train.py has not written it yet
  } else if (import_watch_ && !import_watch_->files().contains(metrics)) {
    if (!import_watch_->directories().isEmpty())
      import_watch_->removePaths(import_watch_->directories());
    import_watch_->addPath(metrics);
  }
  std::vector<TrainEvent> events;
  try {
    events = import_->poll(final);
  } catch (const std::exception& e) {
    stopFollowingRun(QString::fromUtf8(e.what()));
    return;
  }
  QVector<TrainEvent> steps;
  auto flush = [&] {
    if (!steps.isEmpty()) plots_->addSteps(steps);
    steps.clear();
  };
  for (TrainEvent& e : events) {
    if (e.kind == TrainEvent::Kind::Step) {
      steps.push_back(std::move(e));
    } else if (e.kind == TrainEvent::Kind::Epoch) {
      flush();
      onEpoch(e);
    }
  }
  flush();
  if (import_waiting_ && !import_->summary().empty()) {
    import_waiting_ = false;
    history_->setCell(import_row_, RunHistory::kSettings,
                      tr("imported: %1").arg(QString::fromStdString(import_->summary())));
  }
  const auto& warnings = import_->warnings();
  for (; import_warned_ < warnings.size(); ++import_warned_) {
    const QString w = QString::fromStdString(warnings[import_warned_]);
    appendLog(tr("Warning: %1").arg(w));
    Q_EMIT message(w);
  }
  if (import_->finished()) stopFollowingRun(tr("finished (imported)"));
}

void TrainingPanel::stopFollowingRun(const QString& result) {
  if (!import_) return;
  if (import_timer_) import_timer_->stop();
  if (import_watch_ && !import_watch_->files().isEmpty())
    import_watch_->removePaths(import_watch_->files());
  if (import_watch_ && !import_watch_->directories().isEmpty())
    import_watch_->removePaths(import_watch_->directories());
  history_->setCell(import_row_, RunHistory::kResult, result);
  // Its checkpoints, for the Inference tab (and `deepcanvas-cli eval`).
  QVector<RunCheckpoint> offered;
  const int run = history_->runOf(import_row_);
  for (const auto& [file, label] :
       {std::pair{QStringLiteral("best.safetensors"), tr("Run %1 (imported): best")},
        std::pair{QStringLiteral("last.safetensors"), tr("Run %1 (imported): last epoch")}}) {
    const QString path = QDir(import_dir_).filePath(file);
    if (QFileInfo::exists(path)) offered.push_back({run, label.arg(run), path});
  }
  if (!offered.isEmpty()) ctx_->addRunCheckpoints(offered);
  appendLog(tr("Run %1 (%2): %3").arg(run).arg(QDir::toNativeSeparators(import_dir_), result));
  import_.reset();
  import_row_ = -1;
}

}  // namespace dc::gui
