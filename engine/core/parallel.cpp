#include <deepcanvas/errors.h>
#include <deepcanvas/parallel.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <omp.h>
#include <unistd.h>

#if DC_HAVE_OPENBLAS
#include <cblas.h>
#endif
#if DC_HAVE_DNNL
#include <dnnl.h>
#endif

namespace dc {

namespace {
// Process-wide, and written from several threads: each Trainer sets it on
// its own thread (parallel sweep trials, the GUI's runs) while others read
// it (ThreadSanitizer found the plain int racing). Parallel sweep trials all
// ask for 1 thread, so the last writer never changes what the others run.
std::atomic<int> g_threads{0};
}  // namespace

// By default libgomp's idle threads spin about 300,000 times at every
// barrier before they sleep. With the cores to itself that is the fastest
// choice (the two-conv CNN trains 5-13 % slower with 3,000 spins); with
// another busy process it is a disaster: a training step runs thousands of
// short parallel regions, and a thread spinning for a partner that the
// kernel has descheduled burns the time slice the partner needs. Two
// 2-thread trainings on a 2-core machine took 1.8-13x as long as running
// them one after the other; with 3,000 spins, no longer (0.9x), and 1.3x
// when only the one started second has them (docs/BENCHMARKS.md, "OpenMP
// idle threads"). So a program that starts
// while other threads are running gets the short spin. libgomp reads the
// variable in its constructor, before main() and before anything main()
// could set, hence the restart; a .preinit_array entry runs earlier but
// before libc sets up `environ`, which then drops what it set.
namespace {

// Runnable threads on the machine besides this one: the least of a few
// looks at /proc/stat's procs_running, so a daemon waking for a moment does
// not count. -1 when it cannot be read. A look that sees none ends it:
// nothing can go lower, and an idle machine (the usual start) then pays
// for one read instead of five and four sleeps.
int other_running_threads() {
  int least = -1;
  for (int look = 0; look < 5 && least != 0; ++look) {
    if (look) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    FILE* f = std::fopen("/proc/stat", "r");
    if (!f) return -1;
    char line[256];
    int running = -1;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "procs_running %d", &running) == 1) break;
    std::fclose(f);
    if (running < 1) return -1;
    least = least < 0 ? running - 1 : std::min(least, running - 1);
  }
  return least;
}

}  // namespace

void restart_with_openmp_defaults(char** argv) {
  if (std::getenv("GOMP_SPINCOUNT") || std::getenv("OMP_WAIT_POLICY")) return;
  if (other_running_threads() < 1) return;
  if (setenv("GOMP_SPINCOUNT", "3000", 0) != 0) return;
  execv("/proc/self/exe", argv);
  // Still here: the restart failed. The variable stays set for the
  // processes this one starts; this one keeps libgomp's default.
}

std::string openmp_wait_setting() {
  std::string s;
  for (const char* name : {"GOMP_SPINCOUNT", "OMP_WAIT_POLICY"})
    if (const char* v = std::getenv(name))
      s += (s.empty() ? "" : ", ") + std::string(name) + "=" + v;
  return s.empty() ? "libgomp's default" : s;
}

int resolved_threads(int requested) {
  return requested > 0 ? requested
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void set_num_threads(int n) {
  n = resolved_threads(n);
  g_threads.store(n, std::memory_order_relaxed);
  omp_set_num_threads(n);
#if DC_HAVE_OPENBLAS
  openblas_set_num_threads(n);
#endif
}

int num_threads() {
  if (g_threads.load(std::memory_order_relaxed) == 0) set_num_threads(0);
  return g_threads.load(std::memory_order_relaxed);
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  int t = num_threads();
  int64_t chunks = std::min<int64_t>(t, std::max<int64_t>(1, n / std::max<int64_t>(1, grain)));
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
#pragma omp parallel for num_threads(static_cast <int>(chunks)) schedule(static, 1)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t b = n * c / chunks, e = n * (c + 1) / chunks;
    if (b < e) fn(b, e);
  }
}

// oneDNN's sgemm is the default: on the two-conv CNN's shapes (small M and
// K, N a few hundred) it beat OpenBLAS end to end (docs/BENCHMARKS.md has
// the measurement). DC_GEMM=openblas switches back, for comparison runs.
// Both run single-threaded when called inside our parallel regions and
// multithreaded otherwise, and both repeat exactly for a thread count.
namespace {

enum class Gemm { OneDnn, OpenBlas, Portable };

Gemm gemm_backend() {
  static const Gemm g = [] {
    const char* e = std::getenv("DC_GEMM");
    const bool want_openblas = e && std::strcmp(e, "openblas") == 0;
#if DC_HAVE_OPENBLAS
    if (want_openblas) return Gemm::OpenBlas;
#endif
#if DC_HAVE_DNNL
    return Gemm::OneDnn;
#elif DC_HAVE_OPENBLAS
    return Gemm::OpenBlas;
#else
    (void)want_openblas;
    return Gemm::Portable;
#endif
  }();
  return g;
}

// Plain loops for builds without a BLAS (the bare GPU build machine, where
// CPU GEMMs only serve as the CUDA tests' reference). i-k-j order keeps the
// inner loop contiguous in B and C so it vectorises.
void portable_sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                    int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i) {
    float* c = C + i * ldc;
    for (int64_t j = 0; j < N; ++j) c[j] = beta == 0.f ? 0.f : beta * c[j];
    for (int64_t k = 0; k < K; ++k) {
      const float a = alpha * (ta ? A[k * lda + i] : A[i * lda + k]);
      if (tb) {
        for (int64_t j = 0; j < N; ++j) c[j] += a * B[j * ldb + k];
      } else {
        const float* b = B + k * ldb;
        for (int64_t j = 0; j < N; ++j) c[j] += a * b[j];
      }
    }
  }
}

}  // namespace

const char* gemm_backend_name() {
  switch (gemm_backend()) {
    case Gemm::OneDnn:
      return "oneDNN";
    case Gemm::OpenBlas:
      return "OpenBLAS";
    case Gemm::Portable:
      break;
  }
  return "portable loops";
}

void sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  switch (gemm_backend()) {
    case Gemm::OneDnn: {
#if DC_HAVE_DNNL
      dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A,
                                    lda, B, ldb, beta, C, ldc);
      if (st != dnnl_success)
        throw Error("oneDNN sgemm failed (status " + std::to_string(int(st)) + ") for " +
                    std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K));
#endif
      return;
    }
    case Gemm::OpenBlas:
#if DC_HAVE_OPENBLAS
      cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                  trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(M), static_cast<int>(N),
                  static_cast<int>(K), alpha, A, static_cast<int>(lda), B, static_cast<int>(ldb),
                  beta, C, static_cast<int>(ldc));
#endif
      return;
    case Gemm::Portable:
      portable_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
      return;
  }
}

}  // namespace dc
