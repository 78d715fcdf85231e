// The Training tab's tuning aids: the LR finder button and dialog, the hint
// offered when the batch changes, and the undoable path through which both
// change settings. Kept apart from training_panel.cpp, which runs training.
#include <deepcanvas/device.h>
#include <deepcanvas/lr_find.h>
#include <deepcanvas/settings.h>
#include <deepcanvas/sysinfo.h>

#include <QFrame>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QUndoCommand>
#include <QUndoStack>
#include <QVBoxLayout>

#include "gui/lr_finder.h"
#include "gui/settings_form.h"
#include "gui/training_panel.h"

namespace dc::gui {

namespace {

// Settings values before and after, by key; redo/undo write them back
// through the forms, which emit changed() and so mark the project modified.
class SettingsCommand : public QUndoCommand {
 public:
  using Values = QVector<QPair<QString, AttrValue>>;
  SettingsCommand(TrainingPanel* panel, Values before, Values after, const QString& text)
      : QUndoCommand(text), panel_(panel), before_(std::move(before)), after_(std::move(after)) {}
  void redo() override { write(after_); }
  void undo() override { write(before_); }

 private:
  void write(const Values& v) {
    for (const auto& [key, value] : v) panel_->setSettingValue(key, value);
  }
  TrainingPanel* panel_;
  Values before_, after_;
};

}  // namespace

void TrainingPanel::buildTuningUi(QVBoxLayout* column) {
  lr_find_ = new QPushButton(tr("LR finder…"), this);
  lr_find_->setObjectName("lrFinderButton");
  lr_find_->setToolTip(
      tr("Run a learning-rate range test on a copy of the network from its initial weights "
         "and suggest a learning rate"));
  column->addWidget(lr_find_);
  connect(lr_find_, &QPushButton::clicked, this, [this] { openLrFinder(); });

  batch_hint_ = new QFrame(this);
  batch_hint_->setObjectName("batchHint");
  batch_hint_->setStyleSheet(
      "QFrame#batchHint { background: #e8f1fb; border: 1px solid #b6d4f2; border-radius: 4px; }");
  auto* v = new QVBoxLayout(batch_hint_);
  batch_hint_text_ = new QLabel(batch_hint_);
  batch_hint_text_->setWordWrap(true);
  v->addWidget(batch_hint_text_);
  auto* row = new QHBoxLayout;
  hint_linear_ = new QPushButton(tr("Apply linear"), batch_hint_);
  hint_sqrt_ = new QPushButton(tr("Apply √"), batch_hint_);
  auto* dismiss = new QPushButton(tr("Dismiss"), batch_hint_);
  row->addWidget(hint_linear_);
  row->addWidget(hint_sqrt_);
  row->addStretch(1);
  row->addWidget(dismiss);
  v->addLayout(row);
  batch_hint_->setVisible(false);
  column->addWidget(batch_hint_);
  connect(dismiss, &QPushButton::clicked, batch_hint_, &QWidget::hide);
  auto apply = [this](bool linear) {
    const TrainConfig c = config();
    const int64_t samples = ctx_->hasDataset() ? ctx_->trainSet()->size() : 0;
    const BatchLrAdvice a = batch_lr_advice(c, shown_batch_, c.batch, samples);
    QVector<QPair<QString, AttrValue>> values{{"optimizer.lr", linear ? a.linear_lr : a.sqrt_lr}};
    // One-cycle warms up by itself (pct_start); the others take warm-up steps.
    if (a.warmup_steps > c.schedule.warmup_steps && c.schedule.type != ScheduleType::OneCycle)
      values.append({"schedule.warmup_steps", a.warmup_steps});
    applySettings(values, linear ? tr("Apply linear learning-rate rule")
                                 : tr("Apply square-root learning-rate rule"));
    shown_batch_ = c.batch;
    batch_hint_->hide();
  };
  connect(hint_linear_, &QPushButton::clicked, this, [apply] { apply(true); });
  connect(hint_sqrt_, &QPushButton::clicked, this, [apply] { apply(false); });
  for (SettingsForm* f : {settingsForm("Run")})
    connect(f, &SettingsForm::changed, this, &TrainingPanel::onBatchMaybeChanged);
}

void TrainingPanel::onBatchMaybeChanged() {
  if (applying_setting_) return;
  const TrainConfig c = config();
  if (c.batch == shown_batch_ || shown_batch_ <= 0) return;
  const int64_t samples = ctx_->hasDataset() ? ctx_->trainSet()->size() : 0;
  const BatchLrAdvice a = batch_lr_advice(c, shown_batch_, c.batch, samples);
  QString text = QString::fromStdString(a.text);
  try {
    int64_t available = -1;
    QString where = tr("this machine's memory");
    if (c.device.cuda) {
      for (const GpuInfo& g : list_gpus())
        if (g.index == c.device.index) {
          available = g.free_bytes;
          where = QString::fromStdString(g.name);
        }
    } else {
      available = available_memory_bytes();
    }
    if (available > 0) {
      const BatchFit f = largest_batch(ctx_->project().graph, available, c);
      text += "\n" +
              tr("Largest batch that fits %1 (the advisor's memory model): %2 (power of two: %3).")
                  .arg(where)
                  .arg(f.max_batch)
                  .arg(f.pow2);
      if (c.batch > f.max_batch) text += " " + tr("This batch does not fit.");
    }
  } catch (const std::exception&) {
    // A network that cannot be built has its problem shown elsewhere.
  }
  batch_hint_text_->setText(text);
  batch_hint_->show();
}

QString TrainingPanel::batchHintText() const {
  return batch_hint_->isHidden() ? QString() : batch_hint_text_->text();
}

void TrainingPanel::setSettingValue(const QString& key, const AttrValue& v) {
  const SettingSpec* s = find_setting(key.toStdString());
  if (!s) return;
  applying_setting_ = true;
  if (SettingsForm* f = settingsForm(QString::fromStdString(s->group))) f->setValue(key, v);
  applying_setting_ = false;
}

void TrainingPanel::applySettings(const QVector<QPair<QString, AttrValue>>& values,
                                  const QString& what) {
  const TrainConfig c = config();
  QVector<QPair<QString, AttrValue>> before;
  for (const auto& [key, value] : values)
    if (const SettingSpec* s = find_setting(key.toStdString())) before.append({key, s->get(c)});
  auto* cmd = new SettingsCommand(this, before, values, what);
  if (undo_) {
    undo_->push(cmd);  // push() runs redo()
  } else {
    cmd->redo();
    delete cmd;
  }
}

void TrainingPanel::showLrFinderProblems(const QStringList& problems) {
  if (problems.isEmpty()) {
    // Only a refusal of the finder's own; Start's stays until Start clears it.
    if (problems_->property("lrFinder").toBool()) showProblems({});
    problems_->setProperty("lrFinder", false);
    return;
  }
  // Start's banner, under the finder's own heading: "Training cannot start"
  // would misname what was refused.
  showProblems(problems);
  QString html = "<b>" + tr("The LR finder cannot start:") + "</b><ul style='margin:0'>";
  for (const QString& p : problems)
    html += "<li>" + p.toHtmlEscaped().replace('\n', "<br>") + "</li>";
  problems_->setText(html + "</ul>");
  problems_->setProperty("lrFinder", true);
}

LrFinderDialog* TrainingPanel::openLrFinder(const LrFindOptions& options) {
  if (lr_dialog_ && lr_dialog_->running()) {
    lr_dialog_->raise();
    return lr_dialog_;
  }
  // Start's own checks and dataset loading (the project's dataset, loaded
  // on demand), so the finder runs whenever Start would train at once.
  TrainConfig c;
  // Checked as the range test it is (the CLI's lr-find): it writes no
  // checkpoints, and the memory check names the range test.
  AppRunCheck run;
  run.purpose = RunPurpose::LrFind;
  const QStringList problems = problemsBeforeRun(
      tr("A sweep is running in the Experiments tab. Stop it there (it can be resumed later) "
         "before running the LR finder."),
      [this] {
        TrainConfig cfg = config();
        cfg.device = DeviceSpec{};  // the range test runs on the CPU
        cfg.precision = Precision::Fp32;
        return cfg;
      },
      run, &c);
  if (!problems.isEmpty()) {
    showLrFinderProblems(problems);
    return nullptr;
  }
  showLrFinderProblems({});
  delete lr_dialog_;
  lr_dialog_ = new LrFinderDialog(ctx_->project().graph, c, ctx_->trainSet(), options, this);
  connect(lr_dialog_, &LrFinderDialog::useRequested, this, [this](double lr) {
    applySettings({{"optimizer.lr", lr}}, tr("Use suggested learning rate"));
    appendLog(tr("Learning rate set to %1 (LR finder)").arg(lr, 0, 'g', 3));
  });
  lr_dialog_->show();
  lr_dialog_->start();
  return lr_dialog_;
}

}  // namespace dc::gui
