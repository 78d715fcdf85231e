#pragma once
// What happens to a finished run's model: a run that diverged, or one that
// is worse than the model already at --checkpoint, does not replace it
// unless --overwrite says so.
#include <string>

namespace dc::cli {

// A run diverged when its last epoch's training loss is not finite or more
// than twice the loss of its first step (the untrained model's): it ended up
// worse than where it started.
bool run_diverged(double first_step_loss, double final_train_loss);

struct SaveDecision {
  std::string path;  // where to write the new model; empty: nowhere
  std::string note;  // what to tell the user; empty when nothing unusual
};

// Decides where the new model goes. An existing checkpoint whose recorded
// test accuracy is higher stays, and the new model is written beside it
// (NAME.new.safetensors) so nothing is lost either way.
SaveDecision decide_save(const std::string& checkpoint, bool overwrite, bool diverged,
                         double new_test_accuracy);

}  // namespace dc::cli
