#pragma once
// model.py from a lowered graph: the PyTorch export writes from the steps of
// the Plan it is handed (Plan::steps()), or of lower_graph(p.graph) where an
// entry point gets no Plan, so port order, shapes and attribute defaults are
// the ones the engine runs.
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>

#include <string>
#include <vector>

namespace dc {

// pytorch_unsupported and pytorch_model_py for steps lowered from p.graph.
std::vector<std::string> pytorch_unsupported(const std::vector<PlanStep>& steps);
std::string pytorch_model_py(const Project& p, const std::vector<PlanStep>& steps,
                             const std::string& version);

}  // namespace dc
