#pragma once
// The interface between the engine and an accelerator backend. The engine
// itself is CPU-only; the CUDA backend lives in a plugin (libdeepcanvas-cuda)
// that the engine loads at run time (device.h) and that implements these two
// classes. Keeping the whole training step (gather, forward, loss, backward,
// optimizer) behind one call lets the plugin run it without a round trip to
// the host per layer, and lets the dataset stay resident on the device.
#include <deepcanvas/data.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/tensor.h>
#include <deepcanvas/train_config.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dc {

// Bumped whenever a class below changes layout; the loader refuses a plugin
// built for another version instead of crashing in it.
constexpr int kBackendAbiVersion = 6;

struct GpuInfo {
  int index = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;  // compute capability
  int multiprocessors = 0;
  int64_t total_bytes = 0, free_bytes = 0;
  bool tensor_cores = false;  // compute capability 7.0 and newer
  int driver_version = 0;     // e.g. 13000 for CUDA 13.0
  int runtime_version = 0;
};

// Accumulated over the training steps since the last take_stats().
struct DeviceStepStats {
  double loss_sum = 0;  // sum over samples of the per-sample loss
  int64_t correct = 0;  // top-1 hits (classification losses)
  int64_t samples = 0;
  bool finite = true;  // false when some step's loss was NaN or Inf
  // Steps that ran as a replay (or the first launch) of a captured CUDA
  // graph: tests check that graphs did not silently turn off.
  int64_t graph_steps = 0;
};

struct DeviceMemory {
  int64_t allocated = 0, reserved = 0;  // the backend's caching allocator
  int64_t peak_allocated = 0;           // highest `allocated` since the plan was built
  int64_t device_free = 0, device_total = 0;
};

struct DevicePlanOptions {
  int device = 0;
  int64_t max_batch = 64;
  OptimizerConfig optimizer;
  LossType loss = LossType::SoftmaxCrossEntropy;
  double label_smoothing = 0.0;
  Precision precision = Precision::Fp32;
  AugmentConfig augment;  // applied while training batches are gathered
  // The device plan of a training run: its device, batch and the settings
  // above, taken from the run's configuration in this one place.
  static DevicePlanOptions for_training(const TrainConfig& c) {
    DevicePlanOptions o;
    o.device = c.device.index;
    o.max_batch = c.batch;
    o.optimizer = c.optimizer;
    o.loss = c.loss;
    o.label_smoothing = c.label_smoothing;
    o.precision = c.precision;
    o.augment = c.augment;
    return o;
  }
};

// A Graph compiled for one device. It shadows a host Plan: parameters are
// copied from it (upload_params) and back into it (download_params), so
// checkpoints, "best" weights and the CPU code paths keep working on the
// host Plan's tensors.
class DevicePlan {
 public:
  virtual ~DevicePlan() = default;

  virtual void upload_params() = 0;    // host Plan -> device (values and buffers)
  virtual void download_params() = 0;  // device -> host Plan (values and buffers)
  virtual void download_grads() = 0;   // device grads -> host Param::grad (tests)

  // Host-tensor entry points, used by tests and by evaluation of host data.
  // forward: x [n, ...input], out [n, ...output] (host, allocated by the caller).
  virtual void forward(const Tensor& x, Tensor& out, bool training, uint64_t seed) = 0;
  // Gradient of the loss w.r.t. the last forward's output; accumulates into
  // the device parameter gradients.
  virtual void backward(const Tensor& dout) = 0;
  virtual void zero_grad() = 0;
  // The configured loss on the last forward's output; writes d(loss)/d(out)
  // into dout (host, may be null) and returns the mean loss.
  virtual float loss(const int32_t* labels, const Tensor* values, Tensor* dout) = 0;
  // One optimizer update of every trainable parameter with learning rate lr.
  virtual void step(double lr) = 0;

