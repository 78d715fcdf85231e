#include "gui/training_settings_view.h"

#include <deepcanvas/device.h>
#include <deepcanvas/settings.h>

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>

#include "gui/process_stats.h"
#include "gui/project_context.h"
#include "gui/settings_form.h"

namespace dc::gui {

namespace {

// Where runs go unless the user picks a folder: ~/.local/share/DeepCanvas/runs
// on Linux, as the README says (AppLocalDataLocation would add the
// application's name a second time: DeepCanvas/DeepCanvas).
QString default_runs_folder() {
  return QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation) + "/DeepCanvas/runs";
}

}  // namespace

TrainingSettingsView::TrainingSettingsView(ProjectContext* ctx, QWidget* parent)
    : QWidget(parent), ctx_(ctx) {
  auto* ll = new QVBoxLayout(this);
  ll->setContentsMargins(0, 0, 0, 0);
  toggle_ = new QToolButton(this);
  toggle_->setCheckable(true);
  toggle_->setChecked(true);
  toggle_->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
  toggle_->setArrowType(Qt::DownArrow);
  toggle_->setText(tr("Training settings"));
  toggle_->setAutoRaise(true);
  toggle_->setToolTip(tr("Show or hide the settings, leaving more room for the log"));
  ll->addWidget(toggle_);
  // The controls come from the engine's settings table (ranges, choices,
  // help as tooltips); the Dataset tab owns the split and normalisation,
  // and the device gets a list of this machine's devices instead of text.
  tabs_ = new QTabWidget(this);
  tabs_->setDocumentMode(true);
  run_form_ = new SettingsForm("Run", {"val_split", "normalize", "device"}, tabs_);
  opt_form_ = new SettingsForm("Optimizer", {}, tabs_);
  sched_form_ = new SettingsForm("Schedule", {}, tabs_);
  device_ = new QComboBox(run_form_);
  device_->setObjectName("deviceList");
  device_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  device_->setMinimumContentsLength(8);
  steps_limit_ = new QSpinBox(run_form_);
  steps_limit_->setRange(0, 1000000);
  steps_limit_->setSpecialValueText(tr("whole epoch"));
  steps_limit_->setToolTip(tr("Stop each epoch after this many steps (a quick look)."));
  checkpoint_dir_ = new QLineEdit(run_form_);
  setCheckpointDir(default_runs_folder());
  auto* browse = new QToolButton(run_form_);
  browse->setText("…");
  browse->setToolTip(tr("Choose the folder runs write their checkpoints to"));
  connect(browse, &QToolButton::clicked, this, [this] {
    QString d =
        QFileDialog::getExistingDirectory(this, tr("Checkpoint folder"), checkpoint_dir_->text());
    if (!d.isEmpty()) setCheckpointDir(d);
  });
  connect(checkpoint_dir_, &QLineEdit::textChanged, checkpoint_dir_,
          [this](const QString& t) { checkpoint_dir_->setToolTip(t); });
  auto* ckrow = new QHBoxLayout;
  ckrow->addWidget(checkpoint_dir_, 1);
  ckrow->addWidget(browse);
  if (const SettingSpec* d = find_setting("device"))
    device_->setToolTip(QString::fromStdString(d->attr.help));
  device_note_ = new QLabel(run_form_);
  device_note_->setObjectName("deviceNote");
  device_note_->setVisible(false);
  auto* device_row = new QHBoxLayout;
  device_row->addWidget(device_, 1);
  device_row->addWidget(device_note_);
  run_form_->layout()->insertRow(run_form_->layout()->rowCount() - 1, tr("Device"), device_row);
  run_form_->layout()->addRow(tr("Steps per epoch"), steps_limit_);
  run_form_->layout()->addRow(tr("Checkpoints"), ckrow);
  // Each run's folder also gets metrics.jsonl and, with this on, a
  // TensorBoard event file; remembered per user, not per project.
  // Short, since the form's width is the text's: the tooltip says the rest.
  tensorboard_ = new QCheckBox(tr("TensorBoard too"), run_form_);
  tensorboard_->setObjectName("tensorboardLog");
  const auto tensorboard_tip = [this](const QString& dir) {
    tensorboard_->setToolTip(tr("Also write a TensorBoard log into each run's folder. View with: "
                                "tensorboard --logdir \"%1\"")
                                 .arg(dir));
  };
  tensorboard_tip(checkpoint_dir_->text());
  connect(checkpoint_dir_, &QLineEdit::textChanged, tensorboard_, tensorboard_tip);
  tensorboard_->setChecked(QSettings().value("training/tensorboard", true).toBool());
  connect(tensorboard_, &QCheckBox::toggled, this,
          [](bool on) { QSettings().setValue("training/tensorboard", on); });
  run_form_->layout()->addRow(tr("Logs"), tensorboard_);
  tabs_->addTab(run_form_, tr("Run"));
  tabs_->addTab(opt_form_, tr("Optimizer"));
  tabs_->addTab(sched_form_, tr("Schedule"));
  ll->addWidget(tabs_);
  connect(toggle_, &QToolButton::toggled, this, &TrainingSettingsView::setSettingsVisible);
  fillDevices();
  // Saved with the project, so each edit can make it "modified".
  for (SettingsForm* f : {run_form_, opt_form_, sched_form_})
    connect(f, &SettingsForm::changed, this, &TrainingSettingsView::changed);
  connect(device_, &QComboBox::currentIndexChanged, this, &TrainingSettingsView::changed);
  connect(device_, &QComboBox::currentIndexChanged, this, [this] {
    // A device the user picks replaces the project's missing GPU.
    missing_ = DeviceSpec{};
    device_note_->setVisible(false);
    Q_EMIT deviceChanged();
  });
  connect(steps_limit_, &QSpinBox::valueChanged, this, &TrainingSettingsView::changed);
}

