// MainWindow's project file lifecycle: new, template, open, save, recent
// files, unsaved-changes prompts, autosave recovery.
#include "gui/autosaver.h"
#include "gui/experiments_panel.h"
#include "gui/main_window.h"
#include "gui/summary_panel.h"
#include "gui/template_dialog.h"
#include "gui/training_panel.h"
#include "widgets/auto_layout.h"
#include "widgets/dialog_dirs.h"
#include "widgets/graph_editor.h"
#include "widgets/node_item.h"
#include "widgets/node_scene.h"
#include "widgets/node_view.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/plan.h>
#ifdef DC_HAVE_ONNX
#include <deepcanvas/onnx.h>
#endif

#include <QApplication>
#include <QDateTime>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenu>
#include <QMessageBox>
#include <QSettings>
#include <QStatusBar>
#include <QTimer>
#include <QUndoStack>
#include <set>

namespace dc::gui {

namespace {
constexpr int kMaxRecent = 10;
constexpr int kOpenHintMs = 10000;  // how long the large-network hint stays
}  // namespace

Project MainWindow::project() const {
  Project p = project_;
  p.graph = editor_->projectGraph();  // also while a block is open
  p.file = file_.toStdString();
  // The Training and Dataset tabs edit the training settings; they are
  // saved with the project.
  if (training_panel_) p.training = training_panel_->config();
  // The Dataset tab records the chosen dataset in the context's project.
  if (ctx_) p.dataset = ctx_->project().dataset;
  return p;
}

bool MainWindow::isModified() const {
  return forced_modified_ || !editor_->undoStack()->isClean() ||
         (training_panel_ && settingsJson() != saved_settings_);
}

void MainWindow::updateTitle() {
  QString name = file_.isEmpty() ? tr("Untitled") : QFileInfo(file_).fileName();
  setWindowTitle(QStringLiteral("%1[*] — DeepCanvas").arg(name));
  setWindowModified(isModified());
}

void MainWindow::reportError(const QString& text) {
  last_error_ = text;
  if (on_error_)
    on_error_(text);
  else
    QMessageBox::critical(this, tr("DeepCanvas"), text);
}

bool MainWindow::maybeSave() {
  if (!isModified()) return true;
  QString name = file_.isEmpty() ? tr("Untitled") : QFileInfo(file_).fileName();
  QString q = tr("Save the changes to %1 before closing it?").arg(name);
  Answer a;
  if (on_confirm_) {
    a = on_confirm_(q);
  } else {
    auto b = QMessageBox::warning(this, tr("Unsaved changes"), q,
                                  QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel,
                                  QMessageBox::Save);
    a = b == QMessageBox::Save      ? Answer::Save
        : b == QMessageBox::Discard ? Answer::Discard
                                    : Answer::Cancel;
  }
  if (a == Answer::Save) return save();
  return a == Answer::Discard;
}

void MainWindow::setProject(Project p, const QString& file, bool modified) {
  // The panels get this project whole below; syncing on the way would send
  // them the new graph with the previous project's settings.
  syncing_ = true;
  editor_->loadGraph(p.graph);
  syncing_ = false;
  // The Training and Dataset tabs show its settings; the previous project's
  // runs, plots, dataset and weights go.
  if (ctx_) ctx_->replaceProject(p);
  p.graph = Graph{};  // the editor's copy is the one that changes
  project_ = std::move(p);
  file_ = file;
  if (experiments_panel_) experiments_panel_->setProjectFile(file_);
  forced_modified_ = modified;
  summary_->setBatch(project_.training.batch);
  summary_->refresh();
  autosaver_->clear();
  // What the panels show is what counts as unmodified (e.g. a GPU project
  // opened on a CPU-only machine shows, and would save, the CPU).
  syncContext();
  saved_settings_ = settingsJson();
  updateTitle();
  updateStatusCounts();
  showOpenedNetwork();
  if (!open_hint_.isEmpty()) statusBar()->showMessage(open_hint_, kOpenHintMs);
  // Again once the window has its size (right after start-up it has none yet).
  QTimer::singleShot(0, view_, [this] {
    const QString before = open_hint_;
    showOpenedNetwork();
    if (!open_hint_.isEmpty() && open_hint_ != before)
      statusBar()->showMessage(open_hint_, kOpenHintMs);
  });
}

void MainWindow::showOpenedNetwork() {
  open_hint_.clear();
  const Graph& g = editor_->graph();
  if (int(g.nodes().size()) < kLargeNetworkLayers || view_->fitZoom() >= kReadableZoom) {
    view_->fitAll();
    // Opening keeps the file's layout; a line too long to read here is
    // wrapped into rows only when asked (Fit to Window, undoable).
    const QSize canvas = view_->viewport()->size();
    if (widgets::tooLongForOneLine(g, {double(canvas.width()), double(canvas.height())}))
      open_hint_ =
          tr("The layers are in one long line: press %1 to lay them out in rows (undoable)")
              .arg(action("actionFit")->shortcut().toString(QKeySequence::NativeText));
    return;
  }
  // The first trainable layers after a frozen base (a transfer-learning
  // project's new head, which is what its user edits), else the Input(s).
  std::set<NodeId> after_frozen;
  for (const Edge& e : g.edges())
    if (!g.node(e.src).trainable && g.node(e.dst).trainable) after_frozen.insert(e.dst);
  std::vector<NodeId> focus;
  for (NodeId id : g.topo_order())
    if (after_frozen.count(id)) focus.push_back(id);
  const bool head = !focus.empty();
  if (!head) focus = g.inputs();
  if (focus.empty()) focus = {g.topo_order().front()};
  // As many of them, in order, as can be shown together.
  const QSizeF shown = QSizeF(view_->viewport()->size()) / kReadableZoom;
  QRectF r;
  for (NodeId id : focus) {
    const widgets::NodeItem* item = editor_->scene()->nodeItem(id);
    if (!item) continue;
    const QRectF u = r.united(item->sceneBoundingRect());
    if (!r.isNull() && (u.width() > shown.width() || u.height() > shown.height())) break;
    r = u;
  }
  view_->showAt(r, kReadableZoom);
  open_hint_ = tr("Large network: showing %1 at %2 % — press %3 to fit all")
                   .arg(head ? tr("the new head") : tr("its input"))
                   .arg(qRound(kReadableZoom * 100))
                   .arg(action("actionFit")->shortcut().toString(QKeySequence::NativeText));
}

void MainWindow::newProject() {
  Project p;
  p.name = tr("Untitled").toStdString();
  p.dataset.path = "sample:fashion-mnist-subset";
  setProject(std::move(p), {}, false);
}

bool MainWindow::newFromTemplate(const QString& path) {
  Project p;
  try {
    p = TemplateDialog::loadTemplate(path);
  } catch (const Error& e) {
    reportError(tr("Could not open the template %1:\n\n%2").arg(path, QString::fromUtf8(e.what())));
    return false;
  }
  // A template is a starting point: saving must not overwrite it.
  p.file.clear();
  // Templates are stored as one line (with their branches beside it), which
  // may be too small to read here once fitted: laid out for this canvas.
  const QSize canvas = view_->viewport()->size();
  widgets::layOutToRead(p.graph, {double(canvas.width()), double(canvas.height())});
  setProject(std::move(p), {}, false);
  return true;
}

bool MainWindow::openFile(const QString& path) {
  Project p;
  try {
    p = load_project(path.toStdString());
  } catch (const Error& e) {
    // Nothing has been touched yet: the open project stays as it was.
    reportError(tr("Could not open %1:\n\n%2")
                    .arg(QDir::toNativeSeparators(path), QString::fromUtf8(e.what())));
    return false;
  }
  if (!confirmStopTraining(tr("open %1").arg(QFileInfo(path).fileName())) || !maybeSave())
    return false;
  QString abs = QFileInfo(path).absoluteFilePath();
  setProject(std::move(p), abs, false);
  addRecent(abs);
  if (open_hint_.isEmpty())
    statusBar()->showMessage(tr("Opened %1").arg(QDir::toNativeSeparators(abs)), 5000);
  else
    statusBar()->showMessage(tr("Opened %1. %2").arg(QDir::toNativeSeparators(abs), open_hint_),
                             kOpenHintMs);
  return true;
}

bool MainWindow::saveFile(const QString& path_in) {
  QString path = path_in;
  if (!path.endsWith(".dcproj", Qt::CaseInsensitive)) path += ".dcproj";
  // p.file is the old file: save_project rebases paths relative to its
  // folder (dataset, init weights) so they still lead to the same files.
  Project p = project();
  try {
    save_project(p, path.toStdString());  // atomic: temp file, fsync, rename
  } catch (const Error& e) {
    reportError(tr("Could not save %1:\n\n%2")
                    .arg(QDir::toNativeSeparators(path), QString::fromUtf8(e.what())));
    return false;
  }
  file_ = QFileInfo(path).absoluteFilePath();
  // The panels relate dataset paths to the file as saved.
  if (ctx_) {
    ctx_->setDatasetSpec(p.dataset);
    syncContext();
  }
  if (experiments_panel_) experiments_panel_->setProjectFile(file_);
  editor_->undoStack()->setClean();
  forced_modified_ = false;
  saved_settings_ = settingsJson();
  autosaver_->clear();
  addRecent(file_);
  updateTitle();
  statusBar()->showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(file_)), 5000);
  return true;
}

