#include "widgets/cost_overlay.h"

#include "widgets/graph_model.h"
#include "widgets/latest_job.h"
#include "widgets/node_item.h"
#include "widgets/node_scene.h"
#include "widgets/node_view.h"

#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/advisor/step_time.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/format.h>
#include <deepcanvas/parallel.h>

#include <QAbstractScrollArea>
#include <QEvent>
#include <QFontMetrics>
#include <QLinearGradient>
#include <QPainter>
#include <QTimer>
#include <algorithm>
#include <cmath>

namespace dc::widgets {

namespace {

QString bytesText(double b) {
  return QString::fromStdString(human_bytes(b));
}

QString secondsText(double s) {
  if (s >= 1) return QString::number(s, 'f', 2) + " s";
  if (s >= 1e-3) return QString::number(s * 1e3, 'f', 2) + " ms";
  return QString::number(s * 1e6, 'f', 1) + " µs";
}

}  // namespace

advisor::DeviceBench cachedOrDefaultBench(bool* measured) {
  advisor::DeviceBench b;
  // The count a run with threads 0 uses (the benchmark dialog's key), not
  // what the last Trainer left set.
  const std::string key = advisor::bench_key("cpu", advisor::cpu_model_name(), resolved_threads(0));
  if (advisor::load_cached_bench(key, b)) {
    *measured = true;
    return b;
  }
  // Not measured: bench_cpu() takes seconds, too long for the GUI thread
  // and too noisy while the user edits. Shares between layers depend little
  // on the absolute figures; the legend says they are defaults.
  *measured = false;
  b.name = "default CPU figures";
  b.threads = resolved_threads(0);
  b.fp32_gflops = 100;
  b.conv_gflops = 50;
  b.mem_bandwidth_gbs = 15;
  b.step_overhead_s = 1e-3;
  b.parallel_region_s = 2e-5;
  return b;
}

CostReport predictCosts(const Graph& g, int64_t batch, const OptimizerConfig& opt,
                        const advisor::DeviceBench& bench, bool measured) {
  CostReport r;
  r.batch = batch;
  r.device = QString::fromStdString(bench.name);
  if (!measured)
    r.device += QObject::tr(
        " (no benchmark of this machine cached: Help → Benchmark This Machine…, or "
        "deepcanvas-cli bench-device)");
  if (g.empty()) {
    r.error = QObject::tr("The network is empty.");
    return r;
  }
  try {
    advisor::MemoryOptions mo;
    mo.batch = batch;
    mo.optimizer = opt;
    mo.threads = bench.threads;
    const advisor::MemoryPrediction mem = advisor::predict_memory(g, mo);
    mo.batch = 1;
    const advisor::MemoryPrediction one = advisor::predict_memory(g, mo);
    const advisor::StepTime st = advisor::predict_step_time(g, batch, advisor::cpu_rates(bench));
    for (size_t i = 0; i < mem.layers.size(); ++i) {
      const advisor::LayerMemory& l = mem.layers[i];
      const Node* n = g.find_by_name(l.name);
      if (!n) continue;
      NodeCost& c = r.nodes[n->id];
      c.memory = l.total();
      c.output_bytes_batch = l.activations;
      c.output_bytes_sample = one.layers[i].activations;
      r.layers_bytes += c.memory;
    }
    for (const advisor::LayerTime& t : st.layers) {
      const Node* n = g.find_by_name(t.name);
      if (!n) continue;
      NodeCost& c = r.nodes[n->id];
      c.seconds = t.seconds;
      c.flops = t.flops;
      c.compute_bound = t.compute_bound;
      r.layers_s += t.seconds;
    }
    for (auto& [id, c] : r.nodes) {
      c.time_share = r.layers_s > 0 ? c.seconds / r.layers_s : 0;
      c.memory_share = r.layers_bytes > 0 ? double(c.memory) / double(r.layers_bytes) : 0;
    }
    r.step_s = st.step_s;
    r.total_bytes = mem.total;
    r.ok = true;
  } catch (const Error& e) {
    r.error = QObject::tr("No cost figures while the network is invalid: %1")
                  .arg(QString::fromUtf8(e.what()));
  }
  return r;
}

QColor heatColor(double t) {
  static const QColor stops[] = {QColor(0x3b, 0x7d, 0xd8), QColor(0x26, 0xa6, 0x9a),
                                 QColor(0xf2, 0xc2, 0x1b), QColor(0xf0, 0x7c, 0x1c),
                                 QColor(0xe0, 0x2f, 0x2f)};
  t = std::clamp(t, 0.0, 1.0) * 4;
  const int i = std::min(3, int(t));
  const double f = t - i;
  const QColor& a = stops[i];
  const QColor& b = stops[i + 1];
  return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * f),
                          float(a.greenF() + (b.greenF() - a.greenF()) * f),
                          float(a.blueF() + (b.blueF() - a.blueF()) * f));
}

