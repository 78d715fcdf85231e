// Opening a large network: fitted whole, a 94-layer transfer-learning
// project opened at ~29 %, where no layer can be read. A large network that
// would fit only below MainWindow::kReadableZoom opens at that zoom on the
// part its user works on (the new head after a frozen base, else the input),
// with the overview map and a status bar hint; small ones still open whole,
// and Fit to Window still shows everything.
#include "gui/main_window.h"
#include "gui_test_util.h"
#include "widgets/auto_layout.h"
#include "widgets/graph_editor.h"
#include "widgets/node_item.h"
#include "widgets/node_scene.h"
#include "widgets/node_view.h"
#include "widgets/overview_map.h"

#include <deepcanvas/project.h>
#include <gtest/gtest.h>

#include <QLabel>

#include <QAction>
#include <QApplication>
#include <QSettings>
#include <QStatusBar>
#include <QTest>
#include <memory>
#include <string>
#include <vector>

namespace dc::test {
namespace {

using gui::MainWindow;

// Input, ReLUs, Flatten and Dense in one line, 190 apart (as templates and
// imported models are stored); the first `frozen` layers frozen.
Graph chain(int n, int frozen = 0) {
  Graph g;
  NodeId prev = -1;
  for (int i = 0; i < n; ++i) {
    const char* type = i == 0 ? "Input" : i == n - 1 ? "Dense" : i == n - 2 ? "Flatten" : "ReLU";
    Attrs a;
    if (i == 0) a.set("shape", std::vector<int64_t>{1, 28, 28});
    const NodeId id = g.add_node(type, "", a, 40 + 190.0 * i, 120);
    if (prev >= 0) g.connect(prev, id);
    if (i < frozen) g.set_trainable(id, false);
    prev = id;
  }
  return g;
}

class OpenZoom : public ::testing::Test {
 protected:
  void SetUp() override {
    ensureApp();
    QSettings().remove("window");
    QSettings().remove("recentFiles");
    w = std::make_unique<MainWindow>();
    w->setConfirmHandler([](const QString&) { return MainWindow::Answer::Discard; });
    w->setErrorHandler([](const QString& e) { ADD_FAILURE() << e.toStdString(); });
    w->resize(1280, 720);  // a small laptop screen
    w->show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(w.get()));
  }
  void TearDown() override { QSettings().remove("window"); }

  // Saved and opened as File → Open does (and what it leaves to the event loop).
  void open(Graph g) {
    Project p;
    p.name = "net";
    p.graph = std::move(g);
    p.dataset.path = "sample:fashion-mnist-subset";
    const QString file = tempDir() + "/net.dcproj";
    save_project(p, file.toStdString());
    ASSERT_TRUE(w->openFile(file));
    QApplication::processEvents();
  }
  const Graph& g() const { return w->editor()->graph(); }
  widgets::NodeView* view() const { return w->view(); }
  // The layer's card, in viewport pixels.
  QRect onScreen(NodeId id) const {
    return view()
        ->mapFromScene(w->editor()->scene()->nodeItem(id)->sceneBoundingRect())
        .boundingRect();
  }
  bool shown(NodeId id) const { return view()->viewport()->rect().contains(onScreen(id)); }
  int shownCount() const {
    int n = 0;
    for (const auto& [id, node] : g().nodes()) n += shown(id);
    return n;
  }
  bool overviewShown() const {
    auto* map = view()->findChild<widgets::OverviewMap*>();
    map->refit();
    return map->isVisible();
  }
  QString hint() const { return w->statusBar()->currentMessage(); }
  QString fitKey() const {
    return w->action("actionFit")->shortcut().toString(QKeySequence::NativeText);
  }

  std::unique_ptr<MainWindow> w;
};

// After a restart on another tab the project opens while the canvas has
// never been shown (issue 36: the network was a speck at 5 %, fitted to the
// hidden viewport's default size). Showing the Model tab fits it to the
// canvas' real size.
TEST_F(OpenZoom, ANetworkOpenedWhileTheCanvasWasNeverShownIsFittedWhenShown) {
  auto m = std::make_unique<MainWindow>();
  m->setErrorHandler([](const QString& e) { ADD_FAILURE() << e.toStdString(); });
  m->resize(1280, 720);
  m->showMode(MainWindow::Mode::Training);
  m->show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(m.get()));
  ASSERT_FALSE(m->view()->isVisible());
  ASSERT_TRUE(m->openFile(sourcePath("sample_data/sample_project.dcproj")));
  QApplication::processEvents();
  // The status bar's zoom is not the hidden view's guess either.
  auto zoom_text = [&] {
    for (QLabel* l : m->statusBar()->findChildren<QLabel*>())
      if (l->text().endsWith(" %")) return l->text();
    return QString();
  };
  EXPECT_EQ(zoom_text(), "100 %");
  m->showMode(MainWindow::Mode::Model);
  QApplication::processEvents();
  QApplication::processEvents();
  ASSERT_TRUE(m->view()->isVisible());
  EXPECT_NEAR(m->view()->zoom(), m->view()->fitZoom(), 1e-6);
  EXPECT_EQ(zoom_text(), QString("%1 %").arg(qRound(m->view()->zoom() * 100)));
  EXPECT_GE(m->view()->zoom(), MainWindow::kReadableZoom);
  const QRect canvas = m->view()->viewport()->rect();
  for (const auto& [id, node] : m->editor()->graph().nodes()) {
    const QRect card = m->view()
                           ->mapFromScene(m->editor()->scene()->nodeItem(id)->sceneBoundingRect())
                           .boundingRect();
    EXPECT_TRUE(canvas.contains(card)) << node.name;
  }
}