  // Resident data: the samples are uploaded once (as stored, u8 or f32) and
  // normalised while a batch is gathered on the device. Returns a handle.
  virtual int add_dataset(const Dataset& d) = 0;
  // gather + forward + loss + backward + optimizer step, queued without
  // waiting for the device; results accumulate for take_stats().
  virtual void train_step(int dataset, const int64_t* idx, int64_t n, double lr, uint64_t seed) = 0;
  virtual DeviceStepStats take_stats() = 0;  // waits for the queued steps
  // Inference on samples of a dataset (resident, or a batch dataset's
  // current batch): logits [n, ...output] to host.
  virtual void predict(int dataset, const int64_t* idx, int64_t n, float* out) = 0;
  // Streamed data (byte images decoded on the host: image folders): a
  // device dataset with room for `capacity` samples of d's shape, normalised
  // and augmented as resident data is (d's statistics; none of its samples
  // are uploaded). set_batch replaces its samples with n bytes samples and
  // their labels, queued after the steps already queued; train_step and
  // predict then take indices 0..n-1 of it. So a streamed batch crosses to
  // the device as bytes, a quarter of its floats, and is augmented there.
  virtual int add_batch_dataset(const Dataset& d, int64_t capacity) = 0;
  virtual void set_batch(int dataset, const uint8_t* pixels, const int32_t* labels, int64_t n) = 0;
  // A step or predict on a whole batch set by set_batch takes all_indices(n).

  virtual std::vector<std::pair<std::string, Tensor>> optimizer_state() = 0;
  virtual void load_optimizer_state(const std::vector<std::pair<std::string, Tensor>>& s) = 0;
  virtual int64_t optimizer_steps() const = 0;
  virtual void set_optimizer_steps(int64_t t) = 0;

  virtual DeviceMemory memory() = 0;
  virtual std::string device_name() const = 0;
};

// Layer types the CUDA backend deliberately has no op for, each with the
// reason a user is told when asking for a GPU (input layers are not ops: the
// plan feeds them the batch). Empty today: every layer runs on CUDA.
// tests/cuda/cuda_op_coverage_test.cpp checks that every registered layer is
// an input, has a CUDA op or is listed here, and nothing listed has an op.
struct CpuOnlyLayer {
  std::string type, reason;
};
const std::vector<CpuOnlyLayer>& cpu_only_layers();

// The GPU micro-benchmark (bench-device --device cuda:N): rates through the
// libraries the backend trains with. GFLOP/s count 2 per multiply-add.
struct GpuBenchResult {
  double fp32_gflops = 0;        // cublasSgemm 4096³, no TF32 (the backend's fp32)
  double bf16_gflops = 0;        // cublasGemmEx 8192³, bf16 in, fp32 accumulate (tensor cores)
  double fp16_gflops = 0;        // the same in fp16
  double conv_gflops = 0;        // cuDNN forward, 64→64 channels, 3×3, 56×56, batch 64, fp32
  double mem_bandwidth_gbs = 0;  // device-to-device copy of 1 GiB (bytes read + written)
  double h2d_gbs = 0;            // pinned host to device, 256 MiB
  double launch_s = 0;           // one small asynchronous operation on the stream
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual std::vector<GpuInfo> devices() = 0;
  // A few seconds; throws DeviceError (out of memory, a fault) or Error.
  virtual GpuBenchResult benchmark(int device) = 0;
  // Throws dc::Error (naming the layer) for a graph it cannot run, and
  // DeviceError for out of memory or a device fault.
  virtual std::unique_ptr<DevicePlan> create_plan(const Graph& g, Plan& host,
                                                  const DevicePlanOptions& o) = 0;
};

}  // namespace dc

// The plugin's one exported symbol. Returns a process-lifetime backend, or
// null with the reason in err (e.g. no device, driver too old).
extern "C" {
typedef dc::DeviceBackend* (*dc_backend_create_fn)(int abi_version, char* err, size_t err_len);
// The layer types the plugin has ops for, one per line. Needs no driver or
// GPU, so the op coverage test runs wherever the plugin is built.
typedef const char* (*dc_cuda_op_types_fn)();
}
