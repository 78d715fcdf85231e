// Run with PyTorch…'s options dialog (see pytorch_run_dialog.h).
#include "gui/pytorch_run_dialog.h"

#include <QComboBox>
#include <QDateTime>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QThread>
#include <functional>

namespace dc::gui {

namespace {

QWidget* withBrowse(QLineEdit* edit, const QString& tip, std::function<void()> browse) {
  auto* w = new QWidget;
  auto* row = new QHBoxLayout(w);
  row->setContentsMargins(0, 0, 0, 0);
  row->addWidget(edit, 1);
  auto* b = new QPushButton(QObject::tr("Browse…"), w);
  b->setToolTip(tip);
  QObject::connect(b, &QPushButton::clicked, w, std::move(browse));
  row->addWidget(b);
  return w;
}

}  // namespace

PyTorchRunDialog::PyTorchRunDialog(const QString& export_dir, int epochs, qint64 batch,
                                   QWidget* parent)
    : QDialog(parent) {
  setWindowTitle(tr("Run with PyTorch"));
  QSettings s;
  auto* form = new QFormLayout(this);

  export_dir_ = new QLineEdit(s.value("pytorchRun/exportDir", export_dir).toString(), this);
  export_dir_->setObjectName("pytorchExportDir");
  export_dir_->setToolTip(
      tr("The project is exported here (model.py, train.py, …) and train.py runs in it; an "
         "earlier export in it is replaced"));
  form->addRow(tr("Export to:"), withBrowse(export_dir_, tr("Choose the export folder"), [this] {
                 const QString d = QFileDialog::getExistingDirectory(
                     this, tr("Export folder"), QFileInfo(export_dir_->text()).absolutePath());
                 if (!d.isEmpty()) export_dir_->setText(d);
               }));
  out_ = new QLabel(this);
  out_->setToolTip(tr("train.py --out: metrics.jsonl and the checkpoints, a new folder per run"));
  form->addRow(tr("Run output:"), out_);

  python_ = new QLineEdit(s.value("pytorchRun/python", "/usr/bin/python3").toString(), this);
  python_->setObjectName("pytorchPython");
  python_->setToolTip(
      tr("The Python that runs train.py; it needs torch and numpy (Debian/Ubuntu: python3-torch, "
         "or a virtual environment's bin/python with the export's requirements.txt)"));
  form->addRow(tr("Python:"), withBrowse(python_, tr("Choose a Python interpreter"), [this] {
                 const QString f = QFileDialog::getOpenFileName(this, tr("Python interpreter"),
                                                                QFileInfo(python_->text()).path());
                 if (!f.isEmpty()) python_->setText(f);
               }));

  processes_ = new QSpinBox(this);
  processes_->setObjectName("pytorchProcesses");
  processes_->setRange(1, 64);
  processes_->setValue(s.value("pytorchRun/processes", 1).toInt());
  processes_->setToolTip(
      tr("1: one python process; more: torchrun with DistributedDataParallel (gloo on CPUs, NCCL "
         "on GPUs: one process per GPU). This machine has %1 CPU threads.")
          .arg(QThread::idealThreadCount()));
  form->addRow(tr("Processes:"), processes_);

  device_ = new QComboBox(this);
  device_->setObjectName("pytorchDevice");
  device_->addItems({"cpu", "cuda"});
  device_->setCurrentText(s.value("pytorchRun/device", "cpu").toString());
  device_->setToolTip(tr("train.py --device"));
  form->addRow(tr("Device:"), device_);

  start_from_ = new QComboBox(this);
  start_from_->setObjectName("pytorchStartFrom");
  start_from_->addItems({tr("the Inference tab's weights"), tr("fresh weights (the seed's)")});
  start_from_->setCurrentIndex(s.value("pytorchRun/freshWeights", false).toBool() ? 1 : 0);
  start_from_->setToolTip(
      tr("The export's weights.safetensors: the last trained or opened weights (to fine-tune), "
         "or the project's seed initialisation, for a run comparable with a fresh local one"));
  form->addRow(tr("Start from:"), start_from_);

  epochs_ = new QSpinBox(this);
  epochs_->setObjectName("pytorchEpochs");
  epochs_->setRange(1, 100000);
  epochs_->setValue(epochs);
  epochs_->setToolTip(tr("train.py --epochs (the project's setting)"));
  form->addRow(tr("Epochs:"), epochs_);
  batch_ = new QSpinBox(this);
  batch_->setObjectName("pytorchBatch");
  batch_->setRange(1, 1 << 20);
  batch_->setValue(int(batch));
  batch_->setToolTip(tr("train.py --batch: samples per step and process (the project's setting)"));
  form->addRow(tr("Batch per process:"), batch_);
  max_steps_ = new QSpinBox(this);
  max_steps_->setObjectName("pytorchMaxSteps");
  max_steps_->setRange(0, 100000000);
  max_steps_->setSpecialValueText(tr("no limit"));
  max_steps_->setValue(s.value("pytorchRun/maxSteps", 0).toInt());
  max_steps_->setToolTip(
      tr("train.py --max-steps: stop after this many steps in all (a quick try)"));
  form->addRow(tr("Step limit:"), max_steps_);

  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  buttons->button(QDialogButtonBox::Ok)->setText(tr("Export and Run"));
  problem_ = new QLabel(this);
  problem_->setObjectName("pytorchProblem");
  problem_->setWordWrap(true);
  problem_->setStyleSheet("color: #b00020");
  problem_->hide();
  form->addRow(problem_);
  connect(buttons, &QDialogButtonBox::accepted, this, [this] {
    const QString why = problem();
    problem_->setText(why);
    problem_->setVisible(!why.isEmpty());
    if (!why.isEmpty()) return;
    remember();
    accept();
  });
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  form->addRow(buttons);
  connect(export_dir_, &QLineEdit::textChanged, this, &PyTorchRunDialog::updateOut);
  updateOut();
}

QString PyTorchRunDialog::runFolderFor(const QString& export_dir) {
  const QString dir = QDir::cleanPath(export_dir);
  return dir + "-runs/" + QDateTime::currentDateTime().toString("yyyyMMdd-HHmmss");
}

void PyTorchRunDialog::updateOut() {
  out_->setText(export_dir_->text().trimmed().isEmpty()
                    ? QString()
                    : QDir::toNativeSeparators(options().out_dir));
}

void PyTorchRunDialog::setProjectDir(const QString& dir) {
  project_dir_ = dir;
  updateOut();
}

QString PyTorchRunDialog::problem() const {
  if (export_dir_->text().trimmed().isEmpty())
    return tr("Choose a folder to export to: train.py is written and runs there.");
  if (python_->text().trimmed().isEmpty())
    return tr("Choose the Python that runs train.py (for example /usr/bin/python3).");
  return {};
}

void PyTorchRunDialog::setInferenceWeights(bool available) {
  auto* model = qobject_cast<QStandardItemModel*>(start_from_->model());
  if (model) model->item(0)->setEnabled(available);
  start_from_->setItemText(0, available ? tr("the Inference tab's weights")
                                        : tr("the Inference tab's weights (none yet)"));
  if (!available) start_from_->setCurrentIndex(1);
}

PyTorchRunOptions PyTorchRunDialog::options() const {
  PyTorchRunOptions o;
  o.python = python_->text().trimmed();
  const QString dir = export_dir_->text().trimmed();
  // Relative to the project's folder; a blank one stays blank (problem()).
  o.export_dir =
      dir.isEmpty() ? QString()
                    : QDir::cleanPath(QDir(project_dir_.isEmpty() ? QDir::homePath() : project_dir_)
                                          .absoluteFilePath(dir));
  o.out_dir = runFolderFor(o.export_dir);
  o.processes = processes_->value();
  o.device = device_->currentText();
  o.epochs = epochs_->value();
  o.batch = batch_->value();
  o.max_steps = max_steps_->value();
  o.fresh_weights = start_from_->currentIndex() == 1;
  return o;
}

void PyTorchRunDialog::remember() const {
  QSettings s;
  s.setValue("pytorchRun/exportDir", QDir::cleanPath(export_dir_->text().trimmed()));
  s.setValue("pytorchRun/python", python_->text().trimmed());
  s.setValue("pytorchRun/processes", processes_->value());
  s.setValue("pytorchRun/device", device_->currentText());
  s.setValue("pytorchRun/maxSteps", max_steps_->value());
  s.setValue("pytorchRun/freshWeights", start_from_->currentIndex() == 1);
}

}  // namespace dc::gui
