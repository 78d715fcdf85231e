#include "gui/main_window.h"

#include "gui/autosaver.h"
#include "gui/problems_panel.h"
#include "gui/project_context.h"
#include "gui/summary_panel.h"
#include "gui/template_dialog.h"
#include "gui/tool_icons.h"
#include "widgets/block_breadcrumb.h"
#include "widgets/graph_editor.h"
#include "widgets/graph_model.h"
#include "widgets/layer_palette.h"
#include "widgets/node_item.h"
#include "widgets/node_scene.h"
#include "widgets/node_view.h"
#include "widgets/overview_map.h"
#include "widgets/property_editor.h"

#include <algorithm>
#include <cstdio>

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QScreen>
#include <QSettings>
#include <QStatusBar>
#include <QStyle>
#include <QToolBar>
#include <QUndoStack>

namespace dc::gui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setObjectName("mainWindow");
  editor_ = new widgets::GraphEditor(this);
  view_ = new widgets::NodeView(editor_->scene(), this);
  view_->setObjectName("canvas");
  new widgets::OverviewMap(view_);               // a child of the view, in its corner
  new widgets::BlockBreadcrumb(editor_, view_);  // while a block is open
  setDocumentMode(true);
  setDockOptions(AnimatedDocks | AllowTabbedDocks);
  createPanels();
  createModes();  // the view becomes the Model tab
  createActions();
  createMenus();
  createStartPage();
  applyIcons();
  setAcceptDrops(true);  // a .dcproj dropped anywhere on the window opens it

  zoom_label_ = new QLabel(this);
  count_label_ = new QLabel(this);
  statusBar()->addPermanentWidget(count_label_);
  statusBar()->addPermanentWidget(zoom_label_);
  connect(view_, &widgets::NodeView::zoomChanged, this,
          [this](double z) { zoom_label_->setText(tr("%1 %").arg(qRound(z * 100))); });
  zoom_label_->setText(tr("100 %"));
  connect(editor_, &widgets::GraphEditor::statusMessage, this,
          [this](const QString& m) { statusBar()->showMessage(m, m.isEmpty() ? 1 : 10000); });
  connect(editor_->undoStack(), &QUndoStack::cleanChanged, this, &MainWindow::updateTitle);
  connect(editor_->undoStack(), &QUndoStack::indexChanged, this, &MainWindow::updateTitle);
  connect(editor_->model(), &widgets::GraphModel::shapesChanged, this,
          &MainWindow::updateStatusCounts);

  autosaver_ = new Autosaver(
      [this] { return std::pair(QString::fromStdString(project_to_json(project())), file_); },
      [this] { return isModified(); }, this);
  // Sticky (no timeout): the user must see that their work is not being
  // kept, not a message that vanishes while they look at the canvas.
  connect(autosaver_, &Autosaver::failed, this, [this](const QString& why) {
    statusBar()->showMessage(why);
    std::fprintf(stderr, "deepcanvas: %s\n", qPrintable(why));
  });

  newProject();
  restoreLayout();
  if (!autosaver_->problem().isEmpty()) {
    statusBar()->showMessage(autosaver_->problem());
    std::fprintf(stderr, "deepcanvas: %s\n", qPrintable(autosaver_->problem()));
  }
}

MainWindow::~MainWindow() = default;

