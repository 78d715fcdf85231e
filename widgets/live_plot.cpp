#include "widgets/live_plot.h"

#include "widgets/dialog_dirs.h"
#include "widgets/key_grey.h"

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
  title_text_ = title;
  title_ = new QLabel("<b>" + title.toHtmlEscaped() + "</b>", this);
  note_ = new QLabel(this);
  note_->setStyleSheet("color: palette(mid);");
  note_->setVisible(false);
  // A long note ("CPU use of this process, …") is elided to the room there
  // is (the whole of it in the tooltip) instead of widening the plot.
  note_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  QFont italic = note_->font();
  italic.setItalic(true);
  note_->setFont(italic);
  head->addWidget(title_);
  head->addWidget(note_, 1);
  note_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
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
  plot_->legend->setBrush(Qt::NoBrush);
  plot_->legend->setBorderPen(Qt::NoPen);
  plot_->legend->setIconSize(22, 9);
  plot_->legend->setColumnSpacing(10);
  plot_->legend->setRowSpacing(0);
  plot_->legend->setMargins(QMargins(2, 0, 2, 0));
  plot_->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plot_->legend->setWrap(4);
  // Above the axes: inside them the legend covers the newest points (the
  // end of every curve and the epoch markers) and grows with every run.
  plot_->axisRect()->insetLayout()->take(plot_->legend);
  plot_->plotLayout()->insertRow(0);
  plot_->plotLayout()->addElement(0, 0, plot_->legend);
  plot_->plotLayout()->setRowStretchFactor(0, 0.001);
  // Small enough for six plots beside the settings at 1280×720.
  plot_->setMinimumSize(150, 100);
  applyPalette();
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
  s.raw->setName(style == Style::Steps ? name + tr(" (raw)") : name);
  if (style == Style::Steps) {
    s.smooth = plot_->addGraph();
    s.smooth->setAdaptiveSampling(true);
    s.smooth->setName(name);
  } else if (style == Style::Epochs) {
    s.marker = Marker::Circle;
  }
  series_.push_back(s);
  applyLooks();
  return int(series_.size()) - 1;
}

void LivePlot::setSeriesLook(int series, Qt::PenStyle line, Marker marker) {
  if (series < 0 || series >= series_.size()) return;
  series_[series].line = line;
  series_[series].marker = marker;
  applyLooks();
}

void LivePlot::setColorsByRun(bool on) {
  by_run_ = on;
  applyLooks();
}

void LivePlot::setRunName(const QString& name) {
  run_name_ = name;
  applyLooks();
}

