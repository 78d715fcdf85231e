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

bool flattenBridges(const Graph& g, NodeId src, NodeId dst, int port) {
  if (!g.can_connect(src, dst, port).empty()) return false;
  const auto shapes = g.infer_shapes();
  const auto up = shapes.find(src);
  if (up == shapes.end() || !up->second.ok() || up->second.shape->rank() < 3) return false;
  if (connectionProblem(g, src, dst, port).empty()) return false;
  Graph trial = g;
  const NodeId flat = trial.add_node("Flatten", "", {});
  trial.connect(src, flat, 0);
  return connectionProblem(trial, flat, dst, port).empty();
}

}  // namespace dc::widgets
