#include "gui/autosaver.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>

#include <QDir>
#include <QFile>
#include <QStandardPaths>
#include <QTimer>
#include <QUuid>

namespace dc::gui {

namespace {
constexpr int kIntervalMs = 60 * 1000;
}

Autosaver::Autosaver(std::function<std::pair<QString, QString>()> snapshot,
                     std::function<bool()> isDirty, QObject* parent)
    : QObject(parent), snapshot_(std::move(snapshot)), dirty_(std::move(isDirty)) {
  if (!QDir().mkpath(recoveryDir()))
    problem_ = tr("Autosave is off: the folder %1 cannot be created. Save your work with "
                  "Ctrl+S.")
                   .arg(QDir::toNativeSeparators(recoveryDir()));
  QString base = recoveryDir() + "/session-" + QUuid::createUuid().toString(QUuid::WithoutBraces);
  data_ = base + ".dcproj";
  meta_ = base + ".origin";
  lock_path_ = base + ".lock";
  lock_ = std::make_unique<QLockFile>(lock_path_);
  lock_->setStaleLockTime(0);  // only a dead owner makes it stale
  lock_->tryLock(0);
  timer_ = new QTimer(this);
  timer_->setInterval(kIntervalMs);
  connect(timer_, &QTimer::timeout, this, &Autosaver::saveNow);
  timer_->start();
}

Autosaver::~Autosaver() {
  clear();
}

// Beside the runs folder (~/.local/share/DeepCanvas/recovery). Qt's
// AppDataLocation joins organisation and application name, which are both
// "DeepCanvas": the doubled folder earlier versions used is still searched.
QString Autosaver::recoveryDir() {
  return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) +
         "/DeepCanvas/recovery";
}

QStringList Autosaver::recoveryDirs() {
  QStringList dirs{recoveryDir()};
  const QString legacy =
      QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/recovery";
  if (QDir(legacy).absolutePath() != QDir(dirs.front()).absolutePath()) dirs << legacy;
  return dirs;
}

bool Autosaver::saveNow() {
  if (!dirty_ || !dirty_()) return false;
  auto [json, original] = snapshot_();
  try {
    write_file_atomic(data_.toStdString(), json.toStdString());
    write_file_atomic(meta_.toStdString(), original.toStdString());
  } catch (const Error& e) {
    // A full disk or an unwritable folder must not interrupt editing: say
    // so once, and try again next minute.
    if (!warned_) {
      warned_ = true;
      Q_EMIT failed(tr("Autosave failed: %1. Save your work with Ctrl+S.")
                        .arg(QString::fromStdString(e.what())));
    }
    return false;
  }
  return true;
}

void Autosaver::clear() {
  if (data_.isEmpty()) return;  // abandoned
  QFile::remove(data_);
  QFile::remove(meta_);
}

void Autosaver::abandon() {
  timer_->stop();
  lock_->unlock();
  // unlock() deletes the lock file; a crash leaves it behind with our pid.
  QFile f(lock_path_);
  // A pid no process can have, so the lock reads as left by a dead one.
  if (f.open(QIODevice::WriteOnly)) f.write("2147483646\nDeepCanvas\n\n");
  data_.clear();
  meta_.clear();
}

std::vector<Recovery> Autosaver::findRecoverable() {
  std::vector<Recovery> out;
  for (const QString& d : recoveryDirs()) findRecoverableIn(QDir(d), out);
  return out;
}

void Autosaver::findRecoverableIn(const QDir& dir, std::vector<Recovery>& out) {
  // Sessions that died before their first autosave leave only a lock.
  for (const QString& name : dir.entryList({"session-*.lock"}, QDir::Files)) {
    QString base = dir.filePath(name).chopped(5);
    if (QFile::exists(base + ".dcproj")) continue;
    QLockFile probe(dir.filePath(name));
    probe.setStaleLockTime(0);
    if (probe.tryLock(0)) probe.unlock();  // removes the stale file
  }
  for (const QString& name : dir.entryList({"session-*.dcproj"}, QDir::Files, QDir::Time)) {
    Recovery r;
    r.data = dir.filePath(name);
    QString base = r.data.chopped(7);
    r.lock = base + ".lock";
    QLockFile probe(r.lock);
    probe.setStaleLockTime(0);
    // A live session holds its lock; tryLock succeeds only for a dead one
    // (or a missing lock), and then we own it until discard().
    if (QFile::exists(r.lock) && !probe.tryLock(0)) continue;
    probe.unlock();
    QFile meta(base + ".origin");
    if (meta.open(QIODevice::ReadOnly)) r.original = QString::fromUtf8(meta.readAll());
    out.push_back(r);
  }
}

void Autosaver::discard(const Recovery& r) {
  QString base = r.data.chopped(7);
  QFile::remove(r.data);
  QFile::remove(base + ".origin");
  QFile::remove(r.lock);
}

}  // namespace dc::gui
