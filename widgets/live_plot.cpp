#include "widgets/live_plot.h"

#include <qcustomplot.h>

#include <QContextMenuEvent>
#include <QFile>
#include <QFileDialog>
#include <QLabel>
#include <QMenu>
#include <QMouseEvent>
#include <QTextStream>
#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>
#include <limits>

namespace dc::widgets {

LivePlot::LivePlot(const QString& title, const QString& y_label, QWidget* parent)
    : QWidget(parent), plot_(new QCustomPlot(this)) {
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(2, 2, 2, 2);
  lay->setSpacing(0);
  auto* head = new QHBoxLayout;
  title_ = new QLabel("<b>" + title.toHtmlEscaped() + "</b>", this);
  note_ = new QLabel(this);
  note_->setStyleSheet("color: palette(mid);");
  note_->setVisible(false);
  head->addWidget(title_);
  head->addStretch();
  head->addWidget(note_);
  lay->addLayout(head);
  lay->addWidget(plot_, 1);
  setObjectName("LivePlot:" + title);

  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->setNoAntialiasingOnDrag(true);
  // Wide antialiased pens dominate a repaint of long series (600k points:
  // 137 ms without this hint, 11 ms with it; see the UI latency benchmark).
  plot_->setPlottingHint(QCP::phFastPolylines, true);
  plot_->yAxis->setLabel(y_label);
  plot_->xAxis->setLabel(tr("step"));
  plot_->legend->setVisible(true);
  plot_->legend->setFont(QFont(font().family(), 8));
  plot_->legend->setBrush(QColor(255, 255, 255, 200));
  plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  plot_->setMinimumSize(220, 150);
  plot_->installEventFilter(this);
  plot_->setMouseTracking(true);
  plot_->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(plot_, &QWidget::customContextMenuRequested, this, &LivePlot::showContextMenu);
  connect(plot_, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) { resetView(); });
}

int LivePlot::addSeries(const QString& name, const QColor& color, Style style) {
  Series s;
  s.name = name;
  s.color = color;
  s.style = style;
  s.raw = plot_->addGraph();
  s.raw->setAdaptiveSampling(true);
  if (style == Style::Steps) {
    QColor faint = color;
    faint.setAlpha(70);
    s.raw->setPen(QPen(faint, 1));
    s.raw->setName(name + tr(" (raw)"));
    s.raw->removeFromLegend();
    s.smooth = plot_->addGraph();
    s.smooth->setAdaptiveSampling(true);
    s.smooth->setPen(QPen(color, 2));
    s.smooth->setName(name);
  } else if (style == Style::Line) {
    s.raw->setPen(QPen(color, 1.5));
    s.raw->setName(name);
  } else {
    s.raw->setPen(QPen(color, 2));
    s.raw->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, color, Qt::white, 7));
    s.raw->setName(name);
  }
  series_.push_back(s);
  return int(series_.size()) - 1;
}

void LivePlot::addPoint(int series, double x, double y) {
  if (series < 0 || series >= series_.size() || !std::isfinite(y)) return;
  Series& s = series_[series];
  s.raw->addData(x, y);
  if (s.smooth) {
    // Debiased EMA (as TensorBoard) so the first points are not pulled to 0.
    s.ema = smoothing_ * s.ema + (1 - smoothing_) * y;
    s.ema_weight = smoothing_ * s.ema_weight + (1 - smoothing_);
    s.smooth->addData(x, s.ema / s.ema_weight);
  }
  replot();
}

void LivePlot::addPoints(int series, const QVector<double>& x, const QVector<double>& y) {
  if (series < 0 || series >= series_.size()) return;
  Series& s = series_[series];
  QVector<double> kx, ky, sy;
  kx.reserve(x.size());
  ky.reserve(x.size());
  for (int i = 0; i < x.size() && i < y.size(); ++i) {
    if (!std::isfinite(y[i])) continue;
    kx.push_back(x[i]);
    ky.push_back(y[i]);
    if (s.smooth) {
      s.ema = smoothing_ * s.ema + (1 - smoothing_) * y[i];
      s.ema_weight = smoothing_ * s.ema_weight + (1 - smoothing_);
      sy.push_back(s.ema / s.ema_weight);
    }
  }
  // alreadySorted: steps only grow, which keeps appends O(n) instead of a sort.
  s.raw->addData(kx, ky, true);
  if (s.smooth) s.smooth->addData(kx, sy, true);
  replot();
}

