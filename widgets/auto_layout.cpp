#include "widgets/auto_layout.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dc::widgets {

std::map<NodeId, std::pair<double, double>> autoLayout(const Graph& g, double column, double row) {
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
  for (size_t c = 0; c < cols.size(); ++c) {
    const auto& col = cols[c];
    for (size_t i = 0; i < col.size(); ++i) {
      // Columns are centred on the same middle line.
      double y = (double(i) - double(col.size() - 1) / 2.0) * row;
      y = std::round(y / 20) * 20;
      out[col[i]] = {40 + double(c) * column, 120 + y};
    }
  }
  return out;
}

}  // namespace dc::widgets
