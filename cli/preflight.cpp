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
                      const std::string& option, int concurrent) {
  if (c.device.cuda) return;  // the GPU's memory is checked when the device starts
  concurrent = std::max(1, concurrent);
  const int64_t available = available_memory_bytes();
  if (available < 0) return;  // unknown: nothing to compare with
  // Each of `concurrent` runs gets its share of the memory.
  const BatchFit fit = largest_batch(g, available / concurrent, c);
  if (fit.batch_bytes * concurrent <= available) return;
  auto gib = [](int64_t b) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", double(b) / double(int64_t(1) << 30));
    return std::string(buf);
  };
  const std::string advice = fit.max_batch >= 1
                                 ? "; a batch of about " + std::to_string(fit.max_batch) + " fits"
                                 : "; even one sample does not fit: make the network smaller";
  throw Error(what + " at batch " + std::to_string(c.batch) + " needs about " +
              gib(fit.batch_bytes * concurrent) + " of memory but " + gib(available) +
              " is available" + advice + ". Lower " + option + " (nothing was run)");
}

}  // namespace dc::cli
