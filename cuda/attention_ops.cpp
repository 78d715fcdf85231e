// MultiHeadAttention on the GPU: the CPU layer's arithmetic
// (engine/layers/attention.cpp) with cuBLAS for the projections and for the
// per-head products (one strided-batched GEMM per head over the batch: a
// head's rows sit E apart inside each sample's [T, E] block) and
// attention.cu for the softmax, its dropout and its backward. Everything
// stays float32 in memory; in bf16 the GEMMs take their float32 operands
// with CUBLAS_COMPUTE_32F_FAST_16BF (rounded to 16 bits inside cuBLAS,
// float32 sums: tensor cores without conversion passes), in fp16 they are
// float32 (OpContext::low_compute says why); the softmax and its backward
// stay float32.
#include <cmath>
#include <functional>
#include <string>

#include "kernels.h"
#include "op_registry.h"

namespace dc::cuda {
namespace {

class MultiHeadAttention : public Op {
 public:
  int T = 0, S = 0, E = 0, H = 1, D = 0;
  bool cross = false, causal = false, bias = true;
  float rate = 0.f;

  void prepare(OpContext& c, int n) override {
    if (n <= cap_) return;
    cap_ = n;
    auto buf = [&](int64_t floats, const char* what) {
      return DeviceBuffer(*c.alloc, size_t(floats) * sizeof(float), label + " " + what);
    };
    const int64_t q = int64_t(n) * T * E, kv = int64_t(n) * S * E, pw = int64_t(n) * H * T * S;
    q_ = buf(q, "queries");
    k_ = buf(kv, "keys");
    v_ = buf(kv, "values");
    o_ = buf(q, "heads' outputs");
    p_ = buf(pw, "attention weights");
    if (rate > 0.f) w_ = buf(pw, "attention weights after dropout");
    if (!needs_backward) return;
    do_ = buf(q, "output gradient");
    dq_ = buf(q, "query gradient");
    dk_ = buf(kv, "key gradient");
    dv_ = buf(kv, "value gradient");
    dp_ = buf(pw, "weights gradient");
    if (bias && !frozen)
      parts_ = DeviceBuffer(*c.alloc, bias_grad_scratch_bytes(E), label + " bias partial sums");
  }

  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int n) override {
    const float* xq = in[0];
    const float* xk = cross ? in[1] : in[0];
    const int rq = n * T, rk = n * S;
    project(c, xq, rq, 0, q_.get());
    project(c, xk, rk, 1, k_.get());
    project(c, xk, rk, 2, v_.get());
    const float scale = 1.f / std::sqrt(float(D));
    for (int h = 0; h < H; ++h)
      gemm(c, false, true, T, S, D, scale, q_.get() + h * D, E, int64_t(T) * E, k_.get() + h * D, E,
           int64_t(S) * E, 0.f, p_.get() + int64_t(h) * T * S, S, int64_t(H) * T * S, n);
    masked_ = c.training && rate > 0.f;
    seed_ = c.seed;
    dseed_ = c.dseed;
    attention_softmax(p_.get(), masked_ ? w_.get() : nullptr, int64_t(n) * H * T, T, S, causal,
                      masked_ ? rate : 0.f, seed_, salt(), dseed_, c.stream);
    DC_LAUNCHED(label + " softmax on " + dims(n, in_shapes[0]));
    const float* W = masked_ ? w_.get() : p_.get();
    for (int h = 0; h < H; ++h)
      gemm(c, false, false, T, D, S, 1.f, W + int64_t(h) * T * S, S, int64_t(H) * T * S,
           v_.get() + h * D, E, int64_t(S) * E, 0.f, o_.get() + h * D, E, int64_t(T) * E, n);
    gemm(c, false, true, rq, E, E, 1.f, o_.get(), E, 0, out_w(), E, 0, 0.f, out, E, 0, 1);
    if (bias) {
      add_bias(out, params[3].value, rq, E, 1, c.stream);
      DC_LAUNCHED(label + " on " + dims(n, in_shapes[0]));
    }
  }