bool MainWindow::save() {
  return file_.isEmpty() ? saveAs() : saveFile(file_);
}

bool MainWindow::saveAs() {
  QString dir = file_.isEmpty() ? QDir::homePath() : QFileInfo(file_).absolutePath();
  QString suggestion = dir + "/" + (file_.isEmpty() ? "model.dcproj" : QFileInfo(file_).fileName());
  QString f = QFileDialog::getSaveFileName(this, tr("Save Project"), suggestion,
                                           tr("DeepCanvas projects (*.dcproj)"));
  return !f.isEmpty() && saveFile(f);
}

QString MainWindow::loadExportWeights(Plan& plan) const {
  const ModelWeights& w = ctx_->weightsInUse();
  if (w.valid()) {
    plan.load_state(w.state, w.source.toStdString());
    return w.source;
  }
  plan.init_params(ctx_->project().training.seed);
  return tr(
      "untrained weights (train, or choose a checkpoint in the Inference tab's Weights list, "
      "first)");
}

bool MainWindow::exportOnnx(QString path) {
#ifdef DC_HAVE_ONNX
  const Project& p = ctx_->project();
  if (path.isEmpty()) {
    const QString dir = widgets::dialogStart("exports", file_);
    const QString base = file_.isEmpty() ? QStringLiteral("model") : QFileInfo(file_).baseName();
    path = QFileDialog::getSaveFileName(this, tr("Export ONNX Model"), dir + "/" + base + ".onnx",
                                        tr("ONNX models (*.onnx)"));
    if (path.isEmpty()) return false;
    widgets::rememberDialogChoice("exports", path);
  }
  try {
    Plan plan(p.graph, 1);
    const QString which = loadExportWeights(plan);
    OnnxExportOptions o;
    o.model_name = p.name;
    export_onnx(path.toStdString(), p.graph, plan, o);
    statusBar()->showMessage(tr("Exported %1 with %2").arg(QDir::toNativeSeparators(path), which),
                             8000);
    return true;
  } catch (const std::exception& e) {
    reportError(tr("Could not export the ONNX model: %1").arg(QString::fromUtf8(e.what())));
    return false;
  }
#else
  (void)path;
  reportError(
      tr("This build of DeepCanvas has no ONNX support (install libonnx-dev and rebuild)."));
  return false;
#endif
}

