// The Inference tab for a network that reads a CSV series: instead of
// pictures it shows a test window, plotted by column name, and the
// network's top classes for it beside its true class, the same
// probabilities the engine's own prediction gives.
#include "dashboard_test_util.h"

#include <deepcanvas/plan.h>
#include <deepcanvas/probe.h>
#include <deepcanvas/sequence_data.h>
#include "gui/evaluation_view.h"
#include "gui/inference_panel.h"
#include "widgets/confusion_matrix_widget.h"
#include "widgets/image_grid.h"
#include "widgets/series_plot.h"
#include "widgets/top_k_bars.h"

#include <QSpinBox>
#include <cmath>

namespace dc::test {

namespace {

// Class 1 while the first feature is positive: an LSTM learns it in a few
// steps. Three-row windows of two features.
QString write_series_project(const QString& dir) {
  QString csv = "up,noise,label\n";
  for (int r = 0; r < 600; ++r) {
    const double up = std::sin(r * 0.3);
    csv += QString("%1,%2,%3\n").arg(up).arg((r * 7 % 11) / 11.0).arg(up > 0 ? 1 : 0);
  }
  QFile c(dir + "/wave.csv");
  if (!c.open(QIODevice::WriteOnly)) return {};
  c.write(csv.toUtf8());
  c.close();
  const char* project = R"({
 "format": "deepcanvas-project", "version": 1, "name": "wave",
 "graph": {
  "nodes": [
   {"id": 1, "type": "SequenceInput", "name": "input", "attrs": {"steps": 3, "features": 2},
    "pos": [0, 0]},
   {"id": 2, "type": "LSTM", "name": "lstm", "attrs": {"hidden_size": 8}, "pos": [200, 0]},
   {"id": 3, "type": "Dense", "name": "fc", "attrs": {"units": 2}, "pos": [400, 0]}
  ],
  "edges": [{"from": "input", "to": "lstm", "port": 0}, {"from": "lstm", "to": "fc", "port": 0}]
 },
 "dataset": {"kind": "csv_sequence", "path": "wave.csv", "window": 3, "target": "label",
             "test_fraction": 0.2},
 "training": {"epochs": 1, "batch": 64, "loss": "softmax_cross_entropy", "seed": 3,
              "optimizer": {"type": "adam", "lr": 0.02}}
})";
  QFile p(dir + "/wave.dcproj");
  if (!p.open(QIODevice::WriteOnly)) return {};
  p.write(project);
  return p.fileName();
}

// The engine's own predictions of the test samples with the weights in use
// and their normalisation, read as the network's Input reads them.
std::vector<SamplePrediction> engine_predictions(const gui::ProjectContext& ctx,
                                                 const Shape& input) {
  const gui::ModelWeights& w = ctx.weights();
  Plan plan(ctx.project().graph, 1, Plan::Use::Inference);
  plan.load_state(w.state, "weights");
  Dataset normalised = *ctx.testSet();
  normalised.mean = w.mean;
  normalised.stddev = w.stddev;
  images_as_row_sequences(normalised, input);  // training may have done it already
  EXPECT_EQ(normalised.sample_shape, input);
  return predict_samples(plan, normalised);
}

}  // namespace

