// CudaPlan's training step: staging a batch's indices, the step's device
// work (gather, forward, loss, backward, fused optimizer update, fp16 loss
// scaling), and its capture into a CUDA graph that later full batches replay.
// Full batches of a graph made only of capture-safe ops are captured once
// and replayed: the step's indices and optimizer arguments go to fixed
// device buffers first, so one graph launch replaces the step's few dozen
// kernel launches and their per-launch host cost.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "plan.h"

namespace dc::cuda {

void CudaPlan::step(double lr) {
  select();
  update(lr, nullptr);
}

// skip: the loss scaler's overflow flag (device), or null.
AdamArgs CudaPlan::adam_args(double lr, int64_t t) const {
  const OptimizerConfig& c = o_.optimizer;
  AdamArgs a;
  a.lr = float(lr);
  a.beta1 = float(c.beta1);
  a.beta2 = float(c.beta2);
  a.eps = float(c.eps);
  a.weight_decay = float(c.weight_decay);
  a.bc1 = float(1.0 - std::pow(c.beta1, double(t)));
  a.inv_sqrt_bc2 = float(1.0 / std::sqrt(1.0 - std::pow(c.beta2, double(t))));
  a.decoupled = c.type == OptimizerType::AdamW;
  return a;
}

// skip: the loss scaler's overflow flag (device), or null. dyn: the step's
// arguments in device memory (graph-capable steps), or null.
void CudaPlan::update(double lr, const int* skip, const StepArgs* dyn) {
  ++t_;
  if (trainable_floats_ == 0) return;
  const OptimizerConfig& c = o_.optimizer;
  const bool first = !have_moments_;
  if (!have_moments_) {
    m_ = DeviceBuffer(alloc_, trainable_floats_ * 4, "optimizer state");
    DC_CUDA(cudaMemsetAsync(m_.get(), 0, trainable_floats_ * 4, stream_), "optimizer state");
    if (c.type != OptimizerType::Sgd) {
      v_ = DeviceBuffer(alloc_, trainable_floats_ * 4, "optimizer state");
      DC_CUDA(cudaMemsetAsync(v_.get(), 0, trainable_floats_ * 4, stream_), "optimizer state");
    }
    have_moments_ = true;
  }
  if (c.type == OptimizerType::Sgd) {
    sgd_step(pvals_.get(), pgrads_.get(), m_.get(), decay_.get<uint8_t>(), trainable_floats_,
             float(lr), float(c.momentum), float(c.weight_decay), c.nesterov, first, stream_, skip,
             dyn ? &dyn->lr : nullptr);
  } else {
    adam_step(pvals_.get(), pgrads_.get(), m_.get(), v_.get(), decay_.get<uint8_t>(),
              trainable_floats_, adam_args(lr, t_), stream_, skip, dyn ? &dyn->adam : nullptr);
  }
  DC_LAUNCHED(std::string("the ") + enum_name(c.type) + " update");
}

int CudaPlan::add_dataset(const Dataset& d) {
  select();
  {
    // Once per dataset, as the loader would see it (normalised), in chunks.
    const int64_t per = d.sample_shape.numel(), chunk = std::max<int64_t>(1, (1 << 20) / per);
    std::vector<int64_t> idx;
    std::vector<float> x;
    bool wanted = false;
    for (const Node& nd : nodes_)
      wanted |=
          nd.op && !nd.inputs.empty() && nodes_[nd.inputs[0]].is_input && nd.op->validates_input();
    for (int64_t b = 0; wanted && b < d.size(); b += chunk) {
      const int64_t k = std::min(chunk, d.size() - b);
      idx.resize(size_t(k));
      for (int64_t i = 0; i < k; ++i) idx[size_t(i)] = b + i;
      x.resize(size_t(k * per));
      d.gather(idx.data(), k, x.data(), nullptr);
      check_input(x.data(), k * per);
    }
  }
  ResidentData r = describe(d);
  r.size = d.size();
  r.u8 = !d.pixels.empty();
  const std::string what = "the dataset " + d.source;
  const int64_t per = d.sample_shape.numel();
  size_t bytes = r.u8 ? d.pixels.size() : size_t(d.size() * per) * 4;
  r.samples = DeviceBuffer(alloc_, bytes, what);
  r.labels = DeviceBuffer(alloc_, d.labels.size() * 4, what + " labels");
  if (r.u8 || !d.windows) {
    DC_CUDA(cudaMemcpy(r.samples.get<void>(),
                       r.u8 ? (const void*)d.pixels.data() : (const void*)d.values.data(), bytes,
                       cudaMemcpyHostToDevice),
            "uploading " + what);
  } else {
    // Windows over a corpus are made on the host a chunk at a time (the
    // device holds them all, as it did values): the host never holds a
    // copy per window.
    const int64_t chunk = std::max<int64_t>(1, (int64_t(16) << 20) / (per * 4));
    std::vector<float> staged;
    for (int64_t b = 0; b < d.size(); b += chunk) {
      const int64_t k = std::min(chunk, d.size() - b);
      staged.resize(size_t(k * per));
      d.copy_values(b, k, staged.data());
      DC_CUDA(cudaMemcpy(r.samples.get<float>() + b * per, staged.data(), size_t(k * per) * 4,
                         cudaMemcpyHostToDevice),
              "uploading " + what);
    }
  }
  DC_CUDA(cudaMemcpy(r.labels.get<void>(), d.labels.data(), d.labels.size() * 4,
                     cudaMemcpyHostToDevice),
          "uploading " + what);
  data_.push_back(std::move(r));
  return int(data_.size()) - 1;
}

CudaPlan::ResidentData CudaPlan::describe(const Dataset& d) {
  ResidentData r;
  r.F = d.sample_shape.numel();
  r.norm = normalisation(d);
  const AugmentLevels lv = augment_levels(d);
  r.levels.n = int(lv.black.size());
  for (size_t c = 0; c < lv.black.size(); ++c) {
    r.levels.black[c] = lv.black[c];
    r.levels.white[c] = lv.white[c];
  }
  return r;
}

int CudaPlan::add_batch_dataset(const Dataset& d, int64_t capacity) {
  select();
  if (!d.is_bytes()) throw DataError(d.source + ": only image bytes can be streamed to the device");
  if (capacity < 1 || capacity > o_.max_batch)
    throw Error("a streamed batch of " + std::to_string(capacity) + " samples for a plan of " +
                std::to_string(o_.max_batch));
  ResidentData r = describe(d);
  r.u8 = true;
  r.capacity = capacity;
  const std::string what = "the streamed batch of " + d.source;
  r.samples = DeviceBuffer(alloc_, size_t(capacity * r.F), what);
  r.labels = DeviceBuffer(alloc_, size_t(capacity) * 4, what + " labels");
  r.staging = Pinned<uint8_t>(size_t(2 * capacity * (4 + r.F)), "pinned " + what);
  for (Event& e : r.staged)
    DC_CUDA(cudaEventCreateWithFlags(e.out(), cudaEventDisableTiming), "event");
  data_.push_back(std::move(r));
  return int(data_.size()) - 1;
}

// Queued on the stream after the steps already queued, so each step gathers
// its own batch; the host copy goes to a staging half no queued copy still
// reads (its event), and the upload from page-locked memory runs
// asynchronously.
void CudaPlan::set_batch(int dataset, const uint8_t* pixels, const int32_t* labels, int64_t n) {
  select();
  if (dataset < 0 || dataset >= int(data_.size()) || data_[size_t(dataset)].capacity == 0)
    throw Error("set_batch needs a dataset made by add_batch_dataset");
  ResidentData& r = data_[size_t(dataset)];
  if (n < 0 || n > r.capacity)
    throw Error("a batch of " + std::to_string(n) + " samples exceeds the streamed batch's " +
                std::to_string(r.capacity));
  const int s = r.next_stage;
  r.next_stage ^= 1;
  DC_CUDA(cudaEventSynchronize(r.staged[s].get()), "waiting for a staging buffer");
  uint8_t* host = r.staging.get() + int64_t(s) * r.capacity * (4 + r.F);
  std::memcpy(host, labels, size_t(n) * 4);
  std::memcpy(host + r.capacity * 4, pixels, size_t(n * r.F));
  DC_CUDA(
      cudaMemcpyAsync(r.labels.get<void>(), host, size_t(n) * 4, cudaMemcpyHostToDevice, stream_),
      "uploading a batch's labels");
  DC_CUDA(cudaMemcpyAsync(r.samples.get<void>(), host + r.capacity * 4, size_t(n * r.F),
                          cudaMemcpyHostToDevice, stream_),
          "uploading a batch " + where(int(n)));
  DC_CUDA(cudaEventRecord(r.staged[s].get(), stream_), "staging event");
  r.size = n;
}

void CudaPlan::gather(int dataset, const int64_t* idx, int64_t n) {
  gather_on_device(dataset, stage(dataset, idx, n, nullptr), n);
}

// The indices go through a pinned ring slot (an event says when the slot
// may be rewritten), to the slot's own device buffer, or, with step
// arguments (graph-capable steps), to the fixed buffers a graph reads.
const int64_t* CudaPlan::stage(int dataset, const int64_t* idx, int64_t n, const StepArgs* args) {
  if (dataset < 0 || dataset >= int(data_.size())) throw Error("unknown device dataset");
  if (n > o_.max_batch)
    throw Error("batch of " + std::to_string(n) + " exceeds the plan's " +
                std::to_string(o_.max_batch));
  ResidentData& r = data_[dataset];
  for (int64_t i = 0; i < n; ++i)
    if (idx[i] < 0 || idx[i] >= r.size)
      throw DataError("sample index " + std::to_string(idx[i]) + " is outside the dataset (" +
                      std::to_string(r.size) + " samples)");
  const int s = slot_;
  slot_ = (slot_ + 1) % kSlots;
  DC_CUDA(cudaEventSynchronize(slot_done_[s].get()), "waiting for an index slot");
  int64_t* host = pinned_.get() + int64_t(s) * o_.max_batch;
  std::memcpy(host, idx, size_t(n) * 8);
  int64_t* dev = args ? idx_graph_.get<int64_t>() : idx_.get<int64_t>() + int64_t(s) * o_.max_batch;
  DC_CUDA(cudaMemcpyAsync(dev, host, size_t(n) * 8, cudaMemcpyHostToDevice, stream_),
          "uploading sample indices");
  if (args) {
    pinned_args_.get()[s] = *args;
    DC_CUDA(cudaMemcpyAsync(args_dev_.get<void>(), pinned_args_.get() + s, sizeof(StepArgs),
                            cudaMemcpyHostToDevice, stream_),
            "uploading the step's arguments");
  }
  DC_CUDA(cudaEventRecord(slot_done_[s].get(), stream_), "index slot event");
  return dev;
}

void CudaPlan::gather_on_device(int dataset, const int64_t* dev, int64_t n, bool augment,
                                uint64_t seed, const uint64_t* dseed) {
  ResidentData& r = data_[dataset];
  float* x = nodes_[0].out;
  const Shape& in = host_.input_shape();
  if (augment && o_.augment.enabled()) {
    if (in.rank() != 3)
      throw DataError("augmentation needs image inputs (channels×height×width), not " + in.str());
    // Black and white as the CPU trainer computes them (augment_levels).
    const aug::Params a = augment_params(o_.augment, in, 0.0f);
    gather_augmented(r.u8 ? r.samples.get<uint8_t>() : nullptr, r.u8 ? nullptr : r.samples.get(),
                     dev, n, a, r.levels, r.norm, seed, dseed, x, stream_);
  } else if (r.u8)
    gather_u8(r.samples.get<uint8_t>(), dev, n, r.F, r.norm, x, stream_);
  else
    gather_f32(r.samples.get(), dev, n, r.F, r.norm, x, stream_);
  gather_labels(r.labels.get<int32_t>(), dev, n, labels_.get<int32_t>(), stream_);
  DC_LAUNCHED("gathering a batch " + where(int(n)));
}

// gather, forward, loss, backward, update: the device work of one step.
void CudaPlan::device_step(int dataset, const int64_t* dev_idx, int64_t n, double lr, uint64_t seed,
                           const StepArgs* dyn) {
  const uint64_t* dseed = dyn ? &dyn->seed : nullptr;
  gather_on_device(dataset, dev_idx, n, true, seed, dseed);
  run_forward(int(n), true, seed, dseed);
  DC_CUDA(cudaMemsetAsync(grads_.get(), 0, grads_floats_ * 4, stream_), "zeroing gradients");
  clear_param_grads();
  run_loss(int(n), nullptr);
  if (!fp16_) {
    run_backward(int(n));
    update(lr, nullptr, dyn);
    return;
  }
  // fp16: scale the loss gradient so small gradients survive the 16-bit
  // copies, unscale the parameter gradients, skip the update if any
  // overflowed and adapt the scale, all queued on the stream.
  AmpState* amp = amp_.get<AmpState>();
  amp_scale(nodes_[out_node_].grad, n * nodes_[out_node_].numel, amp, stream_);
  DC_LAUNCHED("scaling the loss " + where(int(n)));
  run_backward(int(n));
  amp_unscale_check(pgrads_.get(), trainable_floats_, amp, stream_);
  DC_LAUNCHED("unscaling the gradients " + where(int(n)));
  update(lr, &amp->found_inf, dyn);
  amp_update(amp, 2000, stream_);
  DC_LAUNCHED("updating the loss scale");
}

void CudaPlan::train_step(int dataset, const int64_t* idx, int64_t n, double lr, uint64_t seed) {
  select();
  if (!graphs_ || n != o_.max_batch) {
    device_step(dataset, stage(dataset, idx, n, nullptr), n, lr, seed, nullptr);
    return;
  }
  // Another batch size since the capture (a batch shortened by bad files,
  // an evaluation) may have grown the workspace: the graph would write to
  // the freed one. Drop it; the next full step captures afresh.
  if (exec_ && ctx_.ws_generation != graph_ws_generation_) drop_graph();
  StepArgs a{adam_args(lr, t_ + 1), float(lr), seed};
  const int64_t* dev = stage(dataset, idx, n, &a);
  if (exec_ && graph_dataset_ == dataset) {
    DC_CUDA(cudaGraphLaunch(exec_.get(), stream_), "replaying the training step " + where(int(n)));
    ++t_;
    ++graph_steps_;
    return;
  }
  // A few eager steps first: they allocate what is allocated lazily
  // (optimizer moments, library workspaces), which a capture must not do.
  if (exec_ || full_steps_ < 2) {
    ++full_steps_;
    device_step(dataset, dev, n, lr, seed, args_dev_.get<StepArgs>());
    return;
  }
  capture_and_launch(dataset, n, lr, seed);
}

void CudaPlan::drop_graph() {
  exec_.reset();
  graph_dataset_ = -1;
}

// Captures one step into a graph and launches it. Any failure (a library
// call that cannot be captured) ends the capture, turns graphs off for this
// plan and runs the step eagerly instead: graphs are an optimisation only.
void CudaPlan::capture_and_launch(int dataset, int64_t n, double lr, uint64_t seed) {
  const int64_t t0 = t_;
  const int64_t* dev = idx_graph_.get<int64_t>();
  const StepArgs* dyn = args_dev_.get<StepArgs>();
  std::string why;
  CudaGraph g;
  cudaError_t e = cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal);
  if (e != cudaSuccess) {
    why = cudaGetErrorString(e);
  } else {
    try {
      device_step(dataset, dev, n, lr, seed, dyn);
    } catch (const std::exception& ex) {
      why = ex.what();
    }
    e = cudaStreamEndCapture(stream_, g.out());
    if (why.empty() && e != cudaSuccess) why = cudaGetErrorString(e);
    if (why.empty()) {
      cudaGraphExec_t x = nullptr;
      e = cudaGraphInstantiate(&x, g.get(), 0);
      if (e == cudaSuccess)
        *exec_.out() = x;
      else
        why = cudaGetErrorString(e);
    }
  }
  if (!why.empty()) {
    cudaGetLastError();  // clear the capture's error so later checks see only their own
    std::fprintf(stderr, "note: CUDA graph capture failed on %s (%s); continuing without graphs\n",
                 name_.c_str(), why.c_str());
    graphs_ = false;
    drop_graph();
    t_ = t0;
    device_step(dataset, dev, n, lr, seed, dyn);
    return;
  }
  graph_dataset_ = dataset;
  graph_ws_generation_ = ctx_.ws_generation;
  DC_CUDA(cudaGraphLaunch(exec_.get(), stream_),
          "launching the captured training step " + where(int(n)));
  ++graph_steps_;
}

DeviceStepStats CudaPlan::take_stats() {
  select();
  LossStats s{};
  DC_CUDA(cudaMemcpyAsync(&s, stats_.get(), sizeof s, cudaMemcpyDeviceToHost, stream_),
          "reading the loss");
  DC_CUDA(cudaMemsetAsync(stats_.get(), 0, sizeof s, stream_), "resetting the loss");
  sync("training steps");
  DeviceStepStats r;
  r.loss_sum = s.loss_sum;
  r.correct = int64_t(s.correct);
  r.samples = int64_t(s.samples);
  r.finite = s.nonfinite == 0 && std::isfinite(s.loss_sum);
  r.graph_steps = graph_steps_;
  graph_steps_ = 0;
  return r;
}

}  // namespace dc::cuda
