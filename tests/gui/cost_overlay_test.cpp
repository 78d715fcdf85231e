// The editor's cost overlay and the Model Summary's advice line (issue 14,
// item 4): colours follow the advisor's predicted shares, edge labels carry
// predict_memory's activation bytes, edits update it off the GUI thread, the
// toggle and its choices are remembered.
#include "widgets/cost_overlay.h"
#include "bench_cache_fixture.h"
#include "gui/main_window.h"
#include "gui/summary_panel.h"
#include "gui_test_util.h"
#include "widgets/edge_item.h"
#include "widgets/graph_editor.h"
#include "widgets/graph_model.h"
#include "widgets/node_item.h"
#include "widgets/node_scene.h"
#include "widgets/node_view.h"

#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/advisor/step_time.h>
#include <deepcanvas/format.h>
#include <deepcanvas/parallel.h>
#include <gtest/gtest.h>

#include <QAction>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <QSettings>
#include <QTest>
#include <QThread>
#include <functional>

namespace dc {
namespace {

using widgets::CostMetric;
using widgets::CostOverlay;
using widgets::EdgeBytes;

bool waitFor(const std::function<bool()>& done, int ms = 20000) {
  QElapsedTimer t;
  t.start();
  while (!done() && t.elapsed() < ms) {
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(2);
  }
  return done();
}

// A small conv net whose second convolution (64 filters over 16 channels
// at 32×32) dominates both time and memory.
Graph convNet() {
  Graph g;
  Attrs in;
  in.set("shape", std::vector<int64_t>{3, 32, 32});
  NodeId x = g.add_node("Input", "input", in, 0, 0);
  Attrs c1;
  c1.set("filters", int64_t(16));
  c1.set("kernel", std::vector<int64_t>{3, 3});
  c1.set("padding_mode", std::string("same"));
  NodeId conv1 = g.add_node("Conv2D", "conv1", c1, 190, 0);
  NodeId relu = g.add_node("ReLU", "relu1", {}, 380, 0);
  Attrs c2 = c1;
  c2.set("filters", int64_t(64));
  NodeId conv2 = g.add_node("Conv2D", "conv2", c2, 570, 0);
  NodeId gap = g.add_node("GlobalAvgPool2D", "gap", {}, 760, 0);
  Attrs d;
  d.set("units", int64_t(10));
  NodeId dense = g.add_node("Dense", "fc", d, 950, 0);
  g.connect(x, conv1);
  g.connect(conv1, relu);
  g.connect(relu, conv2);
  g.connect(conv2, gap);
  g.connect(gap, dense);
  return g;
}

class CostOverlayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::ensureApp();
    editor = std::make_unique<widgets::GraphEditor>();
    editor->loadGraph(convNet());
    overlay = std::make_unique<CostOverlay>(editor->model(), editor->scene());
    overlay->setBatch(32);
    overlay->setEnabled(true);
    ASSERT_TRUE(waitFor([&] { return overlay->idle() && overlay->report().ok; }));
  }
  void TearDown() override {
    overlay.reset();  // before the scene it paints on
    editor.reset();
  }
  NodeId id(const char* name) const { return test::idOf(editor->graph(), name); }
  widgets::NodeItem* item(const char* name) const { return editor->scene()->nodeItem(id(name)); }

  std::unique_ptr<widgets::GraphEditor> editor;
  std::unique_ptr<CostOverlay> overlay;
};

