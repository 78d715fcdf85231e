#pragma once
// .dcproj project files: JSON with a schema version, holding the graph
// (nodes, attributes, positions, edges), the dataset and the training
// settings. Loading validates every field against the layer registry and
// names the file and field on error; saving is atomic.
#include <deepcanvas/blocks.h>
#include <deepcanvas/data.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/image_data.h>
#include <deepcanvas/train_config.h>

#include <string>

namespace dc {

constexpr int kProjectVersion = 1;
// load_project refuses larger files: 64 MiB holds a graph of ~300k layers,
// far beyond any network one draws, and parsing it stays within seconds.
constexpr int64_t kMaxProjectBytes = int64_t(64) << 20;

struct DatasetSpec {
  std::string kind = "idx";  // IDX folder (MNIST layout)
  // Folder, relative to the project file, or "fashion-mnist" for Debian's
  // dataset-fashion-mnist package, or "sample:NAME" for bundled sample data.
  std::string path;
  // kind "text" (a UTF-8 file, next-character windows) and "csv_sequence"
  // (sliding windows over a CSV file's rows); see sequence_data.h.
  int64_t window = 64;         // steps per sample
  int64_t stride = 1;          // text: distance between windows
  std::string target;          // csv_sequence: label column ("" = last)
  double test_fraction = 0.1;  // end of the text / series kept for testing
  // Images: resize / grey->RGB / per-channel normalisation before training
  // and inference ("preprocess" in the file; see ImagePreprocess).
  ImagePreprocess preprocess;
  // kind "image_folder" (one subfolder per class, path is the folder) and
  // "image_csv" (path is a CSV of path,label); image_data.h says how they
  // are read. test_fraction above applies when there is no test/ folder.
  int64_t split_seed = 1;        // the seeded per-class test split (>= 0)
  double crop_fraction = 0.875;  // evaluation's resize and centre crop
  std::string loading = "auto";  // "auto", "memory" or "stream"
  int64_t memory_budget_mb = 0;  // pictures held in memory; 0 = a quarter of the free memory
  std::string cache;             // streamed pictures: "" = ~/.cache/DeepCanvas, "none", a folder
  bool bad_images_are_errors = false;  // else bad images are skipped and counted
  bool is_images() const { return kind == "image_folder" || kind == "image_csv"; }
  // How one picture is cropped for prediction (the Inference tab, predict):
  // as evaluation sees this image dataset; other data has no crop fraction,
  // so 1: the picture is resized to cover the Input and only what its
  // aspect ratio leaves over is cut, never stretched.
  double inference_crop() const { return is_images() ? crop_fraction : 1.0; }
};

struct Project {
  std::string name;
  Graph graph;
  DatasetSpec dataset;
  TrainConfig training;
  std::string file;  // where it was loaded from / saved to ("" if new)
  // Block definitions the file holds that no Block node uses; the graph's
  // nodes carry the used ones (blocks.h). Kept so that the file round-trips.
  std::vector<BlockDef> unused_blocks;
};

Project parse_project(const std::string& json_text, const std::string& source);
Project load_project(const std::string& path);
std::string project_to_json(const Project& p);
// Writes p to path atomically and makes path its file. Saving into another
// folder first rebases (rebase_project_paths) the paths relative to the
// old one.
void save_project(Project& p, const std::string& path);
// Rewrites the dataset path and training.init_weights, when relative to
// p.file's folder, so they name the same files from new_file's folder:
// relative when the file stays at or below it, else absolute.
void rebase_project_paths(Project& p, const std::string& new_file);

// Graph alone, for the clipboard and undo snapshots.
std::string graph_to_json(const Graph& g);
Graph graph_from_json(const std::string& json_text, const std::string& source);

// The dataset folder for a project: an override (CLI --data) wins; names
// relative to the project file's folder; "fashion-mnist" maps to the
// Debian package's folder. Throws IoError when it does not exist.
std::string resolve_dataset_dir(const Project& p, const std::string& override_path = "");

// "" when the project's own dataset path stays inside its folder (or names
// a bundled sample or Debian's Fashion-MNIST), else a sentence saying where
// it leads: a shared project may point at /etc or ../../ (issue 29), and
// although DeepCanvas only reads a dataset there, the user should know.
std::string dataset_location_note(const Project& p);

// The dataset a project names, read: IDX folders (Fashion-MNIST's class
// names when the folder is a Fashion-MNIST one), text corpora and CSV
// series, with the project's window, stride, target and test fraction.
// The folder is resolve_dataset_dir(p, override_path)'s. Throws IoError or
// DataError naming the file.
struct ProjectData {
  TrainTest data;
  std::string dir;
  std::string note;        // dataset_location_note(p) when the project's own path was used
  ImageDataReport images;  // image kinds: classes, skipped files, memory or streaming
};
// How an image dataset of spec s is loaded (image_data.h).
ImageLoadOptions image_load_options(const DatasetSpec& s);
// An image folder or CSV list at `path` (resolved) as the spec and the
// project's Input and augmentation settings say.
TrainTest load_image_spec(const Project& p, const DatasetSpec& s, const std::string& path,
                          ImageDataReport* report = nullptr);
ProjectData load_project_dataset(const Project& p, const std::string& override_path = "");

// A file a project names (training.init_weights): relative to the project
// file's folder, or as given when absolute or the project is unsaved.
std::string resolve_project_file(const Project& p, const std::string& path);

// Where bundled resources (templates, sample data) live: next to the
// installed binary (../share/deepcanvas) or, in a build tree, the sources.
std::string resource_dir();

}  // namespace dc
