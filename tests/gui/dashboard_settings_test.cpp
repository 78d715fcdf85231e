// The Training tab's settings come from the engine's settings table: a
// control per row (range, choices, help), values typed as text checked by
// the row, a refused value named before any run starts.
#include "dashboard_test_util.h"

#include "gui/settings_form.h"

#include <deepcanvas/device.h>
#include <deepcanvas/settings.h>

#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QTemporaryDir>

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
    if (auto* b = qobject_cast<QSpinBox*>(w)) {
      EXPECT_EQ(b->maximum(), int(s.attr.max));
    }
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

// Issue 18: the Optimizer and Schedule tabs showed momentum beside Adam and
// the step schedule's gamma under cosine. Rows that have no effect under the
// chosen optimizer/schedule are hidden, and keep their values.
TEST(DashboardSettings, OnlySettingsThatApplyToTheChosenOptimizerAndScheduleAreShown) {
  auto ctx = sample_context();
  gui::TrainingPanel panel(ctx.get());
  gui::SettingsForm* opt = panel.settingsForm("Optimizer");
  gui::SettingsForm* sched = panel.settingsForm("Schedule");
  ASSERT_NE(opt, nullptr);
  ASSERT_NE(sched, nullptr);
  opt->setValue("optimizer.type", std::string("adam"));
  EXPECT_TRUE(opt->rowShown("optimizer.beta1"));
  EXPECT_TRUE(opt->rowShown("optimizer.lr"));
  EXPECT_TRUE(opt->rowShown("optimizer.weight_decay"));
  EXPECT_FALSE(opt->rowShown("optimizer.momentum"));
  EXPECT_FALSE(opt->rowShown("optimizer.nesterov"));
  opt->setValue("optimizer.type", std::string("sgd"));
  EXPECT_TRUE(opt->rowShown("optimizer.momentum"));
  EXPECT_FALSE(opt->rowShown("optimizer.beta2"));
  EXPECT_FALSE(opt->rowShown("optimizer.eps"));

  sched->setValue("schedule.type", std::string("cosine"));
  EXPECT_TRUE(sched->rowShown("schedule.min_lr"));
  EXPECT_TRUE(sched->rowShown("schedule.warmup_steps"));
  EXPECT_FALSE(sched->rowShown("schedule.gamma"));
  EXPECT_FALSE(sched->rowShown("schedule.pct_start"));
  sched->setValue("schedule.type", std::string("onecycle"));
  EXPECT_TRUE(sched->rowShown("schedule.div_factor"));
  EXPECT_FALSE(sched->rowShown("schedule.warmup_steps"));
  EXPECT_FALSE(sched->rowShown("schedule.min_lr"));
  sched->setValue("schedule.type", std::string("step"));
  EXPECT_TRUE(sched->rowShown("schedule.gamma"));
  EXPECT_TRUE(sched->rowShown("schedule.step_epochs"));

  // A hidden row keeps its value: back to SGD, the momentum is unchanged.
  const double momentum = panel.config().optimizer.momentum;
  opt->setValue("optimizer.type", std::string("adamw"));
  opt->setValue("optimizer.type", std::string("sgd"));
  EXPECT_DOUBLE_EQ(panel.config().optimizer.momentum, momentum);
  // Every row that says when it applies is told apart by some choice.
  int conditional = 0;
  for (const SettingSpec& s : training_settings()) conditional += s.applies ? 1 : 0;
  EXPECT_GE(conditional, 12);
}

// A project saved on a machine with a GPU, opened on this one (CI has none):
// the Device box says the GPU is missing, the project keeps asking for it
// (saving does not rewrite it) and Start trains on the CPU, as the CLI does.
TEST(DashboardSettings, AProjectsMissingGpuIsNotedKeptAndTrainsOnTheCpu) {
  if (!list_gpus().empty()) GTEST_SKIP() << "this machine has a GPU: nothing is missing";
  auto ctx = sample_context();
  ctx->project().training.device = parse_device("cuda:0");
  ctx->project().training.precision = Precision::Bf16;
  gui::TrainingPanel panel(ctx.get());
  auto* note = panel.findChild<QLabel*>("deviceNote");
  ASSERT_NE(note, nullptr);
  EXPECT_FALSE(note->isHidden());
  EXPECT_TRUE(note->text().contains("cuda:0")) << note->text().toStdString();
  EXPECT_TRUE(note->toolTip().contains("CPU")) << note->toolTip().toStdString();
  EXPECT_EQ(panel.config().device.str(), "cuda:0");
  EXPECT_EQ(panel.config().precision, Precision::Bf16);

  QTemporaryDir dir;
  ASSERT_TRUE(train_briefly(panel, dir.path(), 2));
  EXPECT_TRUE(panel.logText().contains("asks for cuda:0")) << panel.logText().toStdString();
  EXPECT_EQ(panel.config().device.str(), "cuda:0");  // still the project's

  // Choosing a device replaces it.
  auto* device = panel.findChild<QComboBox*>("deviceList");
  ASSERT_NE(device, nullptr);
  device->setCurrentIndex(-1);
  device->setCurrentIndex(0);
  EXPECT_TRUE(note->isHidden());
  EXPECT_FALSE(panel.config().device.cuda);
  EXPECT_EQ(panel.config().precision, Precision::Fp32);
}

}  // namespace dc::test
