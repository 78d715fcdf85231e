// Dropout over elementwise.cu; its mask seed is derived per step and per node.
// In graph-capable steps the step's seed is read from device memory, so a
// replayed CUDA graph draws new masks each step and Dropout does not turn
// graphs off (the masks equal those of the same step run eagerly).
#include <functional>

#include "kernels.h"
#include "op_registry.h"

namespace dc::cuda {

namespace {

class Dropout : public Op {
 public:
  float rate = 0.5f;
  bool masked = false;
  uint64_t seed = 0;
  const uint64_t* dseed = nullptr;
  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    masked = c.training && rate > 0.f;
    seed = c.seed;
    dseed = c.dseed;
    int64_t cnt = n * out_shape.numel();
    if (masked)
      dropout_forward(in[0], out, cnt, rate, seed, salt(), dseed, c.stream);
    else
      copy(in[0], out, cnt, c.stream);
    DC_LAUNCHED(label + " on " + dims(n, out_shape));
  }
  void backward(OpContext& c, const std::vector<const float*>&, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    if (!din[0]) return;
    int64_t cnt = n * out_shape.numel();
    if (masked)
      dropout_backward(dout, din[0], cnt, rate, seed, salt(), dseed, c.stream);
    else
      accumulate(dout, din[0], cnt, c.stream);
    DC_LAUNCHED(label + " backward on " + dims(n, out_shape));
  }

 private:
  // Distinct masks per Dropout layer within one step.
  uint64_t salt() const { return 0xD1B54A32D192ED03ull * (std::hash<std::string>{}(label) | 1); }
};

}  // namespace

void register_dropout_ops(OpRegistry& r) {
  r.add("Dropout", [](const PlanStep& s) -> std::unique_ptr<Op> {
    auto p = std::make_unique<Dropout>();
    p->rate = float(s.attrs.f("rate"));
    return p;
  });
}

}  // namespace dc::cuda