TEST_F(CostOverlayTest, ColoursFollowThePredictedShares) {
  // The shares are the advisor's step-time roofline on the same benchmark.
  bool measured = false;
  const advisor::DeviceBench bench = widgets::cachedOrDefaultBench(&measured);
  const advisor::StepTime st =
      advisor::predict_step_time(editor->graph(), 32, advisor::cpu_rates(bench));
  double sum = 0, conv2 = 0;
  for (const auto& l : st.layers) {
    sum += l.seconds;
    if (l.name == "conv2") conv2 = l.seconds;
  }
  const auto& nodes = overlay->report().nodes;
  EXPECT_NEAR(nodes.at(id("conv2")).time_share, conv2 / sum, 1e-9);
  // The heaviest conv is the hottest colour; lighter layers are cooler.
  EXPECT_EQ(item("conv2")->costColor(), widgets::heatColor(1.0));
  for (const char* n : {"conv1", "relu1", "gap", "fc"}) {
    EXPECT_NE(item(n)->costColor(), widgets::heatColor(1.0)) << n;
    EXPECT_LT(nodes.at(id(n)).time_share, nodes.at(id("conv2")).time_share) << n;
    EXPECT_EQ(item(n)->costColor(),
              widgets::heatColor(nodes.at(id(n)).time_share / nodes.at(id("conv2")).time_share))
        << n;
  }
  EXPECT_TRUE(item("conv2")->toolTip().contains("Predicted cost at batch 32"))
      << item("conv2")->toolTip().toStdString();
  EXPECT_TRUE(item("conv2")->costLabel().endsWith("%"));

  // Memory: the same rule over predict_memory's per-layer totals.
  overlay->setMetric(CostMetric::Memory);
  advisor::MemoryOptions mo;
  mo.batch = 32;
  mo.threads = bench.threads;
  const advisor::MemoryPrediction m = advisor::predict_memory(editor->graph(), mo);
  NodeId heaviest = -1;
  int64_t most = -1;
  for (const auto& l : m.layers)
    if (l.total() > most) {
      most = l.total();
      heaviest = editor->graph().find_by_name(l.name)->id;
    }
  EXPECT_EQ(editor->scene()->nodeItem(heaviest)->costColor(), widgets::heatColor(1.0));
  EXPECT_EQ(nodes.at(heaviest).memory, most);
  EXPECT_TRUE(overlay->legendText().contains("memory")) << overlay->legendText().toStdString();
}

TEST_F(CostOverlayTest, EdgeLabelsShowPredictMemorysActivationBytes) {
  const Edge e{id("conv1"), id("relu1"), 0};
  const QString shape = editor->scene()->edgeItem(e)->label();
  EXPECT_FALSE(shape.contains("·"));  // off by default
  bool measured = false;
  advisor::MemoryOptions mo;
  mo.threads = widgets::cachedOrDefaultBench(&measured).threads;
  auto conv1Bytes = [&](int64_t batch) {
    mo.batch = batch;
    for (const auto& l : advisor::predict_memory(editor->graph(), mo).layers)
      if (l.name == "conv1") return l.activations;
    return int64_t(-1);
  };
  overlay->setEdgeBytes(EdgeBytes::Batch);
  EXPECT_EQ(editor->scene()->edgeItem(e)->label(),
            shape + " · " + QString::fromStdString(human_bytes(double(conv1Bytes(32)))));
  overlay->setEdgeBytes(EdgeBytes::PerSample);
  EXPECT_EQ(editor->scene()->edgeItem(e)->label(),
            shape + " · " + QString::fromStdString(human_bytes(double(conv1Bytes(1)))));
  // 16 channels × 32 × 32 floats per sample.
  EXPECT_EQ(conv1Bytes(1), 16 * 32 * 32 * 4);
  overlay->setEnabled(false);
  EXPECT_EQ(editor->scene()->edgeItem(e)->label(), shape);
  EXPECT_FALSE(item("conv2")->costColor().isValid());
}

TEST_F(CostOverlayTest, EditsUpdateItLaterOffTheGuiThread) {
  const int64_t before = overlay->report().nodes.at(id("conv1")).memory;
  ASSERT_TRUE(editor->setAttr(id("conv1"), "filters", int64_t(48)));
  // Nothing was computed during the edit: the figures change once the
  // debounce has passed and the worker has answered.
  EXPECT_FALSE(overlay->idle());
  EXPECT_EQ(overlay->report().nodes.at(id("conv1")).memory, before);
  ASSERT_TRUE(waitFor([&] { return overlay->idle(); }));
  EXPECT_GT(overlay->report().nodes.at(id("conv1")).memory, before);
  // A broken network shows no figures, with the reason.
  const Edge e{id("relu1"), id("conv2"), 0};
  ASSERT_TRUE(editor->removeNodes({}, {e}));
  ASSERT_TRUE(waitFor([&] { return overlay->idle(); }));
  EXPECT_FALSE(overlay->report().ok);
  EXPECT_FALSE(overlay->report().error.isEmpty());
  EXPECT_FALSE(item("conv1")->costColor().isValid());
}

