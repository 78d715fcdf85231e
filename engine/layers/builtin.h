#pragma once
// One registration function per layer family (one file each in this folder),
// and the one small kernel several families share.
#include <deepcanvas/layer.h>
#include <deepcanvas/memstats.h>

#include <cstdint>

namespace dc {

void register_input_layers(LayerRegistry& r);  // Input
void register_dense_layers(LayerRegistry& r);  // Dense
void register_shape_layers(LayerRegistry& r);  // Flatten, Reshape
// ReLU, ReLU6, LeakyReLU, Sigmoid, Tanh, GELU, SiLU, HardSwish, HardSigmoid, Softmax
void register_activation_layers(LayerRegistry& r);
void register_merge_layers(LayerRegistry& r);      // Add, Concat
void register_conv_layers(LayerRegistry& r);       // Conv2D
void register_pool_layers(LayerRegistry& r);       // MaxPool2D, AvgPool2D, GlobalAvgPool2D
void register_norm_layers(LayerRegistry& r);       // BatchNorm1D, BatchNorm2D, LayerNorm
void register_dropout_layers(LayerRegistry& r);    // Dropout
void register_sequence_layers(LayerRegistry& r);   // SequenceInput, TimeDistributedDense, LastStep
void register_embedding_layers(LayerRegistry& r);  // Embedding
void register_recurrent_layers(LayerRegistry& r);  // SimpleRNN, LSTM, GRU
void register_attention_layers(LayerRegistry& r);  // MultiHeadAttention
// ImageToTokens, PositionalEmbedding, ClassToken, TokenPooling
void register_token_layers(LayerRegistry& r);
void register_channel_layers(LayerRegistry& r);  // ChannelScale, ChannelShuffle, ChannelSlice

// g[c] += the sum over rows r of x[r·ld + c], c < cols: a parameter's
// gradient summed over the batch (or the rows of a sequence), in double and
// rows in order, so the result does not depend on threads.
inline void add_column_sums(const float* x, int64_t rows, int64_t cols, int64_t ld, float* g) {
  ScratchVec<double> s(size_t(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) s[size_t(c)] += x[r * ld + c];
  for (int64_t c = 0; c < cols; ++c) g[c] += float(s[size_t(c)]);
}

}  // namespace dc
