// The plot widgets alone: 100k-point series, overlays of earlier runs,
// hover values and the CSV/PNG exports; the saliency overlay.
#include "widgets/live_plot.h"
#include "widgets/saliency_view.h"
#include "widgets/top_k_bars.h"

#include <gtest/gtest.h>
#include <qcustomplot.h>

#include <QFileInfo>
#include <QImage>
#include <QPalette>
#include <QTemporaryDir>
#include <cmath>

namespace dc::test {

TEST(DashboardPlot, HundredThousandPointsOverlaysHoverAndExport) {
  widgets::LivePlot plot("Loss", "loss");
  plot.resize(600, 400);
  plot.show();
  const int steps = plot.addSeries("train", Qt::blue);
  const int epochs = plot.addSeries("test", Qt::green, widgets::LivePlot::Style::Epochs);
  const int n = 100000;
  QVector<double> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = i;
    y[i] = 1.0 + std::sin(i * 0.01);
  }
  y[5] = std::nan("");  // a NaN loss is skipped, never drawn
  plot.addPoints(steps, x, y);
  plot.addPoint(epochs, n, 0.5);
  EXPECT_EQ(plot.pointCount(steps), n - 1);
  EXPECT_EQ(plot.pointCount(epochs), 1);
  EXPECT_DOUBLE_EQ(plot.lastValue(epochs), 0.5);
  EXPECT_TRUE(plot.valuesAt(1000).contains("train @ 1000"));
  // Hover shows the smoothed curve; without smoothing that is the raw value.
  EXPECT_FALSE(plot.valuesAt(1000).contains(QString::number(y[1000], 'g', 5)));
  plot.setSmoothing(0);
  EXPECT_TRUE(plot.valuesAt(1000).contains(QString::number(y[1000], 'g', 5)));

  plot.archiveRun("run 1");
  EXPECT_EQ(plot.overlayCount(), 1);
  EXPECT_EQ(plot.totalPoints(), 0);
  plot.addPoint(steps, 0, 2.0);
  const QString csv = plot.csv();
  EXPECT_TRUE(csv.startsWith("run,series,x,y\n"));
  EXPECT_TRUE(csv.contains("current,\"train\",0,2\n"));
  EXPECT_TRUE(csv.contains("run 1"));
  // Header + 1 current point + the overlay's smoothed steps and epoch point.
  EXPECT_EQ(csv.count('\n'), 1 + 1 + (n - 1) + 1);

  QTemporaryDir dir;
  EXPECT_TRUE(plot.exportPng(dir.path() + "/p.png", 300, 200));
  EXPECT_GT(QFileInfo(dir.path() + "/p.png").size(), 0);
  EXPECT_TRUE(plot.exportCsv(dir.path() + "/p.csv"));
  EXPECT_EQ(QFileInfo(dir.path() + "/p.csv").size(), csv.toUtf8().size());
  plot.clearOverlays();
  EXPECT_EQ(plot.overlayCount(), 0);
}

// The dark theme kept the plots white with black axes: a plot follows its
// palette, also when the palette changes while it is shown.
TEST(DashboardPlot, FollowsTheThemesPalette) {
  widgets::LivePlot plot("Loss", "loss");
  plot.resize(400, 300);
  plot.show();
  QPalette dark = plot.palette();
  dark.setColor(QPalette::Base, QColor(30, 30, 30));
  dark.setColor(QPalette::Text, QColor(230, 230, 230));
  plot.setPalette(dark);
  QCustomPlot* cp = plot.customPlot();
  EXPECT_EQ(cp->xAxis->tickLabelColor(), QColor(230, 230, 230));
  EXPECT_EQ(cp->yAxis->labelColor(), QColor(230, 230, 230));
  const QImage img = cp->toPixmap(200, 150).toImage();
  EXPECT_LT(QColor(img.pixel(3, 3)).lightness(), 80) << "the plot's background is light";
}

