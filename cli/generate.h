#pragma once
#include "args.h"

namespace dc::cli {

// deepcanvas-cli generate PROJECT --checkpoint FILE --prompt TEXT [--length N]
// [--temperature T] [--top-k K] [--seed N]: samples text from a character
// model (token input, next-character output) one character at a time.
int cmd_generate(const Args& a);

}  // namespace dc::cli
