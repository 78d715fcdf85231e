// Training memory from the layers' cost rules. Every term mirrors one
// allocation the CPU backend makes (the file and member are named beside
// it), so that a change there shows up here as a failing
// Advisor.MemoryPredictionMatchesMeasuredPeak test rather than as a silent drift.
#include <deepcanvas/advisor/memory_model.h>
#include <deepcanvas/data.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/plan.h>

#include <algorithm>

#include "cuda_rules.h"

namespace dc::advisor {

namespace {

// dc::Storage rounds every block up to 64 bytes (core/tensor.cpp).
int64_t tensor_bytes(int64_t numel, int64_t elem = 4) {
  return std::max<int64_t>(64, (numel * elem + 63) / 64 * 64);
}

bool is_batchnorm(const std::string& t) {
  return t == "BatchNorm1D" || t == "BatchNorm2D";
}

// Parameter tensors of a node: learnable scalars come from the cost rule;
// how many tensors they are split into only matters for the 64-byte rounding.
struct ParamLayout {
  int64_t trainable = 0, buffers = 0;  // scalars
  int64_t tensors = 0, buffer_tensors = 0;
};

ParamLayout param_layout(const PlanStep& s, const Cost& c) {
  ParamLayout p;
  p.trainable = c.params;
  if (c.params == 0) return p;
  const std::string& t = s.type;
  if (is_batchnorm(t)) {
    // gamma and beta learn; running mean and variance are buffers (norm.cpp).
    p.tensors = 2;
    p.buffers = c.params;
    p.buffer_tensors = 2;
  } else if (is_recurrent(t)) {
    const int64_t units = s.attrs.i("num_layers") * (s.attrs.b("bidirectional") ? 2 : 1);
    p.tensors = units * (s.attrs.b("bias") ? 4 : 2) +
                (s.attrs.s("initial_state") == "learned" ? units * (t == "LSTM" ? 2 : 1) : 0);
  } else if (t == "Embedding") {
    p.tensors = 1;
  } else {
    p.tensors = 2;  // weight and bias (an upper bound without a bias)
  }
  return p;
}

int64_t rounded(int64_t scalars, int64_t tensors) {
  if (tensors == 0) return 0;
  // One tensor holding everything, plus at most 64 bytes of rounding per
  // further tensor.
  return tensor_bytes(scalars) + (tensors - 1) * 64;
}

// What a layer keeps between forward and backward (internal) and what its
// backward allocates and frees (transient), at batch n, in bytes.
void layer_buffers(const PlanStep& s, int64_t n, int threads, bool backward, bool input_grad,
                   int64_t elem, bool relu_fused, int64_t& internal, int64_t& transient,
                   int64_t& onednn_workspace) {
  const std::string& t = s.type;
  internal = transient = onednn_workspace = 0;
  const int64_t out = s.out_shape.numel();
  const int64_t in0 = s.in_shapes.empty() ? 0 : s.in_shapes[0].numel();
  if (t == "Conv2D") {
    // conv.cpp: one im2col column buffer per chunk (col_), the same again
    // for the input gradient (dcol_), and per-chunk weight-gradient partial
    // sums (dw_part_). Pointwise convolutions skip the columns; depthwise
    // ones run directly and keep no buffers at all.
    const ConvKernel kernel = conv_cpu_kernel(s.in_shapes, s.attrs);
    if (kernel == ConvKernel::Depthwise) return;
    // conv_dnnl.cpp: its input in oneDNN's layout, kept from forward to
    // backward for the weight gradient (so not by a frozen layer, nor
    // without a backward), and the workspace all such convolutions share
    // (the largest one's, so predict_memory takes the maximum, as for
    // transient). Without a backward (a frozen prefix), only the forward's
    // part of the workspace, and none for a 1×1 convolution, which then
    // runs as a GEMM in place (conv.cpp).
    int64_t kept = 0, shared = 0, forward_only = 0;
    if (kernel == ConvKernel::OneDnn && conv_onednn_bytes(s.in_shapes, s.attrs, n, relu_fused,
                                                          threads, kept, shared, &forward_only)) {
      internal = backward && !s.frozen ? kept : 0;
      onednn_workspace = backward                                  ? shared
                         : conv_is_pointwise(s.in_shapes, s.attrs) ? 0
                                                                   : forward_only;
      return;
    }
    // A depthwise geometry oneDNN has only reference kernels for runs on
    // ours (conv_dnnl.cpp).
    if (kernel == ConvKernel::OneDnn && conv_is_depthwise(s.in_shapes, s.attrs)) return;
    const Shape& x = s.in_shapes[0];
    const auto& k = s.attrs.ints("kernel");
    const bool pointwise = kernel == ConvKernel::Pointwise;
    const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(threads, n));
    const int64_t K = x[0] * k[0] * k[1];
    const int64_t OHW = s.out_shape[1] * s.out_shape[2];
    const int64_t wsize = s.attrs.i("filters") * K / s.attrs.i("groups");
    // Only backward allocates the gradients' buffers, and a frozen layer's
    // backward no weight-gradient sums; a frozen prefix runs no backward.
    if (!pointwise) internal += chunks * K * OHW * elem * (input_grad ? 2 : 1);
    if (backward && !s.frozen) internal += chunks * wsize * elem;
    // Per-chunk bias-gradient partial sums (db_part_) and, with a fused
    // ReLU, one sample's masked output gradient per chunk (masked_).
    const int64_t OC = s.attrs.i("filters");
    if (backward && s.attrs.b("bias") && !s.frozen) internal += chunks * OC * elem;
    if (backward && relu_fused) internal += chunks * OC * OHW * elem;
  } else if (t == "MaxPool2D") {
    internal = n * out * 4;  // pool.cpp argmax_, int32 per output
  } else if (t == "Dropout") {
    if (s.attrs.f("rate") > 0) internal = n * out * elem;  // dropout.cpp mask_
  } else if (t == "Embedding") {
    internal = n * in0 * 8;  // embedding.cpp ids_, int64 per token
  } else if (is_batchnorm(t)) {
    internal = 2 * s.in_shapes[0][0] * 4;  // norm.cpp mean_, invstd_
  } else if (t == "LayerNorm") {
    internal = 2 * n * (in0 / s.in_shapes[0].dims().back()) * 4;  // mean_, invstd_ per row
  } else if (t == "MultiHeadAttention") {
    // attention.cpp: the projections q_, k_, v_ and the heads' output o_;
    // the attention weights p_ [N, heads, T, S] (the T² term), and their
    // dropout mask in training; backward's dO, dQ, dK, dV and one head's
    // dP and weights.
    const int64_t T = s.in_shapes[0][0], E = s.in_shapes[0][1];
    const int64_t S = s.in_shapes.size() > 1 ? s.in_shapes[1][0] : T, H = s.attrs.i("heads");
    const int64_t pw = n * H * T * S;
    internal = (n * (2 * T * E + 2 * S * E) + pw * (s.attrs.f("dropout") > 0 ? 2 : 1)) * 4;
    if (backward) transient = (n * (2 * T * E + 2 * S * E) + 2 * T * S) * 4;
  } else if (is_recurrent(t)) {
    // recurrent.cpp: per unit (layer × direction) the gate cache and the
    // entering states, the LSTM cell states or GRU's W_hn h, and the gate
    // gradients; per layer its output sequence (plus mask and masked copy
    // under inter-layer dropout); per layer object the initial and carried
    // states; backward's dy/dx buffers between stacked layers.
    const int64_t T = s.in_shapes[0][0], H = s.attrs.i("hidden_size");
    const int64_t L = s.attrs.i("num_layers"), D = s.attrs.b("bidirectional") ? 2 : 1;
    const bool lstm = t == "LSTM", gru = t == "GRU";
    const int64_t G = lstm ? 4 : gru ? 3 : 1, GH = G * H, DH = D * H;
    const int64_t NT = n * T;
    int64_t unit = NT * GH + NT * H + NT * GH;  // gates, hprev, dgx
    if (lstm) unit += NT * H;                   // cell
    if (gru) unit += NT * H + NT * GH;          // hn, dgh
    int64_t per_layer = NT * DH;
    int64_t floats = L * D * unit + L * per_layer;
    if (s.attrs.f("dropout") > 0) floats += (L - 1) * 2 * NT * DH;
    floats += GH + n * H * 3;           // bias_row_, h0_, dh_, dc_ (dc_ is always assigned)
    if (lstm) floats += n * H;          // c0_
    if (gru) floats += n * GH;          // tmp_
    internal = floats * elem + GH * 8;  // sum_ is double
    transient = std::min<int64_t>(L - 1, 2) * NT * DH * elem;
  }
}

// The CUDA plan's allocations (cuda/plan.cpp and the ops), each block
// rounded as cuda/allocator.cpp rounds it. Fills m's CUDA fields and
// returns the device total (allocator and context).
int64_t cuda_total(const std::vector<PlanStep>& steps, const MemoryOptions& o,
                   MemoryPrediction& m) {
  const int64_t n = o.batch;
  const bool reduced = o.precision != Precision::Fp32;
  // bf16 GEMMs read the float32 tensors; fp16 keeps 16-bit copies
  // (cuda/ops.h, OpContext::low_on_float32).
  const bool on_float32 = o.precision == Precision::Bf16;
  auto blk = cuda_block_bytes;
  // CudaPlan::allocate: every node's output (inputs included, views not)
  // in one float32 block, whatever the precision, and in another the
  // gradients of those that backward reaches (CudaPlan::lower: own
  // parameters that train, or such a node upstream) and of the output.
  // A ReLU folded into the BatchNorm, Add or Conv2D before it
  // (relu_fusions) shares that step's buffers, as Flatten and Reshape share
  // theirs.
  const std::vector<int> folded = relu_fusions(steps);
  auto is_view = [&](const PlanStep& s) {
    return s.type == "Flatten" || s.type == "Reshape" || folded[size_t(&s - steps.data())] >= 0;
  };
  const std::vector<bool> reached = backward_reach(steps);
  size_t out_src = steps.size() - 1;
  while (is_view(steps[out_src]) && !steps[out_src].inputs.empty())
    out_src = size_t(steps[out_src].inputs[0]);
  int64_t act = 0, act_grads = 0, trainable = 0, frozen = 0, buffers = 0, extra = 0, workspace = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const PlanStep& s = steps[i];
    ParamLayout p;
    if (!s.is_input) p = param_layout(s, s.desc->cost(s.in_shapes, s.out_shape, s.attrs));
    if (!is_view(s)) {
      act += n * s.out_shape.numel();
      if (reached[i] || i == out_src) act_grads += n * s.out_shape.numel();
    }
    if (s.is_input) continue;
    (s.frozen ? frozen : trainable) += p.trainable;
    buffers += p.buffers;
    const int64_t in = s.in_shapes[0].numel(), out = s.out_shape.numel();
    if (s.type == "Conv2D" && cuda_depthwise_conv(s)) {
      // cuda/depthwise.cu reads and writes the float32 activations itself:
      // no 16-bit copies, no cuDNN workspace; its weight gradient sums
      // into parts of (taps + bias) per output channel (depthwise.h's
      // depthwise_wgrad_scratch_bytes). DC_CUDA_DEPTHWISE=cudnn is not
      // modelled.
      if (reached[i] && !s.frozen) {
        const auto& k = s.attrs.ints("kernel");
        const int64_t OC = s.out_shape[0];
        extra += blk(4 * OC * (k[0] * k[1] + 1) * cuda_channel_parts(OC));
      }
    } else if (s.type == "Conv2D") {
      // conv.cpp: 'same' padding with more on one side than the other runs
      // on a float32 copy of x with the difference added as zero rows and
      // columns (conv_layout.h's ConvPadCopy); backward reuses it for the
      // copy's input gradient, and the 16-bit copy of x is of its size.
      int64_t xin = in;
      const ConvPads pad = conv_pads(s);
      if (pad.t != pad.b || pad.l != pad.r) {
        const Shape& x = s.in_shapes[0];
        xin = x[0] * (x[1] + std::max(pad.t, pad.b) - std::min(pad.t, pad.b)) *
              (x[2] + std::max(pad.l, pad.r) - std::min(pad.l, pad.r));
        extra += blk(4 * n * xin);
      }
      const int64_t OC = s.out_shape[0];
      const int64_t IC = s.in_shapes[0][0], groups = s.attrs.i("groups");
      // Pointwise layers on cuBLAS GEMMs (deepcanvas/cuda_pointwise.h): no
      // 16-bit copies; a trained one's per-sample weight-gradient products
      // in the shared workspace, and the batch's ones.
      const bool wgrad = reached[i] && !s.frozen;
      const bool pw_gemm = on_float32 && cuda_pointwise_gemm(s, wgrad);
      if (pw_gemm && wgrad) {
        workspace = std::max(workspace, blk(4 * n * IC * OC));
        extra += blk(4 * n);
      }
      // 16-bit copies of x, y and the weights for tensor cores. (A frozen
      // one keeps no 16-bit weight gradient.)
      if (reduced && !pw_gemm)
        extra += blk(2 * n * xin) + blk(2 * n * out) + (s.frozen ? 0 : blk(2 * p.trainable));
      // Channels last (the default of the graph-API path where there is
      // one group and both channel counts are multiples of 8) adds a 16-bit
      // KRSC copy of the weight. (DC_CUDA_WGRAD=gemm's columns and the
      // opt-outs DC_CUDA_NHWC=0 / DC_CUDA_CONV=legacy / DC_CUDA_PW=cudnn are
      // not modelled.) The bias gradient's partial sums (two doubles per part).
      if (reduced && !pw_gemm && groups == 1 && IC % 8 == 0 && OC % 8 == 0) {
        const auto& k = s.attrs.ints("kernel");
        extra += blk(2 * OC * IC * k[0] * k[1]);
      }
      if (s.attrs.b("bias") && reached[i] && !s.frozen)
        extra += blk(16 * OC * cuda_channel_parts(OC));
      // cuDNN's workspace is the one its chosen algorithms ask for, which
      // only the device knows; the batch's im2col matrix (what the GEMM
      // algorithms unfold) stands for it. One workspace serves every op.
      if (!conv_is_pointwise(s.in_shapes, s.attrs)) {
        const auto& k = s.attrs.ints("kernel");
        const int64_t cols =
            s.in_shapes[0][0] / s.attrs.i("groups") * k[0] * k[1] * s.out_shape[1] * s.out_shape[2];
        workspace = std::max(workspace, blk((reduced ? 2 : 4) * n * cols));
      }
    } else if (s.type == "Dense" || s.type == "TimeDistributedDense") {  // both dense.cpp
      // bf16: no 16-bit copies, cuBLAS reads the float32 tensors with a
      // 16-bit compute type (DC_CUDA_DENSE=copies is not modelled). fp16:
      // 16-bit copies of the input and, where backward reaches, of the
      // output gradient.
      if (reduced && !on_float32) extra += blk(2 * n * in) + (reached[i] ? blk(2 * n * out) : 0);
      const int64_t U = s.attrs.i("units");
      if (s.attrs.b("bias") && reached[i] && !s.frozen)
        extra += blk(16 * U * cuda_channel_parts(U));  // bias_parts_
    } else if (s.type == "MultiHeadAttention") {
      // attention_ops.cpp: queries, keys, values, the heads' outputs and the
      // weights (and their dropped copy); backward's gradients of each.
      const int64_t T = s.in_shapes[0][0], E = s.in_shapes[0][1];
      const int64_t S = s.in_shapes.size() > 1 ? s.in_shapes[1][0] : T, H = s.attrs.i("heads");
      const int64_t q = n * T * E * 4, kv = n * S * E * 4, pw = n * H * T * S * 4;
      extra += 2 * blk(q) + 2 * blk(kv) + blk(pw) + (s.attrs.f("dropout") > 0 ? blk(pw) : 0);
      if (reached[i]) extra += 2 * blk(q) + 2 * blk(kv) + blk(pw);
      if (reached[i] && s.attrs.b("bias") && !s.frozen)
        extra += blk(16 * E * cuda_channel_parts(E));
    } else if (s.type == "LayerNorm") {
      // norm_ops.cpp: mean and 1/std per row; the weight and bias
      // gradients' partial sums (layer_norm.cu: two doubles per column and
      // chunk of 64 rows).
      const int64_t D = s.in_shapes[0].dims().back(), rows = n * (in / D);
      extra += blk(2 * rows * 4);
      if (s.attrs.b("affine") && reached[i] && !s.frozen) extra += blk(16 * D * ((rows + 63) / 64));
    } else if (is_batchnorm(s.type)) {
      // norm_ops.cpp: mean and 1/std; the partial sums, the backward's and
      // forward's coefficients (4 and 3 floats a channel) and a counter.
      const int64_t C = s.in_shapes[0][0];
      extra += blk(2 * C * 4) + blk(16 * C * cuda_channel_parts(C) + 32 * C);
    } else if (is_recurrent(s.type)) {
      // rnn.cpp: cuDNN's packed weights and their gradients (not for a
      // frozen layer), the input
      // gradient, the output sequence and its gradient (last-step
      // outputs), and the reserve space cuDNN keeps for backward, which
      // only cuDNN sizes: estimated as per layer and direction the gates
      // and the states of every time step.
      const int64_t T = s.in_shapes[0][0], H = s.attrs.i("hidden_size");
      const int64_t L = s.attrs.i("num_layers"), D = s.attrs.b("bidirectional") ? 2 : 1;
      const int64_t G = s.type == "LSTM" ? 4 : s.type == "GRU" ? 3 : 1;
      // 16-bit data (rnn.cpp): fp16 always; bf16 only where the persistent
      // algorithm does not run (hidden size over 128, or dropout between
      // layers), as it was faster with float32 data there.
      const bool persistent = H <= 128 && !rnn_dropout_between_layers(s);
      const bool low =
          o.precision == Precision::Fp16 || (o.precision == Precision::Bf16 && !persistent);
      const int64_t es = low ? 2 : 4;
      const bool seq = s.attrs.b("return_sequences");
      extra += (s.frozen ? 1 : 2) * blk(es * p.trainable) + blk(es * n * in);
      if (low) extra += blk(2 * n * T * s.in_shapes[0][1]);  // the 16-bit input
      if (low && seq) extra += 2 * blk(2 * n * T * D * H);   // 16-bit y and dy
      if (!seq) extra += 2 * blk(es * n * T * D * H);
      // The last state from cuDNN's hy, its gradient through dhy.
      if (!seq && L * D > 1) extra += 2 * blk(es * L * D * n * H);
      extra += blk(4 * L * D * n * T * (G + 2) * H);
      // Its forward's workspace (cudnnGetRNNTempSpaceSizes): a layer's gate
      // pre-activations for every time step, in the shared workspace.
      workspace = std::max(workspace, blk(4 * D * n * T * G * H));
      // cuDNN's persistent kernels keep more, which only the device sizes:
      // fitted to the allocator's peaks of lstm_rows, gru_rows and char_lstm
      // (one layer, H = 128; fp32 on an H200, 2026-11-28, docs/BENCHMARKS.md
      // "Advisor on a GPU"), about 66 bytes per time step, hidden unit and
      // sample (the same for LSTM and GRU) and 9 MiB besides. Without it
      // those templates were predicted 14-48 % under.
      if (persistent) extra += blk(66 * L * D * n * T * H) + blk(int64_t(9) << 20);
    }
  }
  // CudaPlan::map_parameters: the learnable parameters (frozen ones after
  // the trainable) in one block, gradients, decay mask and optimizer state
  // for the trainable ones only.
  const int64_t tr1 = std::max<int64_t>(trainable, 1);
  const int64_t all1 = std::max<int64_t>(trainable + frozen, 1);
  const int64_t classes = steps.back().out_shape.numel();
  const int64_t opt_copies =
      o.optimizer.type == OptimizerType::Sgd ? (o.optimizer.momentum != 0 ? 1 : 0) : 2;
  m.activations = blk(4 * act);
  m.activation_grads = blk(4 * std::max<int64_t>(act_grads, 1));
  m.weights = blk(4 * all1) + blk(4 * std::max<int64_t>(buffers, 1)) + blk(tr1);  // + decay mask
  m.gradients = blk(4 * tr1);
  m.optimizer = trainable ? opt_copies * blk(4 * trainable) : 0;
  m.copies = reduced ? blk(2 * all1) : 0;  // plan.cpp plow_
  // plan.cpp: labels, targets, loss statistics, 32 slots of sample
  // indices; with CUDA graphs the graph's indices, arguments and cuBLAS's
  // own 32 MiB workspace. Counted for every run: one without graphs (a
  // stacked recurrent layer with dropout) has cuDNN's dropout states in
  // their place instead, which only the device sizes.
  m.batch_tensors = blk(4 * n) + blk(4 * n * classes) + blk(64) + blk(8 * n * 32) + blk(8 * n) +
                    blk(64) + blk(int64_t(32) << 20);
  m.loss_buffers = 0;
  m.internal = 0;
  m.transient = 0;
  m.end_of_epoch = 0;
  m.workspace = workspace;
  m.overhead = extra + workspace;
  m.dataset = o.resident_bytes;
  m.allocator = m.activations + m.activation_grads + m.weights + m.gradients + m.optimizer +
                m.copies + m.batch_tensors + m.overhead + m.dataset;
  m.context = int64_t(512) << 20;
  return m.allocator + m.context;
}

}  // namespace

