// Losses over the network's output, matching PyTorch's CrossEntropyLoss
// (with label_smoothing), BCEWithLogitsLoss and MSELoss under reduction
// 'mean'. Per-row terms are summed in double, in row order, so the value
// does not depend on the thread count.
#include <deepcanvas/errors.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/parallel.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace dc {
namespace {

constexpr int64_t kGrain = 1 << 14;

struct Batch2D {
  int64_t N = 0, C = 0;  // rows and values per row (the per-sample shape flattened)
};

Batch2D rows_of(const Tensor& out, const Tensor& dout, const char* loss) {
  if (out.shape().rank() < 2)
    throw Error(std::string(loss) + ": the network output " + out.shape().str() +
                " has no per-sample values; the last layer should output one score per class");
  if (dout.shape() != out.shape())
    throw Error(std::string(loss) + ": gradient buffer " + dout.shape().str() +
                " does not match the output " + out.shape().str());
  Batch2D b;
  b.N = out.dim(0);
  b.C = out.shape().without_batch().numel();
  if (b.C < 1)
    throw Error(std::string(loss) + ": the network output " + out.shape().str() +
                " has no values per sample");
  return b;
}

void check_labels(const int32_t* labels, int64_t N, int64_t C, const char* loss,
                  bool skip_negative = false) {
  for (int64_t n = 0; n < N; ++n)
    if ((labels[n] < 0 && !skip_negative) || labels[n] >= C)
      throw DataError("label " + std::to_string(labels[n]) + " (sample " + std::to_string(n) +
                      " of the batch) is outside the " + std::to_string(C) +
                      " classes the network outputs (0 to " + std::to_string(C - 1) +
                      "); the dataset has more classes than the last layer's units: set its "
                      "units to the number of classes (" +
                      loss + ")");
}

// Sums per-row values computed in parallel, in row order.
template <class RowFn>
double sum_rows(int64_t N, int64_t C, RowFn fn) {
  std::vector<double> per_row(static_cast<size_t>(N));
  parallel_for(N, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, C)),
               [&](int64_t b, int64_t e) {
                 for (int64_t n = b; n < e; ++n) per_row[n] = fn(n);
               });
  double s = 0;
  for (double v : per_row) s += v;
  return s;
}

class SoftmaxCrossEntropy : public Loss {
 public:
  explicit SoftmaxCrossEntropy(float smoothing) : s_(smoothing) {}
  const char* name() const override { return "softmax_cross_entropy"; }

  // With q = (1-s)·onehot(y) + s/C, the loss per row is -sum q_c log p_c =
  // lse - (1-s)·z_y - (s/C)·sum z, and its gradient is (p - q) / N.
  float compute(const Tensor& out, const Targets& t, Tensor& dout) override {
    Batch2D b = rows_of(out, dout, name());
    if (b.N == 0) return 0.0f;
    if (!t.labels)
      throw Error(
          "softmax_cross_entropy needs class labels; use mse or binary_cross_entropy "
          "for value targets");
    check_labels(t.labels, b.N, b.C, name(), t.skip_negative);
    const int64_t C = b.C;
    int64_t scored = b.N;
    if (t.skip_negative)
      for (int64_t n = 0; n < b.N; ++n) scored -= t.labels[n] < 0;
    const double s = s_, inv_n = scored > 0 ? 1.0 / double(scored) : 0.0;
    const float* z = out.f32();
    float* g = dout.f32();
    double total = sum_rows(b.N, C, [&](int64_t n) {
      const float* zr = z + n * C;
      float* gr = g + n * C;
      if (t.labels[n] < 0) {
        std::fill(gr, gr + C, 0.0f);
        return 0.0;
      }
      float m = zr[0];
      for (int64_t c = 1; c < C; ++c) m = std::max(m, zr[c]);
      double se = 0, sz = 0;
      for (int64_t c = 0; c < C; ++c) {
        se += std::exp(double(zr[c]) - m);
        sz += zr[c];
      }
      const double lse = m + std::log(se);
      const int32_t y = t.labels[n];
      for (int64_t c = 0; c < C; ++c) {
        double p = std::exp(double(zr[c]) - lse);
        double q = s / double(C) + (c == y ? 1.0 - s : 0.0);
        gr[c] = float((p - q) * inv_n);
      }
      return lse - (1.0 - s) * zr[y] - s / double(C) * sz;
    });
    return float(total * inv_n);
  }

