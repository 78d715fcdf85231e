// CudaPlan: the engine's Plan on one GPU. Buffers for every activation and
// its gradient are allocated up front for the largest batch (so running out
// of memory happens here, with a message that names the batch), parameters
// and their gradients live in one contiguous buffer each (one memset, one
// fused optimizer launch), and a training step is queued on one stream
// without waiting for the device (plan_step.cpp).
#include <deepcanvas/backend.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/loss.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <vector>

#include "kernels.h"
#include "op_registry.h"
#include "plan.h"

namespace dc::cuda {

namespace {
std::string mib(int64_t b) {
  return std::to_string(b >> 20) + " MiB";
}
}  // namespace

CudaPlan::CudaPlan(Plan& host, const DevicePlanOptions& o, const std::string& name)
    : host_(host), o_(o), name_(name) {
  host_loss_ = make_loss(o.loss, float(o.label_smoothing));
  loss_kind_ = o.loss == LossType::Mse                  ? LossKind::MSE
               : o.loss == LossType::BinaryCrossEntropy ? LossKind::BCE
                                                        : LossKind::SoftmaxCE;
  try {
    create_handles();
    set_up_precision();
    lower();
    allocate();
    map_parameters();
    allocate_step_buffers();
    DC_CUDA(cudaMemsetAsync(stats_.get(), 0, sizeof(LossStats), stream_), "loss statistics");
    prepare(int(o.max_batch));
    sync("setting up " + name_);
  } catch (...) {
    // The members free themselves as the exception leaves; nothing queued
    // may still be using them.
    if (stream_) cudaStreamSynchronize(stream_);
    throw;
  }
}

void CudaPlan::create_handles() {
  DC_CUDA(cudaSetDevice(o_.device), "selecting " + name_);
  DC_CUDA(cudaStreamCreateWithFlags(stream_holder_.out(), cudaStreamNonBlocking),
          "creating a stream");
  stream_ = stream_holder_.get();
  DC_CUDNN(cudnnCreate(dnn_.out()), "creating the cuDNN handle (is libcudnn 9 installed?)");
  DC_CUDNN(cudnnSetStream(dnn_.get(), stream_), "cuDNN stream");
  DC_CUBLAS(cublasCreate(blas_.out()), "creating the cuBLAS handle");
  DC_CUBLAS(cublasSetStream(blas_.get(), stream_), "cuBLAS stream");
  DC_CUBLAS(cublasSetMathMode(blas_.get(), CUBLAS_PEDANTIC_MATH), "cuBLAS math mode");
  ctx_.stream = stream_;
  ctx_.dnn = dnn_.get();
  ctx_.blas = blas_.get();
  ctx_.alloc = &alloc_;
  ctx_.workspace = &workspace_;
}

void CudaPlan::set_up_precision() {
  if (const char* tf = std::getenv("DC_CUDA_TF32"); tf && *tf == '1') {
    ctx_.tf32 = true;
    DC_CUBLAS(cublasSetMathMode(blas_.get(), CUBLAS_TF32_TENSOR_OP_MATH), "cuBLAS math mode");
  }
  if (o_.precision != Precision::Fp32) {
    ctx_.reduced = true;
    ctx_.low = o_.precision == Precision::Bf16 ? Low::Bf16 : Low::Fp16;
    fp16_ = o_.precision == Precision::Fp16;
    // Pedantic math would keep 16-bit GEMMs off the tensor cores; the
    // default mode still computes float32 GEMMs in float32.
    if (!ctx_.tf32)
      DC_CUBLAS(cublasSetMathMode(blas_.get(), CUBLAS_DEFAULT_MATH), "cuBLAS math mode");
  }
}

// One node per step of the host Plan (same order, same input ports).
void CudaPlan::lower() {
  // The host Plan's rule: a frozen node's parameters get no gradient, so
  // the backward pass stops below the first layer that trains (a frozen
  // base costs its forward only).
  const std::vector<bool> reach = backward_reach(host_.steps());
  for (const PlanStep& s : host_.steps()) {
    Node n;
    n.inputs = s.inputs;
    n.numel = s.out_shape.numel();
    n.is_input = s.is_input;
    n.requires_grad = reach[nodes_.size()];
    if (!n.is_input) {
      n.op = OpRegistry::instance().make(s);
      n.op->frozen = s.frozen;
      n.op->needs_backward = n.requires_grad;
    }
    nodes_.push_back(std::move(n));
  }
  out_node_ = int(nodes_.size()) - 1;  // lower_graph puts the output last
  const char* f = std::getenv("DC_CUDA_FUSE");
  if (f && *f == '0') return;
  const std::vector<int> fused = relu_fusions(host_.steps());
  for (size_t j = 0; j < fused.size(); ++j)
    if (fused[j] >= 0) fold_into(*nodes_[j].op, *nodes_[size_t(fused[j])].op);
}

// Activations and their gradients: one allocation each. Only nodes that
// backward reaches get a gradient buffer (the output always does: the loss
// writes it), so a frozen base keeps activations alone.
void CudaPlan::allocate() {
  const int64_t B = o_.max_batch;
  // The output's buffer (its source's, when the output is a view).
  size_t out = size_t(out_node_);
  while (nodes_[out].op && nodes_[out].op->is_view()) out = size_t(nodes_[out].inputs[0]);
  auto has_grad = [&](size_t i) { return nodes_[i].requires_grad || i == out; };
  int64_t act_floats = 0, grad_floats = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (n.op && n.op->is_view()) continue;
    act_floats += B * n.numel;
    if (has_grad(i)) grad_floats += B * n.numel;
  }
  size_t free0 = 0, total0 = 0;
  cudaMemGetInfo(&free0, &total0);
  try {
    acts_ = DeviceBuffer(alloc_, act_floats * 4, "activations");
    grads_ = DeviceBuffer(alloc_, std::max<int64_t>(grad_floats, 1) * 4, "activation gradients");
  } catch (const DeviceError& e) {
    int64_t per_sample = (act_floats + grad_floats) / B * 4;
    int64_t fit = per_sample ? int64_t(free0 * 0.8) / per_sample : 0;
    throw DeviceError(std::string(e.what()) + ". Batch size " + std::to_string(B) + " needs " +
                      mib((act_floats + grad_floats) * 4) + " for activations and gradients; " +
                      mib(int64_t(free0)) + " were free on " + name_ +
                      ". The largest batch that should fit is about " + std::to_string(fit));
  }
  grads_floats_ = grad_floats;
  int64_t off = 0, goff = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    if (n.op && n.op->is_view()) {
      n.out = nodes_[size_t(n.inputs[0])].out;
      n.grad = nodes_[size_t(n.inputs[0])].grad;
      continue;
    }
    n.out = acts_.get() + off;
    off += B * n.numel;
    if (has_grad(i)) {
      n.grad = grads_.get() + goff;
      goff += B * n.numel;
    }
  }
}