// A benchmark measured while the app runs (Help → Benchmark This Machine)
// reaches the overlay's next computation, not only the next session.
TEST(CostOverlayBench, PicksUpABenchmarkCachedAfterItsFirstComputation) {
  test::ensureApp();
  test::ScratchBenchCache cache(/*seeded=*/false);
  widgets::GraphEditor editor;
  editor.loadGraph(convNet());
  {
    CostOverlay overlay(editor.model(), editor.scene());
    overlay.setMetric(CostMetric::Time);
    overlay.setBatch(32);
    overlay.setEnabled(true);
    ASSERT_TRUE(waitFor([&] { return overlay.idle() && overlay.report().ok; }));
    EXPECT_TRUE(overlay.legendText().contains("Help → Benchmark This Machine"))
        << overlay.legendText().toStdString();
    advisor::DeviceBench b;
    b.name = "bench measured meanwhile";
    b.threads = resolved_threads(0);
    b.fp32_gflops = 77.5;
    b.conv_gflops = 41.5;
    b.mem_bandwidth_gbs = 12.5;
    b.step_overhead_s = 1e-4;
    b.parallel_region_s = 1e-5;
    advisor::store_cached_bench(advisor::bench_key("cpu", advisor::cpu_model_name(), b.threads), b);
    overlay.setBatch(64);  // any change recomputes
    ASSERT_TRUE(waitFor([&] { return overlay.idle() && overlay.report().batch == 64; }));
    EXPECT_TRUE(overlay.legendText().contains("bench measured meanwhile"))
        << overlay.legendText().toStdString();
    EXPECT_FALSE(overlay.legendText().contains("no benchmark"));
  }
}

TEST(CostOverlayWindow, ToggleAndChoicesAreRemembered) {
  test::ensureApp();
  QSettings().remove("editor/costOverlay");
  QSettings().remove("editor/costMetric");
  {
    gui::MainWindow w;
    QAction* on = w.findChild<QAction*>("actionCostOverlay");
    ASSERT_NE(on, nullptr);
    EXPECT_FALSE(on->isChecked());
    EXPECT_FALSE(on->shortcut().isEmpty());
    EXPECT_FALSE(on->statusTip().isEmpty());
    on->trigger();
    EXPECT_TRUE(w.costOverlay()->isEnabled());
    w.findChild<QAction*>("actionCostMemory")->trigger();
    EXPECT_EQ(w.costOverlay()->metric(), CostMetric::Memory);
  }
  gui::MainWindow again;
  EXPECT_TRUE(again.findChild<QAction*>("actionCostOverlay")->isChecked());
  EXPECT_TRUE(again.costOverlay()->isEnabled());
  EXPECT_EQ(again.costOverlay()->metric(), CostMetric::Memory);
  EXPECT_TRUE(again.findChild<QAction*>("actionCostMemory")->isChecked());
  again.findChild<QAction*>("actionCostOverlay")->trigger();
  EXPECT_FALSE(QSettings().value("editor/costOverlay").toBool());
}