 private:
  float s_;
};

// BCE and MSE compare every output value with a target: the given values,
// or labels turned into targets (one-hot for C > 1, the label itself for a
// single output).
class ElementwiseLoss : public Loss {
 public:
  float compute(const Tensor& out, const Targets& t, Tensor& dout) override {
    Batch2D b = rows_of(out, dout, name());
    if (b.N == 0) return 0.0f;
    const int64_t C = b.C;
    if (t.values) {
      if (t.values->numel() != out.numel())
        throw DataError(std::string(name()) + ": the targets have shape " +
                        t.values->shape().str() + " but the network output is " +
                        out.shape().str() + "; they must have the same number of values");
    } else if (!t.labels) {
      throw Error(std::string(name()) + " needs targets (values or labels)");
    } else if (t.skip_negative) {
      throw Error(std::string(name()) +
                  " cannot leave rows out; a network that predicts every step of a text "
                  "trains with softmax_cross_entropy");
    } else if (C > 1) {
      check_labels(t.labels, b.N, C, name());
    } else {
      check_single_output_labels(t.labels, b.N);
    }
    const double inv = 1.0 / double(b.N * C);
    const float* z = out.f32();
    const float* tv = t.values ? t.values->f32() : nullptr;
    const int32_t* lab = t.labels;
    float* g = dout.f32();
    double total = sum_rows(b.N, C, [&](int64_t n) {
      double row = 0;
      for (int64_t c = 0; c < C; ++c) {
        const int64_t i = n * C + c;
        double target = tv ? double(tv[i]) : C > 1 ? (lab[n] == c ? 1.0 : 0.0) : double(lab[n]);
        double grad;
        row += term(z[i], target, grad);
        g[i] = float(grad * inv);
      }
      return row;
    });
    return float(total * inv);
  }

 protected:
  // The loss for one value and its derivative with respect to the output.
  virtual double term(double z, double target, double& grad) const = 0;
  virtual void check_single_output_labels(const int32_t*, int64_t) const {}
};

// On logits, with the log-sum-exp form max(z,0) - z·t + log1p(e^-|z|), which
// neither overflows nor loses precision for large |z| (as BCEWithLogitsLoss).
class BinaryCrossEntropy : public ElementwiseLoss {
 public:
  const char* name() const override { return "binary_cross_entropy"; }

 protected:
  double term(double z, double t, double& grad) const override {
    const double e = std::exp(-std::fabs(z));
    const double sig = z >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
    grad = sig - t;
    return std::max(z, 0.0) - z * t + std::log1p(e);
  }
  void check_single_output_labels(const int32_t* labels, int64_t N) const override {
    for (int64_t n = 0; n < N; ++n)
      if (labels[n] != 0 && labels[n] != 1)
        throw DataError("label " + std::to_string(labels[n]) + " (sample " + std::to_string(n) +
                        " of the batch) is not 0 or 1; binary_cross_entropy with a single "
                        "output needs 0/1 labels (give the last layer one unit per class for "
                        "more classes)");
  }
};

class MeanSquaredError : public ElementwiseLoss {
 public:
  const char* name() const override { return "mse"; }
  bool classification() const override { return false; }

 protected:
  double term(double z, double t, double& grad) const override {
    const double d = z - t;
    grad = 2.0 * d;
    return d * d;
  }
};

}  // namespace

// Label smoothing only exists for softmax cross-entropy (as in PyTorch); the
// other losses ignore it.
std::unique_ptr<Loss> make_loss(LossType type, float label_smoothing) {
  switch (type) {
    case LossType::SoftmaxCrossEntropy:
      if (!(label_smoothing >= 0.0f && label_smoothing < 1.0f))
        throw Error("label smoothing must be in [0, 1), got " + std::to_string(label_smoothing));
      return std::make_unique<SoftmaxCrossEntropy>(label_smoothing);
    case LossType::BinaryCrossEntropy:
      return std::make_unique<BinaryCrossEntropy>();
    case LossType::Mse:
      return std::make_unique<MeanSquaredError>();
  }
  throw Error("unknown loss");
}

}  // namespace dc