TEST_F(OpenZoom, ASmallNetworkStillOpensWhole) {
  // The sample (11 layers stored in three rows) opens whole and readable.
  ASSERT_TRUE(w->openFile(sourcePath("sample_data/sample_project.dcproj")));
  QApplication::processEvents();
  const double opened = view()->zoom();
  EXPECT_GE(opened, MainWindow::kReadableZoom);
  EXPECT_EQ(shownCount(), int(g().nodes().size()));
  EXPECT_FALSE(overviewShown());
  EXPECT_FALSE(hint().contains("long line")) << hint().toStdString();
  view()->fitAll();
  EXPECT_DOUBLE_EQ(view()->zoom(), opened);
  // A network one layer short of large in one line fits only below the
  // readable zoom here; it is opened whole all the same, its layout as
  // stored, with a hint that Fit to Window wraps it into rows.
  open(chain(MainWindow::kLargeNetworkLayers - 1));
  EXPECT_EQ(shownCount(), int(g().nodes().size()));
  const double line = view()->zoom();
  EXPECT_LT(line, MainWindow::kReadableZoom);
  EXPECT_FALSE(w->isWindowModified());
  EXPECT_TRUE(hint().contains("press " + fitKey() + " to lay them out in rows"))
      << hint().toStdString();
  w->action("actionFit")->trigger();
  QApplication::processEvents();
  EXPECT_EQ(shownCount(), int(g().nodes().size()));
  EXPECT_GT(view()->zoom(), 1.5 * line);
}

TEST_F(OpenZoom, ALongChainOpensReadableAtItsInputAndFitShowsItAll) {
  open(chain(100));
  EXPECT_DOUBLE_EQ(view()->zoom(), MainWindow::kReadableZoom);
  const NodeId input = g().inputs().front();
  EXPECT_TRUE(shown(input));
  // At the canvas' left edge, not in its middle with empty canvas before it.
  EXPECT_LT(onScreen(input).left(), view()->viewport()->width() / 4);
  EXPECT_FALSE(shown(g().outputs().front()));
  EXPECT_TRUE(overviewShown());
  EXPECT_TRUE(hint().contains("Large network: showing its input at 60 %")) << hint().toStdString();
  EXPECT_TRUE(hint().contains("press " + fitKey() + " to fit all")) << hint().toStdString();

  // Fit to Window still shows every layer (wrapped into rows), however small.
  w->action("actionFit")->trigger();
  QApplication::processEvents();
  EXPECT_EQ(shownCount(), int(g().nodes().size()));
  EXPECT_LT(view()->zoom(), MainWindow::kReadableZoom);
  EXPECT_FALSE(overviewShown());
}

TEST_F(OpenZoom, AFrozenBaseOpensAtTheFirstTrainableLayers) {
  // 94 frozen layers then a new head (Flatten, Dense), in one line and, as
  // New from Template opens a transfer template, wrapped into rows.
  for (bool rows : {false, true}) {
    SCOPED_TRACE(rows ? "rows" : "one line");
    Graph net = chain(96, 94);
    if (rows) {
      const QSize vs = view()->viewport()->size();
      ASSERT_TRUE(widgets::wrapLongLine(net, {double(vs.width()), double(vs.height())}));
    }
    open(std::move(net));
    EXPECT_DOUBLE_EQ(view()->zoom(), MainWindow::kReadableZoom);
    const std::vector<NodeId> order = g().topo_order();
    const NodeId first_trainable = order[94];  // the Flatten
    ASSERT_TRUE(g().node(first_trainable).trainable);
    ASSERT_FALSE(g().node(order[93]).trainable);
    EXPECT_TRUE(shown(first_trainable));
    EXPECT_TRUE(shown(order[95]));       // the rest of the head
    EXPECT_TRUE(shown(order[93]));       // and what feeds it
    EXPECT_FALSE(shown(order.front()));  // not the input end
    EXPECT_TRUE(overviewShown());
    EXPECT_TRUE(hint().contains("showing the new head at 60 %")) << hint().toStdString();

    w->action("actionFit")->trigger();
    QApplication::processEvents();
    EXPECT_EQ(shownCount(), int(g().nodes().size()));
    EXPECT_FALSE(overviewShown());
  }
}

}  // namespace
}  // namespace dc::test