bool MainWindow::importOnnx(QString model_path, QString project_path) {
#ifdef DC_HAVE_ONNX
  if (model_path.isEmpty()) {
    QSettings s;
    const QString dir = s.value("importDir", QDir::homePath()).toString();
    model_path = QFileDialog::getOpenFileName(this, tr("Import ONNX Model"), dir,
                                              tr("ONNX models (*.onnx)"));
    if (model_path.isEmpty()) return false;
    s.setValue("importDir", QFileInfo(model_path).absolutePath());
  }
  if (project_path.isEmpty()) {
    const QFileInfo m(model_path);
    project_path =
        QFileDialog::getSaveFileName(this, tr("Save Imported Project"),
                                     m.absolutePath() + "/" + m.completeBaseName() + ".dcproj",
                                     tr("DeepCanvas projects (*.dcproj)"));
    if (project_path.isEmpty()) return false;
  }
  if (!project_path.endsWith(".dcproj", Qt::CaseInsensitive)) project_path += ".dcproj";
  QString ck;
  try {
    ck = QString::fromStdString(import_onnx(model_path.toStdString(), project_path.toStdString()));
    // Laid out for this canvas (the importer's columns suit no particular
    // window), and saved so the opened project starts unmodified.
    Project p = load_project(project_path.toStdString());
    const QSize vs = view_->viewport()->size();
    for (const auto& [id, xy] :
         widgets::autoLayout(p.graph, {double(vs.width()), double(vs.height())}))
      p.graph.move(id, xy.first, xy.second);
    save_project(p, project_path.toStdString());
  } catch (const std::exception& e) {
    reportError(tr("Could not import %1:\n\n%2")
                    .arg(QDir::toNativeSeparators(model_path), QString::fromUtf8(e.what())));
    return false;
  }
  if (!openFile(project_path)) return false;
  try {
    ctx_->setWeights(weights_from_checkpoint(ck));
  } catch (const std::exception& e) {
    reportError(
        tr("Imported, but the weights could not be loaded: %1").arg(QString::fromUtf8(e.what())));
  }
  showOpenedNetwork();
  QString msg = tr("Imported %1 into %2 (weights: %3)")
                    .arg(QDir::toNativeSeparators(model_path),
                         QDir::toNativeSeparators(project_path), QDir::toNativeSeparators(ck));
  if (!open_hint_.isEmpty()) msg += ". " + open_hint_;
  statusBar()->showMessage(msg, open_hint_.isEmpty() ? 8000 : kOpenHintMs);
  return true;
#else
  (void)model_path;
  (void)project_path;
  reportError(
      tr("This build of DeepCanvas has no ONNX support (install libonnx-dev and rebuild)."));
  return false;
#endif
}

