#pragma once
// The editor's cost overlay (issue 14, item 4): each node tinted by its
// share of the predicted step time or training memory, with the figures in
// its tooltip and, optionally, the bytes of each edge's tensor on its label.
// Predictions are the advisor's (advisor::predict_step_time on this
// machine's cached benchmark, advisor::predict_memory) and are computed off
// the GUI thread, debounced, so editing a 300-node graph does not stall.
#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/optim.h>

#include <QColor>
#include <QObject>
#include <QString>
#include <QWidget>
#include <map>

class QAbstractScrollArea;
class QTimer;

namespace dc::widgets {

class GraphModel;
class NodeScene;
class LatestJob;

enum class CostMetric { Time, Memory };
enum class EdgeBytes { Off, PerSample, Batch };

// The figures for one node at the overlay's batch.
struct NodeCost {
  double seconds = 0, flops = 0;  // forward + backward, per step
  bool compute_bound = false;
  int64_t memory = 0;                                       // advisor::LayerMemory::total()
  int64_t output_bytes_batch = 0, output_bytes_sample = 0;  // its output tensor
  double time_share = 0, memory_share = 0;                  // of the layers' totals
};

struct CostReport {
  bool ok = false;
  QString error;  // why there are no figures (an invalid graph)
  int64_t batch = 0;
  std::map<NodeId, NodeCost> nodes;
  double layers_s = 0, step_s = 0;  // the layers' sum, and the whole step
  int64_t layers_bytes = 0, total_bytes = 0;
  QString device;  // what the step time is predicted for
};

// This machine's cached benchmark (never measured here: measuring takes
// seconds). Without one, the figures of a modest 4-core desktop CPU;
// *measured tells which.
advisor::DeviceBench cachedOrDefaultBench(bool* measured);

// The overlay's figures for g: pure, thread-safe, used by the worker.
CostReport predictCosts(const Graph& g, int64_t batch, const OptimizerConfig& opt,
                        const advisor::DeviceBench& bench, bool measured);

// Cool (0) to hot (1): blue, teal, yellow, orange, red.
QColor heatColor(double t);

class CostOverlay : public QObject {
  Q_OBJECT
 public:
  // The debounce: edits within this many milliseconds are one recomputation.
  static constexpr int kDebounceMs = 120;

  CostOverlay(GraphModel* model, NodeScene* scene, QObject* parent = nullptr);
  ~CostOverlay() override;

  void setEnabled(bool on);
  bool isEnabled() const { return enabled_; }
  void setMetric(CostMetric m);
  CostMetric metric() const { return metric_; }
  void setEdgeBytes(EdgeBytes e);
  EdgeBytes edgeBytes() const { return edge_bytes_; }
  void setBatch(int64_t batch);
  int64_t batch() const { return batch_; }
  void setOptimizer(const OptimizerConfig& o);

  // The last figures applied to the canvas.
  const CostReport& report() const { return report_; }
  // Nothing scheduled, running or waiting to be applied.
  bool idle() const;
  // What the legend says under its scale ("share of 12.3 ms per step on …").
  QString legendText() const;

 signals:
  void updated();

 private:
  void schedule();
  void compute();
  void apply();
  void clearCanvas();

  GraphModel* model_;
  NodeScene* scene_;
  QTimer* debounce_;
  LatestJob* job_;
  bool enabled_ = false;
  CostMetric metric_ = CostMetric::Time;
  EdgeBytes edge_bytes_ = EdgeBytes::Off;
  int64_t batch_ = 64;
  OptimizerConfig optimizer_;
  CostReport report_;
};

// The colour scale and what it measures, in the canvas's bottom-left corner
// (the overview map has the bottom-right one). A child of the view, not of
// its viewport, which would scroll it with the scene.
class CostLegend : public QWidget {
  Q_OBJECT
 public:
  CostLegend(CostOverlay* overlay, QAbstractScrollArea* view);
  QSize sizeHint() const override;

 protected:
  void paintEvent(QPaintEvent* e) override;
  bool eventFilter(QObject* o, QEvent* e) override;

 private:
  void sync();
  CostOverlay* overlay_;
  QAbstractScrollArea* view_;
};

}  // namespace dc::widgets
