// The main window as a new user meets it (issue 18): the docks and the tab
// after a restart, unique shortcuts with tooltips, the palette's Enter,
// Fit to Window and auto-layout at 1280×720, pasting, the start page,
// dropped files, the theme and the shortcuts dialog.
#include "gui/inference_panel.h"
#include "gui/main_window.h"
#include "gui/project_context.h"
#include "gui/shortcuts_dialog.h"
#include "gui/start_page.h"
#include "gui/template_dialog.h"
#include "gui/theme.h"
#include "gui/training_panel.h"
#include "gui_test_util.h"
#include "widgets/auto_layout.h"
#include "widgets/graph_editor.h"
#include "widgets/layer_palette.h"
#include "widgets/node_item.h"
#include "widgets/node_scene.h"
#include "widgets/node_view.h"
#include "widgets/overview_map.h"

#include <deepcanvas/layer.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <gtest/gtest.h>

#include <QAbstractButton>
#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenuBar>
#include <QMimeData>
#include <QRegularExpression>
#include <QSettings>
#include <QSignalSpy>
#include <QTabBar>
#include <QTest>
#include <QTextDocument>
#include <QToolBar>
#include <QTreeWidget>
#include <QUndoStack>
#include <QUrl>
#include <map>
#include <memory>
#include <set>

namespace dc::test {
namespace {

using Mode = gui::MainWindow::Mode;

class EditorWindow : public ::testing::Test {
 protected:
  void SetUp() override {
    ensureApp();
    // Each test starts as a first start: no saved layout, tab or recent files.
    QSettings().remove("window");
    QSettings().remove("recentFiles");
  }
  void TearDown() override { QSettings().remove("window"); }

  // A window as the app opens it, at the size a small laptop screen gives.
  static std::unique_ptr<gui::MainWindow> open(QSize size = {1280, 720}) {
    auto w = std::make_unique<gui::MainWindow>();
    w->setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Discard; });
    w->setErrorHandler([](const QString& e) { ADD_FAILURE() << e.toStdString(); });
    w->resize(size);
    w->show();
    EXPECT_TRUE(QTest::qWaitForWindowExposed(w.get()));
    return w;
  }
  // The title of the bottom docks' current tab.
  static QString bottomDockOnTop(const gui::MainWindow& w) {
    for (const QTabBar* tb : w.findChildren<QTabBar*>(Qt::FindDirectChildrenOnly))
      for (int i = 0; i < tb->count(); ++i)
        if (tb->tabText(i) == "Problems") return tb->tabText(tb->currentIndex());
    return {};
  }
  static void openSample(gui::MainWindow& w) {
    ASSERT_TRUE(w.openFile(sourcePath("sample_data/sample_project.dcproj")));
    QApplication::processEvents();
  }
  // The sample with its layers in one line, 190 apart, as templates and
  // imported models are stored (the sample itself is stored in rows).
  static void openSampleInOneLine(gui::MainWindow& w) {
    Project p = load_project(sourcePath("sample_data/sample_project.dcproj").toStdString());
    double x = 40;
    for (NodeId id : p.graph.topo_order()) {
      p.graph.move(id, x, 120);
      x += 190;
    }
    const QString file = tempDir() + "/sample_line.dcproj";
    save_project(p, file.toStdString());
    ASSERT_TRUE(w.openFile(file));
    QApplication::processEvents();
  }
};

TEST_F(EditorWindow, QuittingOnAnyTabKeepsTheModelTabsDocksAndTheTab) {
  const char* docks[] = {"paletteDock", "propertiesDock", "summaryDock", "problemsDock"};
  for (Mode m : {Mode::Model, Mode::Dataset, Mode::Training, Mode::Inference, Mode::Experiments}) {
    SCOPED_TRACE(int(m));
    {
      auto w = open();
      w->showMode(m);
      ASSERT_TRUE(w->close());  // Ctrl+Q
    }
    auto w = open();
    EXPECT_EQ(w->mode(), m);  // the window remembers its tab
    w->showMode(Mode::Model);
    for (const char* name : docks) {
      auto* d = w->findChild<QDockWidget*>(name);
      ASSERT_NE(d, nullptr);
      // Tabified docks behind another are not "visible"; their menu entry
      // says whether they are part of the layout.
      EXPECT_TRUE(d->toggleViewAction()->isChecked()) << name;
    }
    EXPECT_TRUE(w->findChild<QDockWidget*>("paletteDock")->isVisible());
    EXPECT_TRUE(w->palette()->isVisible());
    // The summary stays the tab on top of the bottom docks, as on a first start.
    EXPECT_EQ(bottomDockOnTop(*w).toStdString(), "Model Summary");
  }
}

