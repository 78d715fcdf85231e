#include "gui/run_start.h"

namespace dc::gui {

QStringList runStartProblems(ProjectContext* ctx, const RunStartCheck& check,
                             const std::function<TrainConfig()>& settings, TrainConfig* used) {
  if (check.blocker) {
    if (const QString why = check.blocker(); !why.isEmpty()) return {why};
  }
  // Both would train on the same cores (or GPU) and slow each other down.
  if (ctx->busyWith(check.other)) return {check.other_running};
  if (const QString why = ctx->loadDatasetIfNone(check.source); !why.isEmpty())
    return {check.data_failed.arg(why)};
  const QStringList problems = check.setting_problems ? check.setting_problems() : QStringList();
  const TrainConfig cfg = settings();
  if (used) *used = cfg;
  if (!problems.isEmpty()) return problems;
  return check.run ? ctx->trainingProblems(cfg, *check.run) : ctx->trainingProblems(cfg);
}

}  // namespace dc::gui