// Maps each device slot to the host Param by "<node>.<param>"; trainable
// parameters and their gradients go into one buffer each, in the host Plan's
// order, and reduced precision gets their 16-bit copies beside them. The
// learnable parameters of frozen nodes follow the trainable ones in the
// parameter buffer (so they get 16-bit copies too) but have no gradient
// and lie outside what the optimizer updates.
void CudaPlan::map_parameters() {
  std::map<std::string, ParamSlot*> slots;
  const std::vector<PlanStep>& steps = host_.steps();
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].op)
      for (auto& p : nodes_[i].op->params) slots[steps[i].name + "." + p.name] = &p;
  int64_t tr = 0, fr = 0, buf = 0;
  for (NamedParam& np : host_.params()) {
    auto it = slots.find(np.name);
    if (it == slots.end()) throw Error("the CUDA plan has no parameter " + np.name);
    if (it->second->shape != np.param->value.shape())
      throw Error(np.name + ": CUDA and CPU disagree on its shape (" + it->second->shape.str() +
                  " vs " + np.param->value.shape().str() + ")");
    (np.param->trainable ? tr : np.frozen ? fr : buf) += np.param->value.numel();
  }
  trainable_floats_ = tr;
  learnable_floats_ = tr + fr;
  const int64_t tr1 = std::max<int64_t>(tr, 1), all1 = std::max<int64_t>(tr + fr, 1);
  pvals_ = DeviceBuffer(alloc_, all1 * 4, "parameters");
  pgrads_ = DeviceBuffer(alloc_, tr1 * 4, "parameter gradients");
  buffers_ = DeviceBuffer(alloc_, std::max<int64_t>(buf, 1) * 4, "BatchNorm statistics");
  decay_ = DeviceBuffer(alloc_, tr1, "weight decay mask");
  if (ctx_.reduced) plow_ = DeviceBuffer(alloc_, size_t(all1) * 2, "16-bit parameter copies");
  std::vector<uint8_t> decay(size_t(tr1), 0);
  int64_t to = 0, fo = tr, bo = 0;
  for (NamedParam& np : host_.params()) {
    ParamSlot* s = slots.at(np.name);
    int64_t k = np.param->value.numel();
    if (np.param->trainable) {
      s->value = pvals_.get() + to;
      s->grad = pgrads_.get() + to;
      if (ctx_.reduced) s->value_low = plow_.get<char>() + to * 2;
      trainable_offsets_.push_back(to);
      std::memset(decay.data() + to, np.param->decay ? 1 : 0, size_t(k));
      to += k;
    } else if (np.frozen) {
      s->value = pvals_.get() + fo;
      s->grad = nullptr;
      if (ctx_.reduced) s->value_low = plow_.get<char>() + fo * 2;
      fo += k;
    } else {
      s->value = buffers_.get() + bo;
      bo += k;
    }
    map_.push_back({np.param, s, s->value, s->grad});
  }
  DC_CUDA(cudaMemcpy(decay_.get<uint8_t>(), decay.data(), size_t(tr1), cudaMemcpyHostToDevice),
          "uploading the weight decay mask");
}