void TrainingSettingsView::setSettingsVisible(bool on) {
  tabs_->setVisible(on);
  toggle_->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
  if (toggle_->isChecked() != on) {
    const QSignalBlocker block(toggle_);
    toggle_->setChecked(on);
  }
  Q_EMIT settingsShown(on);
}

bool TrainingSettingsView::settingsVisible() const {
  return !tabs_->isHidden();
}

void TrainingSettingsView::fillDevices() {
  device_->clear();
  device_->addItem(tr("CPU (%1 threads)").arg(ProcessStats::cores()), "cpu");
  std::string why;
  auto gpus = list_gpus(&why);
  for (const auto& g : gpus)
    device_->addItem(tr("GPU %1: %2 (%3 GiB)")
                         .arg(g.index)
                         .arg(QString::fromStdString(g.name))
                         .arg(double(g.total_bytes) / (1 << 30), 0, 'f', 1),
                     QString("cuda:%1").arg(g.index));
  device_->setToolTip(gpus.empty() ? tr("No GPU: %1").arg(QString::fromStdString(why)) : QString());
}

void TrainingSettingsView::loadSettings(const TrainConfig& c) {
  for (SettingsForm* f : {run_form_, opt_form_, sched_form_}) f->setConfig(c);
  const QSignalBlocker b1(steps_limit_), b2(device_);
  steps_limit_->setValue(int(c.steps_per_epoch_limit));
  int d = device_->findData(QString::fromStdString(c.device.str()));
  device_->setCurrentIndex(d >= 0 ? d : 0);
  // A project made on a machine with a GPU, opened on one without (or
  // with fewer): say so where the device is chosen, instead of silently
  // showing the CPU and rewriting the project on the next save.
  missing_ = d < 0 && c.device.cuda ? c.device : DeviceSpec{};
  const QString name = QString::fromStdString(c.device.str());
  device_note_->setText(tr("⚠ %1 not here").arg(name));
  device_note_->setToolTip(
      tr("This project asks for %1, which this machine does not have: runs train on the CPU "
         "here, in fp32. The project keeps %1 unless you choose another device.")
          .arg(name));
  device_note_->setVisible(missing_.cuda);
}

TrainConfig TrainingSettingsView::config() const {
  // The project carries what other panels own (validation split,
  // normalisation, augmentation); this view overrides what it shows.
  TrainConfig c = ctx_->project().training;
  for (SettingsForm* f : {run_form_, opt_form_, sched_form_}) f->applyTo(c);
  c.steps_per_epoch_limit = steps_limit_->value();
  c.device = parse_device(device_->currentData().toString().toStdString());
  if (missing_.cuda)
    c.device = missing_;  // with the project's precision
  else if (!c.device.cuda)
    c.precision = Precision::Fp32;  // the CPU computes in fp32 only
  c.resume.clear();
  return c;
}

SettingsForm* TrainingSettingsView::form(const QString& group) const {
  return group == "Run" ? run_form_ : group == "Optimizer" ? opt_form_ : sched_form_;
}

QStringList TrainingSettingsView::problems() const {
  QStringList p;
  for (SettingsForm* f : {run_form_, opt_form_, sched_form_}) p << f->problems();
  return p;
}

void TrainingSettingsView::setEpochs(int n) {
  run_form_->setValue("epochs", int64_t(n));
}
void TrainingSettingsView::setStepsPerEpochLimit(int n) {
  steps_limit_->setValue(n);
}
void TrainingSettingsView::setBatch(int n) {
  run_form_->setValue("batch", int64_t(n));
}
void TrainingSettingsView::setCheckpointDir(const QString& dir) {
  checkpoint_dir_->setText(dir);
  // The start of a path says where it is; QLineEdit would show its end.
  checkpoint_dir_->setCursorPosition(0);
}
bool TrainingSettingsView::tensorBoard() const {
  return tensorboard_->isChecked();
}

QString TrainingSettingsView::checkpointDir() const {
  return checkpoint_dir_->text();
}
QString TrainingSettingsView::deviceText() const {
  return device_->currentText();
}

void TrainingSettingsView::setRunning(bool active) {
  for (QWidget* w : {static_cast<QWidget*>(run_form_), static_cast<QWidget*>(opt_form_),
                     static_cast<QWidget*>(sched_form_)})
    w->setEnabled(!active);
  // Reduced precision exists on the GPU only.
  if (QWidget* precision = run_form_->control("precision"); precision && !active) {
    const bool gpu = device_->currentData().toString() != "cpu";
    precision->setEnabled(gpu);
    // The project's precision stays while its GPU is only missing here.
    if (!gpu && !missing_.cuda) run_form_->setValue("precision", std::string("fp32"));
  }
}

}  // namespace dc::gui
