#pragma once
// Everything a run needs decided before it starts, in one engine call: the
// dataset(s), the device and its fallback, and every pre-run check
// (settings, network, shapes and classes against the data, memory,
// writable outputs). Problems come back structured and worded without any
// front end's controls, so the CLI adds its flags and the app its buttons.
// It lives in tools because the memory check is the advisor's model
// (largest_batch) and the dataset is the project's.
#include <deepcanvas/preflight.h>
#include <deepcanvas/project.h>
#include <deepcanvas/train_config.h>

#include <string>
#include <vector>

namespace dc {

// What the run is for; it decides which checks apply.
enum class RunPurpose { Train, Evaluate, Predict, Sweep, LrFind, Advise, BatchFit };

// A file or folder the run will write, checked before anything runs.
struct RunOutput {
  // Words for the output in messages ("checkpoint", "checkpoint folder",
  // "sweep state"); an Output problem's message starts with it and its
  // subject is it, so a front end can put its own name in its place.
  std::string role;
  std::string path;  // empty: nothing to check
  bool is_dir = false;
};

// Whether the run reads the dataset.
enum class DataNeed {
  None,      // nothing is read (advise with a sample count, predict of files)
  Optional,  // read when possible; a failure is a warning (advise's estimate)
  Required,  // a failure is a blocking Data problem
};

struct PrepareOptions {
  RunPurpose purpose = RunPurpose::Train;
  // The run's settings after every override (flags, a sweep's largest
  // batch): what is checked, and the device it asks for.
  TrainConfig config;
  // A dataset path instead of the project's (a photo folder is read as an
  // image folder whatever the project's kind).
  std::string data_override;
  DataNeed data = DataNeed::Required;
  // The device was asked for explicitly (a flag, a control): unavailable is
  // a blocking Device problem. Otherwise a GPU the project names but this
  // machine lacks falls back to the CPU with a warning.
  bool device_requested = false;
  std::vector<RunOutput> outputs;
  // Runs training at once (parallel sweep trials): each gets its share of
  // the memory.
  int concurrent = 1;
  // The CPU memory check of Train, Sweep, LrFind and Advise (profiling);
  // an Advise that only estimates turns it off.
  bool check_memory = true;
  // Data the caller has read already (the app keeps the Dataset tab's
  // dataset loaded): with given_data, train and test are checked against
  // the network instead of the project's dataset being read a second time.
  // A null train is a run without data (a Data problem, subject "dataset").
  bool given_data = false;
  const Dataset* train = nullptr;
  const Dataset* test = nullptr;
};

struct PreparedRun {
  // The dataset(s) with what loading an image dataset found (classes,
  // skipped files, memory or streamed); loaded says whether they were read.
  ProjectData data;
  bool loaded = false;
  // The settings to run with: the device and precision after a fallback.
  TrainConfig config;
  // Why the run falls back to the CPU ("" when it does not).
  std::string device_fallback;
  // Every problem found, blocking ones and warnings, in the order checked.
  // Cheap checks come first; when one blocks, the dataset is not read.
  std::vector<RunProblem> problems;

  const RunProblem* first_blocking() const { return dc::first_blocking(problems); }
  bool ok() const { return first_blocking() == nullptr; }
};

// Prepares a run of p for o.purpose. Throws only for what is not a problem
// of the run (a bug); every expected failure is in problems.
PreparedRun prepare_run(const Project& p, const PrepareOptions& o);

// The memory problem of training g with c on the CPU, `concurrent` runs at
// once, for `what` ("training", "the LR range test"): set when the
// advisor's predicted memory is more than available (needed_bytes,
// available_bytes, suggested_batch filled in); empty message otherwise.
RunProblem cpu_memory_problem(const Graph& g, const TrainConfig& c, const std::string& what,
                              int concurrent = 1);

// One line saying what a loaded dataset is and where it came from ("image
// folder: /data/pets", "bundled sample: fashion-mnist-subset"), for logs and
// the app's Dataset tab: the front ends do not switch on the dataset kind.
std::string describe_dataset(const DatasetSpec& spec, const ProjectData& loaded);

// The Output problem of writing `out` (missing parent folders are
// created): empty message when it can be written.
RunProblem output_problem(const RunOutput& out);

}  // namespace dc
