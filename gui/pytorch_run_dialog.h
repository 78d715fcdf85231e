#pragma once
// The small dialog of "Run with PyTorch…": where the export goes, which
// Python runs it, how many processes on which device, and the epochs, batch
// and step limit (prefilled from the project). The folder, interpreter,
// processes, device and step limit are remembered (QSettings).
#include "gui/pytorch_run.h"

#include <QDialog>

class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace dc::gui {

class PyTorchRunDialog : public QDialog {
  Q_OBJECT
 public:
  // `export_dir` is the default folder when none is remembered.
  PyTorchRunDialog(const QString& export_dir, int epochs, qint64 batch, QWidget* parent = nullptr);
  // The options as entered; out_dir is a new folder beside the export
  // (EXPORT-runs/yyyyMMdd-HHmmss), so replacing the export keeps old runs.
  // A relative export folder is taken against `dir`, the project's folder
  // (the home folder until this is called), never the app's working folder.
  void setProjectDir(const QString& dir);
  // Whether the Inference tab has weights to start from: without any, the
  // choice says so and fresh weights are what the export gets (they were
  // used silently before).
  void setInferenceWeights(bool available);
  PyTorchRunOptions options() const;
  // Why the options cannot run ("" when they can): a blank export folder or
  // Python. Export and Run refuses them with this under the form.
  QString problem() const;
  QLabel* problemLabel() const { return problem_; }
  // Saves what is remembered (called on accept).
  void remember() const;
  // The run folder for an export folder, stamped with the current time.
  static QString runFolderFor(const QString& export_dir);

 private:
  void updateOut();

  QLineEdit *export_dir_, *python_;
  QSpinBox *processes_, *epochs_, *batch_, *max_steps_;
  QComboBox *device_, *start_from_;
  QLabel* out_;
  QLabel* problem_;
  QString project_dir_;
};

}  // namespace dc::gui