void LivePlot::setSmoothing(double weight) {
  smoothing_ = std::clamp(weight, 0.0, 0.999);
  for (Series& s : series_) {
    if (!s.smooth) continue;
    s.ema = s.ema_weight = 0;
    QVector<double> kx, sy;
    for (auto it = s.raw->data()->constBegin(); it != s.raw->data()->constEnd(); ++it) {
      s.ema = smoothing_ * s.ema + (1 - smoothing_) * it->value;
      s.ema_weight = smoothing_ * s.ema_weight + (1 - smoothing_);
      kx.push_back(it->key);
      sy.push_back(s.ema / s.ema_weight);
    }
    s.smooth->setData(kx, sy, true);
  }
  replot();
}

void LivePlot::setXLabel(const QString& label) {
  plot_->xAxis->setLabel(label);
}

void LivePlot::setYLabel(const QString& label) {
  plot_->yAxis->setLabel(label);
}

void LivePlot::setSeriesVisible(int series, bool on) {
  if (series < 0 || series >= series_.size()) return;
  for (QCPGraph* g : {series_[series].raw, series_[series].smooth}) {
    if (!g) continue;
    g->setVisible(on);
    // Steps series keep their raw graph out of the legend in any case.
    if (g == series_[series].smooth || !series_[series].smooth) {
      if (on)
        g->addToLegend();
      else
        g->removeFromLegend();
    }
  }
  replot();
}

void LivePlot::setNote(const QString& note) {
  note_->setText("<i>" + note.toHtmlEscaped() + "</i>");
  note_->setToolTip(note);
  note_->setVisible(!note.isEmpty());
}

QString LivePlot::note() const {
  return note_->toolTip();
}

void LivePlot::setYRange(double lo, double hi) {
  fixed_y_ = true;
  y_lo_ = lo;
  y_hi_ = hi;
  plot_->yAxis->setRange(lo, hi);
}

void LivePlot::archiveRun(const QString& run) {
  if (totalPoints() == 0) return;
  Overlay o;
  o.run = run;
  for (Series& s : series_) {
    QCPGraph* src = s.smooth ? s.smooth : s.raw;
    if (src->dataCount() == 0) continue;
    QCPGraph* g = plot_->addGraph();
    g->setAdaptiveSampling(true);
    g->data()->set(*src->data());
    QColor c = s.color;
    c.setAlpha(110);
    g->setPen(QPen(c, 1.5, Qt::DashLine));
    g->setName(s.name + " · " + run);
    o.graphs.push_back(g);
  }
  overlays_.push_back(o);
  clear();
}

void LivePlot::setOverlaysVisible(bool on) {
  for (auto& o : overlays_)
    for (QCPGraph* g : o.graphs) {
      g->setVisible(on);
      if (on)
        g->addToLegend();
      else
        g->removeFromLegend();
    }
  replot();
}

void LivePlot::clear() {
  for (Series& s : series_) {
    s.raw->data()->clear();
    if (s.smooth) s.smooth->data()->clear();
    s.ema = s.ema_weight = 0;
  }
  follow_ = true;
  replot();
}

void LivePlot::clearOverlays() {
  for (auto& o : overlays_)
    for (QCPGraph* g : o.graphs) plot_->removeGraph(g);
  overlays_.clear();
  replot();
}

int LivePlot::pointCount(int series) const {
  if (series < 0 || series >= series_.size()) return 0;
  return series_[series].raw->dataCount();
}

int LivePlot::totalPoints() const {
  int n = 0;
  for (const Series& s : series_) n += s.raw->dataCount();
  return n;
}

QString LivePlot::seriesName(int series) const {
  return series >= 0 && series < series_.size() ? series_[series].name : QString();
}

double LivePlot::lastValue(int series) const {
  if (series < 0 || series >= series_.size() || series_[series].raw->dataCount() == 0)
    return std::numeric_limits<double>::quiet_NaN();
  return (series_[series].raw->data()->constEnd() - 1)->value;
}

void LivePlot::rescale() {
  if (!follow_) return;
  bool any = false;
  QCPRange kx, ky;
  for (int i = 0; i < plot_->graphCount(); ++i) {
    QCPGraph* g = plot_->graph(i);
    if (!g->visible() || g->dataCount() == 0) continue;
    bool ok = false;
    QCPRange r = g->getKeyRange(ok);
    if (!ok) continue;
    QCPRange v = g->getValueRange(ok);
    if (!ok) continue;
    if (!any) {
      kx = r;
      ky = v;
      any = true;
    } else {
      kx.expand(r);
      ky.expand(v);
    }
  }
  if (!any) return;
  if (kx.size() <= 0) kx = QCPRange(kx.lower - 0.5, kx.upper + 0.5);
  plot_->xAxis->setRange(kx);
  if (fixed_y_) {
    plot_->yAxis->setRange(y_lo_, std::max(y_hi_, ky.upper));
  } else {
    double pad = ky.size() > 0 ? ky.size() * 0.05 : std::max(1e-3, std::abs(ky.upper) * 0.1);
    plot_->yAxis->setRange(ky.lower - pad, ky.upper + pad);
  }
}

