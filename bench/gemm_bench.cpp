// Chooses the CPU math library by measurement: single-precision GEMM at the
// shapes the two-conv CNN's training step uses (im2col convolution forward,
// weight gradient and input gradient; the dense layers), OpenBLAS (OpenMP
// build) against oneDNN's dnnl_sgemm, same threads, same data.
//   build/bin/gemm_bench [threads]
#include <dnnl.h>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cblas.h>

struct Case {
  const char* what;
  char ta, tb;
  int M, N, K;
};

int main(int argc, char** argv) {
  int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
  const int B = 64;
  Case cases[] = {
      {"conv1 fwd  W[32x9]·cols[9x(64·784)]", 'N', 'N', 32, B * 784, 9},
      {"conv2 fwd  W[64x288]·cols[288x(64·196)]", 'N', 'N', 64, B * 196, 288},
      {"conv2 dW   dY[64x(64·196)]·colsᵀ", 'N', 'T', 64, 288, B * 196},
      {"conv2 dX   Wᵀ[288x64]·dY[64x(64·196)]", 'T', 'N', 288, B * 196, 64},
      {"dense1 fwd X[64x3136]·Wᵀ", 'N', 'T', B, 128, 3136},
      {"dense1 dW  dYᵀ[128x64]·X[64x3136]", 'T', 'N', 128, 3136, B},
  };
  std::printf("%-42s %12s %12s\n", "GEMM (row-major)", "OpenBLAS", "oneDNN");
  for (const Case& c : cases) {
    int lda = c.ta == 'N' ? c.K : c.M, ldb = c.tb == 'N' ? c.N : c.K;
    std::vector<float> A(size_t(c.M) * c.K), Bm(size_t(c.K) * c.N), C(size_t(c.M) * c.N);
    for (size_t i = 0; i < A.size(); ++i) A[i] = float(i % 13) * 0.01f;
    for (size_t i = 0; i < Bm.size(); ++i) Bm[i] = float(i % 7) * 0.02f;
    double gflop = 2.0 * c.M * c.N * c.K / 1e9;
    auto time = [&](auto&& fn) {
      for (int i = 0; i < 3; ++i) fn();
      int reps = 0;
      auto t0 = std::chrono::steady_clock::now();
      double s = 0;
      do {
        fn();
        ++reps;
        s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      } while (s < 0.5);
      return gflop * reps / s;
    };
    double ob = time([&] {
      cblas_sgemm(CblasRowMajor, c.ta == 'N' ? CblasNoTrans : CblasTrans,
                  c.tb == 'N' ? CblasNoTrans : CblasTrans, c.M, c.N, c.K, 1.0f, A.data(), lda,
                  Bm.data(), ldb, 0.0f, C.data(), c.N);
    });
    double dn = time([&] {
      dnnl_sgemm(c.ta, c.tb, c.M, c.N, c.K, 1.0f, A.data(), lda, Bm.data(), ldb, 0.0f, C.data(),
                 c.N);
    });
    std::printf("%-42s %8.1f GF/s %8.1f GF/s\n", c.what, ob, dn);
  }
  return 0;
}