// What a training step stages through: labels, targets, loss statistics, the
// pinned ring of sample indices and, for CUDA graphs, fixed argument buffers.
void CudaPlan::allocate_step_buffers() {
  const int64_t B = o_.max_batch;
  if (fp16_) {
    // torch.amp.GradScaler's defaults: 2^16, doubled after 2000 clean steps.
    AmpState a{65536.f, 0, 0, 0};
    amp_ = DeviceBuffer(alloc_, sizeof(AmpState), "loss scaler");
    DC_CUDA(cudaMemcpy(amp_.get<void>(), &a, sizeof a, cudaMemcpyHostToDevice), "loss scaler");
  }
  pinned_ = Pinned<int64_t>(size_t(kSlots * B), "pinned indices");
  pinned_args_ = Pinned<StepArgs>(kSlots, "pinned step arguments");
  for (auto& e : slot_done_)
    DC_CUDA(cudaEventCreateWithFlags(e.out(), cudaEventDisableTiming), "event");
  const int64_t C = nodes_[size_t(out_node_)].numel;
  labels_ = DeviceBuffer(alloc_, B * 4, "labels");
  values_ = DeviceBuffer(alloc_, B * C * 4, "targets");
  stats_ = DeviceBuffer(alloc_, sizeof(LossStats), "loss statistics");
  idx_ = DeviceBuffer(alloc_, B * 8 * kSlots, "sample indices");
  graphs_ = true;
  if (const char* g = std::getenv("DC_CUDA_GRAPHS"); g && *g == '0') graphs_ = false;
  for (const Node& nd : nodes_)
    if (nd.op && !nd.op->graph_safe()) graphs_ = false;
  if (graphs_) {
    idx_graph_ = DeviceBuffer(alloc_, B * 8, "sample indices (graph)");
    args_dev_ = DeviceBuffer(alloc_, sizeof(StepArgs), "step arguments");
    // A workspace of its own keeps cuBLAS from allocating inside a capture.
    cublas_ws_ = DeviceBuffer(alloc_, size_t(32) << 20, "cuBLAS workspace");
    DC_CUBLAS(cublasSetWorkspace(blas_.get(), cublas_ws_.get<void>(), cublas_ws_.bytes()),
              "cuBLAS workspace");
  }
}

