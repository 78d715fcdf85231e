#pragma once
// The dataset panel: where the data comes from (the project's dataset, the
// bundled sample, IDX files, an image folder with one subfolder per class or
// a CSV list of images, a CSV series or a text corpus), what is in it
// (samples per class and split, thumbnails with their labels, skipped files
// and how images are loaded), how it is prepared (validation split,
// normalisation) and augmented (the engine's random resized crop and colour
// jitter from the whole picture, flips, crop with padding, rotation,
// translation and brightness, with a live preview drawn by the engine's own
// code). A loaded source is recorded in the project (an undoable edit).
// Loading errors and the checks that would stop training are shown here
// before any run starts; a failed load keeps the previous dataset.
#include "gui/project_context.h"

#include <QWidget>
#include <thread>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QUndoStack;

namespace dc::widgets {
class ImageGrid;
class SeriesPlot;
}  // namespace dc::widgets

namespace dc::gui {

class DatasetPanel : public QWidget {
  Q_OBJECT
 public:
  explicit DatasetPanel(ProjectContext* ctx, QWidget* parent = nullptr);
  ~DatasetPanel() override;  // waits for a load in progress

  // Loads a source as if chosen in the panel; false (message shown) on error.
  bool loadSource(const DatasetSource& source);
  // The same on a worker thread (what the Load button does: a folder of
  // thousands of images takes seconds); datasetLoaded or loadFailed follow.
  void loadSourceAsync(const DatasetSource& source);
  bool loading() const { return worker_.joinable(); }
  // The bar shown while a load runs (busy, as readers report no fraction).
  QProgressBar* loadProgress() const { return load_progress_; }
  // The banner: load errors, skipped files and training problems.
  QString messageText() const;
  widgets::ImageGrid* thumbnails() const { return thumbs_; }
  // A text dataset's samples: a few windows and the character after each,
  // shown instead of the thumbnails.
  QPlainTextEdit* textSamples() const { return text_samples_; }
  // A series' samples (CSV): the start of the training series plotted, each
  // feature over the rows and the class on the right axis.
  widgets::SeriesPlot* seriesPlot() const { return series_plot_; }
  // Whether the augmentation settings and preview are shown: for image
  // samples (or before a dataset is loaded), not for text or series.
  bool showsAugmentation() const;
  widgets::ImageGrid* augmentPreview() const { return preview_; }
  QTableWidget* classTable() const { return table_; }
  // Shown under the summary when the loaded pictures hold what the Input
  // throws away (ImageDataReport::suggested_input): one click asks for that
  // Input (inputShapeRequested), and the pictures are read again at it.
  QPushButton* suggestButton() const { return suggest_; }
  // The summary above the table (description, sizes, how images are loaded).
  QString summaryText() const;
  // The source as the widgets show it (what Load would read), and setting
  // them without loading.
  DatasetSource sourceFromWidgets() const;
  void showSource(const DatasetSource& s);
  // Choosing a dataset becomes a step of this stack (Edit > Undo takes the
  // project's previous dataset back and loads it); none: not undoable.
  void setUndoStack(QUndoStack* s) { undo_ = s; }
  // Undo and redo of a choice: the project records `spec` again and its
  // data loads (in the background) unless a run is using the data.
  void restoreDatasetSpec(const DatasetSpec& spec);
  // The augmentation as the panel shows it; setting it is an edit (saved
  // with the project, marks it modified).
  AugmentConfig augmentOptions() const;
  void setAugmentOptions(const AugmentConfig& a);

 public slots:
  void loadFromWidgets();
  void refreshPreview();  // new random augmentations of the preview sample

 signals:
  void datasetLoaded();
  void loadFailed(const QString& message);
  // The validation split, normalisation or augmentation (saved with the
  // project) changed.
  void settingsChanged();
  // The suggest button: the window sets the Input layer's shape (an
  // undoable edit of the network).
  void inputShapeRequested(const std::vector<int64_t>& shape);

 protected:
  // The first time the tab is shown for a project, its dataset loads in the
  // background: the tab never says "No dataset loaded." for a project that
  // names one.
  void showEvent(QShowEvent* e) override;

 private:
  void buildUi();
  void showDataset();
  void showTextSamples(const Dataset& train, const QStringList& names);
  void showSeries(const Dataset& train);
  void showMessages(const QString& error = {});
  void kindChanged();
  void optionsChanged();
  void showAugmentOptions(const AugmentConfig& a);  // no edit: the project's own
  void specChanged(const DatasetSpec& before);
  void addImagePreview(const Dataset& train, const AugmentConfig& a);
  // stale: the load began for a project since replaced; its data is dropped.
  void finishLoad(const DatasetSource& source, LoadedDataset* loaded, const QString& error,
                  bool stale);
  // Loads the project's own dataset once, when it names one and none is
  // loaded (the tab shown for the first time, or another project opened
  // while it shows).
  void autoLoad();
  // Pictures are read at the Input's size: when the Input's shape changes,
  // a loaded image dataset is read again at the new one (as Load would).
  void followInput();

  ProjectContext* ctx_;
  QComboBox *kind_, *normalize_, *loading_, *bad_images_;
  QLineEdit *path_, *target_;
  QPushButton *browse_, *load_, *reroll_, *suggest_;
  QSpinBox *window_, *pad_;
  QDoubleSpinBox *test_fraction_, *crop_fraction_, *val_split_, *rotate_, *translate_, *brightness_,
      *jitter_;
  QCheckBox *hflip_, *vflip_, *resized_crop_;
  QLabel *summary_, *message_;
  QProgressBar* load_progress_;
  bool auto_loaded_ = false;   // this project's dataset was loaded on first show
  bool auto_loading_ = false;  // that load is still running
  // Counts project replacements: a load that began for an earlier project
  // ends without applying its data (it would be the wrong project's).
  uint64_t generation_ = 0;
  QTableWidget* table_;
  widgets::ImageGrid *thumbs_, *preview_;
  QPlainTextEdit* text_samples_;
  widgets::SeriesPlot* series_plot_;
  QWidget *aug_box_, *preview_box_;
  int preview_index_ = 0;
  uint64_t preview_seed_ = 1;
  std::thread worker_;
  QUndoStack* undo_ = nullptr;
  bool spec_shown_ = false;  // the project's dataset is in the widgets
  bool undoing_ = false;     // an undo or redo sets the spec: no new step
  // The Input shape followInput last read the pictures at: a failed read
  // is not retried on every later edit of the network.
  Shape followed_shape_;
};

}  // namespace dc::gui
