// Help → Benchmark This Machine…: the cached result at once, beside the
// catalog's GPUs, and a first visit without one that offers to measure.
// Only the last test measures, and asserts no figures (no timings in tests).
#include "gui/benchmark_dialog.h"
#include "bench_cache_fixture.h"
#include "gui/main_window.h"
#include "gui/pytorch_run.h"
#include "gui/training_panel.h"
#include "gui/training_session.h"
#include "gui_test_util.h"

#include <deepcanvas/advisor/gpu_catalog.h>
#include <gtest/gtest.h>

#include <QAction>
#include <QCheckBox>
#include <QCoreApplication>
#include <QDir>
#include <QLabel>
#include <QPushButton>
#include <QSettings>
#include <QTableWidget>

namespace dc::test {
namespace {

class BenchmarkDialogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ensureApp();
    QSettings().setValue("benchmark/allGpus", false);
  }
};

TEST_F(BenchmarkDialogTest, ShowsTheCachedResultBesideCatalogGpus) {
  ScratchBenchCache cache(true);
  gui::BenchmarkDialog d;
  ASSERT_TRUE(d.hasResult());
  EXPECT_FALSE(d.measuring());
  EXPECT_EQ(d.measureButton()->text(), "&Re-measure");
  EXPECT_TRUE(d.statusLabel()->text().contains("2026-01-02T03:04:05Z"));
  const QTableWidget* t = d.table();
  ASSERT_GE(t->rowCount(), 2);
  EXPECT_TRUE(t->item(0, 0)->text().startsWith("This machine"));
  EXPECT_EQ(t->item(0, 1)->text(), "77.5");  // fp32 GFLOP/s
  EXPECT_EQ(t->item(0, 3)->text(), "41.5");  // conv2d GFLOP/s
  EXPECT_EQ(t->item(0, 4)->text(), "12.5");  // bandwidth GB/s
  // The featured GPUs with their datasheet figures: the H100 SXM's 67 TFLOP/s fp32.
  const int featured = t->rowCount() - 1;
  EXPECT_EQ(featured, gui::BenchmarkDialog::featuredGpus().size());
  bool h100 = false;
  for (int r = 1; r < t->rowCount(); ++r)
    if (t->item(r, 0)->text().startsWith("NVIDIA H100 SXM")) {
      h100 = true;
      EXPECT_EQ(t->item(r, 1)->text(), "67000");
      EXPECT_EQ(t->item(r, 4)->text(), "3350");
    }
  EXPECT_TRUE(h100);
  // All of the catalog, remembered for the next visit.
  d.allGpusBox()->setChecked(true);
  EXPECT_EQ(t->rowCount(), 1 + int(advisor::load_gpu_catalog().size()));
  EXPECT_TRUE(QSettings().value("benchmark/allGpus").toBool());
  gui::BenchmarkDialog again;
  EXPECT_TRUE(again.allGpusBox()->isChecked());
  QSettings().setValue("benchmark/allGpus", false);

  // Not while training runs.
  d.setBlocked("training");
  EXPECT_FALSE(d.measureButton()->isEnabled());
  d.measure();
  EXPECT_FALSE(d.measuring());
  d.setBlocked({});
  EXPECT_TRUE(d.measureButton()->isEnabled());
}

TEST_F(BenchmarkDialogTest, WithoutACachedResultItOffersToMeasure) {
  ScratchBenchCache cache(false);
  gui::BenchmarkDialog d;
  EXPECT_FALSE(d.hasResult());
  EXPECT_EQ(d.measureButton()->text(), "&Measure");
  EXPECT_EQ(d.table()->item(0, 1)->text(), "not measured");
  EXPECT_TRUE(d.statusLabel()->text().contains("not been measured"));
}

TEST_F(BenchmarkDialogTest, TheHelpMenuOpensItWithTheCachedResult) {
  ScratchBenchCache cache(true);
  gui::MainWindow w;
  QAction* a = w.findChild<QAction*>("actionBenchmark");
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->shortcut().isEmpty());
  a->trigger();
  auto* d = w.findChild<gui::BenchmarkDialog*>();
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->isVisible());
  EXPECT_TRUE(d->hasResult());
  EXPECT_FALSE(d->measuring());     // cached: nothing is measured
  EXPECT_EQ(w.openBenchmark(), d);  // raised, not opened twice
  d->close();
}

// While a measurement runs, Training-tab runs and Run with PyTorch are
// refused with the reason; quitting joins the worker (it used to be
// detached, so static destructors could run under it). This one measures
// for real (a few seconds) but asserts no figures.
TEST_F(BenchmarkDialogTest, RunsWaitForAMeasurementAndQuittingJoinsIt) {
  ScratchBenchCache cache(false);
  gui::MainWindow w;
  QStringList errors;
  w.setErrorHandler([&](const QString& e) { errors << e; });
  gui::BenchmarkDialog* d = w.openBenchmark();  // no cached result: measures
  ASSERT_TRUE(d->measuring());
  EXPECT_TRUE(w.benchmarkMeasuring());
  w.trainingPanel()->startTraining();
  EXPECT_FALSE(w.trainingPanel()->session()->active());
  EXPECT_TRUE(w.trainingPanel()->logText().contains("Benchmark This Machine"))
      << w.trainingPanel()->logText().toStdString();
  gui::PyTorchRunOptions o;
  o.python = "/usr/bin/python3";
  o.export_dir = QDir::temp().filePath("dc-never-exported");
  EXPECT_FALSE(w.runWithPyTorch(&o));
  ASSERT_FALSE(errors.isEmpty());
  EXPECT_TRUE(errors.last().contains("Benchmark This Machine")) << errors.last().toStdString();
  EXPECT_FALSE(QDir(o.export_dir).exists());
  // What QCoreApplication::quit() emits before static destructors run.
  ASSERT_TRUE(
      QMetaObject::invokeMethod(QCoreApplication::instance(), "aboutToQuit", Qt::DirectConnection));
  EXPECT_FALSE(gui::BenchmarkDialog::anyMeasuring());  // joined, not left running
  EXPECT_FALSE(w.benchmarkMeasuring());
  d->close();
}

}  // namespace
}  // namespace dc::test
