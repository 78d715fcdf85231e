#include "gui/summary_panel.h"

#include "gui/format.h"
#include "widgets/cost_overlay.h"
#include "widgets/graph_model.h"
#include "widgets/latest_job.h"
#include "widgets/layer_style.h"

#include <deepcanvas/advisor/device_bench.h>
#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/blocks.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/sysinfo.h>

#include <QDateTime>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QResizeEvent>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <map>

namespace dc::gui {

namespace {
enum Col { kName, kType, kOutput, kParams, kMacs, kAct, kCols };
constexpr int kIdRole = Qt::UserRole + 1;
constexpr int kBlockRole = Qt::UserRole + 2;  // a block definition's totals row: its name

// The benchmark cache as it stands (written atomically, so a new result is
// a new modification time or size); "" when there is none.
QString benchCacheStamp() {
  const QFileInfo f(QString::fromStdString(advisor::bench_cache_path()));
  return f.exists() ? f.lastModified().toString(Qt::ISODateWithMs) + "|" + QString::number(f.size())
                    : QString();
}
}  // namespace

SummaryPanel::SummaryPanel(widgets::GraphModel* model, QWidget* parent)
    : QWidget(parent), model_(model), advice_job_(new widgets::LatestJob(this)) {
  table_ = new QTreeWidget(this);
  table_->setObjectName("summaryTable");
  table_->setColumnCount(kCols);
  table_->setHeaderLabels(
      {tr("Layer"), tr("Type"), tr("Output"), tr("Parameters"), tr("MACs"), tr("Activations")});
  table_->setRootIsDecorated(false);
  table_->setUniformRowHeights(true);
  table_->setAlternatingRowColors(true);
  table_->setFrameShape(QFrame::NoFrame);
  table_->header()->setStretchLastSection(false);
  for (int c = 0; c < kCols; ++c)
    table_->header()->setSectionResizeMode(
        c, c == kName ? QHeaderView::Stretch : QHeaderView::ResizeToContents);
  for (int c = kParams; c < kCols; ++c) table_->headerItem()->setTextAlignment(c, Qt::AlignRight);
  totals_ = new QLabel(this);
  totals_->setObjectName("summaryTotals");
  totals_->setWordWrap(true);
  totals_->setAlignment(Qt::AlignLeft | Qt::AlignTop);
  totals_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  totals_->setContentsMargins(8, 4, 8, 6);

  // What-if batch size for the memory estimate ("does 256 fit?"); it
  // starts at the project's batch and does not change the project.
  batch_box_ = new QSpinBox(this);
  batch_box_->setObjectName("summaryBatch");
  batch_box_->setRange(1, 1 << 20);
  batch_box_->setValue(int(batch_));
  batch_box_->setKeyboardTracking(false);
  batch_box_->setToolTip(tr("Batch size for the training memory estimate"));
  connect(batch_box_, &QSpinBox::valueChanged, this, [this](int b) {
    batch_ = b;
    scheduleRefresh();
  });
  auto* batch_row = new QWidget(this);
  auto* batch_lay = new QHBoxLayout(batch_row);
  batch_lay->setContentsMargins(0, 2, 8, 2);
  batch_lay->addStretch(1);
  batch_lay->addWidget(new QLabel(tr("Batch"), batch_row));
  batch_lay->addWidget(batch_box_);
  auto* side = new QHBoxLayout;
  side->setContentsMargins(0, 0, 0, 0);
  side->setSpacing(0);
  side->addWidget(totals_, 1);
  side->addWidget(batch_row, 0, Qt::AlignTop);
  lay_ = new QBoxLayout(QBoxLayout::TopToBottom, this);
  lay_->setContentsMargins(0, 0, 0, 0);
  lay_->setSpacing(0);
  lay_->addWidget(table_, 3);
  lay_->addLayout(side, 0);
  // In a short dock (1280x720 with a title bar) the table's own minimum,
  // about four rows, left the totals too little height and cut their last
  // line off. The table keeps its header and a row and scrolls; the totals
  // keep the height of their text (fitTotals, on each width and text).
  table_->setMinimumHeight(table_->header()->sizeHint().height() + fontMetrics().height() + 6);
  totals_->installEventFilter(this);

  timer_ = new QTimer(this);
  timer_->setSingleShot(true);
  timer_->setInterval(0);
  connect(timer_, &QTimer::timeout, this, &SummaryPanel::refresh);
  // While the advice uses default figures, a benchmark finishing (Help →
  // Benchmark This Machine, or deepcanvas-cli bench-device in a terminal)
  // shows up only in the cache file: look at it now and then, and take the
  // new figures when it changes. A stat a second, and only until measured.
  bench_watch_ = new QTimer(this);
  bench_watch_->setInterval(1000);
  connect(bench_watch_, &QTimer::timeout, this, [this] {
    if (benchCacheStamp() != bench_stamp_) requestAdvice();
  });
  connect(model_, &widgets::GraphModel::shapesChanged, this, &SummaryPanel::scheduleRefresh);
  connect(model_, &widgets::GraphModel::nodeChanged, this, &SummaryPanel::scheduleRefresh);
  connect(table_, &QTreeWidget::itemActivated, this,
          [this](QTreeWidgetItem* it) { Q_EMIT nodeActivated(it->data(0, kIdRole).toInt()); });
  refresh();
}

void SummaryPanel::setBatch(int64_t batch) {
  batch_ = std::max<int64_t>(1, batch);
  QSignalBlocker block(batch_box_);
  batch_box_->setValue(int(std::min<int64_t>(batch_, 1 << 20)));
  scheduleRefresh();
}

void SummaryPanel::setTraining(const OptimizerConfig& optimizer, int64_t train_samples,
                               int64_t resident_bytes) {
  optimizer_ = optimizer;
  train_samples_ = std::max<int64_t>(0, train_samples);
  resident_bytes_ = std::max<int64_t>(0, resident_bytes);
  scheduleRefresh();
}

bool SummaryPanel::adviceIdle() const {
  return advice_job_->idle();
}

QString SummaryPanel::adviceLine(const advisor::Advice& a, bool measured) {
  QStringList fits, misses;
  if (a.this_machine.fits) fits << tr("this machine");
  for (const advisor::DeviceAdvice& d : a.gpus)
    (d.fits ? fits : misses) << QString::fromStdString(d.name);
  QString fit_text =
      fits.isEmpty() ? tr("none of the %1 catalog GPUs, nor this machine").arg(a.gpus.size())
      : misses.isEmpty()
          ? tr("this machine and all %1 catalog GPUs").arg(a.gpus.size())
          : (a.this_machine.fits ? tr("this machine, ") : QString()) +
                tr("%1 of %2 catalog GPUs (not %3)")
                    .arg(a.gpus.size() - misses.size())
                    .arg(a.gpus.size())
                    .arg(misses.size() <= 3 ? misses.join(", ")
                                            : misses.mid(0, 3).join(", ") + tr(", …"));
  const advisor::DeviceAdvice* h100 = nullptr;
  for (const advisor::DeviceAdvice& d : a.gpus)
    if (QString::fromStdString(d.name).contains("H100") && !h100) h100 = &d;
  QString batch_text =
      tr("<b>%1</b> here").arg(QString::number(qlonglong(a.this_machine.max_batch)));
  if (h100)
    batch_text +=
        tr(", %1 on the %2")
            .arg(QString::number(qlonglong(h100->max_batch)), QString::fromStdString(h100->name));
  QString epoch_text;
  if (!h100)
    epoch_text = tr("no H100 in the catalog");
  else if (a.train_samples > 0)
    epoch_text = tr("<b>%1 s</b> (%2 samples at batch %3)")
                     .arg(h100->epoch_s, 0, 'g', 3)
                     .arg(QString::number(qlonglong(a.train_samples)))
                     .arg(a.batch);
  else
    epoch_text = tr("%1 samples/s at batch %2 (load a dataset for the epoch time)")
                     .arg(QString::number(qlonglong(h100->samples_per_s)))
                     .arg(a.batch);
  QString line = tr("fits on: %1  /  largest batch: %2  /  epoch on H100 ≈ %3")
                     .arg(fit_text, batch_text, epoch_text);
  if (!measured)
    line +=
        tr("<br><small>This machine's speed is not benchmarked yet (deepcanvas-cli "
           "bench-device): its figures are defaults.</small>");
  return line;
}

void SummaryPanel::requestAdvice() {
  bench_watch_->stop();
  bench_stamp_ = benchCacheStamp();
  Project p;
  p.graph = model_->graph();
  p.training.optimizer = optimizer_;
  advice_job_->request([this, p = std::move(p), batch = batch_, samples = train_samples_,
                        resident = resident_bytes_]() -> std::function<void()> {
    bool measured = false;
    const advisor::DeviceBench bench = widgets::cachedOrDefaultBench(&measured);
    QString line;
    try {
      line = adviceLine(advisor::advise(p, batch, Precision::Fp32, samples, bench,
                                        advisor::load_gpu_catalog(), resident),
                        measured);
    } catch (const Error& e) {
      line = tr("No advice: %1").arg(QString::fromUtf8(e.what()).toHtmlEscaped());
    }
    return [this, line, measured] {
      advice_text_ = line;
      showTotals();
      if (!measured) bench_watch_->start();
    };
  });
}

void SummaryPanel::showTotals() {
  totals_->setText(advice_text_.isEmpty() ? totals_text_ : totals_text_ + "<br>" + advice_text_);
  fitTotals();
}

void SummaryPanel::fitTotals() {
  // Only at a real width: before the panel is laid out the label's default
  // width would ask for a line per word and stretch the window.
  const int width = totals_->width();
  const int need = isVisible() && width >= 300 ? totals_->heightForWidth(width) : 0;
  if (need >= 0 && totals_->minimumHeight() != need) totals_->setMinimumHeight(need);
}

void SummaryPanel::arrange(bool beside) {
  // Beside: the totals (with the batch box on their right) in a column
  // right of the table, as wide as it; below: under the table.
  lay_->setDirection(beside ? QBoxLayout::LeftToRight : QBoxLayout::TopToBottom);
  lay_->setStretch(0, beside ? 1 : 3);
  lay_->setStretch(1, beside ? 1 : 0);
}

void SummaryPanel::resizeEvent(QResizeEvent* e) {
  // A dock along the bottom of the window is wide and short: stacked, the
  // totals' three or four lines left the layer table a single row at
  // 1280x720. Side by side, the table gets the dock's height. The rule
  // reads the width alone, so the switch cannot change what decides it.
  arrange(e->size().width() >= kBesideWidth);
  QWidget::resizeEvent(e);
}

bool SummaryPanel::eventFilter(QObject* watched, QEvent* e) {
  if (watched == totals_ && (e->type() == QEvent::Resize || e->type() == QEvent::Show)) {
    const auto* r = e->type() == QEvent::Resize ? static_cast<QResizeEvent*>(e) : nullptr;
    if (!r || r->size().width() != r->oldSize().width()) fitTotals();
  }
  return QWidget::eventFilter(watched, e);
}

void SummaryPanel::scheduleRefresh() {
  timer_->start();
}

void SummaryPanel::refresh() {
  timer_->stop();
  bench_watch_->stop();  // the advice below watches again if it needs to
  const Graph& g = model_->graph();
  table_->clear();
  total_params_ = trainable_params_ = frozen_params_ = 0;
  advice_text_.clear();  // until the new advice arrives: no stale figures
  auto row = [&](NodeId id, const QString& name, const QString& type, const QString& out) {
    auto* it = new QTreeWidgetItem(table_, {name, type, out});
    it->setData(0, kIdRole, id);
    it->setIcon(0, widgets::layerIcon(type));
    for (int c = kParams; c < kCols; ++c)
      it->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
    return it;
  };
  if (g.empty()) {
    totals_text_ = tr("The network is empty: add an Input layer from the palette.");
    totals_->setText(totals_text_);
    fitTotals();
    return;
  }
  // A Plan allocates every weight: a network too large for this machine is
  // reported from the layers' cost rules instead of crashing the editor.
  const int64_t counted = count_parameters(g), available = available_memory_bytes();
  if (counted > 0 && available > 0 && counted * 8 > available / 2) {
    totals_text_ = tr("<b>%1</b> parameters (%2): too large to size or train on this machine "
                      "(%3 available). Make the Input smaller or the Dense layers narrower.")
                       .arg(humanCount(double(counted)), humanBytes(double(counted) * 4),
                            humanBytes(double(available)));
    totals_->setText(totals_text_);
    fitTotals();
    total_params_ = counted;
    return;
  }
  try {
    Plan plan(g, 1);
    int64_t params = 0, macs = 0, act = 0;
    for (const LayerSummary& r : plan.summary()) {
      auto* it = row(r.id, QString::fromStdString(r.name), QString::fromStdString(r.type),
                     QString::fromStdString(r.out.str()));
      it->setText(kParams, r.cost.params ? humanCount(double(r.cost.params)) : "–");
      it->setText(kMacs, r.cost.macs ? humanCount(double(r.cost.macs)) : "–");
      if (r.fused_into.empty()) {
        it->setText(kAct, humanBytes(double(r.activation_bytes)));
      } else {
        // Runs inside the layer before it and writes its buffer.
        const QString into = QString::fromStdString(r.fused_into);
        it->setText(kAct, tr("in %1").arg(into));
        it->setToolTip(kAct, tr("Fused into %1: applied to its output in place, no memory of its "
                                "own")
                                 .arg(into));
      }
      it->setToolTip(kParams, QString::number(r.cost.params));
      it->setToolTip(kMacs, QString::number(r.cost.macs));
      params += r.cost.params;
      macs += r.cost.macs;
      if (!is_input_type(r.type)) act += r.activation_bytes;
      if (r.frozen) {
        // Frozen rows read as locked, as on the canvas.
        it->setIcon(kType, widgets::lockIcon(palette().color(QPalette::Disabled, QPalette::Text)));
        it->setToolTip(kName, tr("Frozen: not trained"));
        it->setToolTip(kType, tr("Frozen: not trained"));
        for (int c = 0; c < kCols; ++c)
          it->setForeground(c, palette().color(QPalette::Disabled, QPalette::Text));
      }
    }
    // Per block definition: the totals of its instances' layers (flattened
    // as "<instance>_<layer>"), one line each, after the layers.
    struct BlockTotal {
      NodeId first = -1;
      int instances = 0;
      Cost cost;
    };
    std::map<std::string, BlockTotal> blocks;
    const std::vector<LayerSummary> rows = plan.summary();
    for (const auto& [id, n] : g.nodes()) {
      if (n.type != kBlockType) continue;
      BlockTotal& t = blocks[n.attrs.has("block") ? n.attrs.s("block") : ""];
      if (t.first < 0) t.first = id;
      ++t.instances;
      const std::string prefix = n.name + "_";
      for (const LayerSummary& r : rows)
        if (r.name.rfind(prefix, 0) == 0) {
          t.cost.params += r.cost.params;
          t.cost.macs += r.cost.macs;
        }
    }
    for (const auto& [name, t] : blocks) {
      auto* it =
          row(t.first, tr("Block %1 (\u00d7%2)").arg(QString::fromStdString(name)).arg(t.instances),
              QString::fromUtf8(kBlockType), QString());
      it->setData(0, kBlockRole, QString::fromStdString(name));
      it->setText(kParams, humanCount(double(t.cost.params)));
      it->setText(kMacs, humanCount(double(t.cost.macs)));
      it->setToolTip(kName, tr("All %n instance(s) of block %1 together", nullptr, t.instances)
                                .arg(QString::fromStdString(name)));
      QFont f = it->font(0);
      f.setBold(true);
      for (int c = 0; c < kCols; ++c) it->setFont(c, f);
    }
    total_params_ = params;
    const FreezeSavings fz = plan.freeze_savings();
    trainable_params_ = fz.trainable_params;
    frozen_params_ = fz.frozen_params;
    // The advisor's memory model: the same prediction as advise, batch-fit
    // and train's memory check.
    advisor::MemoryOptions mo;
    mo.batch = batch_;
    mo.optimizer = optimizer_;
    const int64_t train = advisor::predict_memory(g, mo).total;
    totals_text_ = tr("<b>%1</b> parameters (%2) · <b>%3</b> MACs per sample · %4 activations "
                      "per sample · training at batch %5 needs about <b>%6</b>")
                       .arg(humanCount(double(params)), humanBytes(double(params) * 4),
                            humanCount(double(macs)), humanBytes(double(act)))
                       .arg(batch_)
                       .arg(humanBytes(double(train)));
    // What freezing saves, in the tooltip: one line fewer in a short dock.
    totals_->setToolTip(
        fz.frozen_nodes > 0
            ? tr("Freezing saves the frozen layers' gradients and optimizer state, and the "
                 "backward pass of the frozen layers before the first trained one")
            : QString());
    if (fz.frozen_nodes > 0)
      totals_text_ +=
          tr("<br><b>%1</b> trainable · <b>%2</b> frozen parameters · freezing saves about "
             "<b>%3</b> at batch %4 and %5 backward MACs per sample")
              .arg(humanCount(double(fz.trainable_params)), humanCount(double(fz.frozen_params)),
                   humanBytes(double(fz.bytes_saved(batch_))))
              .arg(batch_)
              .arg(humanCount(double(fz.backward_macs_saved)));
    requestAdvice();
  } catch (const std::bad_alloc&) {
    totals_text_ = tr("Out of memory while sizing the network: make it smaller.");
    totals_->setText(totals_text_);
    fitTotals();
  } catch (const Error& e) {
    // Invalid: list what is known, in topological order when there is one.
    std::vector<NodeId> order;
    try {
      order = g.topo_order();
    } catch (const Error&) {
      for (const auto& [id, n] : g.nodes()) order.push_back(id);
    }
    const auto& shapes = model_->shapes();
    for (NodeId id : order) {
      const Node& n = g.node(id);
      auto s = shapes.find(id);
      bool ok = s != shapes.end() && s->second.ok();
      auto* it = row(id, QString::fromStdString(n.name), QString::fromStdString(n.type),
                     ok ? QString::fromStdString(s->second.shape->str()) : tr("invalid"));
      if (!ok) it->setForeground(kOutput, QColor(0xe5, 0x39, 0x35));
    }
    totals_text_ = tr("Costs appear once the network is valid (see Problems).");
  }
  showTotals();
}

}  // namespace dc::gui
