#pragma once
// Layered left-to-right layout: each node goes to the column of its longest
// path from an input, and within a column nodes are ordered by the mean row
// of their predecessors so edges cross less. A network too long to read on
// the canvas in one line is wrapped into rows of columns. Plain data in and
// out, so it can be tested and benchmarked without a scene.
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
// Lays such a line out in rows for `space` (a template as it is opened or
// previewed); true when it moved the nodes.
bool wrapLongLine(Graph& g, LayoutSpace space);

}  // namespace dc::widgets
