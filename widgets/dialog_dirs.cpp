#include "widgets/dialog_dirs.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace dc::widgets {

namespace {

QString settingsKey(const QString& key) {
  return "dialogs/" + key;
}

// The folder a path names: itself when it is a folder, else its parent
// (a file, or a file name not written yet); "" when neither exists.
QString existingFolder(const QString& path) {
  if (path.isEmpty()) return {};
  const QFileInfo f(path);
  if (f.isDir()) return f.absoluteFilePath();
  const QFileInfo parent(f.absolutePath());
  return parent.isDir() ? parent.absoluteFilePath() : QString();
}

// A folder remembered before the key existed (the exports kept theirs as
// "exportDir"): read while the key has none, so an update forgets nothing.
QString legacyFolder(const QString& key) {
  return key == QLatin1String("exports") ? QSettings().value("exportDir").toString() : QString();
}

}  // namespace

QString dialogStart(const QString& key, const QString& fallback) {
  QString last = QSettings().value(settingsKey(key)).toString();
  if (last.isEmpty()) last = legacyFolder(key);
  if (!last.isEmpty() && QFileInfo(last).isDir()) return last;
  const QString f = existingFolder(fallback);
  return f.isEmpty() ? QDir::homePath() : f;
}

void rememberDialogChoice(const QString& key, const QString& chosen) {
  const QString f = existingFolder(chosen);
  if (!f.isEmpty()) QSettings().setValue(settingsKey(key), f);
}

}  // namespace dc::widgets
