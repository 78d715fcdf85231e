#pragma once
// CUDA ops by layer type, the plugin's counterpart of the engine's
// LayerRegistry: each op family registers its factories in the file that
// holds it (conv.cpp, dense.cpp, pool_ops.cpp, ...), and CudaPlan builds one
// op per lowered step (PlanStep, plan.h) from here, reading the attributes
// the engine has already resolved.
#include <deepcanvas/plan.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ops.h"

namespace dc::cuda {

// Builds the op for one step; label, in_shapes and out_shape are filled in
// by OpRegistry::make.
using OpFactory = std::unique_ptr<Op> (*)(const PlanStep& step);

class OpRegistry {
 public:
  // The registry with every built-in op family registered.
  static const OpRegistry& instance();
  void add(const std::string& type, OpFactory make);
  // Throws dc::Error naming the node, with the reason when its layer is
  // CPU-only (cpu_only_layers() in backend.h), for a type without an op.
  std::unique_ptr<Op> make(const PlanStep& step) const;
  std::vector<std::string> types() const;  // sorted

 private:
  std::map<std::string, OpFactory> ops_;
};

// Folds a ReLU/ReLU6 op into the op that feeds it (activation_ops.cpp):
// false, and nothing changed, where either cannot.
bool fold_into(Op& relu, Op& producer);

// One per op family, each defined beside its op classes.
void register_activation_ops(OpRegistry& r);  // activation_ops.cpp: ReLU ... Softmax
void register_attention_ops(OpRegistry& r);   // attention_ops.cpp: MultiHeadAttention
void register_channel_ops(OpRegistry& r);     // channel_ops.cpp: ChannelScale/Shuffle/Slice
void register_conv_ops(OpRegistry& r);        // conv.cpp: Conv2D
void register_dense_ops(OpRegistry& r);       // dense.cpp: Dense, TimeDistributedDense
void register_dropout_ops(OpRegistry& r);     // dropout_ops.cpp
void register_merge_ops(OpRegistry& r);       // merge_ops.cpp: Add, Concat
void register_norm_ops(OpRegistry& r);        // norm_ops.cpp: BatchNorm1D/2D, LayerNorm
void register_pool_ops(OpRegistry& r);        // pool_ops.cpp: Max/Avg/GlobalAvg pooling
void register_rnn_ops(OpRegistry& r);         // rnn.cpp: SimpleRNN, LSTM, GRU
void register_sequence_ops(OpRegistry& r);    // sequence_ops.cpp: Embedding, LastStep
void register_shape_ops(OpRegistry& r);       // shape_ops.cpp: Flatten, Reshape
// token_ops.cpp: ImageToTokens, PositionalEmbedding, ClassToken, TokenPooling
void register_token_ops(OpRegistry& r);

}  // namespace dc::cuda
