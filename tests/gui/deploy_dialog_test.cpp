// File → Export for Deployment…: the menu opens the dialog; with the sample
// project and a briefly trained checkpoint a measurement fills the fp32 /
// fp16 / int8 table, Export writes the int8 QDQ model, cancelling writes
// nothing, and the engine's accuracy gate refuses an int8 model that drops
// more than allowed, and fine-tuning for int8 (QAT) replaces the int8 model
// (or, cancelled, leaves it). Few calibration and test samples keep it
// short.
#include "gui/deploy_dialog.h"
#include "dashboard_test_util.h"
#include "gui/inference_panel.h"
#include "gui/main_window.h"
#include "gui/project_context.h"
#include "gui_test_util.h"

#include <deepcanvas/int8_inference.h>
#include <deepcanvas/quantize.h>
#include <gtest/gtest.h>

#include <QAction>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>

namespace dc::test {
namespace {

using Format = gui::DeployDialog::Format;

class DeployDialogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ensureApp();
    w = std::make_unique<gui::MainWindow>();
    w->setErrorHandler([](const QString&) {});
    ASSERT_TRUE(w->openFile(sourcePath("sample_data/sample_project.dcproj")));
  }
  void loadData() {
    gui::DatasetSource s;
    s.kind = gui::DatasetSource::Kind::Sample;
    w->context()->loadDataset(s);
  }
  bool loadTrained() {
    TrainedRun& run = TrainedRun::get();
    if (!run.ok) return false;
    w->context()->setWeights(gui::weights_from_checkpoint(run.checkpoint));
    return true;
  }
  gui::DeployDialog* open() {
    QAction* a = w->action("actionExportDeployment");
    if (!a) return nullptr;
    a->trigger();
    auto* d = w->findChild<gui::DeployDialog*>();
    if (d) d->setQuietErrors(true);
    return d;
  }
  static gui::DeployDialog::Options small() {
    gui::DeployDialog::Options o;
    o.method = CalibrationMethod::Percentile;
    o.calibrate = 64;
    o.test_samples = 200;
    o.max_drop = 100;
    return o;
  }
  static bool measureAndWait(gui::DeployDialog* d) {
    QSignalSpy done(d, &gui::DeployDialog::measured);
    if (!d->measure()) return false;
    // A bound for a stuck worker, not a timing check.
    if (!done.wait(300000)) return false;
    return done.first().at(0).toBool();
  }
  std::unique_ptr<gui::MainWindow> w;
};

TEST_F(DeployDialogTest, MenuOpensItAndItSaysWhatIsMissing) {
  gui::DeployDialog* d = open();
  ASSERT_NE(d, nullptr);
  EXPECT_TRUE(d->isVisible());
  EXPECT_EQ(w->openDeployDialog(), d);  // raised, not a second one
  // Fits the 1280×720 screen the app is designed for.
  EXPECT_LE(d->width(), 1280);
  EXPECT_LE(d->height(), 720);
  EXPECT_LE(d->minimumSizeHint().height(), 600);

  // No trained weights: refused, saying what to do.
  EXPECT_FALSE(d->measure());
  EXPECT_TRUE(d->statusText().contains("no trained weights")) << d->statusText().toStdString();
  EXPECT_TRUE(d->statusText().contains("Training tab")) << d->statusText().toStdString();
  EXPECT_FALSE(d->exportButton(Format::Fp32)->isEnabled());
  QTemporaryDir dir;
  EXPECT_FALSE(d->exportModel(Format::Fp32, dir.path() + "/m.onnx"));
  EXPECT_FALSE(QFileInfo::exists(dir.path() + "/m.onnx"));

  // Weights but no dataset: Measure would load the project's; one that
  // cannot be read is said, naming the Dataset tab.
  ASSERT_TRUE(loadTrained());
  EXPECT_FALSE(w->context()->hasDataset());
  EXPECT_TRUE(d->statusText().startsWith("Measure loads the project's dataset"))
      << d->statusText().toStdString();
  DatasetSpec gone = w->context()->project().dataset;
  gone.path = (QDir::tempPath() + "/no-such-dataset-folder").toStdString();
  w->context()->setDatasetSpec(gone);
  EXPECT_FALSE(d->measure());
  EXPECT_TRUE(d->statusText().startsWith("The project's dataset could not be loaded"))
      << d->statusText().toStdString();
  EXPECT_TRUE(d->statusText().contains("Dataset tab")) << d->statusText().toStdString();
  // Blocked (the window does this while training runs): refused with the reason.
  d->setBlocked("Not while training runs");
  EXPECT_FALSE(d->measureButton()->isEnabled());
  EXPECT_FALSE(d->measure());
  EXPECT_EQ(d->statusText(), "Not while training runs");
  d->setBlocked({});
  EXPECT_TRUE(d->measureButton()->isEnabled());
  // int8 needs a measurement; fp32 does not.
  EXPECT_FALSE(d->exportModel(Format::Int8, dir.path() + "/m8.onnx"));
  EXPECT_TRUE(d->statusText().contains("Measure first")) << d->statusText().toStdString();
  EXPECT_FALSE(QFileInfo::exists(dir.path() + "/m8.onnx"));
  EXPECT_TRUE(d->exportModel(Format::Fp32, dir.path() + "/m.onnx"))
      << d->statusText().toStdString();
  EXPECT_GT(QFileInfo(dir.path() + "/m.onnx").size(), 0);
}

