// MainWindow's conveniences: the start page on an empty canvas, View → Theme,
// the Help menu (keyboard shortcuts, the user guide) and projects dropped
// onto the window.
#include "gui/benchmark_dialog.h"
#include "gui/deploy_dialog.h"
#include "gui/main_window.h"
#include "gui/project_context.h"
#include "gui/shortcuts_dialog.h"
#include "gui/start_page.h"
#include "gui/template_dialog.h"
#include "gui/theme.h"
#include "widgets/graph_editor.h"
#include "widgets/graph_model.h"
#include "widgets/node_view.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QDesktopServices>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QGuiApplication>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QStyleHints>
#include <QTabWidget>
#include <QUrl>
#include <algorithm>

namespace dc::gui {

void MainWindow::createStartPage() {
  start_page_ = new StartPage(view_);
  connect(start_page_, &StartPage::templateChosen, this, [this](const QString& f) {
    if (confirmStopTraining(tr("start a new project")) && maybeSave()) newFromTemplate(f);
  });
  connect(start_page_, &StartPage::projectChosen, this, &MainWindow::openFile);
  connect(start_page_, &StartPage::openRequested, action("actionOpen"), &QAction::trigger);
  connect(editor_->model(), &widgets::GraphModel::shapesChanged, this,
          &MainWindow::updateStartPage);
  updateStartPage();
}

void MainWindow::updateStartPage() {
  if (!start_page_) return;
  const bool show = editor_->graph().empty();
  if (show) start_page_->setRecent(recentFiles());
  start_page_->setVisible(show);
}

void MainWindow::createThemeMenu(QMenu* view) {
  QMenu* menu = view->addMenu(tr("T&heme"));
  menu->setObjectName("menuTheme");
  auto* group = new QActionGroup(this);
  const std::pair<Theme, QString> themes[] = {
      {Theme::System, tr("&System")}, {Theme::Light, tr("&Light")}, {Theme::Dark, tr("&Dark")}};
  for (const auto& [t, text] : themes) {
    QAction* a = menu->addAction(text);
    a->setObjectName("actionTheme_" + themeKey(t));
    a->setCheckable(true);
    a->setChecked(t == currentTheme());
    group->addAction(a);
    connect(a, &QAction::triggered, this, [t = t] {
      applyTheme(t);
      saveTheme(t);
    });
  }
#if QT_VERSION >= QT_VERSION_CHECK(6, 5, 0)
  // The desktop switched between light and dark while the app runs.
  connect(QGuiApplication::styleHints(), &QStyleHints::colorSchemeChanged, this, [] {
    if (currentTheme() == Theme::System) applyTheme(Theme::System);
  });
#endif
}

void MainWindow::createHelpMenu() {
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  connect(makeAction("actionShortcuts", tr("&Keyboard Shortcuts…"), QKeySequence::HelpContents),
          &QAction::triggered, this, [this] {
            ShortcutsDialog dlg(menuBar(), this);
            dlg.exec();
          });
  help->addAction(action("actionShortcuts"));
  QAction* guide = help->addAction(tr("User &Guide"), this, [] {
    QDesktopServices::openUrl(QUrl::fromLocalFile(ShortcutsDialog::guideFile()));
  });
  guide->setObjectName("actionGuide");
  guide->setEnabled(!ShortcutsDialog::guideFile().isEmpty());
  QAction* bench = makeAction("actionBenchmark", tr("&Benchmark This Machine…"),
                              QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_B));
  bench->setToolTip(
      tr("Measure this machine's GEMM, convolution and memory bandwidth (the "
         "advisor's rates) and compare them with catalog GPUs"));
  connect(bench, &QAction::triggered, this, [this] { openBenchmark(); });
  help->addAction(bench);
  help->addSeparator();
  help->addAction(tr("&About DeepCanvas"), this, [this] {
    QMessageBox::about(this, tr("About DeepCanvas"),
                       tr("<b>DeepCanvas %1</b><p>Build, train and test neural networks "
                          "visually.</p>")
                           .arg(QApplication::applicationVersion()));
  });
}

BenchmarkDialog* MainWindow::openBenchmark() {
  // A run shares the cores and the engine's thread pool: both would suffer.
  auto block = [this] {
    if (benchmark_)
      benchmark_->setBlocked(trainingActive() ? tr("Not while training runs: it would slow the "
                                                   "run and the figures would be too low")
                                              : QString());
  };
  if (!benchmark_) {
    benchmark_ = new BenchmarkDialog(this);
    benchmark_->setAttribute(Qt::WA_DeleteOnClose);
    // The dialog stays open beside the window: follow runs starting and ending.
    connect(ctx_, &ProjectContext::busyChanged, benchmark_, block);
  }
  block();
  // The first visit measures; later ones show the cached result at once.
  if (!benchmark_->hasResult() && !benchmark_->measuring()) benchmark_->measure();
  benchmark_->show();
  benchmark_->raise();
  benchmark_->activateWindow();
  return benchmark_;
}

DeployDialog* MainWindow::openDeployDialog() {
  // Its latency runs set the engine's thread count and share the cores.
  auto block = [this] {
    if (deploy_)
      deploy_->setBlocked(trainingActive() ? tr("Not while training runs: the latencies would "
                                                "be too high and the run slower")
                                           : QString());
  };
  if (!deploy_) {
    deploy_ = new DeployDialog(ctx_, this);
    deploy_->setAttribute(Qt::WA_DeleteOnClose);
    connect(ctx_, &ProjectContext::busyChanged, deploy_, block);
  }
  block();
  deploy_->show();
  deploy_->raise();
  deploy_->activateWindow();
  return deploy_;
}

namespace {
bool droppable(const QUrl& u) {
  const QString suffix = QFileInfo(u.toLocalFile()).suffix().toLower();
  return u.isLocalFile() && (suffix == "dcproj" || suffix == "onnx");
}
}  // namespace

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  const QList<QUrl> urls = e->mimeData()->urls();
  if (std::any_of(urls.begin(), urls.end(), droppable))
    e->acceptProposedAction();
  else
    e->ignore();
}

void MainWindow::dropEvent(QDropEvent* e) {
  if (openDropped(e->mimeData()->urls())) e->acceptProposedAction();
}

bool MainWindow::openDropped(const QList<QUrl>& urls) {
  for (const QUrl& u : urls) {
    if (!droppable(u)) continue;
    const QString file = u.toLocalFile();
    if (QFileInfo(file).suffix().compare("onnx", Qt::CaseInsensitive) == 0) {
      const QFileInfo m(file);
      QString target = m.absolutePath() + "/" + m.completeBaseName() + ".dcproj";
      for (int k = 2; QFileInfo::exists(target); ++k)  // never over an existing project
        target =
            m.absolutePath() + "/" + m.completeBaseName() + "_" + QString::number(k) + ".dcproj";
      return importOnnx(file, target);
    }
    // One project at a time: the first one dropped.
    return openFile(file);
  }
  return false;
}

}  // namespace dc::gui