  void backward(OpContext& c, const std::vector<const float*>& in, const float*, const float* dout,
                const std::vector<float*>& din, int n) override {
    const float* xq = in[0];
    const float* xk = cross ? in[1] : in[0];
    const int rq = n * T, rk = n * S;
    const bool weights = params[0].grad != nullptr;  // null for a frozen layer
    if (weights) {
      gemm(c, true, false, E, E, rq, 1.f, dout, E, 0, o_.get(), E, 0, 1.f, out_w_grad(), E, 0, 1);
      if (bias) bias_grad(dout, params[3].grad, rq, E, 1, parts_.get<void>(), c.stream);
    }
    gemm(c, false, false, rq, E, E, 1.f, dout, E, 0, out_w(), E, 0, 0.f, do_.get(), E, 0, 1);
    const float* W = masked_ ? w_.get() : p_.get();
    const int64_t pw = int64_t(H) * T * S;
    for (int h = 0; h < H; ++h) {
      const int64_t ph = int64_t(h) * T * S;
      gemm(c, true, false, S, D, T, 1.f, W + ph, S, pw, do_.get() + h * D, E, int64_t(T) * E, 0.f,
           dv_.get() + h * D, E, int64_t(S) * E, n);
      gemm(c, false, true, T, S, D, 1.f, do_.get() + h * D, E, int64_t(T) * E, v_.get() + h * D, E,
           int64_t(S) * E, 0.f, dp_.get() + ph, S, pw, n);
    }
    attention_softmax_backward(p_.get(), dp_.get(), int64_t(n) * H * T, S, masked_ ? rate : 0.f,
                               seed_, salt(), dseed_, c.stream);
    DC_LAUNCHED(label + " softmax backward on " + dims(n, in_shapes[0]));
    const float scale = 1.f / std::sqrt(float(D));
    for (int h = 0; h < H; ++h) {
      const int64_t ph = int64_t(h) * T * S;
      gemm(c, false, false, T, D, S, scale, dp_.get() + ph, S, pw, k_.get() + h * D, E,
           int64_t(S) * E, 0.f, dq_.get() + h * D, E, int64_t(T) * E, n);
      gemm(c, true, false, S, D, T, scale, dp_.get() + ph, S, pw, q_.get() + h * D, E,
           int64_t(T) * E, 0.f, dk_.get() + h * D, E, int64_t(S) * E, n);
    }
    // Rows 0..E−1 of in_proj are the query's, then the key's, the value's.
    const float* dproj[3] = {dq_.get(), dk_.get(), dv_.get()};
    for (int k = 0; k < 3; ++k) {
      const int rows = k == 0 ? rq : rk;
      const float* x = k == 0 ? xq : xk;
      if (weights) {
        gemm(c, true, false, E, E, rows, 1.f, dproj[k], E, 0, x, E, 0, 1.f,
             params[0].grad + int64_t(k) * E * E, E, 0, 1);
        if (bias)
          bias_grad(dproj[k], params[1].grad + k * E, rows, E, 1, parts_.get<void>(), c.stream);
      }
      float* dx = din[k == 0 || !cross ? 0 : 1];
      if (dx)
        gemm(c, false, false, rows, E, E, 1.f, dproj[k], E, 0, params[0].value + int64_t(k) * E * E,
             E, 0, 1.f, dx, E, 0, 1);
    }
    DC_LAUNCHED(label + " backward on " + dims(n, in_shapes[0]));
  }

 private:
  const float* out_w() const { return params[bias ? 2 : 1].value; }
  float* out_w_grad() const { return params[bias ? 2 : 1].grad; }

  // y[rows, E] = x·W_kᵀ + b_k for projection k (0 query, 1 key, 2 value).
  void project(OpContext& c, const float* x, int rows, int k, float* y) {
    gemm(c, false, true, rows, E, E, 1.f, x, E, 0, params[0].value + int64_t(k) * E * E, E, 0, 0.f,
         y, E, 0, 1);
    if (bias) {
      add_bias(y, params[1].value + k * E, rows, E, 1, c.stream);
      DC_LAUNCHED(label + " projection");
    }
  }

  // Row-major C[M,N] (ldc) = alpha·op(A)[M,K]·op(B)[K,N] + beta·C, `batch`
  // times at the given strides: cuBLAS's column-major Cᵀ = op(B)ᵀ·op(A)ᵀ.
  void gemm(OpContext& c, bool ta, bool tb, int M, int N, int K, float alpha, const float* A,
            int lda, int64_t sa, const float* B, int ldb, int64_t sb, float beta, float* C, int ldc,
            int64_t sc, int batch) const {
    const cublasOperation_t opa = tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                            opb = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    const std::string what = label + " (" + std::to_string(M) + "x" + std::to_string(K) + " by " +
                             std::to_string(K) + "x" + std::to_string(N) + ", " +
                             std::to_string(batch) + " times)";
    if (c.reduced)
      DC_CUBLAS(cublasGemmStridedBatchedEx(c.blas, opa, opb, N, M, K, &alpha, B, CUDA_R_32F, ldb,
                                           sb, A, CUDA_R_32F, lda, sa, &beta, C, CUDA_R_32F, ldc,
                                           sc, batch, c.low_compute(), CUBLAS_GEMM_DEFAULT),
                what);
    else
      DC_CUBLAS(cublasSgemmStridedBatched(c.blas, opa, opb, N, M, K, &alpha, B, ldb, sb, A, lda, sa,
                                          &beta, C, ldc, sc, batch),
                what);
  }

  // Distinct dropout masks per layer within one step.
  uint64_t salt() const { return 0x9E3779B97F4A7C15ull * (std::hash<std::string>{}(label) | 1); }

  int cap_ = 0;
  DeviceBuffer q_, k_, v_, o_, p_, w_, do_, dq_, dk_, dv_, dp_, parts_;
  bool masked_ = false;
  uint64_t seed_ = 0;
  const uint64_t* dseed_ = nullptr;
};

std::unique_ptr<Op> make_attention(const PlanStep& s) {
  auto p = std::make_unique<MultiHeadAttention>();
  p->cross = s.attrs.s("mode") == "cross";
  p->T = int(s.in_shapes[0][0]);
  p->E = int(s.in_shapes[0][1]);
  p->S = p->cross ? int(s.in_shapes[1][0]) : p->T;
  p->H = int(s.attrs.i("heads"));
  p->D = p->E / p->H;
  p->causal = s.attrs.b("causal");
  p->bias = s.attrs.b("bias");
  p->rate = float(s.attrs.f("dropout"));
  const int64_t E = p->E;
  p->params.push_back({"in_proj_weight", Shape{3 * E, E}, true});
  if (p->bias) p->params.push_back({"in_proj_bias", Shape{3 * E}, true});
  p->params.push_back({"out_proj_weight", Shape{E, E}, true});
  if (p->bias) p->params.push_back({"out_proj_bias", Shape{E}, true});
  return p;
}

}  // namespace

void register_attention_ops(OpRegistry& r) {
  r.add("MultiHeadAttention", make_attention);
}

}  // namespace dc::cuda
