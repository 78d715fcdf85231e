#pragma once
// What each layer of a network costs on this machine's CPU, measured: the
// plan of a training run at a batch, stepped on synthetic data (forward,
// backward, optimizer) with RunContext::layer_seconds on. `advise --profile`
// shows it beside the step-time model's per-layer prediction, so a wrong
// prediction points at the layer (and the rate) it comes from.
#include <deepcanvas/graph.h>
#include <deepcanvas/optim.h>

#include <string>
#include <vector>

namespace dc::advisor {

struct MeasuredLayer {
  std::string name, type;
  double seconds = 0;  // forward + backward, per step (0 for a ReLU fused into its producer)
};

struct LayerProfile {
  std::vector<MeasuredLayer> layers;  // the plan's steps without the Input(s)
  double optimizer_s = 0;             // the weight update, per step
  double step_s = 0;                  // everything above, per step
  int steps = 0;                      // measured, after warm-up
};

// `steps` measured steps after `warmup` unmeasured ones (first touches of
// buffers, BLAS and oneDNN preparing kernels for the shapes). Throws what
// the plan throws for a network that cannot run.
LayerProfile profile_layers(const Graph& g, int64_t batch, const OptimizerConfig& opt,
                            int steps = 20, int warmup = 3);

}  // namespace dc::advisor
