#include "widgets/auto_layout.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

namespace dc::widgets {

namespace {

// NodeItem's card width and the usual height, and the margin fitAll() adds.
constexpr double kCardWidth = 124, kCardHeight = 58, kFitMargin = 80;
// One line is kept while fitting it leaves the cards at least this large.
constexpr double kReadableZoom = 0.75;

struct Wrap {
  size_t per_row;  // columns per row
  double zoom;     // what fitting it into the space gives
  std::vector<double> row_top;
};

// The number of columns per row that shows the layout largest in `space`;
// `loose` unconnected nodes go in rows of their own below.
Wrap chooseWrap(const std::vector<std::vector<NodeId>>& cols, size_t loose, LayoutSpace space,
                double column, double row) {
  const size_t n = cols.size();
  const double gap = row * 0.9;  // room for the edge that runs back to the next row's start
  auto rows_for = [&](size_t per_row) {
    Wrap w{per_row, 0, {}};
    double top = 0, width = 0;
    for (size_t first = 0; first < n; first += per_row) {
      size_t tallest = 1;
      for (size_t c = first; c < std::min(n, first + per_row); ++c)
        tallest = std::max(tallest, cols[c].size());
      w.row_top.push_back(top);
      top += double(tallest - 1) * row + kCardHeight + gap;
      width =
          std::max(width, double(std::min(n, first + per_row) - first - 1) * column + kCardWidth);
    }
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

}  // namespace

bool tooLongForOneLine(const Graph& g, LayoutSpace space) {
  if (g.nodes().size() < 2 || space.width <= 0 || space.height <= 0) return false;
  double left = 1e300, right = -1e300, top = 1e300, bottom = -1e300;
  for (const auto& [id, n] : g.nodes()) {
    left = std::min(left, n.x);
    right = std::max(right, n.x);
    top = std::min(top, n.y);
    bottom = std::max(bottom, n.y);
  }
  // Anything arranged in two dimensions is the user's layout, left alone.
  if (bottom - top >= kCardHeight) return false;
  const double zoom = std::min(space.width / (right - left + kCardWidth + kFitMargin),
                               space.height / (bottom - top + kCardHeight + kFitMargin));
  return zoom < kReadableZoom;
}

bool wrapLongLine(Graph& g, LayoutSpace space) {
  if (!tooLongForOneLine(g, space)) return false;
  for (const auto& [id, p] : autoLayout(g, space)) g.move(id, p.first, p.second);
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
  std::map<NodeId, int> level;
  int levels = 0;
  for (NodeId id : order) {
    int l = 0;
    for (NodeId p : preds[id])
      if (level.count(p)) l = std::max(l, level[p] + 1);
    level[id] = l;
    levels = std::max(levels, l + 1);
  }
  std::vector<std::vector<NodeId>> cols(static_cast<size_t>(levels));
  for (NodeId id : order) cols[size_t(level[id])].push_back(id);
  std::map<NodeId, double> rank;  // row within the column
  for (auto& col : cols) {
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
    for (size_t i = 0; i < keyed.size(); ++i) {
      col[i] = keyed[i].second;
      rank[col[i]] = double(i);
    }
  }
  const Wrap wrap = chooseWrap(cols, loose.size(), space, column, row);
  for (size_t c = 0; c < cols.size(); ++c) {
    const auto& col = cols[c];
    const size_t r = c / wrap.per_row;
    size_t tallest = 1;
    for (size_t k = r * wrap.per_row; k < std::min(cols.size(), (r + 1) * wrap.per_row); ++k)
      tallest = std::max(tallest, cols[k].size());
    // The columns of a row are centred on the row's middle line.
    const double middle = wrap.row_top[r] + double(tallest - 1) * row / 2.0;
    for (size_t i = 0; i < col.size(); ++i) {
      double y = middle + (double(i) - double(col.size() - 1) / 2.0) * row;
      y = std::round(y / 20) * 20;
      out[col[i]] = {40 + double(c % wrap.per_row) * column, 120 + y};
    }
  }
  const size_t rows = cols.empty() ? 0 : (cols.size() - 1) / wrap.per_row + 1;
  const size_t loose_row = std::max(wrap.per_row, size_t(1));
  for (size_t k = 0; k < loose.size(); ++k) {
    const double y = std::round(wrap.row_top[rows + k / loose_row] / 20) * 20;
    out[loose[k]] = {40 + double(k % loose_row) * column, 120 + y};
  }
  return out;
}

}  // namespace dc::widgets
