#include "widgets/auto_layout.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#ifdef DC_HAVE_GRAPHVIZ
#include <graphviz/gvc.h>
#endif

namespace dc::widgets {

namespace {

// NodeItem's card width and the usual height, and the margin fitAll() adds.
constexpr double kCardWidth = 124, kCardHeight = 58, kFitMargin = 80;
// One line is kept while fitting it leaves the cards at least this large.
constexpr double kReadableZoom = 0.75;

// A column of the layered layout: its nodes top to bottom, each with its
// position across the flow in rows (fractions where the layout aligns a
// node between two others).
using Column = std::vector<std::pair<NodeId, double>>;

struct Wrap {
  size_t per_row;  // at most this many columns per row, where the network allows a break
  double zoom;     // what fitting it into the space gives
  std::vector<size_t> row_start;  // the first column of each row, then the column count
  std::vector<double> row_top;
  std::vector<double> row_low;  // the lowest position in each row (rows of columns)
};

// The number of columns per row that shows the layout largest in `space`;
// `loose` unconnected nodes go in rows of their own below. A row may end
// after column c only where `breakable[c]`: where one edge at most passes
// from it to the columns after (not inside a residual block, whose shortcut
// would otherwise sweep back across the canvas to the next row).
Wrap chooseWrap(const std::vector<Column>& cols, const std::vector<bool>& breakable, size_t loose,
                LayoutSpace space, double column, double row) {
  const size_t n = cols.size();
  const double gap = row * 0.9;  // room for the edge that runs back to the next row's start
  auto rows_for = [&](size_t per_row) {
    Wrap w{per_row, 0, {}, {}, {}};
    double top = 0, width = 0;
    for (size_t first = 0; first < n;) {
      // The last break within per_row columns, else the first one after. A
      // row of one column (an Input alone, its layer on the next row) is
      // taken only where per_row asks for it.
      const size_t least = per_row > 1 ? 2 : 1;
      size_t end = std::min(n, first + per_row);
      while (end > first + least && !breakable[end - 1]) --end;
      if (end < n && !breakable[end - 1])
        for (end = first + per_row; end < n && !breakable[end - 1]; ++end) {
        }
      end = std::min(end, n);
      double lo = 1e300, hi = -1e300;
      for (size_t c = first; c < end; ++c)
        for (const auto& [id, pos] : cols[c]) {
          lo = std::min(lo, pos);
          hi = std::max(hi, pos);
        }
      if (lo > hi) lo = hi = 0;
      w.row_start.push_back(first);
      w.row_top.push_back(top);
      w.row_low.push_back(lo);
      top += (hi - lo) * row + kCardHeight + gap;
      width = std::max(width, double(end - first - 1) * column + kCardWidth);
      first = end;
    }
    w.row_start.push_back(n);
    const size_t loose_row = std::max(per_row, size_t(1));
    for (size_t first = 0; first < loose; first += loose_row) {
      w.row_top.push_back(top);
      top += kCardHeight + gap;
      width = std::max(
          width, double(std::min(loose, first + loose_row) - first - 1) * column + kCardWidth);
    }
    const double height = top - gap;
    w.zoom = std::min(space.width / (width + kFitMargin), space.height / (height + kFitMargin));
    return w;
  };
  // With no wired layers at all, the loose ones decide the width.
  const size_t count = n > 0 ? n : std::max<size_t>(loose, 1);
  Wrap best = rows_for(count);
  if (space.width <= 0 || space.height <= 0 || best.zoom >= kReadableZoom) return best;
  for (size_t rows = 2; rows <= count; ++rows) {
    // Rows as even as they can be: 11 columns in 3 rows are 4 + 4 + 3.
    Wrap w = rows_for((count + rows - 1) / rows);
    if (w.zoom > best.zoom + 1e-9) best = w;
    if (std::min(best.zoom, 1.0) >= 1.0) break;  // no gain past the natural size
  }
  return best;
}

// Where a row may end: after column c when at most one edge runs from
// columns up to c to columns after it; `one_source` also where every such
// edge leaves one layer (a residual stream: each pre-norm Transformer
// block's input feeds its norm and its Add, so no strict break exists
// inside an encoder).
std::vector<bool> breakableColumns(const Graph& g, const std::vector<Column>& cols,
                                   bool one_source) {
  std::map<NodeId, size_t> col_of;
  for (size_t c = 0; c < cols.size(); ++c)
    for (const auto& [id, pos] : cols[c]) col_of[id] = c;
  std::vector<std::set<NodeId>> sources(cols.size());
  std::vector<int> passing(cols.size(), 0);
  for (const Edge& e : g.edges()) {
    auto s = col_of.find(e.src), d = col_of.find(e.dst);
    if (s == col_of.end() || d == col_of.end()) continue;
    for (size_t c = s->second; c < d->second; ++c) {
      ++passing[c];
      sources[c].insert(e.src);
    }
  }
  std::vector<bool> out(cols.size());
  for (size_t c = 0; c < cols.size(); ++c)
    out[c] = passing[c] <= 1 || (one_source && sources[c].size() == 1);
  return out;
}

// The built-in layering: each node in the column of its longest path from
// an input, ordered within the column by the mean row of its predecessors,
// columns centred on one line.
std::vector<Column> layeredColumns(const std::vector<NodeId>& order,
                                   std::map<NodeId, std::vector<NodeId>>& preds) {
  std::map<NodeId, int> level;
  int levels = 0;
  for (NodeId id : order) {
    int l = 0;
    for (NodeId p : preds[id])
      if (level.count(p)) l = std::max(l, level[p] + 1);
    level[id] = l;
    levels = std::max(levels, l + 1);
  }
  std::vector<std::vector<NodeId>> ids(static_cast<size_t>(levels));
  for (NodeId id : order) ids[size_t(level[id])].push_back(id);
  std::map<NodeId, double> rank;  // row within the column
  std::vector<Column> cols;
  for (auto& col : ids) {
    std::vector<std::pair<double, NodeId>> keyed;
    for (size_t i = 0; i < col.size(); ++i) {
      double sum = 0;
      int k = 0;
      for (NodeId p : preds[col[i]])
        if (rank.count(p)) {
          sum += rank[p];
          ++k;
        }
      keyed.push_back({k ? sum / k : double(i), col[i]});
    }
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    Column out;
    for (size_t i = 0; i < keyed.size(); ++i) {
      rank[keyed[i].second] = double(i);
      out.push_back({keyed[i].second, double(i) - double(keyed.size() - 1) / 2.0});
    }
    cols.push_back(std::move(out));
  }
  return cols;
}

#ifdef DC_HAVE_GRAPHVIZ
// Graphviz's dot (layered, left to right): network-simplex ranks, crossing
// reduction over many sweeps and positions that keep long chains straight,
// so residual branches stand side by side instead of the built-in single
// barycentre pass. Nodes are cards of NodeItem's size, spaced as `column`
// and `row` ask; dot's columns become ours (the spacing along the flow is
// ours again) and its cross positions become rows. Empty when dot fails.
std::vector<Column> dotColumns(const Graph& g, const std::vector<NodeId>& order, double column,
                               double row) {
  // Inches as dot takes them, at 100 pixels each.
  auto inches = [](double px) { return std::to_string(px / 100.0); };
  GVC_t* gvc = gvContext();
  if (!gvc) return {};
  agseterr(AGMAX);  // no warnings on stderr
  Agraph_t* dg = agopen(const_cast<char*>("network"), Agdirected, nullptr);
  auto attr = [&](int kind, const char* name, const std::string& v) {
    agattr(dg, kind, const_cast<char*>(name), const_cast<char*>(v.c_str()));
  };
  attr(AGRAPH, "rankdir", "LR");
  attr(AGRAPH, "nodesep", inches(row - kCardHeight));
  attr(AGRAPH, "ranksep", inches(column - kCardWidth));
  attr(AGNODE, "shape", "box");
  attr(AGNODE, "fixedsize", "true");
  attr(AGNODE, "width", inches(kCardWidth));
  attr(AGNODE, "height", inches(kCardHeight));
  std::map<NodeId, Agnode_t*> nodes;
  for (NodeId id : order) nodes[id] = agnode(dg, const_cast<char*>(std::to_string(id).c_str()), 1);
  for (const Edge& e : g.edges())
    if (nodes.count(e.src) && nodes.count(e.dst))
      agedge(dg, nodes[e.src], nodes[e.dst], nullptr, 1);
  std::vector<Column> cols;
  if (gvLayout(gvc, dg, "dot") == 0) {
    // Columns: dot's distinct x positions; rows: its y (upwards) over the
    // pitch of two adjacent cards, top to bottom.
    const double pitch = row / 100.0 * 72.0;
    std::map<long, Column> by_x;
    for (const auto& [id, n] : nodes)
      by_x[std::lround(ND_coord(n).x)].push_back({id, -ND_coord(n).y / pitch});
    for (auto& [x, col] : by_x) {
      std::sort(col.begin(), col.end(),
                [](const auto& a, const auto& b) { return a.second < b.second; });
      cols.push_back(std::move(col));
    }
    gvFreeLayout(gvc, dg);
  }
  agclose(dg);
  gvFreeContext(gvc);
  return cols;
}
#endif

}  // namespace

double fittedZoom(const Graph& g, LayoutSpace space) {
  if (g.nodes().empty() || space.width <= 0 || space.height <= 0) return 1.0;
  double left = 1e300, right = -1e300, top = 1e300, bottom = -1e300;
  for (const auto& [id, n] : g.nodes()) {
    left = std::min(left, n.x);
    right = std::max(right, n.x);
    top = std::min(top, n.y);
    bottom = std::max(bottom, n.y);
  }
  return std::min(space.width / (right - left + kCardWidth + kFitMargin),
                  space.height / (bottom - top + kCardHeight + kFitMargin));
}

bool tooLongForOneLine(const Graph& g, LayoutSpace space) {
  if (g.nodes().size() < 2 || space.width <= 0 || space.height <= 0) return false;
  double top = 1e300, bottom = -1e300;
  for (const auto& [id, n] : g.nodes()) {
    top = std::min(top, n.y);
    bottom = std::max(bottom, n.y);
  }
  // Anything arranged in two dimensions is the user's layout, left alone.
  if (bottom - top >= kCardHeight) return false;
  return fittedZoom(g, space) < kReadableZoom;
}

bool wrapLongLine(Graph& g, LayoutSpace space) {
  if (!tooLongForOneLine(g, space)) return false;
  for (const auto& [id, p] : autoLayout(g, space)) g.move(id, p.first, p.second);
  return true;
}

bool layOutToRead(Graph& g, LayoutSpace space) {
  if (g.nodes().size() < 2 || space.width <= 0 || space.height <= 0) return false;
  const double before = fittedZoom(g, space);
  if (before >= kReadableZoom) return false;
  Graph laid = g;
  for (const auto& [id, p] : autoLayout(g, space)) laid.move(id, p.first, p.second);
  if (fittedZoom(laid, space) <= before) return false;
  g = std::move(laid);
  return true;
}

std::map<NodeId, std::pair<double, double>> autoLayout(const Graph& g, LayoutSpace space,
                                                       double column, double row) {
  std::map<NodeId, std::pair<double, double>> out;
  std::vector<NodeId> order;
  try {
    order = g.topo_order();
  } catch (const std::exception&) {
    for (const auto& [id, n] : g.nodes()) order.push_back(id);  // a cycle: keep id order
  }
  std::map<NodeId, std::vector<NodeId>> preds;
  std::set<NodeId> linked;
  for (const Edge& e : g.edges()) {
    preds[e.dst].push_back(e.src);
    linked.insert(e.src);
    linked.insert(e.dst);
  }
  // A layer not wired yet would take a place in the first column and push
  // the Input off the chain's line: such layers get rows of their own below.
  std::vector<NodeId> loose;
  std::erase_if(order, [&](NodeId id) {
    if (linked.count(id)) return false;
    loose.push_back(id);
    return true;
  });
  std::vector<Column> cols;
#ifdef DC_HAVE_GRAPHVIZ
  if (order.size() >= 2) cols = dotColumns(g, order, column, row);
#endif
  if (cols.empty()) cols = layeredColumns(order, preds);
  Wrap wrap = chooseWrap(cols, breakableColumns(g, cols, false), loose.size(), space, column, row);
  if (wrap.zoom < kReadableZoom) {
    // Still too small: rows may also end where one layer's edges run on. A
    // shortcut then runs back to the next row, crossing other edges, so
    // only for a layout at least half as large again (a 4-block encoder:
    // 16 % -> 52 % in 1000x480; the ResNet template's 50 % -> 57 % keeps
    // its shortcuts within rows).
    Wrap relaxed =
        chooseWrap(cols, breakableColumns(g, cols, true), loose.size(), space, column, row);
    if (relaxed.zoom >= 1.5 * wrap.zoom) wrap = std::move(relaxed);
  }
  const size_t rows = wrap.row_start.size() - 1;
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = wrap.row_start[r]; c < wrap.row_start[r + 1]; ++c)
      for (const auto& [id, pos] : cols[c]) {
        const double y = std::round((wrap.row_top[r] + (pos - wrap.row_low[r]) * row) / 20) * 20;
        out[id] = {40 + double(c - wrap.row_start[r]) * column, 120 + y};
      }
  const size_t loose_row = std::max(wrap.per_row, size_t(1));
  for (size_t k = 0; k < loose.size(); ++k) {
    const double y = std::round(wrap.row_top[rows + k / loose_row] / 20) * 20;
    out[loose[k]] = {40 + double(k % loose_row) * column, 120 + y};
  }
  return out;
}

}  // namespace dc::widgets