// At 1280x720 the legend at the canvas' bottom covered layers of the sample,
// and Fit to Window (Ctrl+0) left them there: the fit now keeps every layer
// above the legend.
TEST(CostOverlayWindow, FitKeepsEveryLayerClearOfTheLegend) {
  test::ensureApp();
  QSettings().remove("editor/costOverlay");
  gui::MainWindow w;
  w.setConfirmHandler([](const QString&) { return gui::MainWindow::Answer::Discard; });
  w.resize(1280, 720);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  ASSERT_TRUE(w.openFile(test::sourcePath("sample_data/sample_project.dcproj")));
  w.findChild<QAction*>("actionCostOverlay")->trigger();
  ASSERT_TRUE(waitFor([&] { return w.costOverlay()->idle() && w.costOverlay()->report().ok; }));
  w.findChild<QAction*>("actionFit")->trigger();
  QCoreApplication::processEvents();
  auto* legend = w.findChild<QWidget*>("costLegend");
  auto* view = w.findChild<widgets::NodeView*>();
  ASSERT_NE(legend, nullptr);
  ASSERT_NE(view, nullptr);
  ASSERT_TRUE(legend->isVisible());
  // The legend in the viewport's coordinates.
  const QRect covered(view->viewport()->mapFrom(view, legend->geometry().topLeft()),
                      legend->size());
  int layers = 0;
  for (QGraphicsItem* it : w.editor()->scene()->items())
    if (auto* node = dynamic_cast<widgets::NodeItem*>(it)) {
      ++layers;
      const QRect on = view->mapFromScene(node->sceneBoundingRect()).boundingRect();
      EXPECT_FALSE(on.intersects(covered))
          << node->data(0).toString().toStdString() << " at " << on.x() << "," << on.y();
      EXPECT_TRUE(view->viewport()->rect().contains(on));
    }
  EXPECT_GT(layers, 5);
  w.findChild<QAction*>("actionCostOverlay")->trigger();
}

TEST(SummaryAdvice, LineNamesFitsLargestBatchAndH100Epoch) {
  advisor::Advice a;
  a.batch = 64;
  a.train_samples = 60000;
  a.this_machine.fits = true;
  a.this_machine.max_batch = 1234;
  auto gpu = [](const char* name, bool fits, int64_t max_batch, double epoch) {
    advisor::DeviceAdvice d;
    d.name = name;
    d.fits = fits;
    d.max_batch = max_batch;
    d.epoch_s = epoch;
    return d;
  };
  a.gpus = {gpu("NVIDIA H100 SXM", true, 50000, 2.5), gpu("NVIDIA T4", false, 12, 30)};
  const QString line = gui::SummaryPanel::adviceLine(a, true);
  EXPECT_TRUE(line.contains("fits on: this machine, 1 of 2 catalog GPUs (not NVIDIA T4)"))
      << line.toStdString();
  EXPECT_TRUE(line.contains("largest batch: <b>1234</b> here, 50000 on the NVIDIA H100 SXM"))
      << line.toStdString();
  EXPECT_TRUE(line.contains("epoch on H100 ≈ <b>2.5 s</b> (60000 samples at batch 64)"))
      << line.toStdString();
  EXPECT_FALSE(line.contains("not benchmarked"));
  EXPECT_TRUE(gui::SummaryPanel::adviceLine(a, false).contains("not benchmarked"));
}

TEST(SummaryAdvice, ThePanelShowsItAfterEdits) {
  test::ensureApp();
  widgets::GraphEditor editor;
  editor.loadGraph(convNet());
  gui::SummaryPanel panel(editor.model());
  panel.setBatch(32);
  panel.refresh();
  ASSERT_TRUE(waitFor([&] { return panel.adviceIdle() && !panel.adviceText().isEmpty(); }));
  for (const char* part : {"fits on:", "largest batch:", "epoch on H100"})
    EXPECT_TRUE(panel.adviceText().contains(part)) << part << panel.adviceText().toStdString();
  // The totals' training memory is the advisor's prediction.
  advisor::MemoryOptions mo;
  mo.batch = 32;
  const int64_t bytes = advisor::predict_memory(editor.graph(), mo).total;
  EXPECT_TRUE(panel.totalsText().contains(QString::fromStdString(human_bytes(double(bytes)))))
      << panel.totalsText().toStdString();
}

}  // namespace
}  // namespace dc