int64_t cuda_channel_parts(int64_t C) {
  return std::max<int64_t>(1, (1024 + C - 1) / C);
}

int64_t cuda_block_bytes(int64_t bytes) {
  if (bytes <= 0) return 0;
  if (bytes < (int64_t(1) << 20)) return (bytes + 511) / 512 * 512;
  const int64_t g = int64_t(2) << 20;
  return (bytes + g - 1) / g * g;
}

int64_t cuda_resident_bytes(int64_t samples, int64_t sample_numel, bool pixels8) {
  return cuda_block_bytes(samples * sample_numel * (pixels8 ? 1 : 4)) +
         cuda_block_bytes(samples * 4);
}

int64_t cuda_resident_bytes(const Dataset& d) {
  return cuda_resident_bytes(d.size(), d.sample_shape.numel(), !d.pixels.empty());
}

MemoryPrediction predict_memory(const Graph& g, const MemoryOptions& o) {
  const std::vector<PlanStep> steps = lower_graph(g);
  const bool cuda = o.backend == Backend::Cuda;
  const int64_t n = o.batch;
  // Activation element size: the CPU computes in fp32; the CUDA backend keeps
  // activations in the run's precision.
  const int64_t elem = cuda && o.precision != Precision::Fp32 ? 2 : 4;
  const int threads = o.threads > 0 ? o.threads : num_threads();
  const int64_t opt_copies = o.optimizer.type == OptimizerType::Sgd
                                 ? (o.optimizer.momentum != 0 ? 1 : 0)
                                 : 2;  // Adam, AdamW: m and v
  MemoryPrediction m;
  // plan.cpp fuses a ReLU into the Conv2D, BatchNorm or Add before it on
  // the CPU (relu_fusions): the ReLU writes that layer's buffer and the
  // layer keeps no gradient. (The CUDA plan's rule is applied above.)
  const std::vector<int> fused = cuda ? std::vector<int>(steps.size(), -1) : relu_fusions(steps);
  std::vector<bool> fused_producer(steps.size(), false);
  for (int i : fused)
    if (i >= 0) fused_producer[size_t(i)] = true;
  // plan.cpp: a node needs an output gradient when backward reaches it.
  const std::vector<bool> needs_grad = backward_reach(steps);
  int64_t in_numel = 0, cpu_workspace = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const PlanStep& s = steps[i];
    LayerMemory l;
    l.name = s.name;
    l.type = s.type;
    const Cost c = s.is_input ? Cost{} : s.desc->cost(s.in_shapes, s.out_shape, s.attrs);
    const ParamLayout p = param_layout(s, c);
    const bool ng = needs_grad[i];
    if (s.is_input) in_numel = s.out_shape.numel();
    const int64_t w = rounded(p.trainable, p.tensors);
    const int64_t buf = rounded(p.buffers, p.buffer_tensors);
    // A frozen layer's weights have no gradient and no optimizer state.
    const int64_t tw = s.frozen ? 0 : w;
    l.weights = w + buf;
    l.gradients = tw;
    l.optimizer = opt_copies * tw;
    // cpu_stepper.cpp keeps the last good trainable weights (good_) and
    // epoch.cpp the best epoch's state (every weight and buffer).
    l.copies = cuda ? 0 : tw + w + buf;
    // plan.cpp allocates an output for every step, inputs included, and a
    // gradient for every non-input step that needs one.
    l.activations = fused[i] >= 0 ? 0 : tensor_bytes(n * s.out_shape.numel(), elem);
    l.activation_grads =
        ng && !s.is_input && !fused_producer[i] ? tensor_bytes(n * s.out_shape.numel(), elem) : 0;
    bool input_grad = false;
    for (int j : s.inputs)
      input_grad = input_grad || (needs_grad[size_t(j)] && !steps[size_t(j)].is_input);
    if (!s.is_input)
      layer_buffers(s, n, cuda ? 1 : threads, ng, input_grad, elem, fused_producer[i], l.internal,
                    l.transient, l.workspace);
    m.weights += l.weights;
    m.gradients += l.gradients;
    m.optimizer += l.optimizer;
    m.copies += l.copies;
    m.activations += l.activations;
    m.activation_grads += l.activation_grads;
    m.internal += l.internal;
    m.transient = std::max(m.transient, l.transient);
    cpu_workspace = std::max(cpu_workspace, l.workspace);
    m.layers.push_back(std::move(l));
  }
  const int64_t out_numel = steps.back().out_shape.numel();
  const int64_t x = tensor_bytes(n * in_numel), dout = tensor_bytes(n * out_numel);
  // loader.cpp: the consumer's batch, prefetch queued and one built while
  // the queue is full. The CUDA backend gathers on the device: two batches.
  m.batch_tensors = (cuda ? 2 : o.loader_prefetch + 2) * x;
  m.loss_buffers = dout;  // cpu_stepper.cpp dout_
  // evaluate.cpp: its own input and output-gradient buffers.
  m.end_of_epoch = o.evaluates ? x + dout : 0;
  int64_t total = m.weights + m.gradients + m.optimizer + m.copies + m.activations +
                  m.activation_grads + m.internal + m.batch_tensors + m.loss_buffers +
                  std::max(m.transient, m.end_of_epoch);
  if (!cuda) {
    m.workspace = cpu_workspace;  // allocated once, kept: beside everything else
    total += cpu_workspace;
  }
  if (cuda) total = cuda_total(steps, o, m);
  m.total = total;
  return m;
}

int64_t max_batch_that_fits(const Graph& g, MemoryOptions o, int64_t bytes, int64_t limit) {
  auto fits = [&](int64_t b) {
    o.batch = b;
    return predict_memory(g, o).total <= bytes;
  };
  if (!fits(1)) return 0;
  int64_t lo = 1, hi = limit;
  if (fits(hi)) return hi;
  while (hi - lo > 1) {  // fits(lo) and !fits(hi)
    const int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace dc::advisor
