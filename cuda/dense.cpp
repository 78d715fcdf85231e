// Dense through cuBLAS. Row-major y[N,U] = x[N,F]·W[U,F]^T + b is, in
// cuBLAS's column-major terms, y^T = W^T·x^T, so no transposes are copied.
#include "kernels.h"
#include "ops.h"

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

  void forward(OpContext& c, const std::vector<const float*>& in, float* out, int batch) override {
    const int n = batch * T;
    const float one = 1.f, zero = 0.f;
    DC_CUBLAS(cublasSgemm(c.blas, CUBLAS_OP_T, CUBLAS_OP_N, U, n, F, &one, params[0].value, F,
                          in[0], F, &zero, out, U),
              shapes(batch));
    if (bias) {
      add_bias(out, params[1].value, n, U, 1, c.stream);
      DC_LAUNCHED(shapes(batch));
    }
  }

  void backward(OpContext& c, const std::vector<const float*>& in, const float*, const float* dout,
                const std::vector<float*>& din, int batch) override {
    const int n = batch * T;
    const float one = 1.f;
    // dW[U,F] += dy^T·x  ->  column-major dW^T (F x U) += x^T (F x N) · dy (N x U)
    DC_CUBLAS(cublasSgemm(c.blas, CUBLAS_OP_N, CUBLAS_OP_T, F, U, n, &one, in[0], F, dout, U, &one,
                          params[0].grad, F),
              shapes(batch));
    if (bias) {
      bias_grad(dout, params[1].grad, n, U, 1, c.stream);
      DC_LAUNCHED(shapes(batch));
    }
    // dx[N,F] += dy·W  ->  column-major dx^T (F x N) += W^T (F x U) · dy^T (U x N)
    if (din[0])
      DC_CUBLAS(cublasSgemm(c.blas, CUBLAS_OP_N, CUBLAS_OP_N, F, n, U, &one, params[0].value, F,
                            dout, U, &one, din[0], F),
                shapes(batch));
  }
};

}  // namespace

std::unique_ptr<Op> make_dense(const Attrs& a, const std::vector<Shape>& in, const Shape& out) {
  auto op = std::make_unique<Dense>();
  op->F = int(in[0][0]);
  op->U = int(out[0]);
  op->bias = a.b("bias");
  op->params.push_back({"weight", Shape{out[0], in[0][0]}, true});
  if (op->bias) op->params.push_back({"bias", Shape{out[0]}, true});
  return op;
}

std::unique_ptr<Op> make_time_distributed_dense(const Attrs& a, const std::vector<Shape>& in,
                                                const Shape& out) {
  auto op = std::make_unique<Dense>();
  op->T = int(in[0][0]);
  op->F = int(in[0][1]);
  op->U = int(out[1]);
  op->bias = a.b("bias");
  op->params.push_back({"weight", Shape{out[1], in[0][1]}, true});
  if (op->bias) op->params.push_back({"bias", Shape{out[1]}, true});
  return op;
}

}  // namespace dc::cuda
