#pragma once
// This process's CPU use and memory, read from /proc, for the device plots
// on machines without a GPU (and next to GPU readings on those with one).
#include <cstdint>

namespace dc::gui {

class ProcessStats {
 public:
  ProcessStats();
  // CPU use since the previous call, in percent of the whole machine
  // (100 = every core busy); -1 when /proc is unavailable.
  double cpuPercent();
  // Resident set size in bytes; -1 when unavailable.
  static int64_t residentBytes();
  static int64_t totalMemoryBytes();
  static int cores();

 private:
  double last_cpu_s_ = -1, last_wall_s_ = 0;
};

}  // namespace dc::gui