CudaPlan::~CudaPlan() {
  // The members free themselves (in reverse order of declaration) once the
  // queued work that uses them is done.
  cudaSetDevice(o_.device);  // a destructor reports nothing: best effort
  if (stream_) cudaStreamSynchronize(stream_);
}

// Layers that read the network input directly (Embedding) refuse invalid
// values here, on the host, with the CPU layer's message.
void CudaPlan::check_input(const float* x, int64_t count) const {
  for (const Node& nd : nodes_)
    if (nd.op && !nd.inputs.empty() && nodes_[nd.inputs[0]].is_input) nd.op->check_input(x, count);
}

void CudaPlan::select() const {
  DC_CUDA(cudaSetDevice(o_.device), "selecting " + name_);
}

void CudaPlan::sync(const std::string& what) {
  DC_CUDA(cudaStreamSynchronize(stream_), what);
}

void CudaPlan::prepare(int n) {
  for (Node& nd : nodes_)
    if (nd.op) nd.op->prepare(ctx_, n);
}

void CudaPlan::upload_params() {
  select();
  for (Mapped& m : map_)
    DC_CUDA(cudaMemcpyAsync(m.dev, m.host->value.f32(), m.host->value.bytes(),
                            cudaMemcpyHostToDevice, stream_),
            "uploading parameters");
  // Frozen parameters change only here: their 16-bit copies are made once
  // (the trainable ones' before every forward).
  if (ctx_.reduced && learnable_floats_ > trainable_floats_) {
    to_low(pvals_.get() + trainable_floats_, plow_.get<char>() + trainable_floats_ * 2,
           learnable_floats_ - trainable_floats_, ctx_.low, stream_);
    DC_LAUNCHED("16-bit copies of the frozen parameters");
  }
  sync("uploading parameters");
}

void CudaPlan::download_params() {
  select();
  for (Mapped& m : map_)
    DC_CUDA(cudaMemcpyAsync(m.host->value.f32(), m.dev, m.host->value.bytes(),
                            cudaMemcpyDeviceToHost, stream_),
            "downloading parameters");
  sync("downloading parameters");
}

void CudaPlan::download_grads() {
  select();
  for (Mapped& m : map_)
    if (m.dev_grad)
      DC_CUDA(cudaMemcpyAsync(m.host->grad.f32(), m.dev_grad, m.host->grad.bytes(),
                              cudaMemcpyDeviceToHost, stream_),
              "downloading gradients");
  sync("downloading gradients");
}

void CudaPlan::run_forward(int n, bool training, uint64_t seed, const uint64_t* dseed) {
  prepare(n);
  ctx_.training = training;
  ctx_.seed = seed;
  ctx_.dseed = dseed;
  if (ctx_.reduced && trainable_floats_ > 0) {
    to_low(pvals_.get(), plow_.get<void>(), trainable_floats_, ctx_.low, stream_);
    DC_LAUNCHED("16-bit copies of the parameters " + where(n));
  }
  std::vector<const float*> in;
  for (Node& nd : nodes_) {
    if (!nd.op) continue;
    in.clear();
    for (int i : nd.inputs) in.push_back(nodes_[i].out);
    nd.op->forward(ctx_, in, nd.out, n);
  }
}

