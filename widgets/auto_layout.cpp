#include "widgets/auto_layout.h"

#include <algorithm>
#include <cmath>
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
  double row_gap;  // between the last node of a row and the next row
  std::vector<double> row_top;
};

// The number of columns per row that shows the layout largest in `space`.
Wrap chooseWrap(const std::vector<std::vector<NodeId>>& cols, LayoutSpace space, double column,
                double row) {
  const size_t n = cols.size();
  const double gap = row * 1.6;  // room for the edge that runs back to the next row's start
  auto rows_for = [&](size_t per_row) {
    Wrap w{per_row, 0, gap, {}};
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
    const double height = top - gap;
    w.zoom = std::min(space.width / (width + kFitMargin), space.height / (height + kFitMargin));
    return w;
  };
  Wrap best = rows_for(std::max<size_t>(n, 1));
  if (space.width <= 0 || space.height <= 0 || best.zoom >= kReadableZoom) return best;
  for (size_t rows = 2; rows <= n; ++rows) {
    // Rows as even as they can be: 11 columns in 3 rows are 4 + 4 + 3.
    Wrap w = rows_for((n + rows - 1) / rows);
    if (w.zoom > best.zoom + 1e-9) best = w;
    if (std::min(best.zoom, 1.0) >= 1.0) break;  // no gain past the natural size
  }
  return best;
}

}  // namespace

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
  for (const Edge& e : g.edges()) preds[e.dst].push_back(e.src);
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
  const Wrap wrap = chooseWrap(cols, space, column, row);
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
  return out;
}

}  // namespace dc::widgets