// The Inference tab's choice of weights is what the dialog (and File >
// Export) uses: its "no trained weights" remedy names that choice.
TEST_F(DeployDialogTest, UsesTheWeightsChosenInTheInferenceTab) {
  TrainedRun& run = TrainedRun::get();
  ASSERT_TRUE(run.ok);
  gui::DeployDialog* d = open();
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->exportButton(Format::Fp32)->isEnabled());
  EXPECT_TRUE(d->statusText().contains("Inference tab's Weights list"))
      << d->statusText().toStdString();
  ASSERT_TRUE(w->inferencePanel()->loadCheckpoint(run.checkpoint, "A checkpoint"));
  EXPECT_FALSE(w->context()->weights().valid());  // the latest run's: still none
  EXPECT_TRUE(w->context()->weightsInUse().valid());
  EXPECT_TRUE(d->exportButton(Format::Fp32)->isEnabled());
  QTemporaryDir dir;
  ASSERT_TRUE(d->exportModel(Format::Fp32, dir.path() + "/m.onnx"))
      << d->statusText().toStdString();
  EXPECT_TRUE(d->statusText().contains("of A checkpoint")) << d->statusText().toStdString();
  // File > Export > ONNX says which weights it wrote, too.
  ASSERT_TRUE(w->exportOnnx(dir.path() + "/e.onnx"));
  EXPECT_TRUE(w->statusBar()->currentMessage().contains("A checkpoint"))
      << w->statusBar()->currentMessage().toStdString();
  // Back to the latest run's weights (none): refused again.
  w->inferencePanel()->useCurrentWeights();
  EXPECT_FALSE(w->context()->weightsInUse().valid());
  EXPECT_FALSE(d->exportButton(Format::Fp32)->isEnabled());
  EXPECT_FALSE(d->exportModel(Format::Fp32, dir.path() + "/n.onnx"));
}

// Straight after opening a project, with weights chosen in the Inference
// tab: Measure loads the project's dataset itself, as Start in the Training
// tab does.
TEST_F(DeployDialogTest, MeasureLoadsTheProjectsDatasetWhenNoneIsLoaded) {
  ASSERT_TRUE(loadTrained());
  gui::DeployDialog* d = open();
  ASSERT_NE(d, nullptr);
  ASSERT_FALSE(w->context()->hasDataset());
  d->setOptions(small());
  ASSERT_TRUE(measureAndWait(d)) << d->statusText().toStdString();
  EXPECT_TRUE(w->context()->hasDataset());
  EXPECT_TRUE(d->statusText().startsWith("With ")) << d->statusText().toStdString();
  EXPECT_TRUE(d->statusText().contains(": measured on ")) << d->statusText().toStdString();
}

