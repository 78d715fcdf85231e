#include "outcome.h"

#include <deepcanvas/checkpoint.h>
#include <deepcanvas/errors.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace dc::cli {

namespace {

std::string percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f%%", 100 * v);
  return buf;
}

// The accuracy an existing checkpoint recorded, NaN when it is unreadable or
// was written before accuracies were recorded.
double recorded_accuracy(const std::string& path) {
  try {
    CheckpointInfo ck = read_checkpoint(path);
    auto it = ck.metadata.find("test_accuracy");
    if (it == ck.metadata.end()) return NAN;
    double v = NAN;
    auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
    return ec == std::errc() && end == it->second.data() + it->second.size() ? v : NAN;
  } catch (const Error&) {
    return NAN;
  }
}

}  // namespace

bool run_diverged(double first_step_loss, double final_train_loss) {
  if (!std::isfinite(final_train_loss)) return true;
  if (!std::isfinite(first_step_loss)) return false;
  return final_train_loss > 2 * first_step_loss;
}

SaveDecision decide_save(const std::string& checkpoint, bool overwrite, bool diverged,
                         double new_test_accuracy) {
  SaveDecision d;
  if (checkpoint.empty()) return d;
  std::error_code ec;
  const bool exists = std::filesystem::exists(checkpoint, ec);
  if (overwrite) {
    d.path = checkpoint;
    return d;
  }
  if (diverged) {
    d.note = exists ? checkpoint + " was kept (pass --overwrite to replace it with this model)"
                    : "the model was not saved to " + checkpoint +
                          " (pass --overwrite to save it anyway)";
    return d;
  }
  d.path = checkpoint;
  if (!exists) return d;
  double old = recorded_accuracy(checkpoint);
  if (std::isfinite(old) && std::isfinite(new_test_accuracy) && new_test_accuracy < old) {
    std::filesystem::path p(checkpoint);
    d.path = (p.parent_path() / (p.stem().string() + ".new" + p.extension().string())).string();
    d.note = checkpoint + " was kept: its test accuracy " + percent(old) +
             " is higher than this run's " + percent(new_test_accuracy) + "; the new model is in " +
             d.path + " (pass --overwrite to replace instead)";
  }
  return d;
}

}  // namespace dc::cli