void MainWindow::createPanels() {
  auto dock = [this](const QString& name, const QString& title, QWidget* w,
                     Qt::DockWidgetArea area) {
    auto* d = new QDockWidget(title, this);
    d->setObjectName(name);
    d->setWidget(w);
    d->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable |
                   QDockWidget::DockWidgetFloatable);
    addDockWidget(area, d);
    return d;
  };
  palette_ = new widgets::LayerPalette(this);
  dock("paletteDock", tr("Layers"), palette_, Qt::LeftDockWidgetArea);
  properties_ = new widgets::PropertyEditor(editor_, this);
  dock("propertiesDock", tr("Properties"), properties_, Qt::RightDockWidgetArea);
  summary_ = new SummaryPanel(editor_->model(), this);
  auto* sd = dock("summaryDock", tr("Model Summary"), summary_, Qt::BottomDockWidgetArea);
  problems_ = new ProblemsPanel(editor_->model(), this);
  auto* pd = dock("problemsDock", tr("Problems"), problems_, Qt::BottomDockWidgetArea);
  tabifyDockWidget(sd, pd);
  sd->raise();
  resizeDocks({findChild<QDockWidget*>("paletteDock"), findChild<QDockWidget*>("propertiesDock")},
              {210, 280}, Qt::Horizontal);
  resizeDocks({sd}, {230}, Qt::Vertical);

  connect(palette_, &widgets::LayerPalette::layerActivated, this, [this](const QString& type) {
    editor_->appendLayer(type);
    for (NodeId id : editor_->scene()->selectedNodes())
      view_->reveal(editor_->scene()->nodeItem(id));
  });
  connect(view_, &widgets::NodeView::layerDropped, this, [this](const QString& type, QPointF p) {
    // Drop under the cursor: the point is the card's centre, not its corner.
    editor_->addLayer(type, p - QPointF(widgets::NodeItem::kWidth / 2, 29));
    view_->setFocus();
  });
  connect(view_, &widgets::NodeView::nudgeRequested, this, [this](QPointF d) {
    std::map<NodeId, QPointF> to;
    for (NodeId id : editor_->scene()->selectedNodes()) {
      const Node& n = editor_->graph().node(id);
      to[id] = QPointF(n.x, n.y) + d;
    }
    if (!to.empty()) editor_->moveNodes(to);  // repeated presses merge into one step
  });
  connect(problems_, &ProblemsPanel::nodeActivated, this, &MainWindow::selectAndCenter);
  connect(summary_, &SummaryPanel::nodeActivated, this, &MainWindow::selectAndCenter);
  connect(problems_, &ProblemsPanel::countChanged, this, [this, pd](int n) {
    pd->setWindowTitle(n ? tr("Problems (%1)").arg(n) : tr("Problems"));
  });
}

namespace {
// Toolbar buttons show the key that does the same.
void setShortcutTip(QAction* a) {
  const QString text = a->text().remove('&');
  a->setToolTip(
      a->shortcut().isEmpty()
          ? text
          : QStringLiteral("%1 (%2)").arg(text, a->shortcut().toString(QKeySequence::NativeText)));
}
}  // namespace

QAction* MainWindow::makeAction(const QString& name, const QString& text, const QKeySequence& key,
                                const QString& icon) {
  auto* a = new QAction(text, this);
  a->setObjectName(name);
  if (!key.isEmpty()) a->setShortcut(key);
  setShortcutTip(a);
  if (!icon.isEmpty()) a->setProperty("toolIcon", icon);
  addAction(a);
  return a;
}

QAction* MainWindow::action(const QString& name) const {
  return findChild<QAction*>(name);
}