TEST(DashboardSeries, ATestWindowIsPlottedAndPredictedWithTheWeightsInUse) {
  QTemporaryDir dir;
  auto ctx = gui::ProjectContext::load(write_series_project(dir.path()));
  ASSERT_TRUE(ctx);
  gui::InferencePanel panel(ctx.get());
  EXPECT_TRUE(panel.showsSeries());
  EXPECT_FALSE(panel.showsText());
  EXPECT_FALSE(panel.images()->isVisibleTo(&panel));  // no pictures to open
  // Nothing loaded yet: it says what to do.
  EXPECT_FALSE(panel.predictSeries());
  EXPECT_TRUE(panel.seriesText().contains("Load the project's dataset"))
      << panel.seriesText().toStdString();

  ctx->loadDataset(gui::DatasetSource{});
  ASSERT_TRUE(ctx->hasDataset());
  const std::shared_ptr<Dataset> test = ctx->testSet();
  ASSERT_GT(test->size(), 10);
  // No weights yet: the window is shown, and why there is no prediction.
  EXPECT_FALSE(panel.predictSeries());
  EXPECT_TRUE(panel.seriesText().contains("no weights yet")) << panel.seriesText().toStdString();
  ASSERT_EQ(panel.seriesPlot()->graphCount(), 2);
  EXPECT_EQ(panel.seriesPlot()->graph(0)->name(), "up");
  EXPECT_EQ(panel.seriesPlot()->graph(1)->name(), "noise");
  EXPECT_EQ(panel.seriesPlot()->graph(0)->data()->size(), 3);
  EXPECT_EQ(panel.seriesSample()->maximum(), test->size() - 1);

  gui::TrainingPanel training(ctx.get());
  ASSERT_TRUE(train_briefly(training, dir.path(), 60));
  ASSERT_TRUE(ctx->weights().valid());
  const std::vector<SamplePrediction> want = engine_predictions(*ctx, Shape{3, 2});
  for (int64_t i : {int64_t(0), int64_t(7), test->size() - 1}) {
    panel.seriesSample()->setValue(int(i));  // predicts on change
    ASSERT_TRUE(panel.predictSeries()) << panel.seriesText().toStdString();
    const auto& top = panel.seriesTopK()->entries();
    ASSERT_EQ(top.size(), 2);
    const SamplePrediction& p = want[size_t(i)];
    EXPECT_EQ(top[0].name.toStdString(), "class " + std::to_string(p.predicted)) << i;
    EXPECT_NEAR(top[0].probability, p.confidence, 1e-5) << i;
    const QString truth = QString("true: class %1").arg(test->labels[size_t(i)]);
    EXPECT_TRUE(panel.seriesText().contains(truth)) << panel.seriesText().toStdString();
    EXPECT_TRUE(panel.seriesText().contains(p.predicted == p.label ? "right" : "wrong"));
    // The plot shows the window as the file holds it.
    std::vector<float> raw(6);
    test->copy_values(i, 1, raw.data());
    EXPECT_FLOAT_EQ(float(panel.seriesPlot()->graph(0)->data()->begin()->value), raw[0]);
    EXPECT_FLOAT_EQ(float((panel.seriesPlot()->graph(1)->data()->begin() + 2)->value), raw[5]);
  }
}

// A window listed under the confusion matrix, double-clicked: the
// Inference tab's test-window view shows and predicts that window, with the
// weights the listing came from.
TEST(DashboardSeries, AListedWindowIsInspectedInTheSeriesView) {
  QTemporaryDir dir;
  auto ctx = gui::ProjectContext::load(write_series_project(dir.path()));
  ASSERT_TRUE(ctx);
  ctx->loadDataset(gui::DatasetSource{});
  gui::TrainingPanel training(ctx.get());
  ASSERT_TRUE(train_briefly(training, dir.path(), 60));
  gui::EvaluationView* view = training.evaluation();
  const auto& m = view->matrixWidget()->matrix();
  ASSERT_EQ(m.size(), 2u);
  const int t = m[1][1] > 0 ? 1 : 0;  // a non-empty diagonal cell
  ASSERT_GT(m[size_t(t)][size_t(t)], 0);
  QSignalSpy listed(view, &gui::EvaluationView::samplesListed);
  view->showCell(t, t);
  ASSERT_TRUE(listed.wait(120000));
  ASSERT_FALSE(view->listed().empty());
  gui::InspectedSample got;
  QObject::connect(view, &gui::EvaluationView::inspectRequested,
                   [&](const gui::InspectedSample& s) { got = s; });
  ASSERT_TRUE(view->inspect(0)) << view->cellText().toStdString();
  const SamplePrediction& listed_first = view->listed()[0];
  EXPECT_EQ(got.index, listed_first.index);
  EXPECT_TRUE(got.chw.empty());

  // Listed as small line charts of the window, not as empty cells.
  const QImage chart = gui::sample_image(*ctx->testSet(), got.index);
  ASSERT_FALSE(chart.isNull());
  int drawn = 0;
  for (int y = 0; y < chart.height(); ++y)
    for (int x = 0; x < chart.width(); ++x) drawn += chart.pixel(x, y) != qRgb(255, 255, 255);
  EXPECT_GT(drawn, chart.width());  // at least a line across it

  gui::InferencePanel panel(ctx.get());
  ASSERT_TRUE(panel.inspectSample(got)) << panel.messageText().toStdString();
  EXPECT_EQ(panel.seriesSample()->value(), int(got.index));
  EXPECT_TRUE(panel.seriesText().startsWith(QString("Window %1 of").arg(got.index)))
      << panel.seriesText().toStdString();
  ASSERT_FALSE(panel.seriesTopK()->entries().empty());
  EXPECT_EQ(panel.seriesTopK()->entries()[0].name, QString("class %1").arg(t));
  EXPECT_NEAR(panel.seriesTopK()->entries()[0].probability, listed_first.confidence, 1e-5);
}