CostOverlay::CostOverlay(GraphModel* model, NodeScene* scene, QObject* parent)
    : QObject(parent),
      model_(model),
      scene_(scene),
      debounce_(new QTimer(this)),
      job_(new LatestJob(this)) {
  debounce_->setSingleShot(true);
  debounce_->setInterval(kDebounceMs);
  connect(debounce_, &QTimer::timeout, this, &CostOverlay::compute);
  // Moves change no cost; everything else may.
  connect(model_, &GraphModel::shapesChanged, this, &CostOverlay::schedule);
  connect(model_, &GraphModel::nodeChanged, this, &CostOverlay::schedule);
  connect(model_, &GraphModel::modelReset, this, &CostOverlay::schedule);
}

CostOverlay::~CostOverlay() = default;

void CostOverlay::setEnabled(bool on) {
  if (on == enabled_) return;
  enabled_ = on;
  if (on) {
    schedule();
  } else {
    debounce_->stop();
    clearCanvas();
  }
  Q_EMIT updated();
}

void CostOverlay::setMetric(CostMetric m) {
  if (m == metric_) return;
  metric_ = m;
  apply();  // the figures are the same; only the tint changes
}

void CostOverlay::setEdgeBytes(EdgeBytes e) {
  if (e == edge_bytes_) return;
  edge_bytes_ = e;
  apply();
}

void CostOverlay::setBatch(int64_t batch) {
  batch = std::max<int64_t>(1, batch);
  if (batch == batch_) return;
  batch_ = batch;
  schedule();
}

void CostOverlay::setOptimizer(const OptimizerConfig& o) {
  optimizer_ = o;
  schedule();
}

bool CostOverlay::idle() const {
  return !debounce_->isActive() && job_->idle();
}

void CostOverlay::schedule() {
  if (enabled_) debounce_->start();
}

void CostOverlay::compute() {
  if (!enabled_) return;
  // The worker gets its own copy of the graph: the model may change while
  // it runs.
  job_->request(
      [this, g = model_->graph(), batch = batch_, opt = optimizer_]() -> std::function<void()> {
        // Read on every compute (a small file, on the worker): Help → Benchmark
        // This Machine or bench-device may have measured since the last one.
        bool measured = false;
        const advisor::DeviceBench bench = cachedOrDefaultBench(&measured);
        CostReport r = predictCosts(g, batch, opt, bench, measured);
        return [this, r = std::move(r)]() mutable {
          report_ = std::move(r);
          apply();
        };
      });
}

void CostOverlay::clearCanvas() {
  for (QGraphicsItem* i : scene_->items())
    if (i->type() == NodeItem::Type) static_cast<NodeItem*>(i)->clearCost();
  scene_->setEdgeSuffixes({});
}

void CostOverlay::apply() {
  if (!enabled_) return;
  const bool time = metric_ == CostMetric::Time;
  double top = 0;
  for (const auto& [id, c] : report_.nodes)
    top = std::max(top, time ? c.time_share : c.memory_share);
  std::map<NodeId, QString> suffixes;
  for (QGraphicsItem* i : scene_->items()) {
    if (i->type() != NodeItem::Type) continue;
    auto* item = static_cast<NodeItem*>(i);
    auto it = report_.ok ? report_.nodes.find(item->nodeId()) : report_.nodes.end();
    if (it == report_.nodes.end()) {
      item->clearCost();
      continue;
    }
    const NodeCost& c = it->second;
    const double share = time ? c.time_share : c.memory_share;
    // Scaled to the heaviest layer, so the hottest colour always marks it
    // and a network of many similar layers still shows its differences.
    const QColor tint = heatColor(top > 0 ? share / top : 0);
    const QString label = QStringLiteral("%1 %").arg(share * 100, 0, 'f', share < 0.1 ? 1 : 0);
    const QString tip =
        QObject::tr(
            "<hr><b>Predicted cost at batch %1</b><br>"
            "step time: %2 (%3 % of the layers'), %4 GFLOP, %5-bound<br>"
            "memory: %6 (%7 % of the layers')<br>output tensor: %8 per sample, %9 "
            "at the batch<br><small>on %10</small>")
            .arg(report_.batch)
            .arg(secondsText(c.seconds))
            .arg(c.time_share * 100, 0, 'f', 1)
            .arg(c.flops / 1e9, 0, 'f', 3)
            .arg(c.compute_bound ? QObject::tr("compute") : QObject::tr("memory-bandwidth"))
            .arg(bytesText(double(c.memory)))
            .arg(c.memory_share * 100, 0, 'f', 1)
            .arg(bytesText(double(c.output_bytes_sample)), bytesText(double(c.output_bytes_batch)),
                 report_.device.toHtmlEscaped());
    item->setCost(tint, label, tip);
    if (edge_bytes_ != EdgeBytes::Off)
      suffixes[item->nodeId()] = bytesText(
          double(edge_bytes_ == EdgeBytes::Batch ? c.output_bytes_batch : c.output_bytes_sample));
  }
  scene_->setEdgeSuffixes(std::move(suffixes));
  Q_EMIT updated();
}