// The first start (no saved geometry) on a screen smaller than the default
// 1480x920 (the offscreen platform's is 800x600): the window leaves room for
// the title bar and borders the window manager adds, so its bottom (the
// status bar) stays on the screen.
TEST_F(EditorWindow, FirstWindowLeavesRoomForTheTitleBar) {
  gui::MainWindow w;
  const QRect avail = w.screen()->availableGeometry();
  ASSERT_LT(avail.height(), 920) << "needs a screen smaller than the default window";
  EXPECT_LE(w.height() + 32, avail.height());
  EXPECT_LE(w.width(), avail.width());
  EXPECT_GE(w.y(), avail.y());
  EXPECT_LE(w.y() + w.height() + 32, avail.y() + avail.height());
}

TEST_F(EditorWindow, NoTwoActionsShareAShortcutAndCtrl1ShowsTheModelTab) {
  auto w = open();
  std::map<QString, QAction*> owner;
  for (QAction* a : w->findChildren<QAction*>())
    for (const QKeySequence& k : a->shortcuts()) {
      const QString key = k.toString(QKeySequence::PortableText);
      auto [it, fresh] = owner.emplace(key, a);
      EXPECT_TRUE(fresh || it->second == a)
          << key.toStdString() << " is bound to " << it->second->objectName().toStdString() << " ("
          << it->second->text().toStdString() << ") and to " << a->objectName().toStdString()
          << " (" << a->text().toStdString() << ")";
    }
  w->showMode(Mode::Training);
  QApplication::setActiveWindow(w.get());
  ASSERT_TRUE(QTest::qWaitForWindowActive(w.get()));
  QTest::keyClick(w.get(), Qt::Key_1, Qt::ControlModifier);
  EXPECT_EQ(w->mode(), Mode::Model);
  // Actual Size still has a key of its own.
  EXPECT_FALSE(w->action("actionActualSize")->shortcut().isEmpty());
}

TEST_F(EditorWindow, EveryToolbarButtonHasATooltipWithItsShortcut) {
  auto w = open();
  auto* tb = w->findChild<QToolBar*>("mainToolBar");
  ASSERT_NE(tb, nullptr);
  int buttons = 0;
  for (QAction* a : tb->actions()) {
    if (a->isSeparator()) continue;
    ++buttons;
    ASSERT_FALSE(a->shortcut().isEmpty()) << a->objectName().toStdString();
    EXPECT_TRUE(a->toolTip().contains(a->shortcut().toString(QKeySequence::NativeText)))
        << a->objectName().toStdString() << ": " << a->toolTip().toStdString();
  }
  EXPECT_GE(buttons, 10);
  // Undo's text follows the step; its tooltip keeps the key.
  w->editor()->addLayer("Input", {40, 120});
  QAction* undo = w->action("actionUndo");
  EXPECT_TRUE(undo->toolTip().contains("input", Qt::CaseInsensitive))
      << undo->toolTip().toStdString();
  EXPECT_TRUE(undo->toolTip().contains(undo->shortcut().toString(QKeySequence::NativeText)));
}

TEST_F(EditorWindow, PaletteSearchEnterAddsTheExactOrPrefixMatch) {
  auto w = open();
  QLineEdit* search = w->palette()->searchBox();
  const std::pair<const char*, const char*> cases[] = {
      {"relu", "ReLU"}, {"dense", "Dense"}, {"maxp", "MaxPool2D"}, {"CONV", "Conv2D"}};
  for (const auto& [typed, type] : cases) {
    SCOPED_TRACE(typed);
    search->clear();
    search->setFocus();
    QTest::keyClicks(search, typed);
    const auto before = w->editor()->graph().nodes().size();
    QTest::keyClick(search, Qt::Key_Return);
    ASSERT_EQ(w->editor()->graph().nodes().size(), before + 1);
    EXPECT_EQ(w->editor()->graph().nodes().rbegin()->second.type, type);
  }
}

