#pragma once
// What is wrong before a run starts, in one place: the Trainer refuses to
// start with the first problem, the CLI prints it, and the app lists them
// all in the Training tab, with the same words everywhere.
#include <deepcanvas/data.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/train_config.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dc {

struct RunProblem {
  // Which exception throw_problem() throws for it: Error (Settings, Device,
  // Memory), GraphError (Network), DataError (Data) or IoError (Output).
  enum class Kind { Settings, Network, Data, Device, Memory, Output };
  RunProblem() = default;
  RunProblem(Kind k, std::string m, bool w = false, std::string subj = {})
      : kind(k), message(std::move(m)), warning(w), subject(std::move(subj)) {}
  Kind kind = Kind::Settings;
  // One sentence that names no CLI flag and no control of the app: each
  // front end adds its own remedy from the fields below.
  std::string message;
  // A run can start but is probably not what was meant (fewer classes than
  // the network has outputs): the Trainer goes on, the CLI prints a note,
  // the app asks for a fix before it trains.
  bool warning = false;
  // What the problem is about: a setting's key ("training.batch",
  // "training.precision"), a node's id, a file or folder, an output's role.
  std::string subject;
  // Memory: what the run needs and what is available, in bytes, and the
  // largest batch that fits (0: not even one sample); -1 when not known.
  int64_t needed_bytes = -1, available_bytes = -1, suggested_batch = -1;
  // Output: the path that cannot be written and the operating system's
  // reason ("Permission denied", "Not a directory").
  std::string path, reason;
};

// The single Input's and the single output's shapes per sample, from shape
// inference alone (no weights are allocated). Throws GraphError with every
// node's problem when the network cannot be compiled.
struct NetworkShapes {
  Shape input, output;
};
NetworkShapes network_shapes(const Graph& g);

// What is wrong with training g with c whatever the data: the settings,
// the network (invalid, too large for this machine's memory), augmentation
// of a non-image input, reduced precision without a GPU. The CLI asks
// before it reads the dataset.
std::vector<RunProblem> network_problems(const Graph& g, const TrainConfig& c);

// network_problems() and then the data's against the network, for train
// (null: no dataset chosen) and test (may be null): empty, a single class,
// sample shape, number of classes. Image data read as row sequences by a
// recurrent network counts as fitting (the Trainer converts it). Empty when
// the run can start.
std::vector<RunProblem> run_problems(const Graph& g, const TrainConfig& c, const Dataset* train,
                                     const Dataset* test);

// The first problem that stops a run (warnings do not), or null.
const RunProblem* first_blocking(const std::vector<RunProblem>& problems);

// Throws p.message as the exception its kind names.
[[noreturn]] void throw_problem(const RunProblem& p);

}  // namespace dc
