#pragma once
// Layered left-to-right layout by Graphviz's dot where it is built in
// (residual branches side by side, few crossings, long chains straight),
// else by the built-in layering (each node in the column of its longest path
// from an input, ordered by the mean row of its predecessors). A network too
// long to read on the canvas in one line is wrapped into rows of columns.
// Plain data in and out, so it can be tested and benchmarked without a scene.
#include <deepcanvas/graph.h>

#include <map>
#include <utility>

namespace dc::widgets {

// The canvas the layout is for, in pixels; 0 x 0: no limit (one line).
struct LayoutSpace {
  double width = 0, height = 0;
};

// New top-left positions by node id; spacing fits NodeItem's size and the grid.
std::map<NodeId, std::pair<double, double>> autoLayout(const Graph& g, LayoutSpace space = {},
                                                       double column = 190, double row = 100);

// Whether the nodes stand in one row that, fitted into `space`, would be too
// small to read: Fit to Window wraps such a line into rows.
bool tooLongForOneLine(const Graph& g, LayoutSpace space);
// Lays such a line out in rows for `space`; true when it moved the nodes.
bool wrapLongLine(Graph& g, LayoutSpace space);
// The zoom at which the nodes as placed fit into `space` (unclamped).
double fittedZoom(const Graph& g, LayoutSpace space);
// A template or an imported model as it is opened or previewed: when its
// stored layout (a line, or a line with branches beside it) is too small to
// read once fitted into `space`, it is laid out anew for `space`, kept only
// if that shows it larger. True when it moved the nodes.
bool layOutToRead(Graph& g, LayoutSpace space);

}  // namespace dc::widgets