QString CostOverlay::legendText() const {
  if (!report_.ok) return report_.error.isEmpty() ? tr("Computing…") : report_.error;
  if (metric_ == CostMetric::Time)
    return tr("Share of the predicted step time, %1 at batch %2\non %3")
        .arg(secondsText(report_.step_s))
        .arg(report_.batch)
        .arg(report_.device);
  return tr("Share of the predicted training memory, %1 at batch %2")
      .arg(bytesText(double(report_.total_bytes)))
      .arg(report_.batch);
}

CostLegend::CostLegend(CostOverlay* overlay, QAbstractScrollArea* view)
    : QWidget(view), overlay_(overlay), view_(view) {
  setObjectName("costLegend");
  setAttribute(Qt::WA_TransparentForMouseEvents);
  connect(overlay_, &CostOverlay::updated, this, &CostLegend::sync);
  view_->viewport()->installEventFilter(this);
  sync();
}

bool CostLegend::eventFilter(QObject* o, QEvent* e) {
  if (e->type() == QEvent::Resize) sync();
  return QWidget::eventFilter(o, e);
}

namespace {
constexpr int kLegendWidth = 360, kPad = 10, kBar = 10;

QFont legendFont(const QFont& base) {
  QFont f = base;
  f.setPixelSize(11);
  return f;
}
}  // namespace

QSize CostLegend::sizeHint() const {
  const QFontMetrics fm(legendFont(font()));
  const int text = fm.boundingRect(QRect(0, 0, kLegendWidth - 2 * kPad, 1000), Qt::TextWordWrap,
                                   overlay_->legendText())
                       .height();
  return {kLegendWidth, kPad + text + 6 + kBar + 4 + fm.height() + kPad / 2};
}

void CostLegend::sync() {
  setVisible(overlay_->isEnabled());
  resize(sizeHint());
  const QRect vp = view_->viewport()->geometry();
  move(vp.left() + 10, vp.bottom() - height() - 9);
  // Fitting the network (Ctrl+0) keeps it above the legend.
  if (auto* nv = qobject_cast<NodeView*>(view_))
    nv->setBottomInset(overlay_->isEnabled() ? height() + 18 : 0);
  update();
}

void CostLegend::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  const QPalette pal = palette();
  QColor bg = pal.color(QPalette::Base);
  bg.setAlpha(235);
  p.setPen(QPen(pal.color(QPalette::Mid), 1));
  p.setBrush(bg);
  p.drawRoundedRect(QRectF(rect()).adjusted(0.5, 0.5, -0.5, -0.5), 6, 6);
  const QFont f = legendFont(font());
  const QFontMetrics fm(f);
  p.setFont(f);
  p.setPen(pal.color(QPalette::Text));
  const QString text = overlay_->legendText();
  const QRect box =
      fm.boundingRect(QRect(kPad, kPad, width() - 2 * kPad, 1000), Qt::TextWordWrap, text);
  p.drawText(box, Qt::AlignLeft | Qt::AlignTop | Qt::TextWordWrap, text);
  const QRectF bar(kPad, box.bottom() + 6, width() - 2 * kPad, kBar);
  QLinearGradient grad(bar.topLeft(), bar.topRight());
  for (int i = 0; i <= 8; ++i) grad.setColorAt(i / 8.0, heatColor(i / 8.0));
  p.setPen(Qt::NoPen);
  p.setBrush(grad);
  p.drawRoundedRect(bar, 3, 3);
  p.setPen(pal.color(QPalette::Text));
  const QRectF below(kPad, bar.bottom() + 3, width() - 2 * kPad, fm.height());
  p.drawText(below, Qt::AlignLeft, tr("light"));
  p.drawText(below, Qt::AlignRight, tr("the heaviest layer"));
}

}  // namespace dc::widgets
