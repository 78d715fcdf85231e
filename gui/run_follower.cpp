#include "gui/run_follower.h"

#include <QDir>
#include <QFileInfo>
#include <QFileSystemWatcher>
#include <QTimer>

namespace dc::gui {

RunFollower::RunFollower(QObject* parent)
    : QObject(parent), timer_(new QTimer(this)), watch_(new QFileSystemWatcher(this)) {
  timer_->setInterval(1000);  // also catches appends the watcher misses (NFS mounts)
  connect(timer_, &QTimer::timeout, this, &RunFollower::changed);
  connect(watch_, &QFileSystemWatcher::fileChanged, this, &RunFollower::changed);
  // A run started from the app has no metrics.jsonl yet: its folder tells when it appears.
  connect(watch_, &QFileSystemWatcher::directoryChanged, this, &RunFollower::changed);
}

RunFollower::~RunFollower() = default;

std::unique_ptr<RunLogReader> RunFollower::open(const QString& dir,
                                                std::vector<TrainEvent>& first) {
  const QString metrics = QDir(dir).filePath("metrics.jsonl");
  auto reader = std::make_unique<RunLogReader>(metrics.toStdString());
  first.clear();
  if (QFileInfo(metrics).isFile()) first = reader->poll();
  return reader;
}

void RunFollower::begin(std::unique_ptr<RunLogReader> reader, const QString& dir) {
  stop();
  reader_ = std::move(reader);
  dir_ = QDir(dir).absolutePath();
  warned_ = 0;
  waiting_ = reader_->summary().empty();  // the row's words come with the start line
}

void RunFollower::watch() {
  watch_->addPath(fileExists() ? metricsPath() : dir_);
  timer_->start();
}

QString RunFollower::metricsPath() const {
  return reader_ ? QString::fromStdString(reader_->path()) : QString();
}

bool RunFollower::fileExists() const {
  return reader_ && QFileInfo(metricsPath()).isFile();
}

std::vector<TrainEvent> RunFollower::read(bool final) {
  if (!reader_) return {};
  const QString metrics = metricsPath();
  if (!QFileInfo(metrics).isFile()) {
    if (waiting_) return {};  // train.py has not written it yet
  } else if (timer_->isActive() && !watch_->files().contains(metrics)) {
    // The file appeared: watch it rather than its folder.
    if (!watch_->directories().isEmpty()) watch_->removePaths(watch_->directories());
    watch_->addPath(metrics);
  }
  return reader_->poll(final);
}

QStringList RunFollower::newWarnings() {
  QStringList out;
  if (!reader_) return out;
  const auto& warnings = reader_->warnings();
  for (; warned_ < warnings.size(); ++warned_) out << QString::fromStdString(warnings[warned_]);
  return out;
}

bool RunFollower::takeSummary() {
  if (!waiting_ || !reader_ || reader_->summary().empty()) return false;
  waiting_ = false;
  return true;
}

QString RunFollower::summary() const {
  return reader_ ? QString::fromStdString(reader_->summary()) : QString();
}

void RunFollower::stop() {
  timer_->stop();
  if (!watch_->files().isEmpty()) watch_->removePaths(watch_->files());
  if (!watch_->directories().isEmpty()) watch_->removePaths(watch_->directories());
  reader_.reset();
}

}  // namespace dc::gui