// Looked at before the Dataset tab, the view loads the project's dataset
// (as Start does) instead of asking for it.
TEST(DashboardSeries, ShownItLoadsTheProjectsDataset) {
  QTemporaryDir dir;
  auto ctx = gui::ProjectContext::load(write_series_project(dir.path()));
  ASSERT_TRUE(ctx);
  gui::InferencePanel panel(ctx.get());
  ASSERT_FALSE(ctx->hasDataset());
  panel.show();
  ASSERT_TRUE(ctx->hasDataset());
  EXPECT_TRUE(panel.seriesPlot()->isVisibleTo(&panel));
  EXPECT_TRUE(panel.seriesText().contains("no weights yet")) << panel.seriesText().toStdString();
  EXPECT_EQ(panel.seriesSample()->maximum(), ctx->testSet()->size() - 1);
}

// A network that reads grey pictures row by row (the LSTM rows template)
// has a 28×28 Input, not a picture's: its test pictures are stepped through
// in the series view, their pixel rows plotted, and predicted as the
// engine predicts them.
TEST(DashboardSeries, ARowByRowModelPredictsItsTestPictures) {
  auto ctx =
      gui::ProjectContext::load(QString(DC_SOURCE_DIR) + "/resources/templates/lstm_rows.dcproj");
  ASSERT_TRUE(ctx);
  ctx->loadDataset(gui::DatasetSource{});
  ASSERT_TRUE(ctx->hasDataset());
  const std::shared_ptr<Dataset> test = ctx->testSet();
  ASSERT_TRUE(test->is_bytes());
  ASSERT_EQ(test->sample_shape, (Shape{1, 28, 28}));  // read as 28 rows by the network
  gui::InferencePanel panel(ctx.get());
  ASSERT_TRUE(panel.showsSeries());
  EXPECT_FALSE(panel.predictSeries());  // no weights yet
  EXPECT_TRUE(panel.seriesText().contains("no weights yet")) << panel.seriesText().toStdString();
  ASSERT_EQ(panel.seriesPlot()->graphCount(), widgets::SeriesPlot::kMaxFeatures);
  const std::vector<uint8_t> first = gui::sample_chw(*test, 0);
  EXPECT_EQ(panel.seriesPlot()->graph(3)->data()->at(5)->value, first[5 * 28 + 3]);

  QTemporaryDir dir;
  gui::TrainingPanel training(ctx.get());
  ASSERT_TRUE(train_briefly(training, dir.path(), 10));
  ASSERT_TRUE(ctx->weights().valid());
  panel.seriesSample()->setValue(9);
  ASSERT_TRUE(panel.predictSeries()) << panel.seriesText().toStdString();
  const SamplePrediction want = engine_predictions(*ctx, Shape{28, 28}).at(9);
  const auto& top = panel.seriesTopK()->entries();
  ASSERT_EQ(top.size(), 5);
  EXPECT_EQ(top[0].name, ctx->classNames()[want.predicted]);
  EXPECT_NEAR(top[0].probability, want.confidence, 1e-5);
}

// A picture network keeps the picture view.
TEST(DashboardSeries, AnImageModelShowsNoSeriesView) {
  auto ctx = sample_context();
  gui::InferencePanel panel(ctx.get());
  EXPECT_FALSE(panel.showsSeries());
  EXPECT_TRUE(panel.images()->isVisibleTo(&panel));
}

}  // namespace dc::test
