#pragma once
// Launchers for the plugin's own kernels, one .cu per op family. Plain
// pointers and sizes only, so the .cu files need no engine headers. Shapes
// are NCHW float32; "acc" outputs are accumulated (+=) as in the CPU layers.
#include <cuda_runtime.h>
#include <deepcanvas/augment_pixel.h>
#include <deepcanvas/normalize_pixel.h>

#include <cstdint>

namespace dc::cuda {

// elementwise.cu
enum class Act : int { Relu, LeakyRelu, Sigmoid, Tanh, Gelu, Relu6, Silu, HardSwish, HardSigmoid };
void act_forward(Act a, float slope, const float* x, float* y, int64_t n, cudaStream_t s);
// dx += dy * f'(x) (from x, or from y for Sigmoid/Tanh)
void act_backward(Act a, float slope, const float* x, const float* y, const float* dy, float* dx,
                  int64_t n, cudaStream_t s);
// A ReLU (hi = +inf) or ReLU6 (hi = 6) folded into the op before it
// (relu_fusions, CudaPlan::lower): that op writes
// y = z > 0 ? min(z, hi) : 0 instead of z, and passes the gradient on only
// where 0 < z < hi, the CPU ReLU's convention. on = false: no clamp.
struct FusedRelu {
  bool on = false;
  float hi = __builtin_inff();
};
// y = sum of the k inputs, clamped by r.
void add_forward(const float* const* xs, int k, float* y, int64_t n, FusedRelu r, cudaStream_t s);
// The fused Add's backward: g = dy where 0 < y < r.hi (y its clamped
// output), else 0; d0 += g and d1 += g (either may be null) in one pass.
void relu_split_accumulate(const float* y, const float* dy, float* d0, float* d1, int64_t n,
                           float hi, cudaStream_t s);
void accumulate(const float* src, float* dst, int64_t n, cudaStream_t s);  // dst += src
void copy(const float* src, float* dst, int64_t n, cudaStream_t s);
// y = x * mask(seed ^ salt) / (1-rate); the mask is recomputed in backward.
// dseed (device, may be null): the step's seed read from device memory
// instead of seed, so that a captured CUDA graph draws new masks each replay.
void dropout_forward(const float* x, float* y, int64_t n, float rate, uint64_t seed, uint64_t salt,
                     const uint64_t* dseed, cudaStream_t s);
void dropout_backward(const float* dy, float* dx, int64_t n, float rate, uint64_t seed,
                      uint64_t salt, const uint64_t* dseed, cudaStream_t s);
// y[n, c, s] += bias[c]; bias grad db[c] += sum over n, s of dy
void add_bias(float* y, const float* bias, int64_t N, int64_t C, int64_t S, cudaStream_t s);
// A Conv2D's epilogue with a ReLU folded into it: y = clamp(y + bias) in
// one pass (bias may be null; r off: add_bias alone).
void bias_relu(float* y, const float* bias, int64_t N, int64_t C, int64_t S, FusedRelu r,
               cudaStream_t s);
// The folded ReLU's backward, in place on the producer's own gradient
// buffer (nothing else reads it): dy = 0 where y (the clamped output) is
// not strictly between 0 and hi.
void relu_mask(const float* y, float* dy, int64_t n, float hi, cudaStream_t s);
// db += dy's per-channel sums; `scratch` holds bias_grad_scratch_bytes(C)
// (any N) for the partial sums.
size_t bias_grad_scratch_bytes(int64_t C);
void bias_grad(const float* dy, float* db, int64_t N, int64_t C, int64_t S, void* scratch,
               cudaStream_t s);

// pool.cu
struct PoolDims {
  int N, C, H, W, KH, KW, SH, SW, PH, PW, OH, OW;
};
void maxpool_forward(const PoolDims& d, const float* x, float* y, cudaStream_t s);
void maxpool_backward(const PoolDims& d, const float* x, const float* dy, float* dx,
                      cudaStream_t s);
void avgpool_forward(const PoolDims& d, const float* x, float* y, cudaStream_t s);
void avgpool_backward(const PoolDims& d, const float* dy, float* dx, cudaStream_t s);
void global_avgpool_forward(const float* x, float* y, int64_t planes, int64_t hw, cudaStream_t s);
void global_avgpool_backward(const float* dy, float* dx, int64_t planes, int64_t hw,
                             cudaStream_t s);

// norm.cu: x viewed as [N, C, S]. Training computes batch statistics into
// mean/invstd and moves the running ones (unbiased variance, as PyTorch).
// `scratch` (batchnorm_scratch_bytes(C), any batch size, zeroed once when
// it is made) holds the partial sums, coefficients and counters.
size_t batchnorm_scratch_bytes(int C);
// With a folded ReLU (r.on) the forward clamps y, and the backward takes
// dy as the ReLU's incoming gradient: it rebuilds the clamp's mask from x
// and the forward's coefficients (kept in scratch between the two calls)
// instead of reading y again.
void batchnorm_forward(const float* x, float* y, const float* gamma, const float* beta,
                       float* running_mean, float* running_var, float* mean, float* invstd, int N,
                       int C, int S, float momentum, float eps, bool training, FusedRelu r,
                       void* scratch, cudaStream_t s);
void batchnorm_backward(const float* x, const float* dy, float* dx, const float* gamma,
                        float* dgamma, float* dbeta, const float* mean, const float* invstd, int N,
                        int C, int S, bool training, FusedRelu r, void* scratch, cudaStream_t s);

// layer_norm.cu: `rows` rows of D values, each normalised on its own;
// mean/invstd (one per row) are kept for backward. gamma/beta null: no
// affine. Backward accumulates into dx (may be null), dgamma and dbeta (null
// for none); `scratch` holds layernorm_scratch_bytes(rows, D) for the
// latter's partial sums.
void layernorm_forward(const float* x, float* y, const float* gamma, const float* beta, float* mean,
                       float* invstd, int64_t rows, int D, float eps, cudaStream_t s);
size_t layernorm_scratch_bytes(int64_t rows, int D);
void layernorm_backward(const float* x, const float* dy, float* dx, const float* gamma,
                        float* dgamma, float* dbeta, const float* mean, const float* invstd,
                        int64_t rows, int D, void* scratch, cudaStream_t s);

// attention.cu: rows of S attention scores, row r for query step r % T.
// attention_softmax: p = softmax(p) over the keys a causal mask leaves
// (0 beyond them) in place; w (null without dropout): p with the dropout
// mask of (seed, or *dseed) ^ salt applied and scaled by 1/(1 − rate).
// attention_softmax_backward: dp (the weights' gradient) becomes the
// scores' gradient in place, through the same mask.
void attention_softmax(float* p, float* w, int64_t rows, int T, int S, bool causal, float rate,
                       uint64_t seed, uint64_t salt, const uint64_t* dseed, cudaStream_t s);
void attention_softmax_backward(const float* p, float* dp, int64_t rows, int S, float rate,
                                uint64_t seed, uint64_t salt, const uint64_t* dseed,
                                cudaStream_t s);

// tokens.cu: row slabs. slab_copy: dst[o, dst_off + j] = (or +=)
// src[o, src_off + j] for j < block, rows of src_total and dst_total
// values; broadcast_row: y[o, offset + j] = row[j]; token_mean(_backward):
// the mean over T tokens of [N, T, E] and its gradient (accumulated);
// strided_column_sums: g[j] += sum over o of x[o·total + offset + j].
void slab_copy(const float* src, float* dst, int64_t outer, int64_t block, int64_t src_total,
               int64_t src_off, int64_t dst_total, int64_t dst_off, bool accumulate,
               cudaStream_t s);
void broadcast_row(const float* row, float* y, int64_t outer, int64_t block, int64_t total,
                   int64_t offset, cudaStream_t s);
void token_mean(const float* x, float* y, int64_t N, int64_t T, int64_t E, cudaStream_t s);
void token_mean_backward(const float* dy, float* dx, int64_t N, int64_t T, int64_t E,
                         cudaStream_t s);
void strided_column_sums(const float* x, float* g, int64_t outer, int64_t block, int64_t total,
                         int64_t offset, cudaStream_t s);

// softmax.cu: rows of length L
void softmax_forward(const float* x, float* y, int64_t rows, int L, cudaStream_t s);
void softmax_backward(const float* y, const float* dy, float* dx, int64_t rows, int L,
                      cudaStream_t s);
// concat.cu: out viewed as [outer, total]; input k is [outer, block_k] at column offset
void concat_forward(const float* x, float* y, int64_t outer, int64_t block, int64_t total,
                    int64_t offset, cudaStream_t s);
void concat_backward(const float* dy, float* dx, int64_t outer, int64_t block, int64_t total,
                     int64_t offset, cudaStream_t s);

// loss.cu. Each writes d(mean loss)/d(out) into dout and adds the batch's
// loss sum, top-1 hits and sample count into stats (device memory), and sets
// stats->nonfinite when a loss is NaN or Inf.
struct LossStats {
  double loss_sum;
  unsigned long long correct;
  unsigned long long samples;
  unsigned int nonfinite;
};
enum class LossKind : int { SoftmaxCE, BCE, MSE };
void loss_forward_backward(LossKind k, const float* out, const int32_t* labels, const float* values,
                           float* dout, int N, int C, float smoothing, bool classification,
                           LossStats* stats, cudaStream_t s);

// optim.cu: one launch over all parameters laid out contiguously; decay[i]
// is 0 or 1 (biases and norm scales are not decayed).
struct AdamArgs {
  float lr, beta1, beta2, eps, weight_decay, bc1, inv_sqrt_bc2;
  bool decoupled;
};
// skip (device, may be null): when *skip is set the update does nothing
// (fp16 loss scaling found an overflow in this step's gradients).
// dyn / dyn_lr (device, may be null): read the step's arguments (learning
// rate, bias corrections) from device memory instead, so that a captured
// CUDA graph can replay the update with new values.
void adam_step(float* w, const float* g, float* m, float* v, const uint8_t* decay, int64_t n,
               const AdamArgs& a, cudaStream_t s, const int* skip = nullptr,
               const AdamArgs* dyn = nullptr);
void sgd_step(float* w, const float* g, float* buf, const uint8_t* decay, int64_t n, float lr,
              float momentum, float weight_decay, bool nesterov, bool first, cudaStream_t s,
              const int* skip = nullptr, const float* dyn_lr = nullptr);

// data.cu: gathers samples idx[0..n) of a resident dataset, normalised as
// Dataset::gather normalises them (normalize_pixel.h).
void gather_u8(const uint8_t* pixels, const int64_t* idx, int64_t n, int64_t F,
               const norm::Params& p, float* x, cudaStream_t s);
void gather_f32(const float* values, const int64_t* idx, int64_t n, int64_t F,
                const norm::Params& p, float* x, cudaStream_t s);
void gather_labels(const int32_t* labels, const int64_t* idx, int64_t n, int32_t* out,
                   cudaStream_t s);
// The same for training batches of C×H×W images with augmentation (pixels
// or values, the other null); the step's seed comes from dseed when not
// null. The draw and arithmetic are the engine's augment_pixel.h, the one
// engine header the kernels use: it is self-contained, and sharing it is
// what keeps the CPU and the GPU identical.
// lv: what black and white normalise to, one pair for every channel (n 1)
// or one per channel (augment_levels()); a's own black and white are unused.
struct ChannelLevels {
  int n = 1;
  float black[norm::kMaxChannels] = {}, white[norm::kMaxChannels] = {};
};
void gather_augmented(const uint8_t* pixels, const float* values, const int64_t* idx, int64_t n,
                      const aug::Params& a, const ChannelLevels& lv, const norm::Params& p,
                      uint64_t seed, const uint64_t* dseed, float* x, cudaStream_t s);

// sequence.cu. Embedding: ids [rows] (floats holding integers), table w
// [V, D], y [rows, D]; backward adds into dw, skipping the padding id.
void embedding_forward(const float* ids, const float* w, float* y, int64_t rows, int64_t D,
                       int64_t V, cudaStream_t s);
void embedding_backward(const float* ids, const float* dy, float* dw, int64_t rows, int64_t D,
                        int64_t V, int64_t pad, cudaStream_t s);
// y[n*ldy + j] = x[(n*T + t)*ldx + j] for j < W; backward accumulates into dx.
void step_select(const float* x, float* y, int64_t N, int64_t T, int64_t t, int64_t ldx, int64_t W,
                 int64_t ldy, cudaStream_t s);
void step_select_backward(const float* dy, float* dx, int64_t N, int64_t T, int64_t t, int64_t ldx,
                          int64_t W, int64_t ldy, cudaStream_t s);
// Learned initial states: dst[u, n, :] = src[u][:] for U units (src is a
// device array of U pointers); reduce_states adds sum_n src[u, n, :] into dst[u].
void broadcast_states(const float* const* src, float* dst, int U, int64_t N, int64_t H,
                      cudaStream_t s);
void reduce_states(const float* src, float* const* dst, int U, int64_t N, int64_t H,
                   cudaStream_t s);

// precision.cu: the 16-bit copies that tensor-core GEMMs and convolutions read.
enum class Low : int { Bf16, Fp16 };
void to_low(const float* x, void* y, int64_t n, Low t, cudaStream_t s);
// y = float(x), or y += float(x) when accumulate.
void from_low(const void* x, float* y, int64_t n, Low t, bool accumulate, cudaStream_t s);
// The same with the last two dimensions swapped: x is [B, R, K], y is
// [B, K, R] (NCHW <-> NHWC with R, K = C, H·W or H·W, C; a KCRS filter
// <-> KRSC with B = K), so channels-last convolutions need no pass of
// their own to reorder.
void to_low_transposed(const float* x, void* y, int64_t B, int64_t R, int64_t K, Low t,
                       cudaStream_t s);
void from_low_transposed(const void* x, float* y, int64_t B, int64_t R, int64_t K, Low t,
                         bool accumulate, cudaStream_t s);
// y [B, K, R] += x [B, R, K], both float32.
// y[b, k, r] = x[b, r, k] (float32, tiled).
void transpose(const float* x, float* y, int64_t B, int64_t R, int64_t K, cudaStream_t s);
void transpose_accumulate(const float* x, float* y, int64_t B, int64_t R, int64_t K,
                          cudaStream_t s);
// The columns of a channels-last 16-bit input for a GEMM weight gradient:
// x is NHWC [N, H, W, C] (samples n0 .. n0 + n), col is [n·OH·OW, KH·KW·C]
// (rows: output pixels; columns: kernel tap, then channel), zeros where a
// tap falls in the padding.
struct Im2colDims {
  int C, H, W, KH, KW, SH, SW, PH, PW, DH, DW, OH, OW;
};
void im2col_nhwc_low(const void* x, void* col, int64_t n, const Im2colDims& d, cudaStream_t s);
// fp16 dynamic loss scaling, all on the device (torch.amp.GradScaler's rule).
struct AmpState {
  float scale;
  int good_steps;  // clean steps since the last change of scale
  int found_inf;   // set by amp_unscale_check, read by the optimizer, cleared by amp_update
  int skipped;     // steps skipped so far (for tests and reports)
};
void amp_scale(float* x, int64_t n, const AmpState* st, cudaStream_t s);  // x *= scale
// g /= scale; sets found_inf when a result is NaN or Inf.
void amp_unscale_check(float* g, int64_t n, AmpState* st, cudaStream_t s);
void amp_update(AmpState* st, int growth_interval, cudaStream_t s);

// sequence.cu: the RNN weight space as cuDNN's data type (float32 or 16
// bits) against the float32 parameters, one launch over a table of
// segments. pack: w = f (rounded to nearest even in 16 bits). unpack:
// f += w, then w = 0, so cuDNN's weight gradient, which only accumulates
// (CUDNN_WGRAD_MODE_ADD), starts from zero at the next step without a memset.
struct WeightSegment {
  float* f;  // parameter (pack) or parameter gradient (unpack)
  void* w;   // its place in cuDNN's weight space or weight-gradient space
  int64_t n;
};
enum class SpaceType : int { F32, Bf16, Fp16 };
void pack_weights(const WeightSegment* segs, int count, int64_t longest, SpaceType t,
                  cudaStream_t s);
void unpack_weight_grads(const WeightSegment* segs, int count, int64_t longest, SpaceType t,
                         cudaStream_t s);

}  // namespace dc::cuda

