#include <deepcanvas/metrics.h>

namespace dc {

int argmax(const float* s, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (s[i] > s[best]) best = i;
  return best;
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
