#pragma once
// The Training tab's settings column: a toggle that folds it away and the
// Run / Optimizer / Schedule forms generated from the engine's settings
// table, with this machine's devices in a list, the steps-per-epoch limit
// and the checkpoint folder. The Dataset tab owns the split and the
// normalisation.
#include <deepcanvas/train_config.h>

#include <QStringList>
#include <QWidget>

class QComboBox;
class QCheckBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QTabWidget;
class QToolButton;

namespace dc::gui {

class ProjectContext;
class SettingsForm;

class TrainingSettingsView : public QWidget {
  Q_OBJECT
 public:
  explicit TrainingSettingsView(ProjectContext* ctx, QWidget* parent = nullptr);

  // The settings as the widgets show them, over the project's.
  TrainConfig config() const;
  void loadSettings(const TrainConfig& c);
  // Typed values the forms refuse, "<label> (training.<key>) <problem>".
  QStringList problems() const;
  // "Run", "Optimizer" or "Schedule".
  SettingsForm* form(const QString& group) const;

  void setEpochs(int n);
  void setStepsPerEpochLimit(int n);
  void setBatch(int n);
  void setCheckpointDir(const QString& dir);
  QString checkpointDir() const;
  // Whether runs also write a TensorBoard event file (remembered).
  bool tensorBoard() const;
  QString deviceText() const;  // the device list's current entry
  // The GPU the project asks for when this machine lacks it (the list then
  // shows the CPU and a note): config() keeps it, so saving does not
  // rewrite the project, and runs fall back to the CPU as the CLI's do.
  // Cleared when the user picks a device.
  DeviceSpec missingDevice() const { return missing_; }
  void setSettingsVisible(bool on);
  bool settingsVisible() const;
  // Greys out the forms (not their tabs: a run's settings stay readable)
  // while a run trains; reduced precision only on a GPU.
  void setRunning(bool active);

 signals:
  void changed();               // any setting was edited
  void settingsShown(bool on);  // the settings were shown or hidden (their height changed)
  void deviceChanged();         // the device list's choice

 private:
  void fillDevices();

  ProjectContext* ctx_;
  QToolButton* toggle_;
  QTabWidget* tabs_;
  SettingsForm *run_form_, *opt_form_, *sched_form_;
  QComboBox* device_;
  QLabel* device_note_;
  DeviceSpec missing_;
  QSpinBox* steps_limit_;
  QLineEdit* checkpoint_dir_;
  QCheckBox* tensorboard_;
};

}  // namespace dc::gui