TEST_F(EditorWindow, FitShowsEveryNodeOfTheSampleAt1280x720) {
  auto w = open();
  openSampleInOneLine(*w);
  widgets::NodeView* view = w->view();
  widgets::GraphEditor* ed = w->editor();
  auto expectAllShown = [&] {
    QApplication::processEvents();
    const QRect shown = view->viewport()->rect();
    for (const auto& [id, n] : ed->graph().nodes()) {
      QRect r = view->mapFromScene(ed->scene()->nodeItem(id)->sceneBoundingRect()).boundingRect();
      EXPECT_TRUE(shown.contains(r)) << n.name;
    }
  };
  view->fitAll();
  const double one_line = view->zoom();
  const Graph line = ed->graph();
  // The sample's single line is too long to read here: Fit wraps it into
  // rows (one undo step) and shows them whole, larger than the line.
  w->action("actionFit")->trigger();
  expectAllShown();
  std::set<double> rows;
  for (const auto& [id, n] : ed->graph().nodes()) rows.insert(n.y);
  EXPECT_GE(rows.size(), 2u);
  EXPECT_GT(view->zoom(), one_line * 1.5);
  // The overview map would only cover part of a network shown whole.
  auto* map = view->findChild<widgets::OverviewMap*>();
  map->refit();
  EXPECT_FALSE(map->isVisible());
  ed->undoStack()->undo();
  EXPECT_TRUE(ed->graph() == line);

  // An arrangement of the user's own (not one line) is never moved: Fit
  // zooms out as far as it takes (it used to stop at 60 %).
  const NodeId last = idOf(ed->graph(), "dense2");
  ed->moveNodes({{last, QPointF(ed->graph().node(last).x, ed->graph().node(last).y + 300)}});
  const Graph own = ed->graph();
  w->action("actionFit")->trigger();
  EXPECT_TRUE(ed->graph() == own);
  expectAllShown();
  EXPECT_LT(view->zoom(), 0.6);
}

// A layer brought into view (one appended from the palette is) is not left
// under the overview map in the canvas' corner, where scrolling just far
// enough to show a layer beyond the bottom-right corner put it.
TEST_F(EditorWindow, ARevealedLayerIsNotHiddenByTheOverviewMap) {
  auto w = open();
  widgets::NodeView* view = w->view();
  auto* map = view->findChild<widgets::OverviewMap*>();
  widgets::GraphEditor* ed = w->editor();
  ed->addLayer("Input", {0, 0});
  const NodeId far = ed->addLayer("Dense", {2400, 1600});
  QApplication::processEvents();
  // Up and left of the layer, which is then beyond the canvas' corner.
  view->centerOn(1900, 1300);
  QGraphicsItem* item = ed->scene()->nodeItem(far);
  const QRect before = view->mapFromScene(item->sceneBoundingRect()).boundingRect();
  ASSERT_FALSE(view->viewport()->rect().contains(before));
  view->reveal(item);
  map->refit();                   // what its timer does
  ASSERT_TRUE(map->isVisible());  // the network is larger than the canvas
  const QRect at = view->mapFromScene(item->sceneBoundingRect()).boundingRect();
  EXPECT_TRUE(view->viewport()->rect().contains(at));
  EXPECT_FALSE(at.intersects(map->geometry().translated(-view->viewport()->pos())));
}

TEST_F(EditorWindow, AutoLayoutWrapsTheSampleIntoRowsThatFitLarger) {
  auto w = open();
  openSampleInOneLine(*w);
  w->view()->fitAll();
  const double one_line = w->view()->zoom();
  w->action("actionAutoLayout")->trigger();
  QApplication::processEvents();
  const Graph& g = w->editor()->graph();
  widgets::NodeView* view = w->view();
  EXPECT_GT(view->zoom(), one_line * 1.5);
  std::set<double> rows;
  for (const auto& [id, n] : g.nodes()) {
    rows.insert(n.y);
    QRect r =
        view->mapFromScene(w->editor()->scene()->nodeItem(id)->sceneBoundingRect()).boundingRect();
    EXPECT_TRUE(view->viewport()->rect().contains(r)) << n.name;
  }
  EXPECT_GE(rows.size(), 2u);
  // Along the chain: left to right within a row, and each row below the last.
  const Node* prev = nullptr;
  for (NodeId id : g.topo_order()) {
    const Node& n = g.node(id);
    if (prev) {
      EXPECT_TRUE(n.y == prev->y ? n.x > prev->x : n.y > prev->y) << n.name;
    }
    prev = &n;
  }
  // The Input is in line with the layer it feeds (a straight edge).
  EXPECT_EQ(g.node(idOf(g, "input")).y, g.node(idOf(g, "conv1")).y);
  // The overview map follows the window's size.
  auto* map = view->findChild<widgets::OverviewMap*>();
  const int small = map->width();
  w->resize(1920, 1080);
  QApplication::processEvents();
  EXPECT_GT(map->width(), small);
}