TEST_F(DeployDialogTest, OptionsAreRemembered) {
  gui::DeployDialog* d = open();
  ASSERT_NE(d, nullptr);
  gui::DeployDialog::Options o;
  o.method = CalibrationMethod::Entropy;
  o.calibrate = 77;
  o.test_samples = 123;
  o.max_drop = 0.5;
  o.preprocessing = true;
  d->setOptions(o);
  d->close();  // deleted on close
  QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
  gui::DeployDialog again(w->context());
  const auto r = again.options();
  EXPECT_EQ(r.method, CalibrationMethod::Entropy);
  EXPECT_EQ(r.calibrate, 77);
  EXPECT_EQ(r.test_samples, 123);
  EXPECT_DOUBLE_EQ(r.max_drop, 0.5);
  EXPECT_TRUE(r.preprocessing);
  again.setOptions(small());
}

TEST_F(DeployDialogTest, MeasuresTheThreeAndExportsInt8) {
  ASSERT_TRUE(loadTrained());
  loadData();
  gui::DeployDialog* d = open();
  ASSERT_NE(d, nullptr);
  d->setOptions(small());
  ASSERT_TRUE(measureAndWait(d)) << d->statusText().toStdString();
  ASSERT_TRUE(d->hasResult());
  const auto& r = d->result();
  EXPECT_EQ(r.accuracy.samples, 200);
  EXPECT_EQ(r.calibrated, 64);
  EXPECT_GT(r.accuracy.fp32, 0.3);  // trained: well above chance (10 classes)
  EXPECT_GT(r.accuracy.int8, 0.3);
#ifdef DC_HAVE_ONNX
  ASSERT_GT(r.bytes[0], 0);
  EXPECT_LT(double(r.bytes[2]), 0.30 * double(r.bytes[0]));
  EXPECT_LT(r.bytes[1], r.bytes[0]);
#endif
  EXPECT_GT(r.latency1[0], 0);
  EXPECT_GT(r.latency_batch[0], 0);
  EXPECT_GT(r.latency1[2], 0);
  EXPECT_EQ(r.latency1[1], 0);  // fp16: not measured on the CPU
  EXPECT_EQ(d->progress()->value(), 1000);

  const QTableWidget* t = d->table();
  ASSERT_EQ(t->rowCount(), 3);
  for (int row = 0; row < 3; ++row)
    for (int c = 0; c < t->columnCount(); ++c) ASSERT_NE(t->item(row, c), nullptr);
  EXPECT_EQ(t->item(2, gui::DeployDialog::kPrecision)->text(), "int8");
  EXPECT_TRUE(t->item(0, gui::DeployDialog::kAccuracy)->text().endsWith("%"));
  EXPECT_TRUE(t->item(1, gui::DeployDialog::kAccuracy)->text().startsWith("≈"));
  EXPECT_TRUE(t->item(1, gui::DeployDialog::kAccuracy)->toolTip().contains("no fp16 executor"));
  EXPECT_TRUE(t->item(2, gui::DeployDialog::kAccuracy)->text().contains("simulated"));
  // The real int8 kernels where the build has them (oneDNN), named.
  EXPECT_TRUE(t->item(2, gui::DeployDialog::kLatency1)
                  ->text()
                  .contains(int8_inference_available() ? "oneDNN int8" : "no int8 runtime"))
      << t->item(2, gui::DeployDialog::kLatency1)->text().toStdString();
  EXPECT_EQ(t->item(1, gui::DeployDialog::kLatency1)->text(), "—");
  EXPECT_TRUE(t->item(1, gui::DeployDialog::kLatency1)->toolTip().contains("GPUs"));
  EXPECT_TRUE(t->item(0, gui::DeployDialog::kLatency1)->text().endsWith("ms"));
  EXPECT_TRUE(t->horizontalHeaderItem(gui::DeployDialog::kLatencyBatch)
                  ->text()
                  .contains(QString("batch %1").arg(r.batch)));

#ifdef DC_HAVE_ONNX
  QTemporaryDir dir;
  const QString out = dir.path() + "/model_int8.onnx";
  ASSERT_TRUE(d->exportButton(Format::Int8)->isEnabled());
  ASSERT_TRUE(d->exportModel(Format::Int8, out)) << d->statusText().toStdString();
  QFile f(out);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  const QByteArray bytes = f.readAll();
  EXPECT_EQ(bytes.size(), r.bytes[2]);  // what the table showed
  EXPECT_TRUE(bytes.contains("QuantizeLinear"));
  EXPECT_TRUE(bytes.contains("DequantizeLinear"));
  // fp16, and the preprocessing inside (uint8 in).
  gui::DeployDialog::Options o = small();
  o.preprocessing = true;
  d->setOptions(o);
  ASSERT_TRUE(d->exportModel(Format::Fp16, dir.path() + "/model_fp16.onnx"))
      << d->statusText().toStdString();
  EXPECT_GT(QFileInfo(dir.path() + "/model_fp16.onnx").size(), 0);

  // Another calibration than the one measured: measure again first.
  o.method = CalibrationMethod::MinMax;
  d->setOptions(o);
  EXPECT_FALSE(d->exportModel(Format::Int8, dir.path() + "/again.onnx"));
  EXPECT_TRUE(d->statusText().contains("Measure again")) << d->statusText().toStdString();
  EXPECT_FALSE(QFileInfo::exists(dir.path() + "/again.onnx"));
  d->setOptions(small());
#endif
  // New weights make the measurement stale.
  ASSERT_TRUE(loadTrained());
  EXPECT_FALSE(d->exportButton(Format::Int8)->isEnabled());
}

