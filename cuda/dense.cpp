// Dense through cuBLAS. Row-major y[N,U] = x[N,F]·W[U,F]^T + b is, in
// cuBLAS's column-major terms, y^T = W^T·x^T, so no transposes are copied.
// In bf16 cuBLAS gets the float32 tensors with CUBLAS_COMPUTE_32F_FAST_16BF
// (operands rounded to 16 bits inside the GEMM, float32 sums), as the
// pointwise convolutions and attention do: no conversion passes and no
// 16-bit copies of x and dy kept (ViT-tiny on an H200: the same samples/s,
// 12 MiB less; docs/BENCHMARKS.md 2026-11-28). fp16 (OpContext::
// low_on_float32 says why), and bf16 with DC_CUDA_DENSE=copies (A/B runs),
// take 16-bit copies of x, W and dy with CUBLAS_COMPUTE_32F.
#include <cstdlib>
#include <cstring>

#include "kernels.h"
#include "op_registry.h"

namespace dc::cuda {
namespace {

class Dense : public Op {
 public:
  int F = 0, U = 0;
  int T = 1;  // rows per sample: the steps of a TimeDistributedDense
  bool bias = true;

  std::string shapes(int n) const {
    return label + " (input " + std::to_string(n) + "x" + (T > 1 ? std::to_string(T) + "x" : "") +
           std::to_string(F) + ", weight " + std::to_string(U) + "x" + std::to_string(F) + ")";
  }