TEST_F(EditorWindow, AutoLayoutPutsEveryTemplatesInputInLineWithWhatItFeeds) {
  auto w = open();
  for (const auto& [name, file] : gui::TemplateDialog::templates()) {
    SCOPED_TRACE(file.toStdString());
    ASSERT_TRUE(w->newFromTemplate(file));
    for (QSizeF space : {QSizeF(), QSizeF(w->view()->viewport()->size())}) {
      w->editor()->autoLayout(space);
      const Graph& g = w->editor()->graph();
      const widgets::NodeScene* scene = w->editor()->scene();
      for (const Edge& e : g.edges()) {
        const Node& src = g.node(e.src);
        if (src.type != "Input" && src.type != "SequenceInput") continue;
        // A straight edge: the Input's port level with the port it feeds.
        EXPECT_DOUBLE_EQ(scene->nodeItem(e.src)->outputPortPos().y(),
                         scene->nodeItem(e.dst)->inputPortPos(e.dst_port).y())
            << src.name << " -> " << g.node(e.dst).name;
      }
    }
  }
}

// The ResNet template is stored as a line with its shortcut branches beside
// it, which opened at 18 % at 1280x720 and neither Fit to Window nor
// opening wrapped it (it is not a single line). Opened now, it is laid out
// for the window (Graphviz's dot where built in): larger, no two layers on
// top of each other, every edge forward, and no two edges crossing.
TEST_F(EditorWindow, TheResNetTemplateOpensLaidOutToRead) {
  auto w = open();
  const QString file = gui::TemplateDialog::templateDir() + "/resnet_small.dcproj";
  const Project stored = load_project(file.toStdString());
  const QSize vs = w->view()->viewport()->size();
  const widgets::LayoutSpace space{double(vs.width()), double(vs.height())};
  const double stored_zoom = widgets::fittedZoom(stored.graph, space);
  ASSERT_TRUE(w->newFromTemplate(file));
  QApplication::processEvents();
  const Graph& g = w->editor()->graph();
  const double opened_zoom = widgets::fittedZoom(g, space);
  EXPECT_GT(opened_zoom, stored_zoom * 1.5) << stored_zoom << " -> " << opened_zoom;
  const widgets::NodeScene* scene = w->editor()->scene();
  std::vector<QLineF> lines;
  for (const Edge& e : g.edges()) {
    const QPointF a = scene->nodeItem(e.src)->outputPortPos(),
                  b = scene->nodeItem(e.dst)->inputPortPos(e.dst_port);
    // Forward: right within a row, or down to a later row.
    EXPECT_TRUE(b.x() > a.x() || b.y() > a.y() + 40)
        << g.node(e.src).name << " -> " << g.node(e.dst).name;
    lines.push_back({a, b});
  }
  for (size_t i = 0; i < lines.size(); ++i)
    for (size_t j = i + 1; j < lines.size(); ++j) {
      QPointF at;
      const bool share = lines[i].p1() == lines[j].p1() || lines[i].p2() == lines[j].p2() ||
                         lines[i].p1() == lines[j].p2() || lines[i].p2() == lines[j].p1();
      EXPECT_FALSE(!share && lines[i].intersects(lines[j], &at) == QLineF::BoundedIntersection)
          << "edges " << g.node(g.edges()[i].src).name << "->" << g.node(g.edges()[i].dst).name
          << " and " << g.node(g.edges()[j].src).name << "->" << g.node(g.edges()[j].dst).name
          << " cross at " << at.x() << "," << at.y();
    }
  for (const auto& [a, na] : g.nodes())
    for (const auto& [b, nb] : g.nodes()) {
      if (a >= b) continue;
      EXPECT_FALSE(scene->nodeItem(a)->sceneBoundingRect().intersects(
          scene->nodeItem(b)->sceneBoundingRect()))
          << na.name << " / " << nb.name;
    }
}

