#include "conv_graph.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <utility>

namespace dc::cuda {
namespace {

// Unique ids of the three tensors in every direction's graph and variant
// pack: the input (x, or dx), the filter (w, or dw), the output (y, or dy).
constexpr int64_t kX = 1, kW = 2, kY = 3;
// Plans timed per direction and shape: PyTorch's benchmark mode times every
// plan the heuristics return, but the first few hold the fastest in
// practice, and each costs a finalisation (kernel selection) on the host.
constexpr size_t kTimed = 6;
// Engine configurations looked at before giving up on finding kTimed plans.
constexpr size_t kConsidered = 32;

BackendDesc create(cudnnBackendDescriptorType_t type, const std::string& what) {
  BackendDesc d;
  DC_CUDNN(cudnnBackendCreateDescriptor(type, d.out()), what);
  return d;
}

void set(const BackendDesc& d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
         int64_t count, const void* values, const std::string& what) {
  DC_CUDNN(cudnnBackendSetAttribute(d.get(), name, type, count, values), what);
}

void set_desc(const BackendDesc& d, cudnnBackendAttributeName_t name, const BackendDesc& value,
              const std::string& what) {
  cudnnBackendDescriptor_t v = value.get();
  set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v, what);
}

BackendDesc tensor(int64_t uid, const int64_t dims[4], bool channels_last, cudnnDataType_t type,
                   const void* ptr, const std::string& what) {
  BackendDesc t = create(CUDNN_BACKEND_TENSOR_DESCRIPTOR, what);
  const std::vector<int64_t> strides =
      conv_strides(dims[0], dims[1], dims[2], dims[3], channels_last);
  const int64_t align = pointer_alignment(ptr);
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type, what);
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims, what);
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data(), what);
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, what);
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align, what);
  DC_CUDNN(cudnnBackendFinalize(t.get()), what);
  return t;
}

struct Candidate {
  BackendDesc cfg, plan;
  size_t ws = 0;
  int64_t engine = -1;
  float ms = std::numeric_limits<float>::infinity();
};

// Engine configurations the heuristics of `mode` rank for the graph, best
// first; none (not an error) when the mode has nothing for it.
std::vector<BackendDesc> heuristics(const BackendDesc& graph, cudnnBackendHeurMode_t mode,
                                    const std::string& what) {
  BackendDesc h;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, h.out()) !=
      CUDNN_STATUS_SUCCESS)
    return {};
  cudnnBackendDescriptor_t g = graph.get();
  if (cudnnBackendSetAttribute(h.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendSetAttribute(h.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                               &mode) != CUDNN_STATUS_SUCCESS ||
      cudnnBackendFinalize(h.get()) != CUDNN_STATUS_SUCCESS)
    return {};
  int64_t count = 0;
  if (cudnnBackendGetAttribute(h.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                               nullptr) != CUDNN_STATUS_SUCCESS ||
      count <= 0)
    return {};
  std::vector<BackendDesc> cfgs(static_cast<size_t>(count));
  std::vector<cudnnBackendDescriptor_t> raw(cfgs.size());
  for (size_t i = 0; i < cfgs.size(); ++i) {
    cfgs[i] = create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, what);
    raw[i] = cfgs[i].get();
  }
  int64_t got = 0;
  if (cudnnBackendGetAttribute(h.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got,
                               raw.data()) != CUDNN_STATUS_SUCCESS)
    return {};
  cfgs.resize(static_cast<size_t>(std::clamp<int64_t>(got, 0, count)));
  return cfgs;
}

// Whether the configuration's engine computes what was asked: no engine
// that converts its inputs down (PyTorch drops those too), and for float32
// data without TF32 none that uses tensor cores (that is TF32 arithmetic).
bool acceptable(const BackendDesc& cfg, bool allow_tensor_cores, int64_t& engine_index,
                const std::string& what) {
  BackendDesc engine = create(CUDNN_BACKEND_ENGINE_DESCRIPTOR, what);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t got = 0;
  if (cudnnBackendGetAttribute(cfg.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &e) != CUDNN_STATUS_SUCCESS)
    return false;
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  got = 0;
  if (cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &got,
                               notes) != CUDNN_STATUS_SUCCESS)
    return false;
  for (int64_t i = 0; i < got; ++i) {
    if (notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) return false;
    if (!allow_tensor_cores && notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE) return false;
  }
  engine_index = -1;
  cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got,
                           &engine_index);
  return true;
}

