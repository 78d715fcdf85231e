#pragma once
// Whether a connection may be made, and why not. The engine's can_connect
// covers structure (cycle, port taken, self loop); on top of that a
// connection is refused when it would break the target's shape rule (e.g. a
// flat vector into a Conv2D), so the editor can say so while dragging.
#include <deepcanvas/graph.h>

#include <string>

namespace dc::widgets {

// "" when src's output may feed dst's input port.
std::string connectionProblem(const Graph& g, NodeId src, NodeId dst, int port);

// Whether a connection refused by connectionProblem would be legal through
// a new Flatten between the two: a feature map (C×H×W or more) into a layer
// that takes 1-D features (Dense, BatchNorm1D...), the commonest wiring
// mistake; the editor then offers to insert it. Sequences (T×F) are not
// bridged: flattening the steps is rarely what is meant there.
bool flattenBridges(const Graph& g, NodeId src, NodeId dst, int port);

}  // namespace dc::widgets