TEST_F(DeployDialogTest, CancelStopsWithoutWriting) {
  ASSERT_TRUE(loadTrained());
  loadData();
  gui::DeployDialog* d = open();
  ASSERT_NE(d, nullptr);
  gui::DeployDialog::Options o = small();
  o.calibrate = 100000;  // more than the set: all of it, so there is time to cancel
  o.test_samples = 0;
  d->setOptions(o);
  QTemporaryDir dir;
  QSettings().setValue("dialogs/exports", dir.path());
  QSignalSpy done(d, &gui::DeployDialog::measured);
  ASSERT_TRUE(d->measure());
  EXPECT_TRUE(d->running());
  EXPECT_TRUE(d->cancelButton()->isEnabled());
  EXPECT_FALSE(d->measureButton()->isEnabled());
  d->cancel();
  ASSERT_TRUE(done.wait(300000));
  EXPECT_FALSE(done.first().at(0).toBool());
  EXPECT_FALSE(d->running());
  EXPECT_FALSE(d->hasResult());
  EXPECT_TRUE(d->statusText().contains("Cancelled")) << d->statusText().toStdString();
  EXPECT_TRUE(QDir(dir.path()).entryList(QDir::NoDotAndDotDot | QDir::AllEntries).isEmpty());
  EXPECT_FALSE(d->exportButton(Format::Int8)->isEnabled());
  EXPECT_TRUE(d->measureButton()->isEnabled());
  d->setOptions(small());
}

