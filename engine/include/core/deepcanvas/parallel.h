#pragma once
// Threading for CPU kernels. Work is split into fixed, contiguous chunks per
// thread so results do not depend on scheduling (bit-for-bit repeatable for a
// given thread count).
#include <cstdint>
#include <functional>
#include <string>

namespace dc {

// Called first thing in a program's main(): when other threads are running
// on the machine and neither GOMP_SPINCOUNT nor OMP_WAIT_POLICY is set,
// sets a short GOMP_SPINCOUNT and starts the program again (execv of
// /proc/self/exe with the same arguments), because libgomp reads its
// settings once, before main(). Returns, and the program goes on as it is,
// otherwise or when the restart fails. parallel.cpp says why.
void restart_with_openmp_defaults(char** argv);

// How idle OpenMP threads wait, for --version: "GOMP_SPINCOUNT=3000" or
// "libgomp's default".
std::string openmp_wait_setting();

// Sets the number of threads used by kernels and by the BLAS library.
void set_num_threads(int n);
int num_threads();

// The thread count a run asking for `requested` threads will use: requested
// when > 0, else the hardware count. Predictions and benchmark keys use this
// rather than num_threads(), which is whatever the last Trainer set (a
// parallel sweep sets 1) and races a training thread that is starting.
int resolved_threads(int requested);

// Calls fn(begin, end) over [0, n) split into at most num_threads() chunks of
// at least `grain` items. Runs inline when n is small.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

// Which library sgemm uses: "oneDNN", "OpenBLAS" or "portable loops".
const char* gemm_backend_name();

// Row-major single-precision GEMM: C = alpha * op(A) * op(B) + beta * C.
// op(A) is MxK, op(B) is KxN, C is MxN with leading dimensions lda/ldb/ldc.
void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

}  // namespace dc
