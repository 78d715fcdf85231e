#pragma once
// The inference panel: open or drop images (or a folder of them), see them
// preprocessed as the network's Input asks (size, grey/colour, the
// normalisation the weights were trained with), the top-5 classes, a
// saliency heat map (gradient of the top class's score with respect to the
// input) and every layer's activation maps. It runs the current weights of
// the ProjectContext or any checkpoint. One image is a few milliseconds of
// forward and backward for the networks this app builds, so it runs on the
// UI thread when an image is selected, never while training holds the
// weights (it uses its own copy through a ModelProbe). A character model
// (a token-sequence input) gets a text box instead: a prompt, and the text
// the weights continue it with (inference_text.cpp).
#include "gui/project_context.h"

#include <deepcanvas/probe.h>

#include <QWidget>
#include <memory>
#include <optional>
#include <vector>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSlider;
class QSpinBox;
class QSplitter;

namespace dc::widgets {
class ImageGrid;
class SaliencyView;
class SeriesPlot;
class TopKBars;
}  // namespace dc::widgets

namespace dc::gui {

class InferencePanel : public QWidget {
  Q_OBJECT
 public:
  explicit InferencePanel(ProjectContext* ctx, QWidget* parent = nullptr);
  ~InferencePanel() override;

  // Adds image files and the images in folders (not recursive); returns how
  // many were added. Unreadable files are listed in the message, not added.
  int openPaths(const QStringList& paths);
  // Where "Open images…" and "Open folder…" start: the folder of the last
  // pictures opened, else the project's image dataset (its folder, or its
  // CSV list's), else the project's folder, else home.
  QString imageDialogStart() const;
  // Where "Checkpoint file…" starts: the last checkpoint's folder, else the
  // project's folder, else home.
  QString checkpointDialogStart() const;
  // Switches to a checkpoint's weights; false (message shown) when it cannot
  // be used with the project's network. label names it in the weights list
  // (a run's checkpoint: "Run 2: best (epoch 3, …)"); empty: the file's name.
  bool loadCheckpoint(const QString& path, const QString& label = {});
  // The same with weights already read from `path` (maybe before a later
  // epoch rewrote it).
  bool useCheckpointWeights(ModelWeights w, const QString& path, const QString& label = {});
  void useCurrentWeights();
  // The weights list as shown: the latest weights, each run's checkpoints,
  // checkpoint files opened, then "Checkpoint file…".
  QStringList weightChoices() const;
  // Uses the entry of weightChoices() with this text; false when none is.
  bool chooseWeights(const QString& choice);
  // Adds a frame from the first camera (OpenCV); false, with a message, when
  // there is none.
  bool captureCamera();
  // Inspects a dataset sample as the Evaluation view listed it: shown with
  // its true class beside the prediction, predicted with the weights the
  // listing's confidences came from (chosen in the weights list under
  // their checkpoint's entry), and selected. False, with a message, when
  // the sample is not a picture of the Input's shape or the weights do not
  // fit the network.
  bool inspectSample(const InspectedSample& sample);
  QString weightsSource() const;

  int imageCount() const { return int(images_.size()); }
  int currentImage() const { return current_; }
  void selectImage(int row);
  // Top-1 class and its probability for the selected image (-1 when none).
  int topClass() const;
  double topProbability() const;
  QString topClassName() const;
  QString messageText() const;
  QString preprocessingText() const;
  int activationMapCount() const;

  widgets::TopKBars* topK() const { return bars_; }
  widgets::SaliencyView* saliency() const { return saliency_; }
  widgets::ImageGrid* images() const { return list_; }
  // The layer whose activations are shown, and a 1-D activation's bars.
  QComboBox* activationLayer() const { return layer_; }
  widgets::TopKBars* activationBars() const { return vector_bars_; }

  // Character models: whether the text box is shown (the network reads
  // tokens), its controls, and one generation with the weights in use
  // (false, with a message, when there are none or the prompt has a
  // character the training text never had).
  bool showsText() const;
  QLineEdit* textPrompt() const { return prompt_; }
  QSpinBox* textLength() const { return length_; }
  QDoubleSpinBox* textTemperature() const { return temperature_; }
  QPlainTextEdit* generatedText() const { return generated_; }
  bool generateText();

