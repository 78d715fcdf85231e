#pragma once
#include <deepcanvas/graph.h>
#include <deepcanvas/train_config.h>

#include <cstdint>
#include <string>

namespace dc::cli {

// Before a long run: can `path` (a file to write, or with is_dir a folder to
// write into) be written? Creates missing parent folders; throws IoError
// naming the option and the OS's reason, so a bad path costs nothing instead
// of the trained model.
void check_writable(const std::string& option, const std::string& path, bool is_dir);

// Before allocating: refuses `what` ("training", "the LR range test") of g
// with c on the CPU, `concurrent` runs at once (parallel sweep trials), when
// its predicted memory (largest_batch(): the advisor's memory model) is more
// than this machine has available, naming the largest batch that fits and
// `option`, the flag that set the batch. Every command that trains or
// profiles a batch asks, so a batch from a flag never grows to a bad_alloc.
// Nothing for a CUDA run (the device checks its own memory).
void check_cpu_memory(const Graph& g, const TrainConfig& c, const std::string& what = "training",
                      const std::string& option = "--batch", int concurrent = 1);

}  // namespace dc::cli