// A run shorter than the device plots' sampling interval left one reading,
// and a line through one point draws nothing: the plot looked empty.
TEST(DashboardPlot, ALoneReadingIsDrawnAsADot) {
  widgets::LivePlot plot("Utilization", "%");
  plot.resize(400, 300);
  const QColor red(230, 0, 0);
  const int s = plot.addSeries("utilization", red, widgets::LivePlot::Style::Line);
  QCustomPlot* cp = plot.customPlot();
  auto red_in_axes = [&] {
    const QImage img = cp->toPixmap(400, 300).toImage();
    QRect r = cp->axisRect()->rect();
    int n = 0;
    for (int y = r.top(); y <= r.bottom(); ++y)
      for (int x = r.left(); x <= r.right(); ++x) {
        const QColor c(img.pixel(x, y));
        n += c.red() - c.green() > 60 && c.red() - c.blue() > 60;
      }
    return n;
  };
  ASSERT_FALSE(plot.legendOverData());
  EXPECT_EQ(red_in_axes(), 0);
  plot.addPoint(s, 0.4, 37.0);
  EXPECT_GE(red_in_axes(), 12) << "one reading, nothing drawn";
  plot.addPoints(s, {0.9, 1.4}, {40.0, 35.0});
  EXPECT_GE(red_in_axes(), 40) << "three readings: a line";
  // An earlier run's lone point stays a dot when the run is archived.
  plot.clear();
  plot.addPoint(s, 0.4, 37.0);
  plot.archiveRun("run 1");
  plot.replot();
  EXPECT_GE(red_in_axes(), 12) << "an archived lone reading, nothing drawn";
}

// A run's planned epochs span the epoch axis from the start: the empty
// plot shows 0..N (not QCustomPlot's 0..5) and the curves grow across it;
// data beyond the span widen it, and no span leaves the data alone.
TEST(DashboardPlot, TheKeySpanIsShownAtTheLeast) {
  widgets::LivePlot plot("Loss", "loss");
  plot.resize(400, 300);
  const int s = plot.addSeries("train", Qt::blue);
  QCPAxis* x = plot.customPlot()->xAxis;
  plot.setKeySpan(0, 10);
  EXPECT_DOUBLE_EQ(x->range().lower, 0);
  EXPECT_DOUBLE_EQ(x->range().upper, 10);
  plot.addPoints(s, {0.5, 1.0, 2.0}, {2.0, 1.5, 1.0});
  plot.replot();
  EXPECT_DOUBLE_EQ(x->range().lower, 0);
  EXPECT_DOUBLE_EQ(x->range().upper, 10);
  plot.addPoint(s, 12.0, 0.5);
  plot.replot();
  EXPECT_DOUBLE_EQ(x->range().upper, 12);
  plot.setKeySpan(0, 0);
  EXPECT_DOUBLE_EQ(x->range().lower, 0.5);
  EXPECT_DOUBLE_EQ(x->range().upper, 12);
  // Cleared (another project): the axes of a new plot, not the old data's.
  plot.clear();
  QCPAxis* y = plot.customPlot()->yAxis;
  EXPECT_DOUBLE_EQ(x->range().lower, 0);
  EXPECT_DOUBLE_EQ(x->range().upper, 5);
  EXPECT_DOUBLE_EQ(y->range().lower, 0);
  EXPECT_DOUBLE_EQ(y->range().upper, 5);
}

TEST(DashboardPlot, TopKBarsKeepOrder) {
  widgets::TopKBars bars;
  bars.setEntries({{"Bag", 0.9}, {"Coat", 0.05}});
  ASSERT_EQ(bars.entries().size(), 2);
  EXPECT_EQ(bars.entries()[0].name, "Bag");
  bars.clear();
  EXPECT_TRUE(bars.entries().isEmpty());
}

// A saliency map with one extreme pixel (as gradients have) still covers
// the image at full opacity: scaled to that pixel alone, the rest would be
// 5 % of the ramp, nearly transparent over a black image.
TEST(DashboardPlot, SaliencyOverlayIsStrongAtFullOpacity) {
  widgets::SaliencyView view;
  view.resize(240, 200);
  QImage black(8, 8, QImage::Format_RGB32);
  black.fill(Qt::black);
  view.setImage(black);
  std::vector<float> heat(64, 5.0f);
  heat[0] = 0;
  heat[9] = 100;
  view.setHeatmap(heat, 8, 8);
  view.setOpacity(1.0);
  const QImage shot = view.grab().toImage();
  const QColor hot = QColor::fromRgb(widgets::heat_color(1.0));
  int near_hot = 0;
  for (int y = 0; y < shot.height(); ++y)
    for (int x = 0; x < shot.width(); ++x) {
      const QColor c = shot.pixelColor(x, y);
      near_hot += std::abs(c.red() - hot.red()) + std::abs(c.green() - hot.green()) +
                      std::abs(c.blue() - hot.blue()) <
                  40;
    }
  // Most of the ~170×170 image, far more than the colour scale's hot end.
  EXPECT_GT(near_hot, 10000);
}

}  // namespace dc::test
