#include "gui/shortcuts_dialog.h"

#include "gui/experiments_panel.h"

#include <deepcanvas/project.h>

#include <QAction>
#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QTreeWidget>
#include <QUrl>
#include <QVBoxLayout>

namespace dc::gui {

namespace {

QString plain(QString text) {
  return text.remove('&').remove(QStringLiteral("…")).trimmed();
}

void addMenu(QTreeWidget* table, const QMenu* menu, const QString& path) {
  for (QAction* a : menu->actions()) {
    if (a->isSeparator()) continue;
    if (a->menu()) {
      addMenu(table, a->menu(), path + " → " + plain(a->text()));
      continue;
    }
    if (a->shortcuts().isEmpty()) continue;
    QStringList keys;
    for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
    // Undo and Redo name the step they would take ("Undo Delete dropout1"):
    // the list names the action.
    QString text = plain(a->text());
    for (const QString& verb : {QObject::tr("Undo"), QObject::tr("Redo")})
      if (text.startsWith(verb + QLatin1Char(' '))) text = verb;
    auto* it = new QTreeWidgetItem(table, {path + " → " + text, keys.join(", ")});
    it->setData(0, Qt::UserRole, a->objectName());
  }
}

}  // namespace

QString ShortcutsDialog::guideFile() {
  // The source tree (a build) or the package's documentation folder.
  const QString app = QCoreApplication::applicationDirPath();
  for (const QString& f : {QString::fromStdString(resource_dir()) + "/README.md",
                           app + "/../share/doc/deepcanvas/README.md"})
    if (QFileInfo(f).isFile()) return QFileInfo(f).canonicalFilePath();
  return {};
}

ShortcutsDialog::ShortcutsDialog(const QMenuBar* menus, QWidget* parent) : QDialog(parent) {
  setWindowTitle(tr("Keyboard Shortcuts"));
  resize(560, 620);
  table_ = new QTreeWidget(this);
  table_->setObjectName("shortcutTable");
  table_->setHeaderLabels({tr("Action"), tr("Keys")});
  table_->setRootIsDecorated(false);
  table_->setAlternatingRowColors(true);
  table_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  table_->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
  for (QAction* a : menus->actions())
    if (a->menu()) addMenu(table_, a->menu(), plain(a->text()));
  // Gestures that are not menu actions.
  const std::pair<const char*, const char*> canvas[] = {
      {QT_TR_NOOP("Canvas → Add the best match"),
       QT_TR_NOOP("type in the palette's search, Enter")},
      {QT_TR_NOOP("Canvas → Connect"), QT_TR_NOOP("drag from an output port to an input port")},
      {QT_TR_NOOP("Canvas → Move the selection"), QT_TR_NOOP("arrow keys (Shift: 5 grid steps)")},
      {QT_TR_NOOP("Canvas → Zoom"), QT_TR_NOOP("mouse wheel")},
      {QT_TR_NOOP("Canvas → Pan"), QT_TR_NOOP("middle button drag, or Space + drag")},
      {QT_TR_NOOP("Canvas → Scroll"), QT_TR_NOOP("Shift + wheel")},
  };
  for (const auto& [what, keys] : canvas) new QTreeWidgetItem(table_, {tr(what), tr(keys)});
  // The Experiments tab's Start button, not a menu action: its own key.
  new QTreeWidgetItem(table_,
                      {tr("Experiments → Start the sweep"),
                       ExperimentsPanel::startShortcut().toString(QKeySequence::NativeText)});

  auto* guide = new QLabel(this);
  guide->setObjectName("guideLink");
  guide->setOpenExternalLinks(true);
  guide->setWordWrap(true);
  const QString file = guideFile();
  guide->setText(file.isEmpty() ? tr("The user guide is README.md in DeepCanvas's sources.")
                                : tr("More in the <a href=\"%1\">user guide</a> (README.md).")
                                      .arg(QUrl::fromLocalFile(file).toString()));
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  auto* lay = new QVBoxLayout(this);
  lay->addWidget(table_, 1);
  lay->addWidget(guide);
  lay->addWidget(buttons);
}

}  // namespace dc::gui
