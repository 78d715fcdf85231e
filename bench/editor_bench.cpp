// Node editor on a large graph (issue 5): a 300-node network, timed for
// revalidation after an attribute edit and for repainting the canvas while
// a node is dragged; then the same with the cost overlay on (issue 14):
// the worker's prediction, the longest the event loop is held while edits
// are recomputed, and drag repaints of the tinted canvas. Prints, not a
// test: timings belong in BENCHMARKS.md.
//
//   QT_QPA_PLATFORM=offscreen build/bin/editor_bench [nodes]
#include "widgets/cost_overlay.h"
#include "widgets/graph_editor.h"
#include "widgets/graph_model.h"
#include "widgets/node_item.h"
#include "widgets/node_scene.h"
#include "widgets/node_view.h"

#include <QApplication>
#include <QThread>
#include <QUndoStack>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using Clock = std::chrono::steady_clock;

static double ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  int target = argc > 1 ? std::max(10, atoi(argv[1])) : 300;
  dc::widgets::GraphEditor editor;
  // Conv/ReLU blocks with a residual Add every few blocks: a deep ResNet-like
  // graph with the shape rules that matter (conv, add, pooling at the end).
  dc::Graph g;
  dc::Attrs in;
  in.set("shape", std::vector<int64_t>{16, 32, 32});
  dc::NodeId prev = g.add_node("Input", "input", in, 0, 0);
  dc::NodeId skip = prev;
  int col = 1;
  while (int(g.nodes().size()) < target - 4) {
    dc::Attrs c;
    c.set("filters", int64_t(16));
    c.set("kernel", std::vector<int64_t>{3, 3});
    c.set("padding", std::vector<int64_t>{1, 1});
    dc::NodeId conv = g.add_node("Conv2D", "", c, 190.0 * col++, 0);
    g.connect(prev, conv);
    dc::NodeId relu = g.add_node("ReLU", "", {}, 190.0 * col++, 0);
    g.connect(conv, relu);
    prev = relu;
    if (col % 6 == 1) {
      dc::NodeId add = g.add_node("Add", "", {}, 190.0 * col++, 100);
      g.connect(prev, add, 0);
      g.connect(skip, add, 1);
      prev = skip = add;
    }
  }
  dc::NodeId gap = g.add_node("GlobalAvgPool2D", "", {}, 190.0 * col++, 0);
  g.connect(prev, gap);
  dc::Attrs d;
  d.set("units", int64_t(10));
  dc::NodeId dense = g.add_node("Dense", "", d, 190.0 * col++, 0);
  g.connect(gap, dense);

  auto t0 = Clock::now();
  editor.loadGraph(g);
  auto t1 = Clock::now();
  std::printf("nodes %zu, edges %zu; building the scene: %.1f ms\n", g.nodes().size(),
              g.edges().size(), ms(t0, t1));

  // Revalidation: an attribute edit on the first conv, through the undo
  // stack, re-infers every shape and updates the items that changed.
  dc::NodeId first_conv = g.out_edges(g.inputs()[0])[0].dst;
  std::vector<double> reval;
  for (int i = 0; i < 40; ++i) {
    auto a = Clock::now();
    editor.setAttr(first_conv, "filters", int64_t(i % 2 ? 16 : 24));
    auto b = Clock::now();
    reval.push_back(ms(a, b));
  }
  std::printf("attribute edit + revalidation: median %.2f ms, max %.2f ms\n", median(reval),
              *std::max_element(reval.begin(), reval.end()));

  // Dragging: move one node a step and repaint the whole viewport, as a
  // drag does on each mouse move (worst case: everything visible).
  dc::widgets::NodeView view(editor.scene());
  view.resize(1600, 1000);
  view.show();
  view.fitAll();
  app.processEvents();
  dc::widgets::NodeItem* item = editor.scene()->nodeItem(first_conv);
  // Median ms of 60 drag steps.
  auto dragFrame = [&] {
    std::vector<double> frames;
    for (int i = 0; i < 60; ++i) {
      auto a = Clock::now();
      item->setPos(item->pos() + QPointF(i % 2 ? 20 : -20, 0));
      view.viewport()->repaint();
      frames.push_back(ms(a, Clock::now()));
    }
    return median(frames);
  };
  double f = dragFrame();
  std::printf("drag step + full repaint (fit, %.0f%% zoom): median %.2f ms (%.0f fps)\n",
              view.zoom() * 100, f, 1000.0 / f);
  view.fitAll();  // every node visible: the most painting there can be
  app.processEvents();
  f = dragFrame();
  std::printf(
      "drag step + full repaint (all %zu nodes visible, %.1f%% zoom): median %.2f ms "
      "(%.0f fps)\n",
      g.nodes().size(), view.zoom() * 100, f, 1000.0 / f);
  view.resetZoom();
  view.centerOnItem(item);
  app.processEvents();
  f = dragFrame();
  std::printf("drag step + full repaint (100%% zoom): median %.2f ms (%.0f fps)\n", f, 1000.0 / f);

  // The cost overlay. Its prediction runs on a worker; what the GUI thread
  // does is the edit itself and applying the result (tints, tooltips, labels).
  {
    bool measured = false;
    const dc::advisor::DeviceBench bench = dc::widgets::cachedOrDefaultBench(&measured);
    std::vector<double> predict;
    for (int i = 0; i < 5; ++i) {
      auto a = Clock::now();
      dc::widgets::predictCosts(editor.graph(), 64, {}, bench, measured);
      predict.push_back(ms(a, Clock::now()));
    }
    std::printf("overlay prediction (worker thread, %s): median %.1f ms\n",
                measured ? "cached benchmark" : "default figures", median(predict));
  }
  dc::widgets::CostOverlay overlay(editor.model(), editor.scene());
  overlay.setEdgeBytes(dc::widgets::EdgeBytes::Batch);
  overlay.setEnabled(true);
  auto settle = [&](double* longest) {
    // Runs the event loop until the overlay has applied its figures; the
    // longest single pass is how long the UI could not respond.
    while (!overlay.idle()) {
      auto a = Clock::now();
      app.processEvents(QEventLoop::AllEvents);
      const double d = ms(a, Clock::now());
      if (longest) *longest = std::max(*longest, d);
      QThread::usleep(200);
    }
  };
  settle(nullptr);
  std::vector<double> edits, latency;
  double stall = 0;
  for (int i = 0; i < 20; ++i) {
    auto a = Clock::now();
    editor.setAttr(first_conv, "filters", int64_t(i % 2 ? 16 : 24));
    edits.push_back(ms(a, Clock::now()));
    settle(&stall);
    latency.push_back(ms(a, Clock::now()));
  }
  std::printf(
      "overlay on: attribute edit median %.2f ms; recoloured after median %.0f ms (debounce "
      "%d ms + worker); longest event-loop pass %.2f ms\n",
      median(edits), median(latency), dc::widgets::CostOverlay::kDebounceMs, stall);
  view.fitAll();
  app.processEvents();
  f = dragFrame();
  std::printf(
      "overlay on: drag step + full repaint (all %zu nodes visible): median %.2f ms (%.0f fps)\n",
      g.nodes().size(), f, 1000.0 / f);
  return 0;
}
