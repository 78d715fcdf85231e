#include <deepcanvas/next_token.h>

#include <cmath>
#include <cstring>

namespace dc {

bool scores_every_step(const Shape& input, const Shape& output, bool tokens) {
  return tokens && input.rank() == 1 && output.rank() == 2 && output[0] == input[0] &&
         output[1] > 1;
}

bool scores_every_step(const Dataset& d, const Shape& output) {
  return scores_every_step(d.sample_shape, output, d.tokens);
}

int64_t scored_classes(const Shape& input, const Shape& output, bool tokens) {
  return scores_every_step(input, output, tokens) ? output[1] : output.numel();
}

void next_token_targets(const Tensor& x, const int32_t* labels, int64_t n,
                        std::vector<int32_t>& targets) {
  const int64_t T = x.shape().without_batch().numel();
  targets.resize(size_t(n * T));
  const float* ids = x.f32();
  for (int64_t i = 0; i < n; ++i) {
    int32_t* t = targets.data() + i * T;
    for (int64_t s = 0; s + 1 < T; ++s) {
      // Token 0 is the padding before the text starts: nothing to predict.
      const int32_t next = int32_t(std::lround(ids[i * T + s + 1]));
      t[s] = next > 0 ? next : -1;
    }
    t[T - 1] = labels[i];
  }
}

float BatchScorer::at_last_step(const Tensor& out, const int32_t* labels,
                                ClassificationMetrics* m) {
  const int64_t N = out.dim(0), T = out.dim(1), V = out.dim(2);
  if (!last_.defined() || last_.dim(0) < N || last_.dim(1) != V) {
    last_ = Tensor(Shape{N, V});
    dlast_ = Tensor(Shape{N, V});
  }
  Tensor last = last_.narrow_batch(N), dlast = dlast_.narrow_batch(N);
  // A copy: the last steps of the windows are strided in out.
  for (int64_t i = 0; i < N; ++i)
    std::memcpy(last.f32() + i * V, out.f32() + (i * T + T - 1) * V, size_t(V) * sizeof(float));
  const float l = loss_.compute(last, Targets{labels, nullptr}, dlast);
  if (m) m->add(last, labels, double(l) * double(N));
  return l;
}

float BatchScorer::train(const Tensor& out, const Tensor& x, const int32_t* labels, Tensor& dout,
                         ClassificationMetrics* m, float* shown) {
  if (!every_step_) {
    const float l = eval(out, labels, dout, m);
    if (shown) *shown = l;
    return l;
  }
  const int64_t n = out.dim(0), T = out.dim(1), V = out.dim(2);
  next_token_targets(x, labels, n, targets_);
  Targets t{targets_.data(), nullptr};
  t.skip_negative = true;
  Tensor rows = out.reshaped(Shape{n * T, V}), drows = dout.reshaped(Shape{n * T, V});
  const float l = loss_.compute(rows, t, drows);
  if (m || shown) {
    const float shown_loss = at_last_step(out, labels, m);
    if (shown) *shown = shown_loss;
  }
  return l;
}

float BatchScorer::eval(const Tensor& out, const int32_t* labels, Tensor& dout,
                        ClassificationMetrics* m) {
  if (every_step_) return at_last_step(out, labels, m);
  const float l = loss_.compute(out, Targets{labels, nullptr}, dout);
  if (m) m->add(out, labels, double(l) * double(out.dim(0)));
  return l;
}

}  // namespace dc
