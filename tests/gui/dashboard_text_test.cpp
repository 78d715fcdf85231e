// The Inference tab for a character model: it shows a prompt instead of
// images, and the weights trained in the Training tab continue the prompt.
// The text is periodic ("abcd" repeated), so a trained model's near-greedy
// continuation is known exactly.
#include "dashboard_test_util.h"

#include "gui/inference_panel.h"
#include "widgets/image_grid.h"

#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSettings>
#include <QSpinBox>

namespace dc::test {

namespace {

// Embedding -> a Dense at every step over 6-character windows of a text
// whose vocabulary is padding + "abcd".
QString write_periodic_project(const QString& dir) {
  QString text;
  for (int i = 0; i < 2000; ++i) text += "abcd";
  QFile t(dir + "/abcd.txt");
  if (!t.open(QIODevice::WriteOnly)) return {};
  t.write(text.toUtf8());
  t.close();
  const char* project = R"({
 "format": "deepcanvas-project", "version": 1, "name": "abcd",
 "graph": {
  "nodes": [
   {"id": 1, "type": "SequenceInput", "name": "input",
    "attrs": {"steps": 6, "features": 1, "kind": "tokens"}, "pos": [0, 0]},
   {"id": 2, "type": "Embedding", "name": "embed",
    "attrs": {"vocab_size": 5, "dim": 8, "padding_idx": 0}, "pos": [200, 0]},
   {"id": 3, "type": "TimeDistributedDense", "name": "fc", "attrs": {"units": 5},
    "pos": [400, 0]}
  ],
  "edges": [{"from": "input", "to": "embed", "port": 0},
            {"from": "embed", "to": "fc", "port": 0}]
 },
 "dataset": {"kind": "text", "path": "abcd.txt", "window": 6, "stride": 1,
             "test_fraction": 0.1},
 "training": {"epochs": 1, "batch": 64, "loss": "softmax_cross_entropy", "seed": 3,
              "optimizer": {"type": "adam", "lr": 0.05}}
})";
  QFile p(dir + "/abcd.dcproj");
  if (!p.open(QIODevice::WriteOnly)) return {};
  p.write(project);
  return p.fileName();
}

}  // namespace

TEST(DashboardText, ACharacterModelContinuesAPromptWithTheTrainedWeights) {
  QTemporaryDir dir;
  const QString path = write_periodic_project(dir.path());
  ASSERT_FALSE(path.isEmpty());
  auto ctx = gui::ProjectContext::load(path);
  ASSERT_TRUE(ctx);
  ctx->loadDataset(gui::DatasetSource{});  // the project's own text
  ASSERT_TRUE(ctx->hasDataset());
  gui::InferencePanel panel(ctx.get());
  EXPECT_TRUE(panel.showsText());
  EXPECT_FALSE(panel.images()->isVisibleTo(&panel));

  // No weights yet: a message, nothing generated.
  panel.textPrompt()->setText("ab");
  EXPECT_FALSE(panel.generateText());
  EXPECT_TRUE(panel.messageText().contains("no weights")) << panel.messageText().toStdString();

  gui::TrainingPanel training(ctx.get());
  ASSERT_TRUE(train_briefly(training, dir.path(), 100));
  ASSERT_TRUE(ctx->weights().valid());

  panel.textLength()->setValue(20);
  panel.textTemperature()->setValue(0.05);  // near-greedy: the likeliest character
  ASSERT_TRUE(panel.generateText()) << panel.messageText().toStdString();
  EXPECT_EQ(panel.generatedText()->toPlainText().toStdString(), "abcdabcdabcdabcdabcdab");
  EXPECT_TRUE(panel.messageText().isEmpty());

  // A character the text never had is named; the last text stays.
  panel.textPrompt()->setText("abz");
  EXPECT_FALSE(panel.generateText());
  EXPECT_TRUE(panel.messageText().contains("'z' never occurs"))
      << panel.messageText().toStdString();
  EXPECT_EQ(panel.generatedText()->toPlainText().toStdString(), "abcdabcdabcdabcdabcdab");

  // Length and temperature are remembered for the next panel.
  gui::InferencePanel again(ctx.get());
  EXPECT_EQ(again.textLength()->value(), 20);
  EXPECT_DOUBLE_EQ(again.textTemperature()->value(), 0.05);
  QSettings().remove("inference");
}

TEST(DashboardText, AnImageModelShowsNoTextBox) {
  auto ctx = sample_context();
  gui::InferencePanel panel(ctx.get());
  EXPECT_FALSE(panel.showsText());
  EXPECT_TRUE(panel.images()->isVisibleTo(&panel));
}

}  // namespace dc::test