  // Networks that read a series (not pictures, not tokens): whether the
  // test-window view is shown, its controls, and one prediction of the
  // chosen test window with the weights in use (false, with the reason in
  // seriesText(), when there is no dataset or no fitting weights).
  bool showsSeries() const;
  QSpinBox* seriesSample() const { return series_index_; }
  widgets::SeriesPlot* seriesPlot() const { return series_plot_; }
  widgets::TopKBars* seriesTopK() const { return series_bars_; }
  QString seriesText() const;
  bool predictSeries();
  // A test window listed under the confusion matrix, shown and predicted
  // with the weights the listing came from (inspectSample's series half).
  bool inspectWindow(const InspectedSample& sample);

 signals:
  // After each prediction of the selected image.
  void predicted(int row, int top_class, double probability);
  void message(const QString& text);

 protected:
  // A series network's view predicts when shown (not on every edit while
  // hidden), loading the project's dataset if none is.
  void showEvent(QShowEvent* e) override;
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;

 private:
  void addImage(const QString& path, std::vector<uint8_t> chw, const Shape& in);
  struct Image {
    QString path;
    std::vector<uint8_t> chw;  // as the network reads it, before normalisation
    int label = -1;            // the true class of a dataset sample, else -1
    int top = -1;
    float prob = 0;
  };
  void buildUi();
  QWidget* buildTextUi();
  QWidget* buildSeriesUi();
  // Shows the text box or the image views, as the network's input asks.
  void showInputKind();
  void fillWeightChoices();
  void weightChoiceActivated(int index);
  void showWeightsInUse();
  void resetForNewProject();
  bool ensureProbe();
  void predictCurrent();
  // Fills `bars` with the five likeliest classes; the top one (-1: none).
  int showTopClasses(const std::vector<float>& probs, widgets::TopKBars* bars) const;
  void showActivations();
  void showActivationKind();  // bars for a vector, maps otherwise
  void setMessage(const QString& text, bool error);
  // The network's input shape, or nullopt with "The network must be valid
  // to <purpose>: …" shown.
  std::optional<Shape> inputShapeTo(const QString& purpose);
  // An image's name under the picture (and in the list's tooltip), with its
  // true class when it is a dataset sample.
  QString imageName(const Image& img) const;
  // Its caption in the list: the file and the top class with its
  // percentage, each cut to the list's cell.
  QString listCaption(const Image& img) const;
  // The label of a run's checkpoint in the weights list (empty for another file).
  QString runCheckpointLabel(const QString& path) const;
  void updatePreprocessingText();
  QString className(int i) const;

  ProjectContext* ctx_;
  bool use_checkpoint_ = false;
  ModelWeights checkpoint_;
  QString checkpoint_path_;
  std::unique_ptr<ModelProbe> probe_;
  bool probe_stale_ = true;
  bool mismatch_shown_ = false;  // the message is "The weights do not fit"
  std::vector<Image> images_;
  int current_ = -1;
  std::vector<float> probs_;

  QLabel *weights_label_, *preprocess_, *message_;
  QPushButton *open_, *open_dir_, *camera_;
  QComboBox* weights_choice_;
  QStringList opened_checkpoints_;  // files opened by hand, offered again in the list
  widgets::ImageGrid *list_, *maps_;
  widgets::TopKBars* vector_bars_;  // a 1-D activation: one bar per value
  QWidget* vector_area_;            // its scroll area, shown instead of maps_
  widgets::SaliencyView* saliency_;
  widgets::TopKBars* bars_;
  QSlider* opacity_;
  QComboBox* layer_;
  QSplitter* image_area_;
  QWidget* text_area_;
  QLineEdit* prompt_;
  QSpinBox *length_, *seed_;
  QDoubleSpinBox* temperature_;
  QPushButton* generate_;
  QPlainTextEdit* generated_;
  QWidget* series_area_;
  QSpinBox* series_index_;
  QLabel* series_info_;
  widgets::SeriesPlot* series_plot_;
  widgets::TopKBars* series_bars_;
};

// Whether g's single Input is neither a picture nor tokens (the Inference
// tab then shows test windows).
bool reads_series(const Graph& g);

}  // namespace dc::gui
