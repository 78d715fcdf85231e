#pragma once
// The checks a training run (Training tab) and a sweep (Experiments tab)
// both make before they start, in one place so the two tabs refuse for the
// same reasons in the same order: the window's reason not to start now (the
// machine benchmark measuring), the other tab's run on the same cores, the
// project's data (loaded on demand, so Start works without a visit to the
// Dataset tab), the tab's own setting problems, then the engine's checks of
// the settings with this network and data.
#include "gui/project_context.h"

#include <QString>
#include <QStringList>
#include <functional>
#include <optional>

namespace dc::gui {

struct RunStartCheck {
  std::function<QString()> blocker;  // "" or the window's reason; may be empty
  ProjectContext::BusyOwner other;   // the run this one would slow down
  QString other_running;             // what to say while `other` runs
  DatasetSource source;              // what to load when no data is
  QString data_failed;               // "%1": the loader's reason
  // The tab's own problems with its settings as shown (may be empty).
  std::function<QStringList()> setting_problems;
  // What the engine checks for this run (a sweep: its state file and
  // parallel trials); unset: a training run whose checkpoint folder is the
  // settings' checkpoint_dir.
  std::optional<AppRunCheck> run = std::nullopt;
};

// The problems that keep the run from starting (empty: it can start).
// `settings` is asked once the data is loaded (loading may change the
// project the settings come from); what it returned goes to *used.
QStringList runStartProblems(ProjectContext* ctx, const RunStartCheck& check,
                             const std::function<TrainConfig()>& settings,
                             TrainConfig* used = nullptr);

}  // namespace dc::gui