TEST_F(EditorWindow, AutoLayoutKeepsAnUnconnectedLayerOutOfTheChain) {
  auto w = open();
  openSample(*w);
  // A layer dropped but not wired yet took a place in the Input's column,
  // which pushed the Input above the chain and bent its edge.
  const NodeId stray = w->editor()->addLayer("GELU", {900, 500});
  ASSERT_GT(stray, 0);
  for (QSizeF space : {QSizeF(), QSizeF(w->view()->viewport()->size())}) {
    w->editor()->autoLayout(space);
    const Graph& g = w->editor()->graph();
    const widgets::NodeScene* scene = w->editor()->scene();
    EXPECT_DOUBLE_EQ(scene->nodeItem(idOf(g, "input"))->outputPortPos().y(),
                     scene->nodeItem(idOf(g, "conv1"))->inputPortPos(0).y());
    const QRectF r = scene->nodeItem(stray)->sceneBoundingRect();
    for (const auto& [id, n] : g.nodes())
      if (id != stray) {
        EXPECT_FALSE(r.intersects(scene->nodeItem(id)->sceneBoundingRect())) << n.name;
        EXPECT_GT(g.node(stray).y, n.y) << n.name;  // below the network
      }
  }
}

// A pre-norm Transformer encoder as an import flattens it: the residual
// stream feeds each block's norm and its Add, so no column has a single
// edge leaving it and the strict rule kept all 30 layers in one line at
// about 20 % of their size in 1280x720's canvas. Rows may now end where one
// layer's edges run on: several rows, every card larger than half size,
// each edge forward.
TEST(AutoLayout, APreNormTransformerEncoderWrapsIntoReadableRows) {
  register_builtin_layers();
  Graph g;
  NodeId prev = g.add_node("SequenceInput", "input");
  auto then = [&](const char* type, const std::string& name, NodeId from) {
    const NodeId id = g.add_node(type, name);
    g.connect(from, id);
    return id;
  };
  for (int b = 0; b < 4; ++b) {
    const std::string p = "block" + std::to_string(b) + "_";
    const NodeId attn =
        then("MultiHeadAttention", p + "attn", then("LayerNorm", p + "norm1", prev));
    const NodeId add1 = g.add_node("Add", p + "add1");
    g.connect(prev, add1, 0);
    g.connect(attn, add1, 1);
    const NodeId fc2 =
        then("TimeDistributedDense", p + "fc2",
             then("GELU", p + "gelu",
                  then("TimeDistributedDense", p + "fc1", then("LayerNorm", p + "norm2", add1))));
    prev = g.add_node("Add", p + "add2");
    g.connect(add1, prev, 0);
    g.connect(fc2, prev, 1);
  }
  then("Dense", "head", then("TokenPooling", "pool", prev));
  const widgets::LayoutSpace space{1000, 480};
  Graph laid = g;
  std::set<double> rows;
  for (const auto& [id, p] : widgets::autoLayout(g, space)) {
    laid.move(id, p.first, p.second);
    rows.insert(p.second);
  }
  EXPECT_GE(rows.size(), 2u);
  EXPECT_GE(widgets::fittedZoom(laid, space), 0.5);
  for (const Edge& e : laid.edges()) {
    const Node &a = laid.node(e.src), &b = laid.node(e.dst);
    EXPECT_TRUE(b.x > a.x || b.y > a.y) << a.name << " -> " << b.name;
  }
}

TEST_F(EditorWindow, ALongTemplateOpensInRowsThatShowWholeAt1280x720) {
  auto w = open();
  const QString lenet = gui::TemplateDialog::templateDir() + "/lenet5.dcproj";
  const Project stored = load_project(lenet.toStdString());
  ASSERT_TRUE(w->newFromTemplate(lenet));
  QApplication::processEvents();
  EXPECT_FALSE(w->isModified());
  const Graph& g = w->editor()->graph();
  ASSERT_EQ(g.nodes().size(), stored.graph.nodes().size());
  std::set<double> rows, stored_rows;
  for (const auto& [id, n] : stored.graph.nodes()) stored_rows.insert(n.y);
  for (const auto& [id, n] : g.nodes()) rows.insert(n.y);
  EXPECT_EQ(stored_rows.size(), 1u);  // the template itself is one line
  EXPECT_GE(rows.size(), 2u);
  widgets::NodeView* view = w->view();
  EXPECT_GE(view->zoom(), 0.5);
  for (const auto& [id, n] : g.nodes()) {
    QRect r =
        view->mapFromScene(w->editor()->scene()->nodeItem(id)->sceneBoundingRect()).boundingRect();
    EXPECT_TRUE(view->viewport()->rect().contains(r)) << n.name;
  }
}

