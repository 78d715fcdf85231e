// The Training tab's tuning aids: the LR finder runs in the background,
// plots loss against a log learning-rate axis and "Use" sets the learning
// rate as one undoable step; changing the batch offers the scaled rates.
#include "dashboard_test_util.h"

#include "gui/lr_finder.h"
#include "gui/settings_form.h"

#include <qcustomplot.h>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QUndoStack>
#include <cstdlib>

namespace dc::test {

TEST(DashboardTuning, LrFinderPlotsSuggestsAndUseIsUndoable) {
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  QUndoStack undo;
  panel.setUndoStack(&undo);
  const double lr_before = panel.config().optimizer.lr;
  const auto weights_before = ctx->weights().state.size();
  // A shorter test than the default 100 steps from 1e-7, to keep CI quick;
  // DC_SCREENSHOTS=DIR runs the default one and saves DIR/lr-finder.png
  // for the README.
  const char* shots = std::getenv("DC_SCREENSHOTS");
  LrFindOptions o;
  if (!shots) {
    o.steps = 25;
    o.start = 1e-5;
    o.end = 1;
  }
  gui::LrFinderDialog* d = panel.openLrFinder(o);
  ASSERT_NE(d, nullptr);
  QSignalSpy done(d, &gui::LrFinderDialog::finished);
  ASSERT_TRUE(done.wait(120000));
  ASSERT_TRUE(done.first().first().toBool()) << d->statusText().toStdString();
  const LrFindResult& r = d->result();
  EXPECT_GT(r.lrs.size(), 5u);
  EXPECT_GT(r.suggested_lr, 1e-6);
  EXPECT_LT(r.suggested_lr, 1.0);
  EXPECT_EQ(d->plot()->xAxis->scaleType(), QCPAxis::stLogarithmic);
  EXPECT_EQ(d->plot()->graph(1)->dataCount(), int(r.lrs.size()));
  EXPECT_EQ(d->plot()->graph(2)->dataCount(), 1);  // the suggestion's marker
  EXPECT_TRUE(d->statusText().contains("Suggested learning rate"));
  if (shots) {
    d->resize(720, 480);
    EXPECT_TRUE(d->grab().save(QString(shots) + "/lr-finder.png"));
  }
  EXPECT_EQ(ctx->weights().state.size(), weights_before);  // nothing trained for real
  QSignalSpy edited(&panel, &gui::TrainingPanel::settingsChanged);
  ASSERT_TRUE(d->useButton()->isEnabled());
  d->useButton()->click();
  // The form shows the value as text, to a few significant digits.
  EXPECT_NEAR(panel.config().optimizer.lr, r.suggested_lr, 1e-9 * r.suggested_lr);
  EXPECT_GE(edited.count(), 1);  // the project becomes modified
  ASSERT_EQ(undo.count(), 1);
  undo.undo();
  EXPECT_DOUBLE_EQ(panel.config().optimizer.lr, lr_before);
  undo.redo();
  EXPECT_NEAR(panel.config().optimizer.lr, r.suggested_lr, 1e-9 * r.suggested_lr);
}

TEST(DashboardTuning, ChangingTheBatchOffersScaledLearningRates) {
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  QUndoStack undo;
  panel.setUndoStack(&undo);
  const double lr = panel.config().optimizer.lr;
  EXPECT_TRUE(panel.batchHintText().isEmpty());
  panel.settingsForm("Run")->setValue("batch", int64_t(256));  // 64 -> 256
  const QString hint = panel.batchHintText();
  EXPECT_TRUE(hint.contains("linear rule")) << hint.toStdString();
  EXPECT_TRUE(hint.contains("square-root rule")) << hint.toStdString();
  EXPECT_TRUE(hint.contains("Largest batch")) << hint.toStdString();
  panel.batchHintApplySqrt()->click();
  EXPECT_NEAR(panel.config().optimizer.lr, lr * 2, 1e-12);
  EXPECT_TRUE(panel.batchHintText().isEmpty());
  undo.undo();
  EXPECT_NEAR(panel.config().optimizer.lr, lr, 1e-12);
  EXPECT_EQ(panel.config().batch, 256);  // the user's own edit stays
}

}  // namespace dc::test
