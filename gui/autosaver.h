#pragma once
// Autosave and crash recovery. Every minute, when the document has changed
// since the last autosave, its JSON is written (atomically) to a recovery
// file in the app's data folder, beside a lock file owned by this process.
// A clean close or save removes both. At the next start, a recovery file
// whose lock is stale (its process died) is offered back to the user.
#include <QDir>
#include <QLockFile>
#include <QObject>
#include <QString>
#include <functional>
#include <memory>
#include <vector>

class QTimer;

namespace dc::gui {

struct Recovery {
  QString data;      // the recovery .dcproj
  QString original;  // the file it was a copy of ("" for an unsaved project)
  QString lock;
};

class Autosaver : public QObject {
  Q_OBJECT
 public:
  // snapshot returns the project as JSON and the file it belongs to; it is
  // called only when isDirty() says there is something new to keep.
  Autosaver(std::function<std::pair<QString, QString>()> snapshot, std::function<bool()> isDirty,
            QObject* parent = nullptr);
  ~Autosaver() override;

  // Where this session's recovery file goes.
  static QString recoveryDir();
  // Every folder searched for recovery files: recoveryDir() and the one
  // earlier versions wrote to.
  static QStringList recoveryDirs();
  // Recovery files left by sessions that did not end cleanly.
  static std::vector<Recovery> findRecoverable();
  // Deletes a recovery (after it was restored or declined).
  static void discard(const Recovery& r);

  // Writes the recovery file now (the timer calls this). Returns false when
  // there was nothing to write or writing failed.
  bool saveNow();
  // The document is saved or closed: the recovery file is not needed.
  void clear();
  QString dataPath() const { return data_; }
  // Why autosave cannot work (the data folder cannot be created), or "".
  QString problem() const { return problem_; }

 Q_SIGNALS:
  // The first failed write of this session (later ones stay quiet: the
  // user has been told, and editing must not be interrupted every minute).
  void failed(const QString& why);

 public:
  // Simulates a crash for tests: stops owning the lock, keeps the files.
  void abandon();

 private:
  static void findRecoverableIn(const QDir& dir, std::vector<Recovery>& out);
  std::function<std::pair<QString, QString>()> snapshot_;
  std::function<bool()> dirty_;
  QTimer* timer_;
  QString data_, meta_, lock_path_;
  std::unique_ptr<QLockFile> lock_;
  QString problem_;
  bool warned_ = false;
};

}  // namespace dc::gui