QStringList MainWindow::recentFiles() {
  return QSettings().value("recentFiles").toStringList();
}

void MainWindow::addRecent(const QString& path) {
  QSettings s;
  QStringList list = recentFiles();
  list.removeAll(path);
  list.prepend(path);
  while (list.size() > kMaxRecent) list.removeLast();
  s.setValue("recentFiles", list);
  updateStartPage();
}

void MainWindow::fillRecentMenu() {
  recent_menu_->clear();
  for (const QString& f : recentFiles()) {
    if (!QFileInfo::exists(f)) continue;
    QAction* a = recent_menu_->addAction(QFileInfo(f).fileName(), this, [this, f] { openFile(f); });
    a->setToolTip(f);
    a->setStatusTip(QDir::toNativeSeparators(f));
  }
  if (recent_menu_->isEmpty()) recent_menu_->addAction(tr("No recent projects"))->setEnabled(false);
  recent_menu_->addSeparator();
  recent_menu_->addAction(tr("Clear Menu"), this, [] { QSettings().remove("recentFiles"); });
}

void MainWindow::offerRecovery() {
  std::vector<Recovery> found = Autosaver::findRecoverable();
  if (found.empty()) return;
  const Recovery& r = found.front();
  QString what = r.original.isEmpty() ? tr("an unsaved project") : QFileInfo(r.original).fileName();
  QString when = QFileInfo(r.data).lastModified().toString(Qt::TextDate);
  auto b = QMessageBox::question(
      this, tr("Recover unsaved changes?"),
      tr("DeepCanvas did not close properly last time. Changes to %1 were autosaved at %2.\n\n"
         "Recover them?")
          .arg(what, when),
      QMessageBox::Yes | QMessageBox::Discard, QMessageBox::Yes);
  if (b == QMessageBox::Yes) {
    try {
      Project p = load_project(r.data.toStdString());
      setProject(std::move(p), r.original, true);
    } catch (const Error& e) {
      reportError(
          tr("The recovery file could not be read:\n\n%1").arg(QString::fromUtf8(e.what())));
      return;  // keep it for another try
    }
  }
  for (const Recovery& x : found) Autosaver::discard(x);
}

}  // namespace dc::gui
