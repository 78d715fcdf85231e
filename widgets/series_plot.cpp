#include "widgets/series_plot.h"

#include "widgets/live_plot.h"

#include <QEvent>
#include <algorithm>
#include <numeric>

namespace dc::widgets {

SeriesPlot::SeriesPlot(QWidget* parent) : QCustomPlot(parent) {
  setMinimumHeight(200);
  // The legend above the axes, as the Training tab's plots keep theirs:
  // inside, it would cover the series.
  legend->setVisible(true);
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  legend->setWrap(5);
  legend->setBorderPen(Qt::NoPen);
  legend->setBrush(Qt::NoBrush);
  legend->setRowSpacing(0);
  axisRect()->insetLayout()->take(legend);
  plotLayout()->insertRow(0);
  plotLayout()->addElement(0, 0, legend);
  plotLayout()->setRowStretchFactor(0, 0.001);
  yAxis->setLabel(tr("value"));
  QSharedPointer<QCPAxisTickerFixed> whole(new QCPAxisTickerFixed);
  whole->setTickStep(1);
  whole->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);  // many classes: fewer ticks
  yAxis2->setTicker(whole);
  yAxis2->setLabel(tr("class"));
  applyPalette();
}

void SeriesPlot::setRows(const std::vector<float>& values, int64_t features,
                         const std::vector<std::string>& names, const QVector<double>& label_at,
                         const QVector<double>& labels, int classes) {
  clearGraphs();
  const int64_t steps = features > 0 ? int64_t(values.size()) / features : 0;
  const int shown = int(std::min<int64_t>(features, kMaxFeatures));
  QVector<double> at(steps);
  std::iota(at.begin(), at.end(), 0.0);
  for (int f = 0; f < shown; ++f) {
    QVector<double> v(steps);
    for (int64_t t = 0; t < steps; ++t) v[t] = values[size_t(t * features + f)];
    QCPGraph* g = addGraph();
    g->setData(at, v, true);
    g->setPen(QPen(LivePlot::runColor(f), 1.5));
    g->setName(size_t(f) < names.size() && !names[size_t(f)].empty()
                   ? QString::fromStdString(names[size_t(f)])
                   : tr("feature %1").arg(f + 1));
  }
  yAxis2->setVisible(classes > 0);
  if (classes > 0) {
    QCPGraph* cls = addGraph(xAxis, yAxis2);
    cls->setData(label_at, labels, true);
    cls->setLineStyle(QCPGraph::lsStepLeft);
    cls->setPen(QPen(palette().color(QPalette::Text), 1, Qt::DashLine));
    cls->setName(tr("class (right axis)"));
  }
  xAxis->setLabel(features > shown
                      ? tr("row (the first %1 of %2 features shown)").arg(shown).arg(features)
                      : tr("row"));
  rescaleAxes();
  if (classes > 0) yAxis2->setRange(-0.5, classes - 0.5);
  replot();
}

void SeriesPlot::changeEvent(QEvent* e) {
  QCustomPlot::changeEvent(e);
  if (e->type() == QEvent::PaletteChange) applyPalette();
}

void SeriesPlot::applyPalette() {
  // The window's colours (View → Theme), as the other plots take them.
  const QColor bg = palette().color(QPalette::Base), fg = palette().color(QPalette::Text);
  setBackground(QBrush(bg));
  for (QCPAxis* a : {xAxis, yAxis, yAxis2}) {
    a->setBasePen(QPen(fg, 1));
    a->setTickPen(QPen(fg, 1));
    a->setSubTickPen(QPen(fg, 1));
    a->setTickLabelColor(fg);
    a->setLabelColor(fg);
  }
  legend->setTextColor(fg);
  replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace dc::widgets
