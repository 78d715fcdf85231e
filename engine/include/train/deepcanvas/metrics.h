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

// One class's scores from a confusion matrix ([true][predicted]), as
// scikit-learn's classification_report: precision, the share of the
// samples predicted as the class that are of it; recall, the share of the
// class's samples predicted as it; F1 their harmonic mean (0 when both
// are 0). NaN where the share has no samples (nothing predicted as the
// class, or none of it): undefined, not 0 (scikit-learn's zero_division).
struct ClassScores {
  double precision = 0, recall = 0, f1 = 0;
  int64_t support = 0;  // the class's samples
};
std::vector<ClassScores> class_scores(const std::vector<std::vector<int64_t>>& confusion);
// The mean F1 over the classes with samples ("macro F1"); NaN when none has.
double macro_f1(const std::vector<ClassScores>& scores);

}  // namespace dc