// depthwise.cu: depthwise Conv2D (groups = channels) on float32 NCHW, in
// every precision (reduced: bf16/fp16 rounding of the operands and
// results, float32 sums). Forward writes y (+ bias, may be null; clamped
// by a folded ReLU r); the
// backward functions accumulate into dx, dw and db (dw or db may be null).
// scratch: depthwise_wgrad_scratch_bytes(d), any batch size.
#include "depthwise.h"

namespace dc::cuda {
void depthwise_forward(const DwDims& d, const float* x, const float* w, const float* b, float* y,
                       bool reduced, Low low, FusedRelu r, cudaStream_t s);
void depthwise_backward_data(const DwDims& d, const float* dy, const float* w, float* dx,
                             bool reduced, Low low, cudaStream_t s);
void depthwise_backward_weight(const DwDims& d, const float* x, const float* dy, float* dw,
                               float* db, void* scratch, bool reduced, Low low, cudaStream_t s);

// channel.cu: each sample [C, S] (S the values per channel, NC = N·C rows).
// y[r, s] = x[r, s] · g[r]
void channel_scale_forward(const float* x, const float* g, float* y, int64_t NC, int64_t S,
                           cudaStream_t s);
// dx[r, s] += dy[r, s] · g[r] and dg[r] += sum over s of dy · x (either may be null).
void channel_scale_backward(const float* x, const float* g, const float* dy, float* dx, float* dg,
                            int64_t NC, int64_t S, cudaStream_t s);
// ShuffleNet's shuffle: output channel j·G + i is input channel i·(C/G) + j.
// Forward writes y; backward accumulates dx from dy.
void channel_shuffle_forward(const float* x, float* y, int64_t N, int64_t C, int64_t S, int64_t G,
                             cudaStream_t s);
void channel_shuffle_backward(const float* dy, float* dx, int64_t N, int64_t C, int64_t S,
                              int64_t G, cudaStream_t s);
// Channels [start, start + count) of [N, C, S]: forward writes y [N, count, S],
// backward accumulates into the range of dx.
void channel_slice_forward(const float* x, float* y, int64_t N, int64_t C, int64_t S, int64_t start,
                           int64_t count, cudaStream_t s);
void channel_slice_backward(const float* dy, float* dx, int64_t N, int64_t C, int64_t S,
                            int64_t start, int64_t count, cudaStream_t s);

}  // namespace dc::cuda

// pad.cu: planes (NCHW: N·C of them) of h × w float32 into a zero-padded
// copy of ph × pw with the original at row `top`, column `left` (every
// element of y written), and the way back: x += y's interior, for an input
// gradient computed on the copy (conv.cpp's uneven 'same' padding).
namespace dc::cuda {
void pad_planes(const float* x, float* y, int64_t planes, int64_t h, int64_t w, int64_t top,
                int64_t left, int64_t ph, int64_t pw, cudaStream_t s);
void crop_planes_add(const float* y, float* x, int64_t planes, int64_t h, int64_t w, int64_t top,
                     int64_t left, int64_t ph, int64_t pw, cudaStream_t s);
}  // namespace dc::cuda
