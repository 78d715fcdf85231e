#include <deepcanvas/sysinfo.h>

#include <cstdio>
#include <cstring>

namespace dc {

int64_t available_memory_bytes() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return -1;
  char key[64];
  long long kib = -1, value = 0;
  while (std::fscanf(f, "%63s %lld kB", key, &value) == 2)
    if (std::strcmp(key, "MemAvailable:") == 0) {
      kib = value;
      break;
    }
  std::fclose(f);
  return kib < 0 ? -1 : int64_t(kib) * 1024;
}

}  // namespace dc
