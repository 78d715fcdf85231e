#pragma once
// What the training, dataset and inference panels share: the project (graph,
// dataset spec, training settings), the loaded datasets and the current
// weights. Each panel takes a ProjectContext, so a panel can be built and
// tested on its own, without MainWindow; the app hands the same context to
// all of them and calls setProject when the editor's graph changes.

#include <deepcanvas/data.h>
#include <deepcanvas/image_data.h>
#include <deepcanvas/prepare_run.h>
#include <deepcanvas/project.h>

#include <QImage>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QVector>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dc::gui {

// Where a dataset comes from, as chosen in the dataset panel. It becomes the
// project's DatasetSpec (datasetSpec) and is read by the engine's
// load_project_dataset, as the CLI reads it.
struct DatasetSource {
  enum class Kind { Project, Sample, Idx, ImageFolder, ImageCsv, Csv, Text };
  Kind kind = Kind::Project;
  // Idx / ImageFolder: a folder; ImageCsv / Csv / Text: a file. Relative:
  // to the project file's folder (to the working folder while unsaved).
  QString path;
  double test_fraction = 0.2;  // images without test/; the end of a CSV / text
  int64_t window = 64;         // Csv / Text: steps per sample
  QString target;              // Csv: the label column ("" = last)
  // ImageFolder / ImageCsv, as DatasetSpec has them.
  double crop_fraction = 0.875;
  QString loading = "auto";  // "auto", "memory" or "stream"
  bool bad_images_are_errors = false;
};

// The project's record of `source`: its kind, path (relative to the project
// file's folder when inside it, else absolute) and options; what a source
// does not choose (preprocessing, split seed, memory budget, cache, stride)
// stays as `project`'s dataset has it. Kind::Project is the project's own.
DatasetSpec datasetSpec(const DatasetSource& source, const Project& project);
// The source that datasetSpec turns into `spec` (for showing a project's
// dataset in the panel); the project's own for kinds the panel cannot name.
DatasetSource datasetSource(const DatasetSpec& spec);
bool sameSpec(const DatasetSpec& a, const DatasetSpec& b);
// Files left out of an image dataset, the first few named with the reason
// ("notes.txt (not an image)"), then "and N more"; "" when none.
QString skippedFilesText(const std::vector<SkippedFile>& files, size_t named = 5);
// Images found bad while a run read them (Dataset::images->bad()): one
// line naming the first few, or "" when none (or not an image dataset).
QString badImagesText(const Dataset* d);

// What the app tells the engine's prepare_run() about a run it starts, the
// app's counterpart of the CLI's flags.
struct AppRunCheck {
  RunPurpose purpose = RunPurpose::Train;
  // The folder the run writes its checkpoints into (the Training tab's
  // Checkpoints box); "" checks none.
  std::string checkpoint_folder;
  // The sweep's state file (Experiments tab); "" checks none.
  std::string state_file;
  int concurrent = 1;  // runs training at once (a sweep's parallel trials)
  // The device comes from the Training tab's Device box, which lists only
  // this machine's devices: one that is gone blocks. Otherwise (the
  // project's own settings) a missing GPU falls back to the CPU with a note.
  bool device_chosen = true;
};

// A problem of the engine's prepare_run() in the app's words: the engine's
// sentence, then where in the app to fix it. Names no CLI flag.
QString appProblemText(const RunProblem& problem);

// A dataset as read from its source, before it replaces the context's.
struct LoadedDataset {
  TrainTest data;
  QString description;
  QStringList warnings;
  DatasetSpec spec;        // what the project records for it
  ImageDataReport images;  // image kinds: classes per split, skipped files, loading note
  // The Dataset tab's thumbnails, the first few of every class (index in
  // the training set, image), made while loading: image files decode then.
  std::vector<std::pair<int64_t, QImage>> thumbnails;
};

// Trained weights with what is needed to feed them new inputs.
struct ModelWeights {
  std::vector<std::pair<std::string, Tensor>> state;
  float mean = 0.f, stddev = 1.f;
  QStringList class_names;
  QString source;  // "current weights (epoch 3)" or a checkpoint path
  bool valid() const { return !state.empty(); }
};

