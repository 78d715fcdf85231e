#pragma once
// Ctrl-C (SIGINT) and SIGTERM during training: the first asks the run to stop
// at the next step boundary so the model can be saved; a second one exits at
// once, for when saving itself hangs or is not wanted.
#include <string>

namespace dc::cli {

constexpr int kInterruptedExit = 130;  // 128 + SIGINT, what shells expect

// Installs the handlers for the lifetime of the guard and restores the
// previous ones after, so that loading data or writing the final model
// elsewhere is not affected.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // Whether a signal arrived, and which ("SIGINT", "SIGTERM").
  bool requested() const;
  std::string signal_name() const;
};

// Where an interrupted run saves its model: the --checkpoint-dir, else the
// folder of --checkpoint, else the current directory.
std::string interrupted_checkpoint_path(const std::string& checkpoint_dir,
                                        const std::string& checkpoint);

}  // namespace dc::cli
