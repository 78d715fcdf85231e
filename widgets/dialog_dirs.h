#pragma once
// Where a file dialog opens. Without a start folder Qt's dialogs open in
// the process's working directory: for an installed app that is wherever
// it was launched from (often / or the home folder), never where the
// user's pictures or runs are. Each kind of dialog remembers the folder of
// its last choice across sessions (QSettings "dialogs/<key>").
#include <QString>

namespace dc::widgets {

// The folder last chosen for `key` when it still exists, else `fallback`
// (a file's folder or a folder) when it exists, else the home folder.
QString dialogStart(const QString& key, const QString& fallback = {});
// Remembers the folder of `chosen` (a file, or a folder itself) for `key`;
// an empty choice (a cancelled dialog) changes nothing.
void rememberDialogChoice(const QString& key, const QString& chosen);

}  // namespace dc::widgets
