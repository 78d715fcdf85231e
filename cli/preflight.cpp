// Checks that run before training starts, so that what fails late (writing
// the model, running out of memory) fails first, with a message.
#include "preflight.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/lr_find.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace dc::cli {

namespace fs = std::filesystem;

void check_writable(const std::string& option, const std::string& path, bool is_dir) {
  if (path.empty()) return;
  fs::path dir = is_dir ? fs::path(path) : fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw IoError(option + " " + path + ": cannot create the folder " + dir.string() + " (" +
                  ec.message() + "); choose another path. Nothing was trained.");
  if (!is_dir && fs::is_directory(path))
    throw IoError(option + " " + path + " is a folder; give a file name such as " +
                  (fs::path(path) / "model.safetensors").string());
  // A probe file proves the folder takes new files (permissions, read-only
  // mounts, a full quota) the way the checkpoint's temp file will need.
  const fs::path probe = dir / (".deepcanvas-write-test-" + std::to_string(::getpid()));
  {
    std::ofstream f(probe);
    if (!f || !(f << "x") || !f.flush()) {
      std::error_code ignore;
      fs::remove(probe, ignore);
      throw IoError(option + " " + path + ": cannot write into " + dir.string() +
                    "; choose a writable folder. Nothing was trained.");
    }
  }
  fs::remove(probe, ec);
}

void check_cpu_memory(const Graph& g, const TrainConfig& c, const std::string& what,
                      int concurrent) {
  if (c.device.cuda) return;  // the GPU's memory is checked when the device starts
  const int64_t available = available_memory_bytes();
  if (available < 0) return;
  const BatchFit fit = largest_batch(g, available / std::max(1, concurrent), c);
  check_cpu_memory(fit.batch_bytes * std::max(1, concurrent), c.batch, fit.max_batch, what);
}

void check_cpu_memory(int64_t needed, int64_t batch, int64_t largest_fit, const std::string& what) {
  const int64_t available = available_memory_bytes();
  if (available < 0 || needed <= available) return;  // unknown: nothing to compare with
  auto gib = [](int64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", double(b) / double(int64_t(1) << 30));
    return std::string(buf);
  };
  const std::string advice = largest_fit >= 1
                                 ? "; a batch of about " + std::to_string(largest_fit) + " fits"
                                 : "; even one sample does not fit: make the network smaller";
  throw Error(what + " at batch " + std::to_string(batch) + " needs about " + gib(needed) +
              " of memory but " + gib(available) + " is available" + advice +
              ". Lower --batch (nothing was run)");
}

}  // namespace dc::cli
