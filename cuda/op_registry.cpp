#include "op_registry.h"

#include <deepcanvas/backend.h>
#include <deepcanvas/errors.h>

#include <algorithm>

namespace dc::cuda {

const OpRegistry& OpRegistry::instance() {
  static const OpRegistry r = [] {
    OpRegistry b;
    register_activation_ops(b);
    register_attention_ops(b);
    register_channel_ops(b);
    register_conv_ops(b);
    register_dense_ops(b);
    register_dropout_ops(b);
    register_merge_ops(b);
    register_norm_ops(b);
    register_pool_ops(b);
    register_rnn_ops(b);
    register_sequence_ops(b);
    register_shape_ops(b);
    register_token_ops(b);
    return b;
  }();
  return r;
}

void OpRegistry::add(const std::string& type, OpFactory make) {
  if (!ops_.emplace(type, make).second)
    throw Error("internal: CUDA op '" + type + "' registered twice");
}

std::unique_ptr<Op> OpRegistry::make(const PlanStep& step) const {
  auto it = ops_.find(step.type);
  if (it == ops_.end()) {
    const auto& cpu = cpu_only_layers();
    auto c = std::find_if(cpu.begin(), cpu.end(),
                          [&](const CpuOnlyLayer& l) { return l.type == step.type; });
    throw Error(step.label + " has no CUDA kernel" +
                (c != cpu.end() ? " (" + c->reason + ")" : "") +
                "; train this model with --device cpu");
  }
  std::unique_ptr<Op> op = it->second(step);
  op->label = step.label;
  op->in_shapes = step.in_shapes;
  op->out_shape = step.out_shape;
  return op;
}

std::vector<std::string> OpRegistry::types() const {
  std::vector<std::string> v;
  for (const auto& [type, make] : ops_) v.push_back(type);
  return v;
}

}  // namespace dc::cuda
