#pragma once
// What the machine has, for checks that refuse work before it fails late.
#include <cstdint>

namespace dc {

// Memory a new allocation can get without swapping (Linux: MemAvailable);
// -1 where it cannot be read.
int64_t available_memory_bytes();

}  // namespace dc