void MainWindow::createActions() {
  connect(makeAction("actionNew", tr("&New"), QKeySequence::New, "new"), &QAction::triggered, this,
          [this] {
            if (confirmStopTraining(tr("start a new project")) && maybeSave()) newProject();
          });
  connect(makeAction("actionNewFromTemplate", tr("New from &Template…"),
                     QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_N), "template"),
          &QAction::triggered, this, [this] {
            if (!confirmStopTraining(tr("start a new project")) || !maybeSave()) return;
            TemplateDialog dlg(this);
            if (dlg.exec() == QDialog::Accepted && !dlg.selectedFile().isEmpty())
              newFromTemplate(dlg.selectedFile());
          });
  connect(makeAction("actionOpen", tr("&Open…"), QKeySequence::Open, "open"), &QAction::triggered,
          this, [this] {
            QString dir = file_.isEmpty() ? QString() : QFileInfo(file_).absolutePath();
            QString f = QFileDialog::getOpenFileName(this, tr("Open Project"), dir,
                                                     tr("DeepCanvas projects (*.dcproj)"));
            if (!f.isEmpty()) openFile(f);
          });
  connect(makeAction("actionSave", tr("&Save"), QKeySequence::Save, "save"), &QAction::triggered,
          this, &MainWindow::save);
  connect(makeAction("actionSaveAs", tr("Save &As…"), QKeySequence::SaveAs), &QAction::triggered,
          this, &MainWindow::saveAs);
  connect(makeAction("actionQuit", tr("&Quit"), QKeySequence::Quit), &QAction::triggered, this,
          &QWidget::close);

  QUndoStack* undo = editor_->undoStack();
  QAction* u = undo->createUndoAction(this, tr("&Undo"));
  u->setObjectName("actionUndo");
  u->setShortcut(QKeySequence::Undo);
  u->setProperty("toolIcon", "undo");
  addAction(u);
  QAction* r = undo->createRedoAction(this, tr("&Redo"));
  r->setObjectName("actionRedo");
  // Ctrl+Y as well where the platform's Redo lacks it (it has it on Linux).
  QList<QKeySequence> redo_keys = QKeySequence::keyBindings(QKeySequence::Redo);
  if (!redo_keys.contains(QKeySequence(Qt::CTRL | Qt::Key_Y)))
    redo_keys << QKeySequence(Qt::CTRL | Qt::Key_Y);
  r->setShortcuts(redo_keys);
  r->setProperty("toolIcon", "redo");
  addAction(r);
  // Their text names the step ("Undo Add conv1") and changes with it.
  setShortcutTip(u);
  setShortcutTip(r);
  connect(undo, &QUndoStack::undoTextChanged, u, [u] { setShortcutTip(u); });
  connect(undo, &QUndoStack::redoTextChanged, r, [r] { setShortcutTip(r); });

  connect(makeAction("actionCut", tr("Cu&t"), QKeySequence::Cut, "cut"), &QAction::triggered,
          editor_, &widgets::GraphEditor::cutSelection);
  connect(makeAction("actionCopy", tr("&Copy"), QKeySequence::Copy, "copy"), &QAction::triggered,
          editor_, &widgets::GraphEditor::copySelection);
  connect(makeAction("actionPaste", tr("&Paste"), QKeySequence::Paste, "paste"),
          &QAction::triggered, editor_, &widgets::GraphEditor::paste);
  QAction* del = makeAction("actionDelete", tr("&Delete"), QKeySequence::Delete, "delete");
  del->setShortcuts({QKeySequence::Delete, QKeySequence(Qt::Key_Backspace)});
  connect(del, &QAction::triggered, editor_, &widgets::GraphEditor::deleteSelection);
  connect(makeAction("actionSelectAll", tr("Select &All"), QKeySequence::SelectAll),
          &QAction::triggered, editor_, &widgets::GraphEditor::selectAll);
  // Blocks: the selected layers as one reusable node, and back.
  auto selectedBlock = [this]() -> NodeId {
    const auto sel = editor_->scene()->selectedNodes();
    if (sel.size() != 1) return -1;
    const Node* n = editor_->graph().find(sel[0]);
    return n && n->type == kBlockType ? n->id : -1;
  };
  connect(makeAction("actionGroupBlock", tr("&Group as Block\u2026"), QKeySequence(tr("Ctrl+G"))),
          &QAction::triggered, this, [this] {
            bool ok = false;
            const QString name = QInputDialog::getText(
                this, tr("Group as Block"), tr("Block name:"), QLineEdit::Normal,
                QStringLiteral("Block%1").arg(block_definitions(editor_->graph()).size() + 1), &ok);
            if (ok && !name.trimmed().isEmpty()) editor_->groupSelection(name.trimmed());
          });
  connect(makeAction("actionUngroupBlock", tr("&Ungroup Block"), QKeySequence(tr("Ctrl+Shift+G"))),
          &QAction::triggered, this, [this, selectedBlock] {
            if (NodeId b = selectedBlock(); b >= 0) editor_->ungroup(b);
          });
  connect(makeAction("actionRepeatBlock", tr("&Repeat Block \u00d7N\u2026"), QKeySequence()),
          &QAction::triggered, this, [this, selectedBlock] {
            const NodeId b = selectedBlock();
            if (b < 0) return;
            bool ok = false;
            const int n = QInputDialog::getInt(this, tr("Repeat Block"),
                                               tr("Instances in the chain:"), 3, 2, 1000, 1, &ok);
            if (ok) editor_->repeatBlock(b, n);
          });
  connect(makeAction("actionRenameBlock", tr("Re&name Block\u2026"), QKeySequence()),
          &QAction::triggered, this, [this, selectedBlock] {
            const NodeId b = selectedBlock();
            if (b < 0) return;
            const QString from = QString::fromStdString(editor_->graph().node(b).attrs.s("block"));
            bool ok = false;
            const QString to =
                QInputDialog::getText(this, tr("Rename Block"), tr("New name for every instance:"),
                                      QLineEdit::Normal, from, &ok);
            if (ok && !to.trimmed().isEmpty()) editor_->renameBlockDefinition(from, to.trimmed());
          });

  connect(makeAction("actionZoomIn", tr("Zoom &In"), QKeySequence::ZoomIn, "zoom-in"),
          &QAction::triggered, view_, &widgets::NodeView::zoomIn);
  connect(makeAction("actionZoomOut", tr("Zoom &Out"), QKeySequence::ZoomOut, "zoom-out"),
          &QAction::triggered, view_, &widgets::NodeView::zoomOut);
  // Not Ctrl+1: that is the Model tab (Ctrl+1..5 switch tabs).
  connect(makeAction("actionActualSize", tr("&Actual Size"),
                     QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_0)),
          &QAction::triggered, view_, &widgets::NodeView::resetZoom);
  connect(makeAction("actionFit", tr("&Fit to Window"), QKeySequence(Qt::CTRL | Qt::Key_0), "fit"),
          &QAction::triggered, this, [this] {
            // A line of layers too long to read once fitted is wrapped into rows.
            editor_->wrapLongLine(view_->viewport()->size());
            view_->fitAll();
          });
  connect(makeAction("actionAutoLayout", tr("Auto-&layout"), QKeySequence(Qt::CTRL | Qt::Key_L),
                     "layout"),
          &QAction::triggered, this, [this] {
            editor_->autoLayout(view_->viewport()->size());
            view_->fitAll();
          });
  QAction* overview = makeAction("actionOverview", tr("&Overview Map"), {});
  overview->setCheckable(true);
  overview->setChecked(true);
  connect(overview, &QAction::toggled, this,
          [this](bool on) { view_->findChild<widgets::OverviewMap*>()->setEnabled(on); });
  QAction* snap = makeAction("actionSnap", tr("&Snap to Grid"), {});
  snap->setCheckable(true);
  snap->setChecked(true);
  connect(snap, &QAction::toggled, this, [this](bool on) { editor_->scene()->setSnapToGrid(on); });

  createLayerActions();
  createCostOverlay();

  // Canvas actions must not steal keys from text fields in the docks.
  for (const char* n : {"actionCut", "actionCopy", "actionPaste", "actionDelete", "actionSelectAll",
                        "actionFreeze", "actionUnfreeze", "actionReplaceHead"})
    action(n)->setShortcutContext(Qt::WidgetWithChildrenShortcut);
  for (const char* n : {"actionCut", "actionCopy", "actionPaste", "actionDelete", "actionSelectAll",
                        "actionFreeze", "actionUnfreeze", "actionReplaceHead"})
    view_->addAction(action(n));
}