TEST_F(EditorWindow, ZoomKeysZoomAboutTheMiddleOfTheCanvasWhereverThePointerIs) {
  auto w = open();
  openSample(*w);
  widgets::NodeView* view = w->view();
  QWidget* vp = view->viewport();
  QApplication::setActiveWindow(w.get());
  // The pointer left in a corner of the canvas, as after using the palette.
  QTest::mouseMove(vp, QPoint(8, 8));
  QApplication::processEvents();
  const QPointF middle = view->mapToScene(vp->rect().center());
  for (const char* name : {"actionZoomIn", "actionZoomIn", "actionZoomOut"}) {
    w->action(name)->trigger();
    // Where that point is now, in pixels (scroll bars move in whole ones).
    const QPoint at = view->mapFromScene(middle);
    EXPECT_NEAR(at.x(), vp->rect().center().x(), 4) << name;
    EXPECT_NEAR(at.y(), vp->rect().center().y(), 4) << name;
  }
}

TEST_F(EditorWindow, CanvasViewKeysDoNothingOnTheOtherTabs) {
  auto w = open();
  openSampleInOneLine(*w);
  const Graph before = w->editor()->graph();
  const double zoom = w->view()->zoom();
  w->showMode(Mode::Training);
  QApplication::setActiveWindow(w.get());
  ASSERT_TRUE(QTest::qWaitForWindowActive(w.get()));
  QTest::keyClick(w.get(), Qt::Key_0, Qt::ControlModifier);  // Fit: would wrap the line
  QTest::keyClick(w.get(), Qt::Key_L, Qt::ControlModifier);  // Auto-layout
  EXPECT_TRUE(w->editor()->graph() == before);
  EXPECT_FALSE(w->isModified());
  EXPECT_EQ(w->view()->zoom(), zoom);
  w->showMode(Mode::Model);
  EXPECT_TRUE(w->action("actionFit")->isEnabled());
  w->action("actionFit")->trigger();
  EXPECT_FALSE(w->editor()->graph() == before);  // there it does
}

TEST_F(EditorWindow, APastedLayerDoesNotCoverTheOriginal) {
  auto w = open();
  openSample(*w);
  widgets::GraphEditor* ed = w->editor();
  const NodeId conv = idOf(ed->graph(), "conv1");
  ed->scene()->selectNodes({conv});
  ASSERT_TRUE(ed->copySelection());
  for (int i = 0; i < 2; ++i) {
    std::vector<NodeId> ids = ed->paste();
    ASSERT_EQ(ids.size(), 1u);
    QRectF copy = ed->scene()->nodeItem(ids[0])->sceneBoundingRect();
    for (const auto& [id, n] : ed->graph().nodes())
      if (id != ids[0] && n.type == "Conv2D") {
        EXPECT_FALSE(copy.intersects(ed->scene()->nodeItem(id)->sceneBoundingRect())) << n.name;
      }
  }
}

