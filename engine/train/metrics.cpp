#include <deepcanvas/metrics.h>

#include <cmath>
#include <limits>

namespace dc {

int argmax(const float* s, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (s[i] > s[best]) best = i;
  return best;
}

std::vector<ClassScores> class_scores(const std::vector<std::vector<int64_t>>& m) {
  const size_t n = m.size();
  std::vector<ClassScores> out(n);
  for (size_t k = 0; k < n; ++k) {
    int64_t tp = k < m[k].size() ? m[k][k] : 0, predicted = 0, actual = 0;
    for (size_t j = 0; j < m[k].size(); ++j) actual += m[k][j];
    for (size_t i = 0; i < n; ++i) predicted += k < m[i].size() ? m[i][k] : 0;
    ClassScores& s = out[k];
    const double nan = std::numeric_limits<double>::quiet_NaN();
    s.support = actual;
    s.precision = predicted ? double(tp) / double(predicted) : nan;
    s.recall = actual ? double(tp) / double(actual) : nan;
    s.f1 = std::isnan(s.precision) || std::isnan(s.recall) ? nan
           : s.precision + s.recall > 0 ? 2 * s.precision * s.recall / (s.precision + s.recall)
                                        : 0.0;
  }
  return out;
}

double macro_f1(const std::vector<ClassScores>& scores) {
  double sum = 0;
  int counted = 0;
  for (const ClassScores& s : scores) {
    if (s.support == 0) continue;
    // A class with samples that nothing was predicted as scores 0.
    sum += std::isnan(s.f1) ? 0.0 : s.f1;
    ++counted;
  }
  return counted ? sum / counted : std::numeric_limits<double>::quiet_NaN();
}

void ClassificationMetrics::reset(int c) {
  classes_ = c;
  count_ = top1_ = top5_ = 0;
  loss_sum_ = 0;
  confusion_.assign(c, std::vector<int64_t>(c, 0));
}

void ClassificationMetrics::add(const Tensor& scores, const int32_t* labels, double loss_sum) {
  int64_t n = scores.shape()[0];
  int c = static_cast<int>(scores.numel() / std::max<int64_t>(1, n));
  if (c != classes_) reset(c);
  loss_sum_ += loss_sum;
  for (int64_t i = 0; i < n; ++i) {
    const float* s = scores.f32() + i * c;
    int y = labels[i];
    int pred = argmax(s, c);
    // Rank of the true class: how many scores beat it (ties favour it).
    int better = 0;
    for (int k = 0; k < c; ++k) better += s[k] > s[y];
    top1_ += pred == y;
    top5_ += better < 5;
    if (y >= 0 && y < c) confusion_[y][pred]++;
    ++count_;
  }
}

}  // namespace dc
