#pragma once
// Classification metrics accumulated over batches.
#include <deepcanvas/tensor.h>

#include <cstdint>
#include <vector>

namespace dc {

class ClassificationMetrics {
 public:
  explicit ClassificationMetrics(int num_classes = 0) { reset(num_classes); }
  void reset(int num_classes);
  // scores [N, C]; labels N entries in [0, C).
  void add(const Tensor& scores, const int32_t* labels, double loss_sum);
  int64_t count() const { return count_; }
  double mean_loss() const { return count_ ? loss_sum_ / double(count_) : 0.0; }
  double top1() const { return count_ ? double(top1_) / double(count_) : 0.0; }
  int64_t top1_hits() const { return top1_; }
  double top5() const { return count_ ? double(top5_) / double(count_) : 0.0; }
  // confusion()[true][predicted]
  const std::vector<std::vector<int64_t>>& confusion() const { return confusion_; }
  int num_classes() const { return classes_; }

 private:
  int classes_ = 0;
  int64_t count_ = 0, top1_ = 0, top5_ = 0;
  double loss_sum_ = 0;
  std::vector<std::vector<int64_t>> confusion_;
};

// Index of the largest of n scores (first on ties).
int argmax(const float* scores, int n);

}  // namespace dc