TEST_F(EditorWindow, StartPageOffersTemplatesAndRecentProjectsUntilTheFirstLayer) {
  QSettings().setValue("recentFiles", QStringList{sourcePath("sample_data/sample_project.dcproj"),
                                                  tempDir() + "/gone.dcproj"});
  auto w = open();
  gui::StartPage* start = w->startPage();
  ASSERT_NE(start, nullptr);
  EXPECT_TRUE(start->isVisible());
  EXPECT_GE(start->templateList()->count(), 4);
  // The transfer-learning templates are offered too, as New from Template has them.
  EXPECT_FALSE(start->templateList()->findItems("Transfer:", Qt::MatchStartsWith).isEmpty());
  ASSERT_EQ(start->recentList()->count(), 1);  // the missing file is left out
  EXPECT_EQ(start->recentList()->item(0)->text(), "sample_project.dcproj");

  // A layer from the palette: the start page makes way for the canvas.
  ASSERT_GT(addFromPalette(*w, "Input"), 0);
  EXPECT_FALSE(start->isVisible());
  w->view()->centerOn(2000, 1500);  // scrolled away: the page still shows whole
  w->newProject();
  EXPECT_TRUE(start->isVisible());
  EXPECT_TRUE(w->view()->viewport()->geometry().contains(start->geometry()))
      << start->x() << "," << start->y();

  // One click on a recent project opens it.
  QListWidget* recent = start->recentList();
  QTest::mouseClick(recent->viewport(), Qt::LeftButton, {},
                    recent->visualItemRect(recent->item(0)).center());
  EXPECT_EQ(w->currentFile(), sourcePath("sample_data/sample_project.dcproj"));
  EXPECT_FALSE(start->isVisible());

  w->newProject();
  QListWidget* templates = start->templateList();
  QTest::mouseClick(templates->viewport(), Qt::LeftButton, {},
                    templates->visualItemRect(templates->item(0)).center());
  EXPECT_FALSE(w->editor()->graph().empty());
  EXPECT_TRUE(w->currentFile().isEmpty());  // a template is not overwritten by Save
}

