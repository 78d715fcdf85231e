#pragma once
// CudaPlan: the engine's Plan on one GPU (see plan.cpp for the layout of its
// buffers and plan_step.cpp for the training step and its CUDA graph).
#include <deepcanvas/backend.h>
#include <deepcanvas/loss.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "handles.h"
#include "kernels.h"
#include "ops.h"

namespace dc::cuda {

class CudaPlan : public DevicePlan {
 public:
  // Builds an op for every step of host.steps() and allocates everything for
  // o.max_batch. Throws DeviceError (out of memory names the batch that
  // would fit) having released everything it made.
  CudaPlan(Plan& host, const DevicePlanOptions& o, const std::string& name);
  ~CudaPlan() override;

  void upload_params() override;
  void download_params() override;
  void download_grads() override;
  void forward(const Tensor& x, Tensor& out, bool training, uint64_t seed) override;
  void backward(const Tensor& dout) override;
  void zero_grad() override;
  float loss(const int32_t* labels, const Tensor* values, Tensor* dout) override;
  void step(double lr) override;
  int add_dataset(const Dataset& d) override;
  void train_step(int dataset, const int64_t* idx, int64_t n, double lr, uint64_t seed) override;
  DeviceStepStats take_stats() override;
  void predict(int dataset, const int64_t* idx, int64_t n, float* out) override;
  int add_batch_dataset(const Dataset& d, int64_t capacity) override;
  void set_batch(int dataset, const uint8_t* pixels, const int32_t* labels, int64_t n) override;
  std::vector<std::pair<std::string, Tensor>> optimizer_state() override;
  void load_optimizer_state(const std::vector<std::pair<std::string, Tensor>>& s) override;
  int64_t optimizer_steps() const override { return t_; }
  void set_optimizer_steps(int64_t t) override { t_ = t; }
  DeviceMemory memory() override;
  std::string device_name() const override { return name_; }

 private:
  struct Node {
    std::unique_ptr<Op> op;
    std::vector<int> inputs;  // node indices
    int64_t numel = 0;        // per sample
    float* out = nullptr;
    float* grad = nullptr;
    bool requires_grad = false;
    bool is_input = false;
  };
  struct ResidentData {
    DeviceBuffer samples, labels;
    bool u8 = true;
    int64_t F = 0, size = 0;
    norm::Params norm;     // as Dataset::gather normalises
    ChannelLevels levels;  // what black and white normalise to, for augmentation
    // A batch dataset's room (samples set_batch replaces), 0 for resident
    // data; its page-locked staging (two batches, labels then bytes, so a
    // copy can be queued while the other is in flight) and their events.
    int64_t capacity = 0;
    Pinned<uint8_t> staging;
    Event staged[2];
    int next_stage = 0;
  };
  // A dataset's shape, normalisation and augmentation levels (no samples).
  static ResidentData describe(const Dataset& d);

  // The constructor's stages, in order.
  void create_handles();
  void set_up_precision();
  void lower();
  void allocate();
  void map_parameters();
  void allocate_step_buffers();

  void run_forward(int n, bool training, uint64_t seed, const uint64_t* dseed = nullptr);
  void run_backward(int n);
  void prepare(int n);
  void gather(int dataset, const int64_t* idx, int64_t n);
  void run_loss(int n, const float* values);
  // Per-step values read from device memory in graph-capable steps.
  struct StepArgs {
    AdamArgs adam;
    float lr;
    uint64_t seed;  // the step's seed (augmentation, Dropout)
  };
  AdamArgs adam_args(double lr, int64_t t) const;
  void update(double lr, const int* skip, const StepArgs* dyn = nullptr);
  // Copies the batch's indices (and args) to the device; returns the device indices.
  const int64_t* stage(int dataset, const int64_t* idx, int64_t n, const StepArgs* args);
  // augment: a training batch (with seed, or dseed in device memory).
  void gather_on_device(int dataset, const int64_t* dev_idx, int64_t n, bool augment = false,
                        uint64_t seed = 0, const uint64_t* dseed = nullptr);
  void device_step(int dataset, const int64_t* dev_idx, int64_t n, double lr, uint64_t seed,
                   const StepArgs* dyn);
  void capture_and_launch(int dataset, int64_t n, double lr, uint64_t seed);
  void drop_graph();
  void sync(const std::string& what);
  // Makes the plan's GPU the calling thread's: the plan is built on one
  // thread and trained on another (the Trainer's), and the runtime's current
  // device is per thread, so every public entry point selects it (cheap).
  void select() const;
  void clear_param_grads();
  void check_input(const float* x, int64_t count) const;
  std::string where(int n) const { return "(batch " + std::to_string(n) + ")"; }

  Plan& host_;
  DevicePlanOptions o_;
  std::string name_;
  std::unique_ptr<Loss> host_loss_;  // for its name and classification()
  LossKind loss_kind_ = LossKind::SoftmaxCE;
  // Declared first so that it is destroyed last: every DeviceBuffer below
  // returns its memory to it.
  Allocator alloc_;
  Stream stream_holder_;
  cudaStream_t stream_ = nullptr;  // stream_holder_'s, for the many launches
  DnnHandle dnn_;
  BlasHandle blas_;
  DeviceBuffer workspace_;
  OpContext ctx_;
  std::vector<Node> nodes_;
  int out_node_ = -1;
  DeviceBuffer acts_, grads_, pvals_, pgrads_, buffers_, decay_, m_, v_, labels_, values_, stats_,
      idx_;
  // Activation gradients; trainable parameters (the optimizer's range at
  // the start of pvals_); learnable parameters, frozen ones included.
  int64_t grads_floats_ = 0, trainable_floats_ = 0, learnable_floats_ = 0;
  // Reduced precision: 16-bit copies of the learnable parameters (the
  // trainable ones refreshed before each forward, the frozen ones made on
  // upload) and, for fp16, the loss scaler's device state.
  DeviceBuffer plow_, amp_;
  bool fp16_ = false;
  // Host Param <-> device pointer, in the host Plan's order.
  struct Mapped {
    Param* host;
    ParamSlot* slot;
    float* dev;
    float* dev_grad;
  };
  std::vector<Mapped> map_;
  std::vector<int64_t> trainable_offsets_;
  std::vector<ResidentData> data_;
  int64_t t_ = 0;
  bool have_moments_ = false;
  // Pinned ring for sample indices: the copy is queued asynchronously and an
  // event tells when a slot may be rewritten.
  static constexpr int kSlots = 32;
  Pinned<int64_t> pinned_;
  Pinned<StepArgs> pinned_args_;
  DeviceBuffer idx_graph_, args_dev_, cublas_ws_;
  bool graphs_ = false;      // capture allowed (every op graph-safe, DC_CUDA_GRAPHS != 0)
  int64_t graph_steps_ = 0;  // since the last take_stats()
  int full_steps_ = 0;       // graph-capable steps run eagerly so far (warm-up before capture)
  GraphExec exec_;
  int graph_dataset_ = -1;
  uint64_t graph_ws_generation_ = 0;  // ctx_.ws_generation when exec_ was captured
  Event slot_done_[kSlots];
  int slot_ = 0;
  int64_t cur_n_ = 0;
};

}  // namespace dc::cuda
