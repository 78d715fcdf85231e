// The Inference tab's weights: a checkpoint file, the current run's
// weights, or one of the runs' checkpoints from the list; and the reset
// when another project opens.
#include <deepcanvas/errors.h>

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QSignalBlocker>

#include "gui/inference_panel.h"
#include "widgets/dialog_dirs.h"
#include "widgets/image_grid.h"
#include "widgets/saliency_view.h"
#include "widgets/top_k_bars.h"

namespace dc::gui {

bool InferencePanel::loadCheckpoint(const QString& path, const QString& label) {
  ModelWeights w;
  try {
    w = weights_from_checkpoint(path);
  } catch (const std::exception& e) {
    setMessage(tr("Cannot use this checkpoint: %1").arg(QString::fromUtf8(e.what())), true);
    return false;
  }
  return useCheckpointWeights(std::move(w), path, label);
}

bool InferencePanel::useCheckpointWeights(ModelWeights w, const QString& path,
                                          const QString& label) {
  std::unique_ptr<ModelProbe> probe;
  try {
    if (!label.isEmpty()) w.source = label + " — " + w.source;
    probe = std::make_unique<ModelProbe>(ctx_->project().graph, w.state, path.toStdString());
  } catch (const std::exception& e) {
    // The weights in use stay as they were.
    setMessage(tr("Cannot use this checkpoint: %1").arg(QString::fromUtf8(e.what())), true);
    return false;
  }
  checkpoint_ = std::move(w);
  checkpoint_path_ = path;
  ctx_->setChosenWeights(std::make_shared<const ModelWeights>(checkpoint_));
  probe_ = std::move(probe);
  probe_stale_ = false;
  use_checkpoint_ = true;
  bool listed = false;
  for (const RunCheckpoint& c : ctx_->runCheckpoints()) listed |= c.path == path;
  if (!listed && !opened_checkpoints_.contains(path)) opened_checkpoints_ << path;
  fillWeightChoices();
  showWeightsInUse();
  setMessage({}, false);
  updatePreprocessingText();
  predictCurrent();
  return true;
}

void InferencePanel::useCurrentWeights() {
  use_checkpoint_ = false;
  checkpoint_path_.clear();
  ctx_->setChosenWeights(nullptr);
  probe_stale_ = true;
  fillWeightChoices();
  showWeightsInUse();
  updatePreprocessingText();
  predictCurrent();
}

void InferencePanel::showWeightsInUse() {
  weights_label_->setText(tr("Predicting with: %1").arg(weightsSource()));
}

void InferencePanel::fillWeightChoices() {
  const QSignalBlocker block(weights_choice_);
  weights_choice_->clear();
  const ModelWeights& w = ctx_->weights();
  weights_choice_->addItem(
      w.valid() ? tr("Latest: %1").arg(w.source) : tr("Latest run's weights (none yet)"),
      QString());
  // Newest run first: that is usually the one to look at.
  const auto& runs = ctx_->runCheckpoints();
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    weights_choice_->addItem(it->label, it->path);
    weights_choice_->setItemData(weights_choice_->count() - 1, it->path, Qt::ToolTipRole);
  }
  for (const QString& f : opened_checkpoints_) {
    weights_choice_->addItem(tr("File: %1").arg(QFileInfo(f).fileName()), f);
    weights_choice_->setItemData(weights_choice_->count() - 1, f, Qt::ToolTipRole);
  }
  weights_choice_->addItem(tr("Checkpoint file…"), QStringLiteral("?"));
  const int i = use_checkpoint_ ? weights_choice_->findData(checkpoint_path_) : 0;
  weights_choice_->setCurrentIndex(std::max(0, i));
}

void InferencePanel::weightChoiceActivated(int index) {
  const QString data = weights_choice_->itemData(index).toString();
  if (data.isEmpty()) {
    useCurrentWeights();
  } else if (data == "?") {
    QString f = QFileDialog::getOpenFileName(this, tr("Open a checkpoint"), checkpointDialogStart(),
                                             tr("Checkpoints (*.safetensors)"));
    widgets::rememberDialogChoice("checkpoints", f);
    if (f.isEmpty() || !loadCheckpoint(f)) fillWeightChoices();  // back to the one in use
  } else if (!loadCheckpoint(data, runCheckpointLabel(data))) {
    fillWeightChoices();
  }
}

QString InferencePanel::runCheckpointLabel(const QString& path) const {
  for (const RunCheckpoint& c : ctx_->runCheckpoints())
    if (c.path == path) return c.label;
  return {};
}

QStringList InferencePanel::weightChoices() const {
  QStringList v;
  for (int i = 0; i < weights_choice_->count(); ++i) v << weights_choice_->itemText(i);
  return v;
}

bool InferencePanel::chooseWeights(const QString& choice) {
  const int i = weights_choice_->findText(choice);
  if (i < 0) return false;
  weights_choice_->setCurrentIndex(i);
  weightChoiceActivated(i);
  return true;
}

void InferencePanel::resetForNewProject() {
  use_checkpoint_ = false;
  checkpoint_ = {};
  checkpoint_path_.clear();
  opened_checkpoints_.clear();
  probe_.reset();
  probe_stale_ = true;
  // The images go too: they were read for the previous Input's shape and
  // colour, and the new network would see them as noise.
  images_.clear();
  current_ = -1;
  {
    const QSignalBlocker block(list_);
    list_->clear();
  }
  saliency_->setImage({});
  probs_.clear();
  bars_->clear();
  saliency_->setCaption({});
  saliency_->setHeatmap({}, 0, 0);
  maps_->clear();
  vector_bars_->clear();
  layer_->clear();
  setMessage({}, false);
  mismatch_shown_ = false;
  fillWeightChoices();
  showWeightsInUse();
  // The replaced project's line goes now; the new project's Input writes
  // its own when it arrives (projectChanged).
  preprocess_->clear();
}

}  // namespace dc::gui