void execute(cudnnHandle_t dnn, const BackendDesc& plan, const void* x, const void* w,
             const void* y, void* workspace, const std::string& what) {
  BackendDesc pack = create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, what);
  const int64_t uids[3] = {kX, kW, kY};
  void* ptrs[3] = {const_cast<void*>(x), const_cast<void*>(w), const_cast<void*>(y)};
  set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids, what);
  set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs, what);
  set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace, what);
  DC_CUDNN(cudnnBackendFinalize(pack.get()), what);
  DC_CUDNN(cudnnBackendExecute(dnn, plan.get(), pack.get()), what);
}

}  // namespace

const char* conv_dir_name(ConvDir d) {
  switch (d) {
    case ConvDir::Forward:
      return "forward";
    case ConvDir::BackwardData:
      return "backward data";
    case ConvDir::BackwardFilter:
      return "backward filter";
  }
  return "?";
}

void ConvGraph::build(cudnnHandle_t dnn, cudaStream_t stream, Allocator& alloc,
                      const ConvGeometry& g, ConvDir dir, float alpha, float beta, const void* x,
                      const void* w, const void* y, size_t max_workspace,
                      const std::string& what_in) {
  const std::string what = what_in + ", " + conv_dir_name(dir) + " (cuDNN graph API)";
  keep_.clear();
  const int64_t xd[4] = {g.n, g.c, g.h, g.w};
  const int64_t wd[4] = {g.k, g.c / g.groups, g.r, g.s};
  const int64_t yd[4] = {g.n, g.k, g.oh, g.ow};
  BackendDesc tx = tensor(kX, xd, g.channels_last, g.data, x, what);
  BackendDesc tw = tensor(kW, wd, g.channels_last, g.data, w, what);
  BackendDesc ty = tensor(kY, yd, g.channels_last, g.data, y, what);

  BackendDesc conv = create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, what);
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t dims = 2, pad[2] = {g.pad_h, g.pad_w}, stride[2] = {g.stride_h, g.stride_w},
                dil[2] = {g.dil_h, g.dil_w};
  set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp, what);
  set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode, what);
  set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims, what);
  set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil, what);
  set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride, what);
  set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad, what);
  set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad, what);
  DC_CUDNN(cudnnBackendFinalize(conv.get()), what);

  // The operation's attribute names in this direction (x is dx, w is dw or
  // y is dy where the direction computes it).
  struct Names {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  };
  const Names k = dir == ConvDir::Forward
                      ? Names{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA}
                  : dir == ConvDir::BackwardData
                      ? Names{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA}
                      : Names{CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  BackendDesc op = create(k.type, what);
  set_desc(op, k.x, tx, what);
  set_desc(op, k.w, tw, what);
  set_desc(op, k.y, ty, what);
  set_desc(op, k.conv, conv, what);
  set(op, k.alpha, CUDNN_TYPE_FLOAT, 1, &alpha, what);
  set(op, k.beta, CUDNN_TYPE_FLOAT, 1, &beta, what);
  DC_CUDNN(cudnnBackendFinalize(op.get()), what);

  BackendDesc graph = create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, what);
  cudnnBackendDescriptor_t ops = op.get();
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ops, what);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &dnn, what);
  DC_CUDNN(cudnnBackendFinalize(graph.get()), what);

  // Heuristics first, then the fallback list (engines the heuristics may not
  // rank but that run the graph).
  std::vector<BackendDesc> cfgs = heuristics(graph, CUDNN_HEUR_MODE_A, what);
  const size_t ranked = cfgs.size();
  for (BackendDesc& d : heuristics(graph, CUDNN_HEUR_MODE_FALLBACK, what))
    cfgs.push_back(std::move(d));
  std::vector<Candidate> found;
  size_t looked = 0, refused_ws = 0;
  for (size_t i = 0; i < cfgs.size(); ++i) {
    if (found.size() >= kTimed || looked >= kConsidered) break;
    ++looked;
    BackendDesc& cfg = cfgs[i];
    int64_t engine = -1;
    if (!acceptable(cfg, g.allow_tensor_cores, engine, what)) continue;
    // The same engine with other knobs is worth timing; the fallback list's
    // engines that the heuristics already ranked are not.
    bool seen = false;
    for (const Candidate& c : found) seen = seen || (engine >= 0 && c.engine == engine);
    if (seen && i >= ranked) continue;
    Candidate c;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, c.plan.out()) !=
        CUDNN_STATUS_SUCCESS)
      continue;
    cudnnBackendDescriptor_t cd = cfg.get();
    if (cudnnBackendSetAttribute(c.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE,
                                 1, &dnn) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendSetAttribute(c.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cd) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendFinalize(c.plan.get()) != CUDNN_STATUS_SUCCESS)
      continue;  // this engine cannot run the graph (NOT_SUPPORTED and the like)
    int64_t ws = 0, got = 0;
    if (cudnnBackendGetAttribute(c.plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                 CUDNN_TYPE_INT64, 1, &got, &ws) != CUDNN_STATUS_SUCCESS ||
        ws < 0)
      continue;
    if (size_t(ws) > max_workspace) {
      ++refused_ws;
      continue;
    }
    c.ws = size_t(ws);
    c.engine = engine;
    c.cfg = std::move(cfg);
    found.push_back(std::move(c));
  }
  if (found.empty())
    throw DeviceError(what + ": cuDNN offers no plan (" + std::to_string(cfgs.size()) +
                      " engine configurations, " + std::to_string(refused_ws) +
                      " over the workspace limit of " + std::to_string(max_workspace >> 20) +
                      " MiB)");

  // Time them on the buffers they will run on, unless a graph is being
  // captured (no synchronising there): then the heuristics' first.
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  DC_CUDA(cudaStreamIsCapturing(stream, &capturing), what);
  size_t best = 0;
  if (found.size() > 1 && capturing == cudaStreamCaptureStatusNone) {
    size_t most = 0;
    for (const Candidate& c : found) most = std::max(most, c.ws);
    DeviceBuffer scratch(alloc, most, "workspace for timing " + what);
    Event start, stop;
    DC_CUDA(cudaEventCreate(start.out()), what);
    DC_CUDA(cudaEventCreate(stop.out()), what);
    for (Candidate& c : found) {
      try {
        execute(dnn, c.plan, x, w, y, scratch.get<void>(), what);  // warm-up
        DC_CUDA(cudaEventRecord(start.get(), stream), what);
        for (int i = 0; i < 3; ++i) execute(dnn, c.plan, x, w, y, scratch.get<void>(), what);
        DC_CUDA(cudaEventRecord(stop.get(), stream), what);
        DC_CUDA(cudaEventSynchronize(stop.get()), what);
        float ms = 0.f;
        DC_CUDA(cudaEventElapsedTime(&ms, start.get(), stop.get()), what);
        c.ms = ms / 3.f;
      } catch (const DeviceError&) {
        // A plan that fails to launch is not chosen; a fault inside a kernel
        // is sticky and surfaces at the next checked call.
        c.ms = std::numeric_limits<float>::infinity();
      }
    }
    DC_CUDA(cudaStreamSynchronize(stream), what);
    for (size_t i = 1; i < found.size(); ++i)
      if (found[i].ms < found[best].ms) best = i;
    if (!(found[best].ms < std::numeric_limits<float>::infinity()))
      throw DeviceError(what + ": none of the " + std::to_string(found.size()) +
                        " plans cuDNN offered ran");
  }
  Candidate& c = found[best];
  char buf[160];
  std::snprintf(buf, sizeof buf, "engine %lld, %.3f ms, %zu KiB workspace, best of %zu timed",
                static_cast<long long>(c.engine), double(c.ms), c.ws >> 10, found.size());
  choice_ = buf;
  ws_ = c.ws;
  cfg_ = std::move(c.cfg);
  plan_ = std::move(c.plan);
  keep_.push_back(std::move(tx));
  keep_.push_back(std::move(tw));
  keep_.push_back(std::move(ty));
  keep_.push_back(std::move(conv));
  keep_.push_back(std::move(op));
  keep_.push_back(std::move(graph));
}

void ConvGraph::run(cudnnHandle_t dnn, const void* x, const void* w, const void* y, void* workspace,
                    const std::string& what) const {
  execute(dnn, plan_, x, w, y, workspace, what);
}

}  // namespace dc::cuda