  // Reduced precision keeps a 16-bit copy of the input (read again by the
  // weight gradient) and of the output gradient.
  void prepare(OpContext& c, int batch) override {
    if (bias && needs_backward && !frozen && !bias_parts_.bytes())
      bias_parts_ =
          DeviceBuffer(*c.alloc, bias_grad_scratch_bytes(U), label + " bias gradient partial sums");
    if (!decided_) {
      decided_ = true;
      const char* e = std::getenv("DC_CUDA_DENSE");
      fast_ = c.low_on_float32() && !(e && std::strcmp(e, "copies") == 0);
    }
    if (!c.reduced || fast_ || batch <= cap_) return;
    cap_ = batch;
    x_low_ = DeviceBuffer(*c.alloc, size_t(batch) * T * F * 2, label + " 16-bit input");
    if (needs_backward)
      dy_low_ = DeviceBuffer(*c.alloc, size_t(batch) * T * U * 2, label + " 16-bit gradient");
  }

  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int batch) override {
    const int n = batch * T;
    const float one = 1.f, zero = 0.f;
    if (fast_) {
      DC_CUBLAS(cublasGemmEx(c.blas, CUBLAS_OP_T, CUBLAS_OP_N, U, n, F, &one, params[0].value,
                             CUDA_R_32F, F, in[0], CUDA_R_32F, F, &zero, out, CUDA_R_32F, U,
                             c.low_compute(), CUBLAS_GEMM_DEFAULT),
                shapes(batch));
    } else if (c.reduced) {
      to_low(in[0], x_low_.get<void>(), int64_t(n) * F, c.low, c.stream);
      DC_LAUNCHED(shapes(batch));
      DC_CUBLAS(cublasGemmEx(c.blas, CUBLAS_OP_T, CUBLAS_OP_N, U, n, F, &one, params[0].value_low,
                             type(c), F, x_low_.get<void>(), type(c), F, &zero, out, CUDA_R_32F, U,
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                shapes(batch));
    } else {
      DC_CUBLAS(cublasSgemm(c.blas, CUBLAS_OP_T, CUBLAS_OP_N, U, n, F, &one, params[0].value, F,
                            in[0], F, &zero, out, U),
                shapes(batch));
    }
    if (bias) {
      add_bias(out, params[1].value, n, U, 1, c.stream);
      DC_LAUNCHED(shapes(batch));
    }
  }

  void backward(OpContext& c, const std::vector<const float*>& in, const float*, const float* dout,
                const std::vector<float*>& din, int batch) override {
    const int n = batch * T;
    const float one = 1.f;
    // A frozen layer (null gradients) only passes the gradient on.
    float* dw = params[0].grad;
    if (bias && params[1].grad) {
      bias_grad(dout, params[1].grad, n, U, 1, bias_parts_.get<void>(), c.stream);
      DC_LAUNCHED(shapes(batch));
    }
    if (fast_) {
      if (dw)
        DC_CUBLAS(cublasGemmEx(c.blas, CUBLAS_OP_N, CUBLAS_OP_T, F, U, n, &one, in[0], CUDA_R_32F,
                               F, dout, CUDA_R_32F, U, &one, dw, CUDA_R_32F, F, c.low_compute(),
                               CUBLAS_GEMM_DEFAULT),
                  shapes(batch));
      if (din[0])
        DC_CUBLAS(cublasGemmEx(c.blas, CUBLAS_OP_N, CUBLAS_OP_N, F, n, U, &one, params[0].value,
                               CUDA_R_32F, F, dout, CUDA_R_32F, U, &one, din[0], CUDA_R_32F, F,
                               c.low_compute(), CUBLAS_GEMM_DEFAULT),
                  shapes(batch));
      return;
    }
    if (c.reduced) {
      to_low(dout, dy_low_.get<void>(), int64_t(n) * U, c.low, c.stream);
      DC_LAUNCHED(shapes(batch));
      if (dw)
        DC_CUBLAS(cublasGemmEx(c.blas, CUBLAS_OP_N, CUBLAS_OP_T, F, U, n, &one, x_low_.get<void>(),
                               type(c), F, dy_low_.get<void>(), type(c), U, &one, dw, CUDA_R_32F, F,
                               CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                  shapes(batch));
      if (din[0])
        DC_CUBLAS(cublasGemmEx(c.blas, CUBLAS_OP_N, CUBLAS_OP_N, F, n, U, &one, params[0].value_low,
                               type(c), F, dy_low_.get<void>(), type(c), U, &one, din[0],
                               CUDA_R_32F, F, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                  shapes(batch));
      return;
    }
    // dW[U,F] += dy^T·x  ->  column-major dW^T (F x U) += x^T (F x N) · dy (N x U)
    if (dw)
      DC_CUBLAS(cublasSgemm(c.blas, CUBLAS_OP_N, CUBLAS_OP_T, F, U, n, &one, in[0], F, dout, U,
                            &one, dw, F),
                shapes(batch));
    // dx[N,F] += dy·W  ->  column-major dx^T (F x N) += W^T (F x U) · dy^T (U x N)
    if (din[0])
      DC_CUBLAS(cublasSgemm(c.blas, CUBLAS_OP_N, CUBLAS_OP_N, F, n, U, &one, params[0].value, F,
                            dout, U, &one, din[0], F),
                shapes(batch));
  }

 private:
  static cudaDataType_t type(const OpContext& c) {
    return c.low == Low::Bf16 ? CUDA_R_16BF : CUDA_R_16F;
  }
  int cap_ = 0;
  bool decided_ = false, fast_ = false;
  DeviceBuffer x_low_, dy_low_, bias_parts_;
};

std::unique_ptr<Op> make_dense(const PlanStep& s) {
  const Attrs& a = s.attrs;
  const std::vector<Shape>& in = s.in_shapes;
  const Shape& out = s.out_shape;
  auto op = std::make_unique<Dense>();
  op->F = int(in[0][0]);
  op->U = int(out[0]);
  op->bias = a.b("bias");
  op->params.push_back({"weight", Shape{out[0], in[0][0]}, true});
  if (op->bias) op->params.push_back({"bias", Shape{out[0]}, true});
  return op;
}

// Dense over the N*T rows of a [N, T, F] sequence.
std::unique_ptr<Op> make_time_distributed_dense(const PlanStep& s) {
  const Attrs& a = s.attrs;
  const std::vector<Shape>& in = s.in_shapes;
  const Shape& out = s.out_shape;
  auto op = std::make_unique<Dense>();
  op->T = int(in[0][0]);
  op->F = int(in[0][1]);
  op->U = int(out[1]);
  op->bias = a.b("bias");
  op->params.push_back({"weight", Shape{out[1], in[0][1]}, true});
  if (op->bias) op->params.push_back({"bias", Shape{out[1]}, true});
  return op;
}

}  // namespace

void register_dense_ops(OpRegistry& r) {
  r.add("Dense", make_dense);
  r.add("TimeDistributedDense", make_time_distributed_dense);
}

}  // namespace dc::cuda