// A dataset sample sent from the Evaluation view to the Inference tab: its
// bytes as the dataset holds them, and the weights the listing's
// confidences came from (in memory: the checkpoint file behind them may
// have been rewritten by a later epoch since).
struct InspectedSample {
  QString name;              // the picture's file, or "test #N"
  std::vector<uint8_t> chw;  // u8 at `shape`, before normalisation (pictures)
  Shape shape;               // the dataset's sample shape
  int true_class = -1;
  std::shared_ptr<const ModelWeights> weights;
  QString checkpoint;  // the file they were read from (the weights list's entry)
  int64_t index = -1;  // its index in the test set (a series window has no picture)
};

// A checkpoint a run wrote, offered to the Inference tab by name ("Run 2:
// best, epoch 3, 85.2 % validation") so the user picks whose weights to use.
struct RunCheckpoint {
  int run = 0;  // the Training tab's run; 0: the sweep's kept best
  QString label;
  QString path;
};

// Whether samples of this shape are pictures (C×H×W with 1 or 3 channels),
// which the app can show and the Inference tab can take.
inline bool is_picture_shape(const Shape& s) {
  return s.rank() == 3 && (s[0] == 1 || s[0] == 3);
}

// Whether a dataset's samples are windows of numbers (a CSV series: steps ×
// features, neither picture bytes nor text tokens).
inline bool is_series(const Dataset& d) {
  return !d.tokens && !d.is_bytes() && d.sample_shape.rank() == 2;
}

// A dataset sample's bytes as the network reads them before normalisation
// (its sample_shape, u8; a picture file decoded and resized as for
// evaluation); empty when the dataset holds no bytes (numbers from a CSV).
std::vector<uint8_t> sample_chw(const Dataset& d, int64_t index);
// A dataset sample as an image (C×H×W u8 with C = 1 or 3; a series window
// as a small line chart of its features); null for other samples (text).
QImage sample_image(const Dataset& d, int64_t index);
// An input tensor [1, C, H, W] (normalised floats) back as an image, undoing
// the normalisation, for showing what the network saw.
// channel_mean/channel_std, when given one per channel, undo a per-channel
// normalisation instead of mean/stddev.
QImage tensor_image(const float* chw, const Shape& s, float mean, float stddev,
                    const std::vector<float>& channel_mean = {},
                    const std::vector<float>& channel_std = {});

// Reads a checkpoint (dc::read_checkpoint) into ModelWeights; throws
// dc::IoError naming the file.
ModelWeights weights_from_checkpoint(const QString& path);

class ProjectContext : public QObject {
  Q_OBJECT
 public:
  explicit ProjectContext(Project project, QObject* parent = nullptr);
  // Throws dc::Error (IoError/GraphError) with a message for the user.
  static std::unique_ptr<ProjectContext> load(const QString& path, QObject* parent = nullptr);

  const Project& project() const { return project_; }
  Project& project() { return project_; }
  void setProject(Project p);  // e.g. after the editor changed the graph
  // Another project (File > New, Open): the dataset, weights and runs of the
  // previous one are dropped and projectReplaced() tells the panels to reset.
  void replaceProject(Project p);
  QString projectName() const { return QString::fromStdString(project_.name); }

