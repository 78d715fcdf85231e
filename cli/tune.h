#pragma once
// The tuning commands: lr-find (Smith's range test), batch-fit (largest
// batch for the device and the learning-rate rule) and sweep (TPE/random
// search with ASHA pruning, resumable).
#include "args.h"

namespace dc::cli {

int cmd_lr_find(const Args& a);
int cmd_batch_fit(const Args& a);
int cmd_sweep(const Args& a);

}  // namespace dc::cli