// Layer → Freeze / Unfreeze / Replace Head: transfer learning on the canvas.
// Ctrl+K "locks" (Ctrl+Shift+K unlocks); neither is a standard key of Qt's
// on Linux outside text fields, and the canvas context keeps them away from
// the docks' line edits.
void MainWindow::createLayerActions() {
  QAction* freeze = makeAction("actionFreeze", tr("&Freeze"), QKeySequence(Qt::CTRL | Qt::Key_K));
  freeze->setStatusTip(tr("Keep the selected layers' weights as they are while training"));
  connect(freeze, &QAction::triggered, this, [this] {
    if (!editor_->setTrainable(editor_->scene()->selectedNodes(), false))
      statusBar()->showMessage(tr("Select the layers to freeze"), 5000);
  });
  QAction* unfreeze =
      makeAction("actionUnfreeze", tr("&Unfreeze"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_K));
  unfreeze->setStatusTip(tr("Train the selected layers again"));
  connect(unfreeze, &QAction::triggered, this, [this] {
    if (!editor_->setTrainable(editor_->scene()->selectedNodes(), true))
      statusBar()->showMessage(tr("Select frozen layers to unfreeze"), 5000);
  });
  QAction* head = makeAction("actionReplaceHead", tr("&Replace Head…"),
                             QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_H));
  head->setStatusTip(
      tr("Keep the network up to the selected layer and append a new classifier for the "
         "loaded dataset's classes"));
  connect(head, &QAction::triggered, this, [this] { replaceHead(); });
  auto sync = [this] {
    const std::vector<NodeId> sel = editor_->scene()->selectedNodes();
    bool any_trainable = false, any_frozen = false;
    for (NodeId id : sel)
      if (const Node* n = editor_->graph().find(id))
        (n->trainable ? any_trainable : any_frozen) = true;
    action("actionFreeze")->setEnabled(any_trainable);
    action("actionUnfreeze")->setEnabled(any_frozen);
    action("actionReplaceHead")->setEnabled(sel.size() == 1);
    const Node* one = sel.size() == 1 ? editor_->graph().find(sel[0]) : nullptr;
    const bool block = one && one->type == kBlockType;
    action("actionGroupBlock")->setEnabled(!sel.empty());
    for (const char* n : {"actionUngroupBlock", "actionRepeatBlock", "actionRenameBlock"})
      action(n)->setEnabled(block);
  };
  connect(editor_->scene(), &QGraphicsScene::selectionChanged, this, sync);
  connect(editor_->model(), &widgets::GraphModel::nodeChanged, this, sync);
  sync();
}

