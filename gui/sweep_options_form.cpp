#include "gui/sweep_options_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QLineEdit>
#include <QRegularExpression>
#include <QRegularExpressionValidator>
#include <QSettings>
#include <QSpinBox>

namespace dc::gui {

SweepOptionsForm::SweepOptionsForm(QWidget* parent) : QWidget(parent) {
  auto* form = new QFormLayout(this);
  form->setContentsMargins(0, 0, 0, 0);
  trials_spin_ = new QSpinBox(this);
  trials_spin_->setRange(1, 100000);
  trials_spin_->setToolTip(tr("How many trials the sweep runs"));
  epochs_spin_ = new QSpinBox(this);
  epochs_spin_->setRange(1, 100000);
  epochs_spin_->setToolTip(tr("Epochs per trial (ASHA stops poor trials earlier)"));
  sampler_ = new QComboBox(this);
  sampler_->addItem(tr("TPE"), "tpe");
  sampler_->addItem(tr("Random"), "random");
  sampler_->setToolTip(tr("TPE proposes points near the good ones found so far"));
  pruner_ = new QComboBox(this);
  pruner_->addItem(tr("ASHA"), "asha");
  pruner_->addItem(tr("None"), "none");
  pruner_->setToolTip(tr("ASHA stops trials whose validation accuracy trails at an epoch rung"));
  seed_edit_ = new QLineEdit(this);
  seed_edit_->setObjectName("sweepSeed");
  // Any unsigned 64-bit seed, as the CLI's --seed takes (a spin box stops at
  // 2^31 - 1); too large a number is refused when the sweep starts.
  seed_edit_->setValidator(
      new QRegularExpressionValidator(QRegularExpression("[0-9]{1,20}"), seed_edit_));
  seed_edit_->setToolTip(
      tr("The sampler's seed (0 to 18446744073709551615); every trial "
         "trains with the project's seed"));
  parallel_spin_ = new QSpinBox(this);
  parallel_spin_->setRange(1, 64);
  parallel_spin_->setToolTip(tr("Trials at once (CPU; each then uses one thread)"));
  form->addRow(tr("Trials"), trials_spin_);
  form->addRow(tr("Epochs per trial"), epochs_spin_);
  form->addRow(tr("Sampler"), sampler_);
  form->addRow(tr("Pruner"), pruner_);
  form->addRow(tr("Seed"), seed_edit_);
  form->addRow(tr("Parallel"), parallel_spin_);
  baseline_check_ = new QCheckBox(tr("Trial 0: the project's own values"), this);
  baseline_check_->setObjectName("sweepBaseline");
  baseline_check_->setToolTip(
      tr("Train the project's current values of the parameters first, so the sweep's best is "
         "never a setting that validates worse than what you have"));
  form->addRow(QString(), baseline_check_);
  tensorboard_check_ = new QCheckBox(tr("TensorBoard log (HParams: every trial)"), this);
  tensorboard_check_->setObjectName("sweepTensorBoard");
  tensorboard_check_->setToolTip(
      tr("Write each trial's parameters and measurements for TensorBoard's HParams tab into a "
         "new folder of the runs folder, as deepcanvas-cli sweep does"));
  tensorboard_check_->setChecked(QSettings().value("experiments/tensorboard", true).toBool());
  connect(tensorboard_check_, &QCheckBox::toggled, this,
          [](bool on) { QSettings().setValue("experiments/tensorboard", on); });
  form->addRow(QString(), tensorboard_check_);

  for (QSpinBox* s : {trials_spin_, epochs_spin_, parallel_spin_})
    connect(s, &QSpinBox::valueChanged, this, &SweepOptionsForm::changed);
  connect(seed_edit_, &QLineEdit::textChanged, this, &SweepOptionsForm::changed);
  for (QComboBox* c : {sampler_, pruner_})
    connect(c, &QComboBox::currentIndexChanged, this, &SweepOptionsForm::changed);
}

void SweepOptionsForm::setOptions(const SweepOptions& o) {
  trials_spin_->setValue(o.trials);
  epochs_spin_->setValue(o.epochs);
  sampler_->setCurrentIndex(o.tpe ? 0 : 1);
  pruner_->setCurrentIndex(o.asha ? 0 : 1);
  seed_edit_->setText(QString::number(qulonglong(o.seed)));
  parallel_spin_->setValue(o.parallel);
  baseline_check_->setChecked(o.baseline);
}

SweepOptions SweepOptionsForm::options(SweepOptions o, bool with_baseline) const {
  o.trials = trials_spin_->value();
  o.epochs = epochs_spin_->value();
  o.tpe = sampler_->currentData().toString() == "tpe";
  o.asha = pruner_->currentData().toString() == "asha";
  o.seed = seed_edit_->text().toULongLong();
  o.parallel = parallel_spin_->value();
  if (with_baseline) o.baseline = baseline_check_->isChecked();
  return o;
}

bool SweepOptionsForm::seedValid() const {
  bool ok = false;
  seed_edit_->text().toULongLong(&ok);
  return ok;
}

void SweepOptionsForm::setEditable(bool on) {
  for (QWidget* w :
       std::initializer_list<QWidget*>{trials_spin_, epochs_spin_, sampler_, pruner_, seed_edit_,
                                       parallel_spin_, baseline_check_, tensorboard_check_})
    w->setEnabled(on);
}

// A difference from the state file's sweep in the tab's words: its field's
// label, not the CLI's flag.
QString sweepDifferenceText(const SweepDifference& d) {
  const QString saved = QString::fromStdString(d.saved);
  if (d.key == "space") return SweepOptionsForm::tr("search space (%1 there)").arg(saved);
  if (d.key == "tpe") return SweepOptionsForm::tr("sampler");
  if (d.key == "asha") return SweepOptionsForm::tr("pruner");
  static const std::pair<const char*, const char*> kLabels[] = {
      {"trials", QT_TRANSLATE_NOOP("dc::gui::SweepOptionsForm", "trials")},
      {"epochs", QT_TRANSLATE_NOOP("dc::gui::SweepOptionsForm", "epochs per trial")},
      {"seed", QT_TRANSLATE_NOOP("dc::gui::SweepOptionsForm", "seed")},
      {"eta", QT_TRANSLATE_NOOP("dc::gui::SweepOptionsForm", "ASHA eta")},
      {"min_epochs", QT_TRANSLATE_NOOP("dc::gui::SweepOptionsForm", "ASHA's first rung (epochs)")},
      {"val_split", QT_TRANSLATE_NOOP("dc::gui::SweepOptionsForm", "validation split")},
      {"steps_per_epoch_limit", QT_TRANSLATE_NOOP("dc::gui::SweepOptionsForm", "steps per epoch")},
      {"n_startup", QT_TRANSLATE_NOOP("dc::gui::SweepOptionsForm", "TPE start-up trials")},
  };
  QString label = QString::fromStdString(d.key);
  for (const auto& [key, text] : kLabels)
    if (d.key == key) label = SweepOptionsForm::tr(text);
  return SweepOptionsForm::tr("%1 (%2 there, %3 here)")
      .arg(label, saved, QString::fromStdString(d.current));
}

int SweepOptionsForm::trials() const {
  return trials_spin_->value();
}

bool SweepOptionsForm::tensorBoard() const {
  return tensorboard_check_->isChecked();
}

void SweepOptionsForm::setTensorBoard(bool on) {
  tensorboard_check_->setChecked(on);
}

QString sweepMismatchText(const QString& stateFile, const QStringList& differences) {
  return SweepOptionsForm::tr(
             "The sweep in %1 was run with other settings: %2. Set them back to resume it; "
             "Start replaces it with a new sweep.")
      .arg(QFileInfo(stateFile).fileName())
      .arg(differences.join("; "));
}

QString sweepStateErrorText(const std::exception& e, const QString& stateFile) {
  // The engine names the file and what is wrong; the remedy is the tab's.
  if (const auto* s = dynamic_cast<const SweepStateError*>(&e))
    return SweepOptionsForm::tr(
               "%1 cannot be resumed: %2. Start replaces it with a new sweep (or delete the file).")
        .arg(QFileInfo(QString::fromStdString(s->source())).fileName(),
             QString::fromStdString(s->problem()));
  if (const auto* m = dynamic_cast<const SweepMismatchError*>(&e)) {
    QStringList d;
    for (const SweepDifference& x : m->differences()) d << sweepDifferenceText(x);
    return sweepMismatchText(stateFile, d);
  }
  return QString::fromUtf8(e.what());
}

}  // namespace dc::gui
