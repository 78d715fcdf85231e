#include "gui/lr_finder.h"

#include <deepcanvas/errors.h>

#include <qcustomplot.h>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include <cmath>

namespace dc::gui {

LrFinderDialog::LrFinderDialog(Graph g, TrainConfig c, std::shared_ptr<const Dataset> train,
                               LrFindOptions options, QWidget* parent)
    : QDialog(parent),
      graph_(std::move(g)),
      config_(std::move(c)),
      train_(std::move(train)),
      options_(options) {
  setWindowTitle(tr("Learning-rate finder"));
  setObjectName("lrFinderDialog");
  setModal(false);
  resize(640, 420);
  auto* v = new QVBoxLayout(this);
  auto* intro = new QLabel(
      tr("A short run on a copy of the network raises the learning rate from %1 to %2 over "
         "%3 steps and records the loss (Smith's range test). The suggestion is a tenth of "
         "the learning rate with the lowest smoothed loss. %4 Your weights are not changed.")
          .arg(options_.start, 0, 'g', 3)
          .arg(options_.end, 0, 'g', 3)
          .arg(options_.steps)
          .arg(weightsText()),
      this);
  intro->setObjectName("lrFinderIntro");
  intro->setWordWrap(true);
  v->addWidget(intro);
  plot_ = new QCustomPlot(this);
  plot_->setObjectName("lrFinderPlot");
  plot_->setMinimumHeight(240);
  plot_->xAxis->setScaleType(QCPAxis::stLogarithmic);
  QSharedPointer<QCPAxisTickerLog> ticker(new QCPAxisTickerLog);
  plot_->xAxis->setTicker(ticker);
  plot_->xAxis->setNumberFormat("eb");
  plot_->xAxis->setNumberPrecision(0);
  plot_->xAxis->setLabel(tr("learning rate"));
  plot_->yAxis->setLabel(tr("loss"));
  plot_->addGraph();  // raw loss
  plot_->graph(0)->setPen(QPen(QColor(160, 160, 160)));
  plot_->graph(0)->setName(tr("loss"));
  plot_->addGraph();  // smoothed
  plot_->graph(1)->setPen(QPen(QColor(31, 119, 180), 2));
  plot_->graph(1)->setName(tr("smoothed"));
  plot_->addGraph();  // the suggestion
  plot_->graph(2)->setLineStyle(QCPGraph::lsNone);
  plot_->graph(2)->setScatterStyle(
      QCPScatterStyle(QCPScatterStyle::ssCircle, QColor(214, 39, 40), QColor(214, 39, 40), 10));
  plot_->graph(2)->setName(tr("suggested"));
  plot_->legend->setVisible(true);
  plot_->setPlottingHint(QCP::phFastPolylines, true);
  v->addWidget(plot_, 1);
  status_ = new QLabel(this);
  status_->setObjectName("lrFinderStatus");
  status_->setWordWrap(true);
  v->addWidget(status_);
  auto* buttons = new QHBoxLayout;
  buttons->addStretch(1);
  rerun_ = new QPushButton(tr("Run again"), this);
  use_ = new QPushButton(tr("Use"), this);
  use_->setObjectName("lrFinderUse");
  use_->setEnabled(false);
  use_->setToolTip(tr("Set the learning rate to the suggestion (Edit > Undo takes it back)"));
  auto* close = new QPushButton(tr("Close"), this);
  for (QPushButton* b : {rerun_, use_, close}) buttons->addWidget(b);
  v->addLayout(buttons);
  connect(rerun_, &QPushButton::clicked, this, &LrFinderDialog::start);
  connect(use_, &QPushButton::clicked, this, [this] { Q_EMIT useRequested(result_.suggested_lr); });
  connect(close, &QPushButton::clicked, this, &QDialog::close);
}

LrFinderDialog::~LrFinderDialog() {
  stop_ = true;
  if (worker_.joinable()) worker_.join();
}

QString LrFinderDialog::weightsText() const {
  QString text = tr("It starts from the network's initial weights (freshly drawn with seed %1), "
                    "as a training run and deepcanvas-cli lr-find do, not from the weights of "
                    "earlier runs.")
                     .arg(qulonglong(config_.seed));
  // The Trainer would load these before its first step; the range test, like
  // the CLI's, does not, so say so rather than let the curve mislead.
  if (!config_.init_weights.empty())
    text += " " + tr("The project's initial weights file (%1) is not loaded.")
                      .arg(QString::fromStdString(config_.init_weights));
  return text;
}

QString LrFinderDialog::statusText() const {
  return status_->text();
}

void LrFinderDialog::start() {
  if (running()) return;
  if (worker_.joinable()) worker_.join();
  stop_ = false;
  done_ = false;
  result_ = {};
  for (int i = 0; i < 3; ++i) plot_->graph(i)->data()->clear();
  plot_->replot();
  use_->setEnabled(false);
  rerun_->setEnabled(false);
  status_->setText(tr("Running the range test…"));
  worker_ = std::thread([this] {
    LrFindResult r;
    QString error;
    try {
      r = lr_find(graph_, config_, *train_, options_, /*initial=*/nullptr,
                  [this](int, double lr, double smoothed) {
                    QMetaObject::invokeMethod(
                        this, [this, lr, smoothed] { onPoint(lr, smoothed); },
                        Qt::QueuedConnection);
                    return !stop_.load();
                  });
    } catch (const std::exception& e) {
      error = QString::fromUtf8(e.what());
    }
    done_ = true;
    // The dialog joins this thread before it dies, so `this` outlives the
    // queued call; a dialog closed meanwhile drops it with its event queue.
    QMetaObject::invokeMethod(
        this,
        [this, r = std::move(r), error] {
          result_ = r;
          onDone(error.isEmpty(), error);
        },
        Qt::QueuedConnection);
  });
}

void LrFinderDialog::onPoint(double lr, double smoothed) {
  plot_->graph(1)->addData(lr, smoothed);
  plot_->rescaleAxes();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void LrFinderDialog::drawResult() {
  const LrFindResult& r = result_;
  QVector<double> x(r.lrs.begin(), r.lrs.end()), raw(r.losses.begin(), r.losses.end()),
      smooth(r.smoothed.begin(), r.smoothed.end());
  plot_->graph(0)->setData(x, raw, true);
  plot_->graph(1)->setData(x, smooth, true);
  // The suggestion sits on the smoothed curve at its learning rate.
  double y = smooth.isEmpty() ? 0 : smooth.front();
  for (int i = 0; i < x.size(); ++i)
    if (x[i] <= r.suggested_lr) y = smooth[i];
  plot_->graph(2)->setData({r.suggested_lr}, {y});
  plot_->rescaleAxes();
  // Diverging losses would squash the curve: cap the view at 1.5x the start.
  if (!smooth.isEmpty()) {
    const double lo = *std::min_element(smooth.begin(), smooth.end());
    plot_->yAxis->setRange(lo * 0.9, std::max(lo * 1.1, smooth.front() * 1.5));
  }
  plot_->replot();
}

void LrFinderDialog::onDone(bool ok, const QString& error) {
  rerun_->setEnabled(true);
  if (!ok) {
    status_->setText(tr("The range test failed: %1").arg(error));
    Q_EMIT finished(false);
    return;
  }
  drawResult();
  QString text = tr("Suggested learning rate: %1 (lowest smoothed loss at %2; steepest descent "
                    "at %3).")
                     .arg(result_.suggested_lr, 0, 'g', 3)
                     .arg(result_.min_lr, 0, 'g', 3)
                     .arg(result_.steepest_lr, 0, 'g', 3);
  if (!result_.note.empty()) text += " " + QString::fromStdString(result_.note) + ".";
  text += " " + tr("Measured from the initial weights (seed %1).").arg(qulonglong(config_.seed));
  status_->setText(text);
  use_->setEnabled(true);
  Q_EMIT finished(true);
}

}  // namespace dc::gui
