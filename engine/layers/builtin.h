#pragma once
// One registration function per layer family (one file each in this folder).
#include <deepcanvas/layer.h>

namespace dc {

void register_input_layers(LayerRegistry& r);       // Input
void register_dense_layers(LayerRegistry& r);       // Dense
void register_shape_layers(LayerRegistry& r);       // Flatten, Reshape
void register_activation_layers(LayerRegistry& r);  // ReLU, LeakyReLU, Sigmoid, Tanh, GELU, Softmax
void register_merge_layers(LayerRegistry& r);       // Add, Concat
void register_conv_layers(LayerRegistry& r);        // Conv2D
void register_pool_layers(LayerRegistry& r);        // MaxPool2D, AvgPool2D, GlobalAvgPool2D
void register_norm_layers(LayerRegistry& r);        // BatchNorm1D, BatchNorm2D, LayerNorm
void register_dropout_layers(LayerRegistry& r);     // Dropout
void register_sequence_layers(LayerRegistry& r);    // SequenceInput, TimeDistributedDense, LastStep
void register_embedding_layers(LayerRegistry& r);   // Embedding
void register_recurrent_layers(LayerRegistry& r);   // SimpleRNN, LSTM, GRU
void register_attention_layers(LayerRegistry& r);   // MultiHeadAttention
// ImageToTokens, PositionalEmbedding, ClassToken, TokenPooling
void register_token_layers(LayerRegistry& r);

}  // namespace dc