NodeId MainWindow::replaceHead() {
  const std::vector<NodeId> sel = editor_->scene()->selectedNodes();
  if (sel.size() != 1) {
    statusBar()->showMessage(tr("Select the one layer to keep the network up to"), 5000);
    return -1;
  }
  // The loaded dataset's classes; without one, the current output count.
  int classes = 0;
  if (ctx_ && ctx_->hasDataset()) classes = ctx_->trainSet()->num_classes;
  QString why;
  return editor_->replaceHead(sel[0], classes, &why);
}

void MainWindow::createMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(action("actionNew"));
  file->addAction(action("actionNewFromTemplate"));
  file->addAction(action("actionOpen"));
  QAction* import_onnx = file->addAction(tr("&Import ONNX…"), this, [this] { importOnnx(); });
  import_onnx->setObjectName("actionImportOnnx");
  import_onnx->setStatusTip(
      tr("Open a model exported from PyTorch or another framework (.onnx) as a project with "
         "its weights"));
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  recent_menu_->setObjectName("menuRecent");
  connect(recent_menu_, &QMenu::aboutToShow, this, &MainWindow::fillRecentMenu);
  QAction* open_run = file->addAction(tr("Open R&un…"), this, [this] { openRun(); });
  open_run->setObjectName("actionOpenRun");
  open_run->setStatusTip(
      tr("Show a run of an exported PyTorch project (its metrics.jsonl and checkpoints) "
         "beside your runs"));
  file->addSeparator();
  file->addAction(action("actionSave"));
  file->addAction(action("actionSaveAs"));
  QMenu* exports = file->addMenu(tr("&Export"));
  exports->setObjectName("menuExport");
  QAction* onnx = exports->addAction(tr("&ONNX Model…"), this, [this] { exportOnnx(); });
  onnx->setObjectName("actionExportOnnx");
  onnx->setStatusTip(
      tr("Write the network and its weights for onnxruntime, OpenCV, TensorRT or "
         "Netron"));
  QAction* torch_export =
      exports->addAction(tr("&PyTorch Project…"), this, [this] { exportPyTorch(); });
  torch_export->setObjectName("actionExportPyTorch");
  torch_export->setStatusTip(
      tr("Write model.py, train.py (torchrun/DDP), a Dockerfile and Kubernetes manifests that "
         "train this project on GPUs and clusters"));
  QAction* deploy =
      file->addAction(tr("Export for &Deployment…"), this, [this] { openDeployDialog(); });
  deploy->setObjectName("actionExportDeployment");
  deploy->setStatusTip(
      tr("Compare the trained network in fp32, fp16 and int8 (size, test accuracy, CPU "
         "latency) and write the one for your device as ONNX"));
  QAction* torch_run =
      file->addAction(tr("Run with P&yTorch…"), this, [this] { runWithPyTorch(); });
  torch_run->setObjectName("actionRunWithPyTorch");
  torch_run->setShortcut(QKeySequence(tr("Ctrl+Shift+R")));
  torch_run->setStatusTip(
      tr("Export this project and train it with PyTorch on this machine (one process or "
         "torchrun), its output in a console and its curves live in the Training tab"));
  torch_run->setToolTip(torch_run->statusTip());
  file->addSeparator();
  file->addAction(action("actionQuit"));

  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  edit->addAction(action("actionUndo"));
  edit->addAction(action("actionRedo"));
  edit->addSeparator();
  for (const char* n : {"actionCut", "actionCopy", "actionPaste", "actionDelete"})
    edit->addAction(action(n));
  edit->addSeparator();
  edit->addAction(action("actionSelectAll"));
  edit->addSeparator();
  for (const char* n :
       {"actionGroupBlock", "actionUngroupBlock", "actionRepeatBlock", "actionRenameBlock"})
    edit->addAction(action(n));

  QMenu* layer = menuBar()->addMenu(tr("&Layer"));
  layer->setObjectName("menuLayer");
  layer->addAction(action("actionFreeze"));
  layer->addAction(action("actionUnfreeze"));
  layer->addSeparator();
  layer->addAction(action("actionReplaceHead"));

  view_menu_ = menuBar()->addMenu(tr("&View"));
  for (const char* n : {"actionZoomIn", "actionZoomOut", "actionActualSize", "actionFit"})
    view_menu_->addAction(action(n));
  view_menu_->addSeparator();
  view_menu_->addAction(action("actionAutoLayout"));
  view_menu_->addAction(action("actionSnap"));
  view_menu_->addAction(action("actionOverview"));
  view_menu_->addAction(action("actionCostOverlay"));
  addCostOverlayMenu(view_menu_);
  createThemeMenu(view_menu_);
  view_menu_->addSeparator();
  for (QDockWidget* d : findChildren<QDockWidget*>()) view_menu_->addAction(d->toggleViewAction());
  createModeActions(view_menu_);

  createHelpMenu();

  QToolBar* tb = addToolBar(tr("Main"));
  tb->setObjectName("mainToolBar");
  tb->setMovable(false);
  tb->setIconSize(QSize(20, 20));
  tb->setToolButtonStyle(Qt::ToolButtonIconOnly);
  for (const char* n :
       {"actionNew", "actionNewFromTemplate", "actionOpen", "actionSave", "", "actionUndo",
        "actionRedo", "", "actionCut", "actionCopy", "actionPaste", "actionDelete", "",
        "actionZoomIn", "actionZoomOut", "actionFit", "actionAutoLayout", "actionCostOverlay"}) {
    if (!*n)
      tb->addSeparator();
    else
      tb->addAction(action(n));
  }
}

