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

// Before allocating: refuses a CPU run whose predicted memory (bytes, from
// largest_batch(): the advisor's memory model) is more than this machine has
// available, naming the largest batch that fits (largest_fit) instead.
// `what` starts the message ("training", "the LR range test").
void check_cpu_memory(int64_t needed_bytes, int64_t batch, int64_t largest_fit,
                      const std::string& what = "training");
// The same for g trained with c (at c.batch) on the CPU, `concurrent` runs
// at once (parallel sweep trials); nothing for a CUDA run.
void check_cpu_memory(const Graph& g, const TrainConfig& c, const std::string& what,
                      int concurrent = 1);

}  // namespace dc::cli
