#include <deepcanvas/advisor/layer_profile.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/rng.h>

#include <algorithm>
#include <chrono>

namespace dc::advisor {

LayerProfile profile_layers(const Graph& g, int64_t batch, const OptimizerConfig& opt, int steps,
                            int warmup) {
  register_builtin_layers();
  Plan plan(g, batch);
  plan.init_params(1);
  auto optimizer = make_optimizer(opt);
  const auto params = plan.trainable();
  // Values do not change how long these kernels take, except that an
  // Embedding needs valid token ids: its input stays 0.
  bool tokens = false;
  for (const PlanStep& s : plan.steps())
    if (s.type == "Embedding")
      for (int i : s.inputs) tokens = tokens || plan.steps()[size_t(i)].is_input;
  Rng rng(7);
  Tensor x(plan.input_shape().with_batch(batch));
  if (!tokens)
    for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform();
  Tensor dout(plan.output_shape().with_batch(batch));
  for (int64_t i = 0; i < dout.numel(); ++i) dout.f32()[i] = 1e-3f * rng.normal();

  std::vector<double> seconds;
  RunContext ctx{true, &rng};
  ctx.layer_seconds = &seconds;
  LayerProfile out;
  double opt_s = 0;
  for (int k = 0; k < warmup + steps; ++k) {
    if (k == warmup) {
      std::fill(seconds.begin(), seconds.end(), 0.0);
      opt_s = 0;
    }
    plan.forward(x, ctx);
    plan.zero_grad();
    plan.backward(dout, ctx);
    const auto t0 = std::chrono::steady_clock::now();
    optimizer->step(params, opt.lr);
    opt_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  seconds.resize(plan.steps().size(), 0.0);
  for (size_t i = 0; i < plan.steps().size(); ++i) {
    const PlanStep& s = plan.steps()[i];
    if (s.is_input) continue;
    out.layers.push_back({s.name, s.type, seconds[i] / steps});
    out.step_s += seconds[i] / steps;
  }
  out.optimizer_s = opt_s / steps;
  out.step_s += out.optimizer_s;
  out.steps = steps;
  return out;
}

}  // namespace dc::advisor