TEST_F(EditorWindow, DroppedProjectOpensAndAMissingOnnxIsReportedWithTheReason) {
  auto w = open();
  QStringList errors;
  w->setErrorHandler([&](const QString& e) { errors << e; });
  const QString onnx = tempDir() + "/model.onnx";
  EXPECT_FALSE(w->openDropped({QUrl::fromLocalFile(onnx)}));
  ASSERT_EQ(errors.size(), 1);
#ifdef DC_HAVE_ONNX
  EXPECT_TRUE(errors[0].contains("Could not import")) << errors[0].toStdString();
#else
  EXPECT_TRUE(errors[0].contains("no ONNX support")) << errors[0].toStdString();
#endif
  EXPECT_TRUE(errors[0].contains("model.onnx"));
  EXPECT_TRUE(w->editor()->graph().empty());

  // Through the window's drop events, as a file manager sends them.
  QMimeData mime;
  mime.setUrls({QUrl::fromLocalFile(sourcePath("sample_data/sample_project.dcproj"))});
  QDragEnterEvent enter(QPoint(300, 300), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(w.get(), &enter);
  EXPECT_TRUE(enter.isAccepted());
  QDropEvent drop(QPointF(300, 300), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(w.get(), &drop);
  EXPECT_EQ(w->currentFile(), sourcePath("sample_data/sample_project.dcproj"));
  EXPECT_EQ(w->editor()->graph().nodes().size(), 11u);

  QMimeData text;
  text.setUrls({QUrl::fromLocalFile(tempDir() + "/notes.txt")});
  QDragEnterEvent refused(QPoint(300, 300), Qt::CopyAction, &text, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(w.get(), &refused);
  EXPECT_FALSE(refused.isAccepted());
}

TEST_F(EditorWindow, ThemeMenuSwitchesToDarkAndIsRemembered) {
  auto w = open();
  QAction* dark = w->action("actionTheme_dark");
  ASSERT_NE(dark, nullptr);
  dark->trigger();
  EXPECT_TRUE(gui::isDark(QApplication::palette()));
  EXPECT_EQ(gui::savedTheme(), gui::Theme::Dark);
  w->action("actionTheme_light")->trigger();
  EXPECT_FALSE(gui::isDark(QApplication::palette()));
  EXPECT_EQ(gui::savedTheme(), gui::Theme::Light);
  EXPECT_TRUE(QCoreApplication::testAttribute(Qt::AA_SetPalette));
  w->action("actionTheme_system")->trigger();
  EXPECT_EQ(gui::savedTheme(), gui::Theme::System);
  // The platform's colours again (offscreen: light), and no palette of the
  // app's own that would stop it following the desktop.
  EXPECT_FALSE(gui::isDark(QApplication::palette()));
  EXPECT_FALSE(QCoreApplication::testAttribute(Qt::AA_SetPalette));
}

TEST_F(EditorWindow, ShortcutsDialogListsEveryMenuActionWithAKey) {
  auto w = open();
  gui::ShortcutsDialog dlg(w->menuBar());
  std::set<QString> listed;
  for (int i = 0; i < dlg.table()->topLevelItemCount(); ++i)
    listed.insert(dlg.table()->topLevelItem(i)->data(0, Qt::UserRole).toString());
  int keyed = 0;
  for (QAction* a : w->findChildren<QAction*>()) {
    if (a->shortcuts().isEmpty() || a->objectName().isEmpty()) continue;
    ++keyed;
    EXPECT_TRUE(listed.count(a->objectName())) << a->objectName().toStdString();
  }
  EXPECT_GE(keyed, 20);
  EXPECT_TRUE(listed.count("actionMode0"));  // Ctrl+1, from the View menu
  // Keys of buttons outside the menus are listed too (the Experiments tab's
  // Start), and Undo is listed as Undo, not as the step it would undo.
  openSample(*w);
  w->editor()->removeNodes({idOf(w->editor()->graph(), "relu1")}, {});
  gui::ShortcutsDialog again(w->menuBar());
  QStringList rows;
  for (int i = 0; i < again.table()->topLevelItemCount(); ++i)
    rows << again.table()->topLevelItem(i)->text(0) + " = " +
                again.table()->topLevelItem(i)->text(1);
  const QString all = rows.join("\n");
  EXPECT_TRUE(all.contains("Ctrl+Shift+E")) << all.toStdString();
  // The key listed is the button's own, not a copy that could drift.
  auto* start = w->findChild<QAbstractButton*>("sweepStart");
  ASSERT_NE(start, nullptr);
  EXPECT_TRUE(all.contains("Experiments → Start the sweep = " +
                           start->shortcut().toString(QKeySequence::NativeText)))
      << all.toStdString();
  EXPECT_FALSE(all.contains("relu1")) << all.toStdString();
  EXPECT_TRUE(all.contains(QRegularExpression("→ Undo = "))) << all.toStdString();
}

TEST_F(EditorWindow, TheWeightsDoNotFitBannerGoesWhenUndoFixesTheNetwork) {
  auto w = open();
  openSample(*w);
  // Weights for the sample network as it is (fresh ones: fitting is what counts).
  gui::ModelWeights weights;
  weights.state = Plan(w->editor()->graph(), 1).state();
  weights.source = "test weights";
  w->context()->setWeights(weights);
  QImage img(28, 28, QImage::Format_Grayscale8);
  img.fill(128);
  const QString png = tempDir() + "/grey.png";
  ASSERT_TRUE(img.save(png));
  gui::InferencePanel* inference = w->inferencePanel();
  ASSERT_EQ(inference->openPaths({png}), 1);
  EXPECT_FALSE(inference->messageText().contains("do not fit"));

  const NodeId dense = idOf(w->editor()->graph(), "dense1");
  ASSERT_TRUE(w->editor()->setAttr(dense, "units", AttrValue(int64_t{77})));
  EXPECT_TRUE(inference->messageText().contains("do not fit"))
      << inference->messageText().toStdString();
  w->editor()->undoStack()->undo();
  EXPECT_FALSE(inference->messageText().contains("do not fit"))
      << inference->messageText().toStdString();
}

TEST_F(EditorWindow, TwoProblemsOfTheNetworkAreShownApart) {
  auto w = open();
  openSample(*w);
  ASSERT_GT(w->editor()->addLayer("GELU", {900, 500}), 0);  // unconnected: a second output too
  QSignalSpy found(w->trainingPanel(), &gui::TrainingPanel::problemsFound);
  w->trainingPanel()->startTraining();
  ASSERT_EQ(found.count(), 1);
  QString shown;
  for (QLabel* l : w->trainingPanel()->findChildren<QLabel*>())
    if (l->text().contains("Training cannot start")) shown = l->text();
  QTextDocument doc;
  doc.setHtml(shown);
  const QString plain = doc.toPlainText();
  EXPECT_TRUE(plain.contains("outgoing edge")) << plain.toStdString();
  EXPECT_TRUE(plain.contains("input is not connected")) << plain.toStdString();
  // The line break between them survives the rich text.
  EXPECT_FALSE(plain.contains("outgoing edge GELU")) << plain.toStdString();
  EXPECT_TRUE(plain.contains(QRegularExpression("outgoing edge[\\n\\x{2028}\\x{2029}]")))
      << plain.toStdString();
}

}  // namespace
}  // namespace dc::test
