#pragma once
// Training memory predicted from the layers' cost rules, before anything is
// allocated: what a Trainer's host tensors (dc::mem, memstats.h) will peak
// at for a graph, batch and optimizer. The CPU figure models the CPU backend
// exactly as it allocates (see docs/ARCHITECTURE.md, "Memory model"); the
// CUDA figure is an estimate of the same run on the CUDA backend.
#include <deepcanvas/graph.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/train_config.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dc {
struct Dataset;
}

namespace dc::advisor {

enum class Backend { Cpu, Cuda };

struct MemoryOptions {
  int64_t batch = 64;
  Precision precision = Precision::Fp32;  // CUDA only: the CPU computes in fp32
  OptimizerConfig optimizer;
  // A validation split or a test set: evaluation's own input and output
  // buffers exist at the end of each epoch.
  bool evaluates = true;
  int threads = 0;          // CPU: 0 = num_threads(); im2col buffers are per thread
  int loader_prefetch = 3;  // BatchLoader's queue depth (data.h)
  Backend backend = Backend::Cpu;
  // CUDA: what the device trainer uploads and keeps for the run, the
  // training and test sets (cuda_resident_bytes of each); 0 when unknown.
  int64_t resident_bytes = 0;
};

// One node's share. Bytes, at the options' batch.
struct LayerMemory {
  std::string name, type;
  int64_t weights = 0;      // parameters and buffers (BatchNorm running stats)
  int64_t gradients = 0;    // parameter gradients
  int64_t optimizer = 0;    // Adam's two moments or SGD's momentum
  int64_t copies = 0;       // the last-good weights and the best-epoch state
  int64_t activations = 0;  // forward output, kept for backward
  int64_t activation_grads = 0;
  int64_t internal = 0;   // what the layer keeps between forward and backward
  int64_t transient = 0;  // what it allocates only inside backward
  // CPU: the workspace its oneDNN convolution needs while it runs, in the
  // one all such convolutions share (not in total(): counted once, the
  // largest, in MemoryPrediction::workspace).
  int64_t workspace = 0;
  int64_t total() const {
    return weights + gradients + optimizer + copies + activations + activation_grads + internal;
  }
};

struct MemoryPrediction {
  std::vector<LayerMemory> layers;  // in execution order
  int64_t weights = 0, gradients = 0, optimizer = 0, copies = 0;
  int64_t activations = 0, activation_grads = 0, internal = 0;
  int64_t transient = 0;      // the largest layer transient (one runs at a time)
  int64_t batch_tensors = 0;  // the loader's prefetched input batches
  int64_t loss_buffers = 0;   // the loss gradient buffer
  int64_t end_of_epoch = 0;   // the larger of evaluation's buffers and the best-state copy
  // CUDA: the plan's own buffers (labels, indices, the cuBLAS workspace,
  // 16-bit copies, recurrent layers' cuDNN buffers) and the allocator's
  // rounding of every block.
  int64_t overhead = 0;
  // CUDA, part of overhead: cuDNN's workspace, which only the device knows
  // (the algorithms cudnnFind picks); estimated (memory_model.cpp). CPU: the
  // oneDNN convolutions' shared workspace, in total.
  int64_t workspace = 0;
  int64_t dataset = 0;  // CUDA: the resident training and test sets
  // CUDA: what the plugin's allocator holds at its peak, the figure
  // train --json measures as peak_device_bytes (everything but the context).
  int64_t allocator = 0;
  // CUDA: the context with the cuBLAS/cuDNN handles and the kernels' code,
  // taken by the driver outside any allocator (about 512 MiB on current drivers).
  int64_t context = 0;
  int64_t total = 0;  // the predicted peak on the device (CUDA: allocator + context)
};

// CUDA: the bytes the device trainer uploads for a dataset, as the plugin's
// allocator holds them (plan_step.cpp: 8-bit pixels or float values, and
// 32-bit labels, each block rounded as cuda/allocator.cpp rounds it).
int64_t cuda_resident_bytes(int64_t samples, int64_t sample_numel, bool pixels8);
// The same for a loaded dataset.
int64_t cuda_resident_bytes(const Dataset& d);
// The same rounding: 512-byte granules below 1 MiB, 2 MiB granules above.
int64_t cuda_block_bytes(int64_t bytes);
// How many partial sums per channel the CUDA plugin's per-channel
// reductions (BatchNorm, bias gradients) keep room for: cuda/channel_walk.h's
// max_channel_parts, which the engine cannot include (a CUDA test compares
// the two).
int64_t cuda_channel_parts(int64_t C);

MemoryPrediction predict_memory(const Graph& g, const MemoryOptions& o);

// The largest batch in [1, limit] whose predicted total fits `bytes`; 0
// when not even one sample fits. Binary search: the total grows with the batch.
// This is the one "largest batch" model: advise(), largest_batch() (lr_find.h:
// batch-fit, the Training tab's hint, train's memory check) and the Model
// Summary all come here. The limit is the batch settings' own maximum.
int64_t max_batch_that_fits(const Graph& g, MemoryOptions o, int64_t bytes,
                            int64_t limit = int64_t(1) << 20);

}  // namespace dc::advisor