void CudaPlan::run_backward(int n) {
  std::vector<const float*> in;
  std::vector<float*> din;
  for (size_t k = nodes_.size(); k-- > 0;) {
    Node& nd = nodes_[k];
    if (!nd.op || !nd.requires_grad) continue;
    in.clear();
    din.clear();
    for (int i : nd.inputs) {
      in.push_back(nodes_[i].out);
      din.push_back(nodes_[i].requires_grad ? nodes_[i].grad : nullptr);
    }
    nd.op->backward(ctx_, in, nd.out, nd.grad, din, n);
  }
}

void CudaPlan::forward(const Tensor& x, Tensor& out, bool training, uint64_t seed) {
  select();
  const int n = int(x.dim(0));
  if (n > o_.max_batch)
    throw Error("batch of " + std::to_string(n) + " exceeds the plan's " +
                std::to_string(o_.max_batch));
  check_input(x.f32(), x.numel());
  Node& in = nodes_[0];
  DC_CUDA(cudaMemcpyAsync(in.out, x.f32(), x.bytes(), cudaMemcpyHostToDevice, stream_),
          "uploading the input " + where(n));
  run_forward(n, training, seed);
  DC_CUDA(cudaMemcpyAsync(out.f32(), nodes_[out_node_].out, out.bytes(), cudaMemcpyDeviceToHost,
                          stream_),
          "downloading the output " + where(n));
  sync("forward " + where(n));
  cur_n_ = n;
}

void CudaPlan::backward(const Tensor& dout) {
  select();
  const int n = int(dout.dim(0));
  DC_CUDA(cudaMemsetAsync(grads_.get(), 0, grads_floats_ * 4, stream_), "zeroing gradients");
  DC_CUDA(cudaMemcpyAsync(nodes_[out_node_].grad, dout.f32(), dout.bytes(), cudaMemcpyHostToDevice,
                          stream_),
          "uploading the output gradient");
  run_backward(n);
  sync("backward " + where(n));
}

void CudaPlan::zero_grad() {
  select();
  clear_param_grads();
}

// zero_grad's work, for steps already on the plan's device (and inside a
// graph capture, where selecting a device is no business of the step).
void CudaPlan::clear_param_grads() {
  DC_CUDA(cudaMemsetAsync(pgrads_.get(), 0, std::max<int64_t>(trainable_floats_, 1) * 4, stream_),
          "zeroing parameter gradients");
}

void CudaPlan::run_loss(int n, const float* values) {
  const int C = int(nodes_[out_node_].numel);
  loss_forward_backward(loss_kind_, nodes_[out_node_].out, labels_.get<int32_t>(), values,
                        nodes_[out_node_].grad, n, C, float(o_.label_smoothing),
                        host_loss_->classification(), stats_.get<LossStats>(), stream_);
  DC_LAUNCHED("the " + std::string(host_loss_->name()) + " loss " + where(n));
}

float CudaPlan::loss(const int32_t* labels, const Tensor* values, Tensor* dout) {
  select();
  const int n = int(cur_n_);
  const int C = int(nodes_[out_node_].numel);
  if (labels)
    DC_CUDA(cudaMemcpyAsync(labels_.get(), labels, size_t(n) * 4, cudaMemcpyHostToDevice, stream_),
            "uploading labels");
  if (values)
    DC_CUDA(cudaMemcpyAsync(values_.get(), values->f32(), values->bytes(), cudaMemcpyHostToDevice,
                            stream_),
            "uploading targets");
  DC_CUDA(cudaMemsetAsync(grads_.get(), 0, grads_floats_ * 4, stream_), "zeroing gradients");
  DeviceStepStats before = take_stats();
  (void)before;
  run_loss(n, values ? values_.get() : nullptr);
  if (dout)
    DC_CUDA(cudaMemcpyAsync(dout->f32(), nodes_[out_node_].grad, size_t(n) * C * 4,
                            cudaMemcpyDeviceToHost, stream_),
            "downloading the loss gradient");
  DeviceStepStats s = take_stats();
  return s.samples ? float(s.loss_sum / double(s.samples)) : 0.f;
}