TEST_F(DeployDialogTest, FineTunesTheInt8ModelAndExportsIt) {
  ASSERT_TRUE(loadTrained());
  loadData();
  gui::DeployDialog* d = open();
  ASSERT_NE(d, nullptr);
  gui::DeployDialog::Options o = small();
  o.method = CalibrationMethod::MinMax;
  d->setOptions(o);
  // Fine-tuning starts from a measurement.
  EXPECT_FALSE(d->qatButton()->isEnabled());
  EXPECT_FALSE(d->fineTuneInt8(1, 10));
  EXPECT_TRUE(d->statusText().contains("Measure first")) << d->statusText().toStdString();
  ASSERT_TRUE(measureAndWait(d)) << d->statusText().toStdString();
  EXPECT_TRUE(d->qatButton()->isEnabled());
  const double ptq = d->result().accuracy.int8;
  const double fp32 = d->result().accuracy.fp32;
  const auto calibrated = d->result().quantized;

  // Cancelled: the calibrated model stays.
  {
    QSignalSpy done(d, &gui::DeployDialog::fineTuned);
    ASSERT_TRUE(d->fineTuneInt8(50));
    EXPECT_TRUE(d->running());
    EXPECT_FALSE(d->qatButton()->isEnabled());
    EXPECT_TRUE(d->cancelButton()->isEnabled());
    d->cancel();
    ASSERT_TRUE(done.wait(300000));
    EXPECT_FALSE(done.first().at(0).toBool());
    EXPECT_TRUE(d->statusText().contains("cancelled")) << d->statusText().toStdString();
    EXPECT_EQ(d->result().qat_epochs, 0);
    EXPECT_EQ(d->result().quantized, calibrated);
  }

  QSignalSpy done(d, &gui::DeployDialog::fineTuned);
  ASSERT_TRUE(d->fineTuneInt8(1, 10));
  ASSERT_TRUE(done.wait(300000));
  ASSERT_TRUE(done.first().at(0).toBool()) << d->statusText().toStdString();
  const auto& r = d->result();
  EXPECT_EQ(r.qat_epochs, 1);
  EXPECT_EQ(r.ptq_int8, ptq);
  EXPECT_EQ(r.accuracy.fp32, fp32);  // the fp32 model is the one loaded
  EXPECT_EQ(r.accuracy.samples, 200);
  EXPECT_GT(r.accuracy.int8, 0.3);
  ASSERT_NE(r.quantized, calibrated);
  ASSERT_EQ(r.quantized->ops.size(), calibrated->ops.size());
  bool moved = false;
  for (size_t k = 0; k < calibrated->ops.size(); ++k)
    moved = moved || r.quantized->ops[k].input_scale != calibrated->ops[k].input_scale;
  EXPECT_TRUE(moved) << "no learned range moved";
  EXPECT_TRUE(d->table()->item(2, gui::DeployDialog::kAccuracy)->text().contains("QAT"));
  EXPECT_TRUE(d->statusText().contains("Fine-tuned for int8")) << d->statusText().toStdString();
  std::printf("deploy dialog: fp32 %.2f%%, minmax int8 %.2f%%, after 10 QAT steps %.2f%%\n",
              100 * fp32, 100 * ptq, 100 * r.accuracy.int8);
#ifdef DC_HAVE_ONNX
  QTemporaryDir dir;
  EXPECT_TRUE(d->exportModel(Format::Int8, dir.path() + "/qat.onnx"))
      << d->statusText().toStdString();
  EXPECT_GT(QFileInfo(dir.path() + "/qat.onnx").size(), 0);
#endif
  d->setOptions(small());
}

TEST_F(DeployDialogTest, TheGateRefusesAnInt8ModelThatDropsTooMuch) {
  ASSERT_TRUE(loadTrained());
  loadData();
  gui::DeployDialog* d = open();
  ASSERT_NE(d, nullptr);
  // A percentile that clips nearly everything, as the CLI's test of the gate.
  gui::DeployDialog::Options o = small();
  o.percentile = 50;
  o.calibrate = 32;
  o.max_drop = 1.0;
  d->setOptions(o);
  ASSERT_TRUE(measureAndWait(d)) << d->statusText().toStdString();
  ASSERT_GT(d->result().accuracy.drop_points(), 1.0);
  const QString refusal = d->int8Refusal();
  EXPECT_TRUE(refusal.contains("points lower")) << refusal.toStdString();
  const QString advice = gui::DeployDialog::gateAdvice(CalibrationMethod::Percentile, o.calibrate);
  // In the dialog's words: no CLI flags.
  EXPECT_FALSE(advice.contains("--")) << advice.toStdString();
  EXPECT_TRUE(advice.contains("entropy or minmax")) << advice.toStdString();
  EXPECT_TRUE(refusal.contains(advice)) << refusal.toStdString();
  EXPECT_TRUE(d->statusText().contains(advice)) << d->statusText().toStdString();
  QTemporaryDir dir;
  const QString out = dir.path() + "/refused.onnx";
  EXPECT_FALSE(d->exportModel(Format::Int8, out));
  EXPECT_TRUE(d->statusText().contains(advice)) << d->statusText().toStdString();
  EXPECT_FALSE(QFileInfo::exists(out));
  // The same measurement under a looser maximum passes the gate.
  o.max_drop = 100;
  d->setOptions(o);
  EXPECT_TRUE(d->int8Refusal().isEmpty());
  d->setOptions(small());
}

}  // namespace
}  // namespace dc::test