QColor LivePlot::runColor(int run) {
  // matplotlib's tab10: distinct, and the same order people know from it.
  static const QRgb colors[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
  return QColor(colors[run % 10]);
}

namespace {
QCPScatterStyle scatter(LivePlot::Marker m, const QColor& c) {
  switch (m) {
    case LivePlot::Marker::Circle:
      return QCPScatterStyle(QCPScatterStyle::ssCircle, c, Qt::white, 7);
    case LivePlot::Marker::Square:
      return QCPScatterStyle(QCPScatterStyle::ssSquare, c, Qt::white, 6);
    case LivePlot::Marker::Triangle:
      return QCPScatterStyle(QCPScatterStyle::ssTriangle, c, Qt::white, 7);
    case LivePlot::Marker::None:
      break;
  }
  return QCPScatterStyle(QCPScatterStyle::ssNone);
}

// A line needs two points: a lone reading (a run shorter than the sampling
// interval) of a series without markers is drawn as this dot, or the plot
// looks empty.
QCPScatterStyle lone_point() {
  return QCPScatterStyle(QCPScatterStyle::ssDisc, 6);
}
}  // namespace

void LivePlot::applyLooks() {
  plot_->legend->clearItems();
  const QColor current = by_run_ ? runColor(int(overlays_.size())) : QColor();
  const QColor grey = keyGrey(palette());
  for (Series& s : series_) {
    const QColor c = by_run_ ? current : s.color;
    const double width = s.style == Style::Line ? 1.5 : 2.0;
    if (s.style == Style::Steps) {
      QColor faint = c;
      faint.setAlpha(70);
      s.raw->setPen(QPen(faint, 1));
      s.smooth->setPen(QPen(c, width, s.line));
    } else {
      s.raw->setPen(QPen(c, width, s.line));
      s.raw->setScatterStyle(scatter(s.marker, c));
    }
    QCPGraph* shown = s.smooth ? s.smooth : s.raw;
    if (by_run_ && !s.key) {
      s.key = plot_->addGraph();  // no data: only its legend sample is drawn
      s.key->setName(s.name);
    }
    if (s.key) {
      s.key->setPen(QPen(grey, width, s.line));
      s.key->setScatterStyle(scatter(s.marker, grey));
    }
    // A series this run does not draw keeps its key while an earlier run's
    // overlay draws it.
    if (!shown->visible() && !(by_run_ && s.archived)) continue;
    if (by_run_)
      s.key->addToLegend();
    else
      shown->addToLegend();
  }
  for (Overlay& o : overlays_) {
    if (by_run_ && !o.key) {
      o.key = plot_->addGraph();
      o.key->setName(o.run);
      o.key->setPen(QPen(o.color, 3));
    }
    if (!(o.visible && overlays_shown_)) continue;
    if (by_run_)
      o.key->addToLegend();
    else
      for (QCPGraph* g : o.graphs) g->addToLegend();
  }
  if (by_run_) {
    if (!run_key_) run_key_ = plot_->addGraph();
    run_key_->setName(run_name_.isEmpty() ? tr("this run") : run_name_);
    run_key_->setPen(QPen(current, 3));
    if (!overlays_.isEmpty() || !run_name_.isEmpty()) run_key_->addToLegend();
  }
  plot_->legend->setVisible(plot_->legend->itemCount() > 0);
  fitLegend();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void LivePlot::applyPalette() {
  const QPalette pal = palette();
  const QColor bg = pal.color(QPalette::Base), fg = pal.color(QPalette::Text);
  QColor grid = fg;
  grid.setAlpha(60);
  plot_->setBackground(QBrush(bg));
  for (QCPAxis* a : {plot_->xAxis, plot_->yAxis, plot_->xAxis2, plot_->yAxis2}) {
    a->setBasePen(QPen(fg, 1));
    a->setTickPen(QPen(fg, 1));
    a->setSubTickPen(QPen(fg, 1));
    a->setTickLabelColor(fg);
    a->setLabelColor(fg);
    a->grid()->setPen(QPen(grid, 1, Qt::DotLine));
  }
  plot_->legend->setTextColor(fg);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void LivePlot::changeEvent(QEvent* e) {
  QWidget::changeEvent(e);
  if (e->type() == QEvent::PaletteChange) {
    applyPalette();
    applyLooks();
  }
}

void LivePlot::fitLegend() {
  QCPLegend* lg = plot_->legend;
  const int room = plot_->width() - 8;
  int used = 0, per_row = 0;
  // itemCount() counts the grid's cells, empty ones (after a wrap) too.
  for (int i = 0; i < lg->itemCount(); ++i) {
    const QCPAbstractLegendItem* it = lg->item(i);
    if (!it) continue;
    const int w = it->minimumOuterSizeHint().width() + (per_row ? lg->columnSpacing() : 0);
    if (per_row > 0 && used + w > room) break;
    used += w;
    ++per_row;
  }
  per_row = std::max(1, per_row);
  if (per_row == lg->wrap()) return;
  lg->setWrap(per_row);
  lg->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);  // rearranges the entries
}

int LivePlot::legendRows() const {
  int rows = 0;
  for (int r = 0; r < plot_->legend->rowCount(); ++r)
    for (int c = 0; c < plot_->legend->columnCount(); ++c)
      if (plot_->legend->element(r, c)) {
        ++rows;
        break;
      }
  return rows;
}

QStringList LivePlot::legendEntries() const {
  QStringList v;
  for (int i = 0; i < plot_->legend->itemCount(); ++i)
    if (auto* it = qobject_cast<QCPPlottableLegendItem*>(plot_->legend->item(i)))
      v << it->plottable()->name();
  return v;
}

bool LivePlot::legendOverData() const {
  return plot_->legend->layout() == plot_->axisRect()->insetLayout();
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
  for (QCPGraph* g : {series_[series].raw, series_[series].smooth})
    if (g) g->setVisible(on);
  applyLooks();
  replot();
}

void LivePlot::setNote(const QString& note) {
  note_->setToolTip(note);
  note_->setVisible(!note.isEmpty());
  elideNote();
}

void LivePlot::elideNote() {
  const int room = width() - title_->sizeHint().width() - 12;
  note_->setText(
      note_->fontMetrics().elidedText(note_->toolTip(), Qt::ElideRight, std::max(0, room)));
}

void LivePlot::resizeEvent(QResizeEvent* e) {
  QWidget::resizeEvent(e);
  elideNote();
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
  // Even a run without points gets its (empty) overlay, so overlay n is
  // always the n-th earlier run.
  Overlay o;
  o.run = run;
  o.color = runColor(int(overlays_.size()));
  for (Series& s : series_) {
    QCPGraph* src = s.smooth ? s.smooth : s.raw;
    if (src->dataCount() == 0) continue;
    s.archived = true;
    QCPGraph* g = plot_->addGraph();
    g->setAdaptiveSampling(true);
    g->data()->set(*src->data());
    if (by_run_) {
      // The run's colour, the series' look: as it was drawn while current.
      QColor c = o.color;
      c.setAlpha(170);
      g->setPen(QPen(c, 1.5, s.line));
      g->setScatterStyle(scatter(s.marker, c));
    } else {
      QColor c = s.color;
      c.setAlpha(110);
      g->setPen(QPen(c, 1.5, Qt::DashLine));
    }
    // A lone point, as while it was current.
    if (s.marker == Marker::None && src->dataCount() == 1) g->setScatterStyle(lone_point());
    g->setName(s.name + " · " + run);
    g->setVisible(overlays_shown_);
    g->removeFromLegend();
    o.graphs.push_back(g);
  }
  overlays_.push_back(o);
  clear();
  applyLooks();
}

void LivePlot::setOverlaysVisible(bool on) {
  overlays_shown_ = on;
  for (auto& o : overlays_)
    for (QCPGraph* g : o.graphs) g->setVisible(on && o.visible);
  applyLooks();
  replot();
}

void LivePlot::setOverlayVisible(int overlay, bool on) {
  if (overlay < 0 || overlay >= overlays_.size()) return;
  Overlay& o = overlays_[overlay];
  o.visible = on;
  for (QCPGraph* g : o.graphs) g->setVisible(on && overlays_shown_);
  applyLooks();
  replot();
}

bool LivePlot::overlayVisible(int overlay) const {
  return overlay >= 0 && overlay < overlays_.size() && overlays_[overlay].visible &&
         overlays_shown_;
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
  for (auto& o : overlays_) {
    for (QCPGraph* g : o.graphs) plot_->removeGraph(g);
    if (o.key) plot_->removeGraph(o.key);
  }
  for (Series& s : series_) s.archived = false;
  overlays_.clear();
  applyLooks();
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

void LivePlot::setKeySpan(double lo, double hi) {
  span_lo_ = lo;
  span_hi_ = hi;
  rescale();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void LivePlot::rescale() {
  if (!follow_) return;
  const bool spanned = span_lo_ < span_hi_;
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
  if (!any) {
    // Nothing drawn: the axes of a new plot, not the last data's (a new
    // project's plots kept the previous run's loss and memory ranges).
    plot_->xAxis->setRange(spanned ? QCPRange(span_lo_, span_hi_) : QCPRange(0, 5));
    plot_->yAxis->setRange(fixed_y_ ? QCPRange(y_lo_, y_hi_) : QCPRange(0, 5));
    return;
  }
  if (spanned) kx.expand(QCPRange(span_lo_, span_hi_));
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
  for (Series& s : series_) {
    if (s.marker != Marker::None) continue;
    QCPGraph* shown = s.smooth ? s.smooth : s.raw;
    const bool lone = shown->dataCount() == 1;
    if (lone != (shown->scatterStyle().shape() == lone_point().shape()))
      shown->setScatterStyle(lone ? lone_point() : QCPScatterStyle(QCPScatterStyle::ssNone));
  }
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
    if (e->type() == QEvent::Resize) fitLegend();
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
  // The plot's title as the file's name ("learning-rate.png"), in the
  // folder of the last export.
  auto exportStart = [this](const QString& ext) {
    // Letters, digits and dashes only: a translated title may hold a '/'.
    QString name;
    for (QChar c : title_text_.toLower().simplified())
      name += c.isLetterOrNumber() ? c : QChar('-');
    if (name.isEmpty()) name = "plot";
    return dialogStart("plotExport") + "/" + name + "." + ext;
  };
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
  menu.addAction(tr("Export PNG…"), this, [this, exportStart] {
    QString p =
        QFileDialog::getSaveFileName(this, tr("Export plot"), exportStart("png"), "PNG (*.png)");
    rememberDialogChoice("plotExport", p);
    if (!p.isEmpty()) exportPng(p);
  });
  menu.addAction(tr("Export CSV…"), this, [this, exportStart] {
    QString p =
        QFileDialog::getSaveFileName(this, tr("Export data"), exportStart("csv"), "CSV (*.csv)");
    rememberDialogChoice("plotExport", p);
    if (!p.isEmpty()) exportCsv(p);
  });
  if (!overlays_.isEmpty()) {
    menu.addSeparator();
    QAction* a = menu.addAction(tr("Show earlier runs"));
    a->setCheckable(true);
    a->setChecked(overlays_shown_);
    connect(a, &QAction::toggled, this, &LivePlot::setOverlaysVisible);
    menu.addAction(tr("Forget earlier runs"), this, &LivePlot::clearOverlays);
  }
  menu.exec(plot_->mapToGlobal(pos));
}

}  // namespace dc::widgets
