// The Training tab's settings come from the engine's settings table: a
// control per row (range, choices, help), values typed as text checked by
// the row, a refused value named before any run starts.
#include "dashboard_test_util.h"

#include "gui/settings_form.h"

#include <deepcanvas/settings.h>

#include <QComboBox>
#include <QLineEdit>
#include <QSpinBox>

namespace dc::test {

TEST(DashboardSettings, EveryTrainingSettingHasAControlFromTheTable) {
  auto ctx = gui::ProjectContext::load(sample_project_path());
  gui::TrainingPanel panel(ctx.get());
  // Owned elsewhere: the Dataset tab (split, normalisation, augmentation) and
  // the device list, which names this machine's devices.
  const QStringList elsewhere = {"val_split", "normalize", "device"};
  int rows = 0;
  for (const SettingSpec& s : training_settings()) {
    const QString key = QString::fromStdString(s.attr.name);
    const QString group = QString::fromStdString(s.group);
    if (group == "Augmentation" || elsewhere.contains(key)) continue;
    gui::SettingsForm* form = panel.settingsForm(group);
    ASSERT_NE(form, nullptr) << s.group;
    QWidget* w = form->control(key);
    ASSERT_NE(w, nullptr) << s.attr.name;
    EXPECT_TRUE(w->toolTip().contains(QString::fromStdString(s.attr.help))) << s.attr.name;
    if (s.attr.type == AttrType::Enum) {
      auto* c = qobject_cast<QComboBox*>(w);
      ASSERT_NE(c, nullptr) << s.attr.name;
      ASSERT_EQ(c->count(), int(s.attr.choices.size())) << s.attr.name;
      for (int i = 0; i < c->count(); ++i)
        EXPECT_EQ(c->itemText(i).toStdString(), s.attr.choices[size_t(i)]);
    }
    if (auto* b = qobject_cast<QSpinBox*>(w)) EXPECT_EQ(b->maximum(), int(s.attr.max));
    ++rows;
  }
  EXPECT_GE(rows, 20);
  // A 0 that means "every core" says so.
  auto* threads = qobject_cast<QSpinBox*>(panel.settingsForm("Run")->control("threads"));
  ASSERT_NE(threads, nullptr);
  EXPECT_EQ(threads->specialValueText(), "every core");
  // The project's values are shown.
  EXPECT_EQ(panel.config().optimizer.type, ctx->project().training.optimizer.type);
  EXPECT_DOUBLE_EQ(panel.config().optimizer.lr, ctx->project().training.optimizer.lr);
  EXPECT_EQ(panel.config().epochs, ctx->project().training.epochs);
}

TEST(DashboardSettings, TypedValuesAreCheckedByTheTableBeforeARun) {
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  QSignalSpy edited(&panel, &gui::TrainingPanel::settingsChanged);
  auto* eps = qobject_cast<QLineEdit*>(panel.settingsForm("Optimizer")->control("optimizer.eps"));
  ASSERT_NE(eps, nullptr);
  // Small numbers read as written.
  eps->setText("1e-8");
  Q_EMIT eps->textEdited(eps->text());
  EXPECT_DOUBLE_EQ(panel.config().optimizer.eps, 1e-8);
  EXPECT_EQ(edited.count(), 1);
  EXPECT_TRUE(panel.settingProblems().isEmpty());

  // Outside the row's range: named, not applied, and no run starts.
  auto* beta1 =
      qobject_cast<QLineEdit*>(panel.settingsForm("Optimizer")->control("optimizer.beta1"));
  ASSERT_NE(beta1, nullptr);
  const double before = panel.config().optimizer.beta1;
  beta1->setText("1");
  Q_EMIT beta1->textEdited(beta1->text());
  EXPECT_DOUBLE_EQ(panel.config().optimizer.beta1, before);
  ASSERT_EQ(panel.settingProblems().size(), 1);
  EXPECT_TRUE(panel.settingProblems().front().startsWith("beta1 (training.optimizer.beta1)"))
      << panel.settingProblems().front().toStdString();
  EXPECT_TRUE(beta1->toolTip().contains("less than 1")) << beta1->toolTip().toStdString();
  panel.startTraining();
  EXPECT_FALSE(panel.session()->active());
  EXPECT_TRUE(panel.problemText().contains("training.optimizer.beta1"))
      << panel.problemText().toStdString();
  beta1->setText("0.9");
  Q_EMIT beta1->textEdited(beta1->text());
  EXPECT_TRUE(panel.settingProblems().isEmpty());
}

}  // namespace dc::test