void LivePlot::replot() {
  rescale();
  // Queued: many appends in one event-loop turn cost one repaint.
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void LivePlot::resetView() {
  follow_ = true;
  replot();
}

bool LivePlot::eventFilter(QObject* o, QEvent* e) {
  if (o == plot_) {
    if (e->type() == QEvent::Wheel || (e->type() == QEvent::MouseButtonPress &&
                                       static_cast<QMouseEvent*>(e)->button() == Qt::LeftButton))
      follow_ = false;  // the user took over the view
    if (e->type() == QEvent::MouseMove) {
      auto* me = static_cast<QMouseEvent*>(e);
      if (!(me->buttons() & Qt::LeftButton)) {
        double x = plot_->xAxis->pixelToCoord(me->position().x());
        QString text = valuesAt(x);
        if (!text.isEmpty())
          QToolTip::showText(me->globalPosition().toPoint(), text, plot_);
        else
          QToolTip::hideText();
      }
    }
  }
  return QWidget::eventFilter(o, e);
}

QString LivePlot::valuesAt(double x) const {
  QStringList lines;
  for (const Series& s : series_) {
    QCPGraph* g = s.smooth ? s.smooth : s.raw;
    if (g->dataCount() == 0) continue;
    auto it = g->data()->findBegin(x, true);
    if (it == g->data()->constEnd()) --it;
    auto next = it + 1;
    if (next != g->data()->constEnd() && std::abs(next->key - x) < std::abs(it->key - x)) it = next;
    lines << QString("%1 @ %2: %3").arg(s.name).arg(it->key, 0, 'g', 6).arg(it->value, 0, 'g', 5);
  }
  return lines.join('\n');
}

bool LivePlot::exportPng(const QString& path, int width, int height) {
  return plot_->savePng(path, width, height);
}

QString LivePlot::csv() const {
  QString out;
  QTextStream ts(&out);
  ts << "run,series,x,y\n";
  auto dump = [&](const QString& run, const QString& name, QCPGraph* g) {
    for (auto it = g->data()->constBegin(); it != g->data()->constEnd(); ++it)
      ts << run << ',' << '"' << name << '"' << ',' << QString::number(it->key, 'g', 10) << ','
         << QString::number(it->value, 'g', 8) << '\n';
  };
  for (const Series& s : series_) dump("current", s.name, s.raw);
  for (const Overlay& o : overlays_)
    for (QCPGraph* g : o.graphs) dump(o.run, g->name(), g);
  return out;
}

bool LivePlot::exportCsv(const QString& path) const {
  QFile f(path);
  if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) return false;
  QByteArray bytes = csv().toUtf8();
  return f.write(bytes) == bytes.size();
}

void LivePlot::showContextMenu(const QPoint& pos) {
  QMenu menu(this);
  menu.addAction(tr("Reset view (follow data)"), this, &LivePlot::resetView);
  QMenu* smooth = menu.addMenu(tr("Smoothing"));
  for (double w : {0.0, 0.6, 0.9, 0.98}) {
    QAction* a = smooth->addAction(w == 0 ? tr("off") : QString::number(w));
    a->setCheckable(true);
    a->setChecked(std::abs(smoothing_ - w) < 1e-9);
    connect(a, &QAction::triggered, this, [this, w] { setSmoothing(w); });
  }
  menu.addSeparator();
  menu.addAction(tr("Export PNG…"), this, [this] {
    QString p = QFileDialog::getSaveFileName(this, tr("Export plot"), "plot.png", "PNG (*.png)");
    if (!p.isEmpty()) exportPng(p);
  });
  menu.addAction(tr("Export CSV…"), this, [this] {
    QString p = QFileDialog::getSaveFileName(this, tr("Export data"), "plot.csv", "CSV (*.csv)");
    if (!p.isEmpty()) exportCsv(p);
  });
  if (!overlays_.isEmpty()) {
    menu.addSeparator();
    bool shown = overlays_.front().graphs.isEmpty() || overlays_.front().graphs.front()->visible();
    QAction* a = menu.addAction(tr("Show earlier runs"));
    a->setCheckable(true);
    a->setChecked(shown);
    connect(a, &QAction::toggled, this, &LivePlot::setOverlaysVisible);
    menu.addAction(tr("Forget earlier runs"), this, &LivePlot::clearOverlays);
  }
  menu.exec(plot_->mapToGlobal(pos));
}

}  // namespace dc::widgets
