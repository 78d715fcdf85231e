// The plot widgets alone: 100k-point series, overlays of earlier runs,
// hover values and the CSV/PNG exports.
#include "widgets/live_plot.h"
#include "widgets/top_k_bars.h"

#include <gtest/gtest.h>

#include <QFileInfo>
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

TEST(DashboardPlot, TopKBarsKeepOrder) {
  widgets::TopKBars bars;
  bars.setEntries({{"Bag", 0.9}, {"Coat", 0.05}});
  ASSERT_EQ(bars.entries().size(), 2);
  EXPECT_EQ(bars.entries()[0].name, "Bag");
  bars.clear();
  EXPECT_TRUE(bars.entries().isEmpty());
}

}  // namespace dc::test