  // Loads the data for `source` (throws dc::Error with a message naming the
  // file or folder). Problems that do not stop loading (skipped files) are
  // in datasetWarnings().
  void loadDataset(const DatasetSource& source);
  // loadDataset when no data is loaded, as Start and Measure do so they work
  // without a visit to the Dataset tab: "" when data is there, else why not.
  QString loadDatasetIfNone(const DatasetSource& source);
  // The two halves of loadDataset, for loading on a worker thread:
  // readDataset touches nothing shared (a copy of the project is passed);
  // applyDataset runs on the UI thread.
  static LoadedDataset readDataset(const Project& project, const DatasetSource& source);
  void applyDataset(const DatasetSource& source, LoadedDataset loaded);
  bool hasDataset() const { return train_ != nullptr; }
  std::shared_ptr<Dataset> trainSet() const { return train_; }
  // Augmentation is the engine's (TrainConfig::augment, saved with the
  // project and drawn afresh for every batch): the panel edits it here.
  const AugmentConfig& augmentation() const { return project_.training.augment; }
  void setAugmentation(const AugmentConfig& a);
  std::shared_ptr<Dataset> testSet() const { return test_; }
  // What a GPU run keeps of the loaded datasets on the device (the advisor's
  // cuda_resident_bytes of both sets; 0 with none loaded).
  int64_t residentBytes() const;
  const DatasetSource& datasetSource() const { return source_; }
  // Loading records the source in the project (project().dataset); a
  // change emits datasetSpecChanged with the previous spec, for undo.
  // setDatasetSpec changes the record alone (undo, redo), not the data.
  void setDatasetSpec(const DatasetSpec& spec);
  // Image kinds: what the engine found (classes and counts per split,
  // skipped files, memory or streamed); empty lists otherwise.
  const ImageDataReport& imageReport() const { return images_; }
  bool imageDataset() const { return train_ && train_->images != nullptr; }
  const std::vector<std::pair<int64_t, QImage>>& thumbnails() const { return thumbnails_; }
  QString datasetDescription() const { return description_; }
  QStringList datasetWarnings() const { return warnings_; }
  QStringList classNames() const;
  // The engine's prepare_run() for a run of this project with settings c on
  // the loaded data (not read again): the checks the CLI makes before the
  // same run, in the same order.
  PreparedRun prepareRun(const TrainConfig& c, const AppRunCheck& check) const;
  // Everything that would stop training, each a sentence in the app's
  // words (appProblemText): the settings, an invalid graph, memory, the
  // checkpoint folder, the device, no data, a single class, sample shape vs
  // the Input layer, number of classes vs the network's outputs. The
  // engine's warnings about the data count too: the app asks for a fix
  // before it trains. A device that falls back to the CPU does not stop a
  // run; it goes to *notes. Empty when fine.
  QStringList trainingProblems(const TrainConfig& c, const AppRunCheck& check,
                               QStringList* notes = nullptr) const;
  // With c (the Training tab's, not saved yet): its device is the Device
  // box's and c.checkpoint_dir, when set, the folder to check.
  QStringList trainingProblems(const TrainConfig& c) const;
  // With the project's training settings, as the Dataset tab shows them:
  // the project's device may fall back, and no folder is written yet.
  QStringList trainingProblems() const;

  // The latest run's weights (or an imported model's).
  const ModelWeights& weights() const { return weights_; }
  void setWeights(ModelWeights w);
  // The weights the app predicts and exports with (Export for Deployment,
  // ONNX, PyTorch): the checkpoint chosen in the Inference tab, else the
  // latest run's. One choice, so that what is exported is what was looked at.
  const ModelWeights& weightsInUse() const { return chosen_ ? *chosen_ : weights_; }
  // The Inference tab's choice; null: the latest run's.
  void setChosenWeights(std::shared_ptr<const ModelWeights> w);
  // The checkpoints of this project's runs (and its sweep's kept best),
  // oldest first.
  const QVector<RunCheckpoint>& runCheckpoints() const { return run_checkpoints_; }
  // Appends c; an entry whose path is listed already replaces it.
  void addRunCheckpoints(const QVector<RunCheckpoint>& c);

  // True while a run trains on this context's data: the dataset cannot be
  // replaced then (the evaluation view reads the test set the run uses).
  // Each owner (the Training tab's run, the Experiments tab's sweep) sets
  // its own flag, so one ending does not clear the other's.
  enum class BusyOwner { Training = 1, Sweep = 2 };
  bool busy() const { return busy_ != 0; }
  bool busyWith(BusyOwner o) const { return (busy_ & int(o)) != 0; }
  void setBusy(BusyOwner o, bool b);

 signals:
  void projectChanged();
  void datasetChanged();
  void datasetSpecChanged(const dc::DatasetSpec& before);
  void weightsChanged();
  void weightsInUseChanged();  // weightsInUse() is other weights now
  void busyChanged(bool busy);
  void projectReplaced();  // before the projectChanged() of replaceProject
  void runCheckpointsChanged();

 private:
  Project project_;
  DatasetSource source_;
  std::shared_ptr<Dataset> train_, test_;
  QString description_;
  QStringList warnings_, blocking_;
  ImageDataReport images_;
  std::vector<std::pair<int64_t, QImage>> thumbnails_;
  ModelWeights weights_;
  std::shared_ptr<const ModelWeights> chosen_;
  QVector<RunCheckpoint> run_checkpoints_;
  int busy_ = 0;  // a bit per BusyOwner
};

}  // namespace dc::gui
