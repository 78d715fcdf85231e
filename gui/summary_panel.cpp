#include "gui/summary_panel.h"

#include "gui/format.h"
#include "widgets/graph_model.h"
#include "widgets/layer_style.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/sysinfo.h>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace dc::gui {

namespace {
enum Col { kName, kType, kOutput, kParams, kMacs, kAct, kCols };
constexpr int kIdRole = Qt::UserRole + 1;
}  // namespace

SummaryPanel::SummaryPanel(widgets::GraphModel* model, QWidget* parent)
    : QWidget(parent), model_(model) {
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
  auto* footer = new QHBoxLayout;
  footer->setContentsMargins(0, 0, 8, 0);
  footer->addWidget(totals_, 1);
  footer->addWidget(new QLabel(tr("Batch"), this));
  footer->addWidget(batch_box_);
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(0, 0, 0, 0);
  lay->setSpacing(0);
  lay->addWidget(table_, 1);
  lay->addLayout(footer);

  timer_ = new QTimer(this);
  timer_->setSingleShot(true);
  timer_->setInterval(0);
  connect(timer_, &QTimer::timeout, this, &SummaryPanel::refresh);
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

void SummaryPanel::scheduleRefresh() {
  timer_->start();
}

void SummaryPanel::refresh() {
  timer_->stop();
  const Graph& g = model_->graph();
  table_->clear();
  total_params_ = trainable_params_ = frozen_params_ = 0;
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
      it->setText(kAct, humanBytes(double(r.activation_bytes)));
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
    total_params_ = params;
    const FreezeSavings fz = plan.freeze_savings();
    trainable_params_ = fz.trainable_params;
    frozen_params_ = fz.frozen_params;
    int64_t train = plan.training_bytes(batch_);  // the same figure as the CLI's
    totals_text_ = tr("<b>%1</b> parameters (%2) · <b>%3</b> MACs per sample · %4 activations "
                      "per sample · training at batch %5 needs about <b>%6</b>")
                       .arg(humanCount(double(params)), humanBytes(double(params) * 4),
                            humanCount(double(macs)), humanBytes(double(act)))
                       .arg(batch_)
                       .arg(humanBytes(double(train)));
    if (fz.frozen_nodes > 0)
      totals_text_ +=
          tr("<br><b>%1</b> trainable · <b>%2</b> frozen parameters · freezing saves about "
             "<b>%3</b> at batch %4 (gradients, optimizer state and the frozen prefix's "
             "backward) and %5 backward MACs per sample")
              .arg(humanCount(double(fz.trainable_params)), humanCount(double(fz.frozen_params)),
                   humanBytes(double(fz.bytes_saved(batch_))))
              .arg(batch_)
              .arg(humanCount(double(fz.backward_macs_saved)));
  } catch (const std::bad_alloc&) {
    totals_text_ = tr("Out of memory while sizing the network: make it smaller.");
    totals_->setText(totals_text_);
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
  totals_->setText(totals_text_);
}

}  // namespace dc::gui
