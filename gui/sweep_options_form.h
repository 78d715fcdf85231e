#pragma once
// The sweep options the Experiments tab shows: trials, epochs per trial,
// sampler, pruner, seed, trials at once, the baseline trial, and whether
// the sweep writes TensorBoard's HParams log (remembered per user, as the
// Training tab's Logs box is, not in the state file). The others
// (ASHA's eta and first rung, the validation split, TPE's start-up trials)
// keep the engine's defaults for a new sweep and the state file's values
// for a resumed one.
#include <deepcanvas/sweep.h>

#include <QStringList>
#include <QWidget>
#include <exception>

class QCheckBox;
class QComboBox;
class QLineEdit;
class QSpinBox;

namespace dc::gui {

class SweepOptionsForm : public QWidget {
  Q_OBJECT
 public:
  explicit SweepOptionsForm(QWidget* parent = nullptr);

  void setOptions(const SweepOptions& o);
  // The fields shown, over `base`: the rest stay as they are there. The
  // baseline box only for a new sweep (trial 0 is in a resumed one's file
  // either way).
  SweepOptions options(SweepOptions base, bool with_baseline) const;
  // False when the seed is empty or above 2^64 - 1.
  bool seedValid() const;
  int trials() const;
  bool tensorBoard() const;
  void setTensorBoard(bool on);
  // Enables or greys out the fields (not their labels) while a sweep runs.
  void setEditable(bool on);

 signals:
  void changed();

 private:
  QSpinBox *trials_spin_ = nullptr, *epochs_spin_ = nullptr, *parallel_spin_ = nullptr;
  QCheckBox *baseline_check_ = nullptr, *tensorboard_check_ = nullptr;
  QLineEdit* seed_edit_ = nullptr;  // a line edit: seeds are unsigned 64-bit
  QComboBox *sampler_ = nullptr, *pruner_ = nullptr;
};

// A way the tab's sweep differs from the state file's, in the tab's words
// (its fields' labels, not the CLI's flags): "trials (2 there, 3 here)".
QString sweepDifferenceText(const SweepDifference& d);
// The sweep in `stateFile` cannot be resumed with these differences.
QString sweepMismatchText(const QString& stateFile, const QStringList& differences);
// The engine's refusal of the state file (unreadable, another sweep) in the
// tab's words, with the tab's remedy; any other error as the engine says it.
QString sweepStateErrorText(const std::exception& e, const QString& stateFile);

}  // namespace dc::gui
