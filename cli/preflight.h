#pragma once
#include <deepcanvas/graph.h>

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
void check_cpu_memory(int64_t needed_bytes, int64_t batch, int64_t largest_fit);

}  // namespace dc::cli
