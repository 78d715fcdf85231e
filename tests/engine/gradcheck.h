#pragma once
// Finite-difference gradient checks shared by the layer and loss tests.
// The scalar under test is L = sum(out * R) for a fixed random R, so dout = R;
// every input gradient and every trainable parameter gradient is compared with
// a central difference computed in double from float forwards.
#include <deepcanvas/layer.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace dc::test {

struct GradCheckOptions {
  float eps = 1e-2f;   // step; float32 forwards need a fairly large one
  float rtol = 2e-2f;  // |a - n| <= atol + rtol * max(|a|, |n|)
  float atol = 2e-3f;
  float input_lo = -1.0f;  // inputs drawn uniformly from [lo, hi]
  float input_hi = 1.0f;
  bool training = true;
  int max_checks = 200;  // entries checked per tensor (spread evenly)
  uint64_t seed = 42;
  // When set, inputs are drawn so no two entries are closer than this (keeps
  // max-pooling and ReLU away from their kinks).
  bool distinct_inputs = false;
};

inline double dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += double(a.f32()[i]) * double(b.f32()[i]);
  return s;
}

// Runs the check for layer `type` with `attrs` on per-sample input shapes
// `in_shapes` and batch `n`. Reports failures through gtest.
inline void check_layer_gradients(const std::string& type, const Attrs& attrs,
                                  const std::vector<Shape>& in_shapes, int64_t n,
                                  GradCheckOptions o = {}) {
  register_builtin_layers();
  const LayerDescriptor& d = LayerRegistry::instance().get(type);
  Attrs a = d.with_defaults(attrs);
  Shape out_shape = d.infer(in_shapes, a);
  auto layer = d.create(a, in_shapes, out_shape);
  Rng rng(o.seed);
  layer->init(rng);
  // Make parameters non-trivial (e.g. BatchNorm's gamma=1, beta=0).
  for (Param* p : layer->params())
    if (p->trainable)
      for (int64_t i = 0; i < p->value.numel(); ++i) p->value.f32()[i] += rng.uniform(-0.5f, 0.5f);

  std::vector<Tensor> inputs;
  for (const Shape& s : in_shapes) {
    Tensor t(s.with_batch(n));
    for (int64_t i = 0; i < t.numel(); ++i) {
      float v = rng.uniform(o.input_lo, o.input_hi);
      // The quarter-step offset keeps every value a quarter step away from
      // the range's midpoint (0 for symmetric ranges), where ReLU kinks.
      if (o.distinct_inputs)
        v = o.input_lo +
            (o.input_hi - o.input_lo) * (float((i * 7919) % t.numel()) + 0.25f) / float(t.numel()) +
            1e-4f * rng.uniform();
      t.f32()[i] = v;
    }
    inputs.push_back(std::move(t));
  }
  std::vector<const Tensor*> in_ptrs;
  for (auto& t : inputs) in_ptrs.push_back(&t);
  Tensor out(out_shape.with_batch(n));
  Tensor R(out_shape.with_batch(n));
  for (int64_t i = 0; i < R.numel(); ++i) R.f32()[i] = rng.uniform(-1.0f, 1.0f);

  // Dropout and friends draw from ctx.rng: reseed identically for each run.
  Rng step_rng(o.seed + 1);
  auto run_forward = [&]() {
    step_rng.reseed(o.seed + 1);
    RunContext ctx{o.training, &step_rng};
    out.zero();
    layer->forward(in_ptrs, out, ctx);
    return dot(out, R);
  };

  run_forward();
  std::vector<Tensor> din;
  for (auto& t : inputs) din.emplace_back(t.shape());
  std::vector<Tensor*> din_ptrs;
  for (auto& t : din) din_ptrs.push_back(&t);
  for (Param* p : layer->params())
    if (p->trainable) p->grad.zero();
  {
    RunContext ctx{o.training, &step_rng};
    layer->backward(in_ptrs, out, R, din_ptrs, ctx);
  }

  auto check_tensor = [&](Tensor& x, const Tensor& analytic, const std::string& what) {
    int64_t n_el = x.numel();
    int64_t stride = std::max<int64_t>(1, n_el / o.max_checks);
    int failures = 0;
    for (int64_t i = 0; i < n_el; i += stride) {
      float saved = x.f32()[i];
      x.f32()[i] = saved + o.eps;
      double lp = run_forward();
      x.f32()[i] = saved - o.eps;
      double lm = run_forward();
      x.f32()[i] = saved;
      double numeric = (lp - lm) / (2.0 * o.eps);
      double an = analytic.f32()[i];
      double tol = o.atol + o.rtol * std::max(std::fabs(an), std::fabs(numeric));
      if (std::fabs(an - numeric) > tol && ++failures <= 5)
        ADD_FAILURE() << type << " " << what << "[" << i << "]: analytic " << an << " numeric "
                      << numeric;
    }
    run_forward();  // restore layer state
  };
  for (size_t k = 0; k < inputs.size(); ++k)
    check_tensor(inputs[k], din[k], "d_input" + std::to_string(k));
  for (Param* p : layer->params())
    if (p->trainable) check_tensor(p->value, p->grad, "d_" + p->name);
}

}  // namespace dc::test