void CudaPlan::predict(int dataset, const int64_t* idx, int64_t n, float* out) {
  select();
  gather(dataset, idx, n);
  ctx_.need_backward = false;
  try {
    run_forward(int(n), false, 0);
  } catch (...) {
    ctx_.need_backward = true;
    throw;
  }
  ctx_.need_backward = true;
  DC_CUDA(cudaMemcpyAsync(out, nodes_[out_node_].out, size_t(n) * nodes_[out_node_].numel * 4,
                          cudaMemcpyDeviceToHost, stream_),
          "downloading predictions");
  sync("inference " + where(int(n)));
}

std::vector<std::pair<std::string, Tensor>> CudaPlan::optimizer_state() {
  select();
  std::vector<std::pair<std::string, Tensor>> s;
  if (!have_moments_) return s;
  std::vector<Param*> tr = host_.trainable();
  const bool sgd = o_.optimizer.type == OptimizerType::Sgd;
  if (sgd && o_.optimizer.momentum == 0.0) return s;
  for (size_t k = 0; k < tr.size(); ++k) {
    Tensor m(tr[k]->value.shape());
    DC_CUDA(
        cudaMemcpy(m.f32(), m_.get() + trainable_offsets_[k], m.bytes(), cudaMemcpyDeviceToHost),
        "downloading optimizer state");
    if (sgd) {
      s.emplace_back("momentum." + std::to_string(k), m);
      continue;
    }
    Tensor v(tr[k]->value.shape());
    DC_CUDA(
        cudaMemcpy(v.f32(), v_.get() + trainable_offsets_[k], v.bytes(), cudaMemcpyDeviceToHost),
        "downloading optimizer state");
    s.emplace_back("exp_avg." + std::to_string(k), m);
    s.emplace_back("exp_avg_sq." + std::to_string(k), v);
  }
  return s;
}

void CudaPlan::load_optimizer_state(const std::vector<std::pair<std::string, Tensor>>& s) {
  select();
  if (s.empty() || trainable_floats_ == 0) return;
  drop_graph();  // the moments are reallocated below; a graph would write the old ones
  m_ = DeviceBuffer(alloc_, trainable_floats_ * 4, "optimizer state");
  v_ = DeviceBuffer(alloc_, trainable_floats_ * 4, "optimizer state");
  DC_CUDA(cudaMemset(m_.get(), 0, trainable_floats_ * 4), "optimizer state");
  DC_CUDA(cudaMemset(v_.get(), 0, trainable_floats_ * 4), "optimizer state");
  for (auto& [name, t] : s) {
    size_t dot = name.find('.');
    if (dot == std::string::npos) continue;
    std::string kind = name.substr(0, dot);
    size_t k = std::stoul(name.substr(dot + 1));
    if (k >= trainable_offsets_.size()) continue;
    float* dst = (kind == "exp_avg_sq" ? v_ : m_).get() + trainable_offsets_[k];
    DC_CUDA(cudaMemcpy(dst, t.f32(), t.bytes(), cudaMemcpyHostToDevice),
            "uploading optimizer state");
  }
  have_moments_ = true;
}

DeviceMemory CudaPlan::memory() {
  select();
  DeviceMemory m;
  m.allocated = alloc_.allocated();
  m.reserved = alloc_.reserved();
  m.peak_allocated = alloc_.peak();
  size_t f = 0, t = 0;
  if (cudaMemGetInfo(&f, &t) == cudaSuccess) {
    m.device_free = int64_t(f);
    m.device_total = int64_t(t);
  }
  return m;
}

std::unique_ptr<DevicePlan> make_cuda_plan(Plan& host, const DevicePlanOptions& o,
                                           const std::string& name) {
  return std::make_unique<CudaPlan>(host, o, name);
}

}  // namespace dc::cuda