void MainWindow::applyIcons() {
  for (QAction* a : findChildren<QAction*>()) {
    QString icon = a->property("toolIcon").toString();
    if (!icon.isEmpty()) a->setIcon(toolIcon(icon, QApplication::palette()));
  }
}

void MainWindow::changeEvent(QEvent* e) {
  // Light/dark switch: icons are drawn in the palette's colours.
  if (e->type() == QEvent::PaletteChange || e->type() == QEvent::ApplicationPaletteChange)
    applyIcons();
  QMainWindow::changeEvent(e);
}

void MainWindow::restoreLayout() {
  QSettings s;
  if (!restoreGeometry(s.value("window/geometry").toByteArray())) {
    // The first start: 1480x920, or less on a smaller screen. The window
    // manager adds a title bar and borders outside the size given here, so
    // a window as large as the work area ends below the screen's edge with
    // its status bar hidden (seen at 1280x720 under openbox): leave room
    // for them, and centre the window in the work area.
    const QRect avail = screen() ? screen()->availableGeometry() : QRect(0, 0, 1480, 920);
    constexpr int kFrameAllowance = 8;  // each border
    const int title = std::max(32, style()->pixelMetric(QStyle::PM_TitleBarHeight, nullptr, this));
    const QSize room = avail.size() - QSize(2 * kFrameAllowance, title + 2 * kFrameAllowance);
    resize(QSize(1480, 920).boundedTo(room));
    move(avail.x() + (avail.width() - width()) / 2,
         avail.y() + std::max(0, (avail.height() - height() - title) / 2));
  }
  restoreState(s.value("window/state").toByteArray(), kLayoutVersion);
  showMode(Mode(std::clamp(s.value("window/tab", 0).toInt(), 0, int(Mode::Experiments))));
  editor_->scene()->setSnapToGrid(s.value("editor/snap", true).toBool());
  action("actionSnap")->setChecked(editor_->scene()->snapToGrid());
}

void MainWindow::closeEvent(QCloseEvent* e) {
  if (!confirmStopTraining(tr("close the window")) || !maybeSave()) {
    e->ignore();
    return;
  }
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", modelLayoutState());
  s.setValue("window/tab", modes_->currentIndex());
  s.setValue("editor/snap", editor_->scene()->snapToGrid());
  autosaver_->clear();
  e->accept();
}

void MainWindow::selectAndCenter(int id) {
  widgets::NodeItem* it = editor_->scene()->nodeItem(id);
  if (!it) return;
  editor_->scene()->selectNodes({id});
  view_->centerOnItem(it);
  view_->setFocus();
}

void MainWindow::updateStatusCounts() {
  const Graph& g = editor_->graph();
  int bad = 0;
  for (const auto& [id, s] : editor_->model()->shapes())
    if (!s.ok()) ++bad;
  QString text = tr("%n layer(s)", nullptr, int(g.nodes().size()));
  if (bad) text += tr(" · %n invalid", nullptr, bad);
  count_label_->setText(text);
}

}  // namespace dc::gui
