#include "widgets/connection_check.h"

namespace dc::widgets {

std::string connectionProblem(const Graph& g, NodeId src, NodeId dst, int port) {
  std::string why = g.can_connect(src, dst, port);
  if (!why.empty()) return why;
  // Try it on a copy. Only the target's own shape rule counts: an upstream
  // problem, or another input still open, is not this connection's fault.
  Graph trial = g;
  trial.connect(src, dst, port);
  auto shapes = trial.infer_shapes();
  const NodeShape& up = shapes[src];
  const NodeShape& after = shapes[dst];
  if (!up.ok() || after.ok()) return "";
  const std::string& e = after.error;
  if (e.find("is not connected") != std::string::npos ||
      e.find("has no valid shape") != std::string::npos)
    return "";
  return e;
}

}  // namespace dc::widgets
