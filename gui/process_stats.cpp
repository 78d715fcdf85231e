#include "gui/process_stats.h"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace dc::gui {

namespace {
double process_cpu_seconds() {
  std::ifstream f("/proc/self/stat");
  std::string s;
  if (!std::getline(f, s)) return -1;
  // The command name (field 2) may hold spaces; fields are counted after ')'.
  auto close = s.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream in(s.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && in >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return double(utime + stime) / double(sysconf(_SC_CLK_TCK));
}
double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

ProcessStats::ProcessStats() {
  last_cpu_s_ = process_cpu_seconds();
  last_wall_s_ = wall_seconds();
}

double ProcessStats::cpuPercent() {
  double cpu = process_cpu_seconds(), wall = wall_seconds();
  if (cpu < 0 || last_cpu_s_ < 0) return -1;
  double dc = cpu - last_cpu_s_, dw = wall - last_wall_s_;
  last_cpu_s_ = cpu;
  last_wall_s_ = wall;
  if (dw <= 0) return 0;
  return 100.0 * dc / dw / double(cores());
}

int64_t ProcessStats::residentBytes() {
  std::ifstream f("/proc/self/statm");
  long long size = 0, resident = 0;
  if (!(f >> size >> resident)) return -1;
  return int64_t(resident) * int64_t(sysconf(_SC_PAGESIZE));
}

int64_t ProcessStats::totalMemoryBytes() {
  return int64_t(sysconf(_SC_PHYS_PAGES)) * int64_t(sysconf(_SC_PAGESIZE));
}

int ProcessStats::cores() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? int(n) : 1;
}

}  // namespace dc::gui
