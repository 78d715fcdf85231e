// ONNX import: walks the model's nodes in order (ONNX keeps them sorted) and
// turns each into DeepCanvas layers, or into a constant when its inputs are
// all known (the shape arithmetic PyTorch writes around recurrent layers and
// view() calls). Values remember how the ONNX tensor relates to the layer
// that computes it, so that ONNX-only steps (Flatten, Reshape, Squeeze, the
// Transposes around LSTM/GRU, a zero Pad before a Conv) need no layer of
// their own. An op that cannot be mapped marks its outputs; only marks that
// reach the graph's output are reported, all at once, so the shape
// bookkeeping PyTorch leaves unused never blocks an import.
#include <deepcanvas/checked.h>
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/onnx.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <type_traits>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

namespace dc {

namespace {

namespace fs = std::filesystem;

// Why one op cannot be imported; thrown by a handler, caught per node.
struct NotSupported {
  std::string why;
};

// Stands for the batch size in shapes the model computes from its input
// (Shape -> Gather -> Concat -> Reshape), so a Reshape can tell the batch
// dimension from the others.
constexpr int64_t kBatch = -987654321;

// The most values the constants folded at import time (ConstantOfShape,
// Expand, Gather, Slice, Transpose, Cast and arithmetic) may take together:
// shape arithmetic and initial states are far smaller, and each value is a
// loop step, so that a chain of ops over a large constant cannot make an
// import run for minutes.
constexpr int64_t kMaxFolded = int64_t{1} << 24;

// A tensor known at import time: an initializer, a Constant, or folded.
struct Const {
  std::vector<int64_t> dims;
  bool integer = false;
  std::vector<float> f;    // !integer
  std::vector<int64_t> i;  // integer
  int64_t numel() const { return integer ? int64_t(i.size()) : int64_t(f.size()); }
  double at(int64_t k) const { return integer ? double(i[size_t(k)]) : double(f[size_t(k)]); }
  int64_t int_at(int64_t k) const;
  // Appends element k of c (of the same kind).
  void push_from(const Const& c, int64_t k) {
    if (integer)
      i.push_back(c.i[size_t(k)]);
    else
      f.push_back(c.f[size_t(k)]);
  }
};

// A float used as an integer (an index, a size); one that is no integer in
// range stops the op rather than overflowing.
int64_t to_int(float v) {
  if (!(std::fabs(v) < 1e18f)) throw NotSupported{"a value out of the integer range"};
  return static_cast<int64_t>(v);
}

int64_t Const::int_at(int64_t k) const {
  return integer ? i[size_t(k)] : to_int(f[size_t(k)]);
}

// How an ONNX tensor is computed by a DeepCanvas layer's output ([N, dc]).
enum class Layout {
  Plain,      // ONNX [N, view...]: the layer's values, regrouped as `view`
  TimeFirst,  // ONNX [T, N, F]: layer output [N, T, F]
  RnnY,       // ONNX [T, D, N, H]: a recurrent layer's sequence [N, T, D*H]
  RnnYTNDH,   // ONNX [T, N, D, H]
  RnnYNTDH,   // ONNX [N, T, D, H]
  RnnStep,    // ONNX [D, N, H]: step t of RnnY
  RnnFinal,   // ONNX [N, H]: direction d of RnnStep
};

struct Val {
  bool is_const = false;
  Const c;
  NodeId node = -1;
  Layout layout = Layout::Plain;
  std::vector<int64_t> view;  // Plain: per-sample ONNX dims
  int64_t T = 0, D = 0, H = 0, t = 0, d = 0;
  std::vector<int64_t> pad;  // a zero Pad not applied yet: top, left, bottom, right
  std::string regroup_name;  // the Flatten/Reshape that made `view`, for its layer
  std::set<int> problems;    // indexes into Importer::problems_
};

std::string dims_str(const std::vector<int64_t>& d) {
  std::string s = "[";
  for (size_t k = 0; k < d.size(); ++k) s += (k ? ", " : "") + std::to_string(d[k]);
  return s + "]";
}

// The number of elements; -1 when a dimension is negative (a placeholder
// such as kBatch). A count beyond a tensor's limit throws ShapeError, which
// stops the op.
int64_t product(const std::vector<int64_t>& d) {
  for (int64_t x : d)
    if (x < 0) return -1;
  return checked_numel(d, "a tensor of dimensions " + dims_str(d));
}

// The elements the dimensions would hold with every 0 read as 1: what loops
// over the dimensions one by one and products of some of them can reach,
// also for an empty tensor. Held to the tensor limit for every constant, so
// that an empty constant of dimensions [0, 2^62] cannot make them overflow.
void check_extent(const std::vector<int64_t>& d, const std::string& what) {
  std::vector<int64_t> ones = d;
  for (int64_t& x : ones) x = x == 0 ? 1 : x;
  checked_numel(ones, what + " of dimensions " + dims_str(d) + ", counting each 0 as 1,");
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
int64_t attr_i(const onnx::NodeProto& n, const std::string& name, int64_t def) {
  const auto* a = find_attr(n, name);
  return a ? a->i() : def;
}
float attr_f(const onnx::NodeProto& n, const std::string& name, float def) {
  const auto* a = find_attr(n, name);
  return a ? a->f() : def;
}
std::string attr_s(const onnx::NodeProto& n, const std::string& name, const std::string& def) {
  const auto* a = find_attr(n, name);
  return a ? a->s() : def;
}
std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name,
                               std::vector<int64_t> def = {}) {
  const auto* a = find_attr(n, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : def;
}

// n values of type T from raw_data (little-endian, as ONNX stores them and
// as this machine is) or else from the typed field, converted to Out.
template <class T, class Field, class Out>
void read_values(const std::string& raw, const Field& field, int64_t n, std::vector<Out>& out,
                 const std::string& what) {
  out.resize(size_t(n));
  if (!raw.empty() || field.size() == 0) {
    if (raw.size() != size_t(n) * sizeof(T))
      throw Error(what + " holds " + std::to_string(raw.size()) + " bytes of data for " +
                  std::to_string(n) + " values");
    for (int64_t k = 0; k < n; ++k) {
      T v;
      std::memcpy(&v, raw.data() + k * int64_t(sizeof(T)), sizeof(T));
      if constexpr (std::is_same_v<T, double>)  // beyond float's range: infinity
        out[size_t(k)] = std::fabs(v) > 3.4e38 ? std::copysign(INFINITY, float(v > 0 ? 1 : -1))
                                               : static_cast<Out>(v);
      else
        out[size_t(k)] = static_cast<Out>(v);
    }
  } else {
    if (field.size() != n)
      throw Error(what + " holds " + std::to_string(field.size()) + " values for " +
                  std::to_string(n));
    for (int64_t k = 0; k < n; ++k) {
      const auto v = field.Get(int(k));
      if constexpr (std::is_same_v<T, double>)
        out[size_t(k)] = std::fabs(v) > 3.4e38 ? std::copysign(INFINITY, float(v > 0 ? 1 : -1))
                                               : static_cast<Out>(v);
      else
        out[size_t(k)] = static_cast<Out>(v);
    }
  }
}

// Reads a TensorProto, checking that its data matches its dims.
Const read_tensor(const onnx::TensorProto& t) {
  const std::string what = "tensor '" + t.name() + "'";
  if (t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0)
    throw Error(what +
                " keeps its data in an external file, which the importer does not read; save the "
                "model with its weights inside (onnx.save_model(m, path, "
                "save_as_external_data=False), possible below 2 GB)");
  Const c;
  c.dims.assign(t.dims().begin(), t.dims().end());
  check_extent(c.dims, what);  // (negative dimensions included)
  const int64_t n = product(c.dims);
  const std::string& raw = t.raw_data();
  // Every value takes a byte at least: a tensor claiming more values than
  // its data could hold is refused before anything is allocated for it.
  if (n > int64_t(raw.size()) + t.float_data_size() + t.double_data_size() + t.int64_data_size() +
              t.int32_data_size())
    throw Error(what + " holds less data than its dimensions " + dims_str(c.dims) + " need");
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      read_values<float>(raw, t.float_data(), n, c.f, what);
      break;
    case onnx::TensorProto::DOUBLE:
      read_values<double>(raw, t.double_data(), n, c.f, what);
      break;
    case onnx::TensorProto::INT64:
      c.integer = true;
      read_values<int64_t>(raw, t.int64_data(), n, c.i, what);
      break;
    case onnx::TensorProto::INT32:
      c.integer = true;
      read_values<int32_t>(raw, t.int32_data(), n, c.i, what);
      break;
    case onnx::TensorProto::INT8:
      c.integer = true;
      read_values<int8_t>(raw, t.int32_data(), n, c.i, what);
      break;
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      c.integer = true;
      read_values<uint8_t>(raw, t.int32_data(), n, c.i, what);
      break;
    default:
      throw NotSupported{what + " has data type " + std::to_string(t.data_type()) +
                         " (float, double and integers are read)"};
  }
  return c;
}

Tensor to_tensor(const Const& c, std::vector<int64_t> dims = {}) {
  if (dims.empty()) dims = c.dims;
  Tensor t{Shape(dims)};
  for (int64_t k = 0; k < c.numel(); ++k) t.f32()[k] = float(c.at(k));
  return t;
}

// "layer1.0.conv1" from PyTorch's scoped node name "/layer1/layer1.0/conv1/Conv"
// (each scope repeats its parent's path when it is a numbered child).
std::string module_from_node_name(const std::string& node_name) {
  std::vector<std::string> parts;
  size_t s = 0;
  while (s <= node_name.size()) {
    size_t e = node_name.find('/', s);
    if (e == std::string::npos) e = node_name.size();
    if (e > s) parts.push_back(node_name.substr(s, e - s));
    s = e + 1;
  }
  // A name without scopes (DeepCanvas's own export: the layer's name, and
  // "conv1/pad" for its helper ops) is the layer's name.
  if (!node_name.empty() && node_name[0] != '/') return node_name.substr(0, node_name.find('/'));
  if (parts.size() < 2) return "";
  parts.pop_back();  // the op ("Conv", "Relu_1")
  std::string path;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k + 1 < parts.size() && parts[k + 1].rfind(parts[k] + ".", 0) == 0) continue;
    path += (path.empty() ? "" : ".") + parts[k];
  }
  return path;
}

// The layer name an op asks for: its PyTorch module from a scoped name, or,
// for a model DeepCanvas exported, the value it computes (the layer's name;
// the node names there carry a suffix).
std::string layer_base(const onnx::NodeProto& n) {
  if (!n.name().empty() && n.name()[0] == '/') return module_from_node_name(n.name());
  if (n.output_size() > 0) {
    const std::string& o = n.output(0);
    // Helper values are "<layer>/<what>" ("avgpool/pooled", "rnn/Y_l0").
    if (!o.empty() && o[0] != '/' && o.find("::") == std::string::npos &&
        o.find_first_not_of("0123456789") != std::string::npos)
      return o.substr(0, o.find('/'));
  }
  return module_from_node_name(n.name());
}

// Keeps what reads well as a layer name (and as part of a checkpoint name).
std::string clean_name(const std::string& s) {
  std::string o;
  for (char ch : s) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-';
    o += ok ? ch : '_';
  }
  while (!o.empty() && (o.front() == '.' || o.front() == '_')) o.erase(o.begin());
  return o.substr(0, 200);
}

// The module a PyTorch-style initializer belongs to ("fc" for "fc.weight"),
// or "" for a generated one ("onnx::Conv_193").
std::string module_from_initializer(const std::string& name, const std::string& param) {
  const std::string sfx = "." + param;
  if (name.find("::") != std::string::npos || name.size() <= sfx.size() ||
      name.compare(name.size() - sfx.size(), sfx.size(), sfx) != 0)
    return "";
  return name.substr(0, name.size() - sfx.size());
}

class Importer {
 public:
  Importer(const onnx::ModelProto& m, std::string source) : m_(m), source_(std::move(source)) {
    for (const auto& op : m.opset_import())
      if (op.domain().empty() || op.domain() == "ai.onnx") opset_ = int(op.version());
  }

  OnnxImport run();

 private:
  using Handler = void (Importer::*)(const onnx::NodeProto&);
  static const std::map<std::string, Handler>& handlers();

  // --- values ---
  const Val& in(const onnx::NodeProto& n, int k) {
    if (k >= n.input_size() || n.input(k).empty())
      throw NotSupported{"input " + std::to_string(k) + " is missing"};
    auto it = vals_.find(n.input(k));
    if (it == vals_.end())
      throw NotSupported{"input '" + n.input(k) + "' is not defined before it"};
    Val& v = it->second;
    // A single direction's final state is the layer's output once it is
    // used: the layer then outputs its final state.
    if (!v.is_const && v.layout == Layout::RnnFinal && v.D == 1 && v.t == v.T - 1) {
      const NodeId id = final_state(v);
      v = plain(id);
    }
    return v;
  }
  bool has_in(const onnx::NodeProto& n, int k) const {
    return k < n.input_size() && !n.input(k).empty();
  }
  const Const& cin(const onnx::NodeProto& n, int k, const char* what) {
    const Val& v = in(n, k);
    if (!v.is_const) throw NotSupported{std::string(what) + " must be a constant (an initializer)"};
    return v.c;
  }
  void out(const onnx::NodeProto& n, int k, Val v) {
    if (k < n.output_size() && !n.output(k).empty()) vals_[n.output(k)] = std::move(v);
  }
  Val constant(Const c) {
    check_extent(c.dims, "a constant");
    Val v;
    v.is_const = true;
    v.c = std::move(c);
    return v;
  }
  const Val& layer_in(const onnx::NodeProto& n, int k) {
    const Val& v = in(n, k);
    if (v.is_const)
      throw NotSupported{"a computation on constants only (input " + std::to_string(k) +
                         ") is not supported"};
    return v;
  }

  // --- layers ---
  std::string base_name(const onnx::NodeProto& n, const std::string& init,
                        const std::string& param) {
    std::string b = module_from_initializer(init, param);
    if (b.empty()) b = layer_base(n);
    return clean_name(b);
  }
  NodeId add(const std::string& type, const std::string& base, Attrs a,
             const std::vector<NodeId>& inputs,
             std::vector<std::pair<std::string, Tensor>> params = {}) {
    const LayerDescriptor& d = LayerRegistry::instance().get(type);
    // The layer's own ranges first: its shape rule assumes valid attributes
    // (groups 0 would divide by zero).
    for (const auto& [k, v] : a.values()) {
      const AttrSpec* spec = d.find_attr(k);
      const std::string bad = spec ? validate_attr(*spec, v) : "unknown attribute " + k;
      if (!bad.empty()) throw NotSupported{"as " + type + ": " + k + ": " + bad};
    }
    std::vector<Shape> in_shapes;
    for (NodeId i : inputs) in_shapes.push_back(shapes_.at(i));
    Shape s;
    try {
      s = d.infer(in_shapes, d.with_defaults(a));
    } catch (const std::exception& e) {
      throw NotSupported{"the " + type + " layer it maps to refuses it: " + e.what()};
    }
    std::string name = base;
    if (!name.empty() && g_.find_by_name(name)) {
      for (int k = 1;; ++k)
        if (!g_.find_by_name(base + "_" + std::to_string(k))) {
          name = base + "_" + std::to_string(k);
          break;
        }
    }
    NodeId id;
    try {
      id = g_.add_node(type, name, a);
    } catch (const std::exception& e) {
      throw NotSupported{std::string("as ") + type + ": " + e.what()};
    }
    scope_[id] = base;
    for (size_t k = 0; k < inputs.size(); ++k)
      g_.connect_without_cycle_check(inputs[k], id, int(k));
    shapes_[id] = s;
    params_[id] = std::move(params);
    return id;
  }
  Val plain(NodeId id) {
    Val v;
    v.node = id;
    v.view = shapes_.at(id).dims();
    return v;
  }
  // The layer whose output is exactly v (inserting a Flatten or Reshape
  // where v is a regrouped view of it).
  NodeId materialize(const Val& v) {
    if (v.is_const) throw NotSupported{"a constant input where a computed one is expected"};
    if (!v.pad.empty())
      throw NotSupported{
          "its input is zero-padded by a Pad, which is supported only before a Conv or an "
          "AveragePool"};
    if (v.layout != Layout::Plain)
      throw NotSupported{
          "its input is a recurrent layer's output in an arrangement (time first or split "
          "directions) it cannot take"};
    if (shapes_.at(v.node).dims() == v.view) return v.node;
    auto key = std::make_pair(v.node, v.view);
    if (auto it = regrouped_.find(key); it != regrouped_.end()) return it->second;
    const std::string& src = g_.node(v.node).name;
    NodeId id;
    if (v.view.size() == 1) {
      id = add("Flatten", v.regroup_name.empty() ? src + "_flat" : v.regroup_name, {}, {v.node});
    } else {
      Attrs a;
      a.set("shape", v.view);
      id = add("Reshape", v.regroup_name.empty() ? src + "_reshape" : v.regroup_name, a, {v.node});
    }
    regrouped_[key] = id;
    return id;
  }
  // The recurrent layer of v, turned into one that outputs its final state
  // (each direction's state after reading the whole sequence: the forward
  // one at the last step, the reverse one at step 0), which is how
  // DeepCanvas exports return_sequences = false.
  NodeId final_state(const Val& v) {
    if (!g_.out_edges(v.node).empty() || sequence_used_.count(v.node))
      throw NotSupported{"both the final state and the sequence of a recurrent layer are used"};
    g_.set_attr(v.node, "return_sequences", false);
    shapes_[v.node] = Shape{v.D * v.H};
    final_.insert(v.node);
    return v.node;
  }
  const std::vector<int64_t>& view_of(const Val& v) {
    if (v.layout != Layout::Plain)
      throw NotSupported{
          "its input is a recurrent layer's output in an arrangement it cannot take"};
    return v.view;
  }

  // --- ops ---
  void op_alias(const onnx::NodeProto& n) {
    out(n, 0, in(n, 0));
    for (int k = 1; k < n.output_size(); ++k)
      poison(n, k, "its output " + std::to_string(k) + " (a dropout mask) is used");
  }
  void op_constant(const onnx::NodeProto& n);
  void op_conv(const onnx::NodeProto& n);
  void op_bn(const onnx::NodeProto& n);
  void op_activation(const onnx::NodeProto& n);
  void op_clip(const onnx::NodeProto& n);
  void op_softmax(const onnx::NodeProto& n);
  void op_pool(const onnx::NodeProto& n);
  void op_global_pool(const onnx::NodeProto& n);
  void op_reduce_mean(const onnx::NodeProto& n);
  void op_flatten(const onnx::NodeProto& n);
  void op_reshape(const onnx::NodeProto& n);
  void op_squeeze(const onnx::NodeProto& n);
  void op_unsqueeze(const onnx::NodeProto& n);
  void op_transpose(const onnx::NodeProto& n);
  void op_gather(const onnx::NodeProto& n);
  void op_slice(const onnx::NodeProto& n);
  void op_gemm(const onnx::NodeProto& n);
  void op_matmul(const onnx::NodeProto& n);
  void op_add(const onnx::NodeProto& n);
  void op_arith(const onnx::NodeProto& n);
  void op_concat(const onnx::NodeProto& n);
  void op_pad(const onnx::NodeProto& n);
  void op_shape(const onnx::NodeProto& n);
  void op_cast(const onnx::NodeProto& n);
  void op_constant_of_shape(const onnx::NodeProto& n);
  void op_expand(const onnx::NodeProto& n);
  void op_recurrent(const onnx::NodeProto& n);

  std::vector<int64_t> axes_of(const onnx::NodeProto& n, int input, int rank);
  Val last_step(const onnx::NodeProto& n, const Val& x, int64_t index, bool keep_dim);
  void poison(const onnx::NodeProto& n, int k, const std::string& why) {
    if (k >= n.output_size() || n.output(k).empty()) return;
    Val v;
    v.problems.insert(problem(n, why));
    vals_[n.output(k)] = v;
  }
  // Marks every output of n as not importable, for the reason given.
  void refuse(const onnx::NodeProto& n, const std::string& why) {
    const int p = problem(n, why);
    for (const auto& o : n.output()) {
      Val v;
      v.problems = {p};
      vals_[o] = v;
    }
  }
  // Counts n values about to be folded against kMaxFolded.
  void fold(int64_t n) {
    if (n > kMaxFolded - folded_)
      throw NotSupported{"the constants folded at import would pass " + std::to_string(kMaxFolded) +
                         " values"};
    folded_ += n;
  }
  Const filled(const Const& shape, const Const& value);
  int problem(const onnx::NodeProto& n, const std::string& why) {
    problems_.push_back(n.op_type() + " '" + (n.name().empty() ? n.output(0) : n.name()) +
                        "': " + why);
    return int(problems_.size()) - 1;
  }

  void add_input(const onnx::ValueInfoProto& vi);
  void merge_recurrent();
  void prune(NodeId output);
  void lay_out();

  const onnx::ModelProto& m_;
  std::string source_;
  int opset_ = 1;
  int64_t fixed_batch_ = 0;
  Graph g_;
  std::map<NodeId, Shape> shapes_;
  std::map<NodeId, std::vector<std::pair<std::string, Tensor>>> params_;
  std::map<NodeId, std::string> scope_;  // the name each layer asked for
  std::map<std::pair<NodeId, std::vector<int64_t>>, NodeId> regrouped_;
  std::map<std::string, Val> vals_;
  std::map<std::string, int> uses_;
  std::set<NodeId> final_, sequence_used_;  // recurrent layers: which output is used
  std::vector<std::string> problems_;
  int64_t folded_ = 0;  // values folded so far (fold())
};

const std::map<std::string, Importer::Handler>& Importer::handlers() {
  static const std::map<std::string, Handler> h = {
      {"Identity", &Importer::op_alias},
      {"Dropout", &Importer::op_alias},
      {"Constant", &Importer::op_constant},
      {"Conv", &Importer::op_conv},
      {"BatchNormalization", &Importer::op_bn},
      {"Relu", &Importer::op_activation},
      {"LeakyRelu", &Importer::op_activation},
      {"Sigmoid", &Importer::op_activation},
      {"Tanh", &Importer::op_activation},
      {"Clip", &Importer::op_clip},
      {"Softmax", &Importer::op_softmax},
      {"MaxPool", &Importer::op_pool},
      {"AveragePool", &Importer::op_pool},
      {"GlobalAveragePool", &Importer::op_global_pool},
      {"ReduceMean", &Importer::op_reduce_mean},
      {"Flatten", &Importer::op_flatten},
      {"Reshape", &Importer::op_reshape},
      {"Squeeze", &Importer::op_squeeze},
      {"Unsqueeze", &Importer::op_unsqueeze},
      {"Transpose", &Importer::op_transpose},
      {"Gather", &Importer::op_gather},
      {"Slice", &Importer::op_slice},
      {"Gemm", &Importer::op_gemm},
      {"MatMul", &Importer::op_matmul},
      {"Add", &Importer::op_add},
      {"Sum", &Importer::op_add},
      {"Sub", &Importer::op_arith},
      {"Mul", &Importer::op_arith},
      {"Div", &Importer::op_arith},
      {"Concat", &Importer::op_concat},
      {"Pad", &Importer::op_pad},
      {"Shape", &Importer::op_shape},
      {"Cast", &Importer::op_cast},
      {"ConstantOfShape", &Importer::op_constant_of_shape},
      {"Expand", &Importer::op_expand},
      {"LSTM", &Importer::op_recurrent},
      {"GRU", &Importer::op_recurrent},
      {"RNN", &Importer::op_recurrent},
  };
  return h;
}

void Importer::op_constant(const onnx::NodeProto& n) {
  Const c;
  if (const auto* a = find_attr(n, "value")) {
    c = read_tensor(a->t());
  } else if (const auto* a = find_attr(n, "value_float")) {
    c.f = {a->f()};
  } else if (const auto* a = find_attr(n, "value_floats")) {
    c.f.assign(a->floats().begin(), a->floats().end());
    c.dims = {int64_t(c.f.size())};
  } else if (const auto* a = find_attr(n, "value_int")) {
    c.integer = true;
    c.i = {a->i()};
  } else if (const auto* a = find_attr(n, "value_ints")) {
    c.integer = true;
    c.i.assign(a->ints().begin(), a->ints().end());
    c.dims = {int64_t(c.i.size())};
  } else {
    throw NotSupported{"a Constant without a tensor, float or int value"};
  }
  out(n, 0, constant(std::move(c)));
}

void Importer::op_conv(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  const Const& w = cin(n, 1, "the weight");
  if (w.dims.size() != 4) throw NotSupported{"only 2-D convolution (a 4-D weight) is supported"};
  const auto& v = view_of(x);
  if (v.size() != 3) throw NotSupported{"its input is not channels×height×width"};
  const int64_t group = attr_i(n, "group", 1);
  const std::vector<int64_t> k = {w.dims[2], w.dims[3]};
  const auto strides = attr_ints(n, "strides", {1, 1});
  const auto dil = attr_ints(n, "dilations", {1, 1});
  auto pads = attr_ints(n, "pads", {0, 0, 0, 0});  // top, left, bottom, right
  const std::string auto_pad = attr_s(n, "auto_pad", "NOTSET");
  if (strides.size() != 2 || dil.size() != 2 || pads.size() != 4)
    throw NotSupported{"strides, dilations or pads of the wrong length"};
  std::vector<int64_t> total = pads;
  if (!x.pad.empty())
    for (int s = 0; s < 4; ++s)
      total[size_t(s)] =
          checked_add(total[size_t(s)], x.pad[size_t(s)], "pads with the Pad before");
  Attrs a;
  a.set("filters", w.dims[0]);
  a.set("kernel", k);
  a.set("stride", strides);
  a.set("dilation", dil);
  a.set("groups", group);
  const int64_t H = v[1], W = v[2];
  int64_t st, sb, sl, sr;
  // Also where the model's strides, dilations and kernel are first used: a
  // zero or one near 2^63 is refused here, naming it.
  same_padding(H, k[0], strides[0], dil[0], st, sb, "height");
  same_padding(W, k[1], strides[1], dil[1], sl, sr, "width");
  if (auto_pad == "SAME_UPPER" && x.pad.empty()) {
    a.set("padding_mode", std::string("same"));
  } else if (auto_pad == "VALID" && x.pad.empty()) {
    a.set("padding_mode", std::string("valid"));
  } else if (auto_pad != "NOTSET") {
    throw NotSupported{"auto_pad " + auto_pad + " is not supported"};
  } else if (total[0] == total[2] && total[1] == total[3]) {
    a.set("padding_mode", std::string("explicit"));
    a.set("padding", std::vector<int64_t>{total[0], total[1]});
  } else if (total == std::vector<int64_t>{st, sl, sb, sr}) {
    // TensorFlow's "same" (the extra pixel at the bottom/right), as
    // EfficientNet-Lite and other TF ports write it with ZeroPad2d.
    a.set("padding_mode", std::string("same"));
  } else {
    throw NotSupported{"uneven padding " + dims_str(total) +
                       " (top, left, bottom, right) that is not TensorFlow's 'same' " +
                       dims_str({st, sl, sb, sr})};
  }
  const bool bias = has_in(n, 2);
  a.set("bias", bias);
  std::vector<std::pair<std::string, Tensor>> p = {{"weight", to_tensor(w)}};
  if (bias) {
    const Const& b = cin(n, 2, "the bias");
    if (b.numel() != w.dims[0]) throw NotSupported{"the bias does not have one value per filter"};
    p.push_back({"bias", to_tensor(b, {w.dims[0]})});
  }
  Val base = x;
  base.pad.clear();
  const NodeId src = materialize(base);
  out(n, 0, plain(add("Conv2D", base_name(n, n.input(1), "weight"), a, {src}, std::move(p))));
}

void Importer::op_bn(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  if (attr_i(n, "training_mode", 0) != 0)
    throw NotSupported{"training_mode BatchNormalization (export the model in eval mode)"};
  if (n.output_size() > 1) {
    for (int k = 1; k < n.output_size(); ++k)
      poison(n, k, "its running-statistics outputs are used (export the model in eval mode)");
  }
  const auto& v = view_of(x);
  const std::string type = v.size() == 3 ? "BatchNorm2D" : "BatchNorm1D";
  Attrs a;
  a.set("eps", double(attr_f(n, "epsilon", 1e-5f)));
  std::vector<std::pair<std::string, Tensor>> p;
  const char* names[] = {"weight", "bias", "running_mean", "running_var"};
  for (int k = 0; k < 4; ++k) {
    const Const& c = cin(n, k + 1, names[k]);
    if (c.numel() != v[0])
      throw NotSupported{std::string(names[k]) + " does not have one value per channel"};
    p.push_back({names[k], to_tensor(c, {c.numel()})});
  }
  const NodeId src = materialize(x);
  out(n, 0, plain(add(type, base_name(n, n.input(1), "weight"), a, {src}, std::move(p))));
}

void Importer::op_activation(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  if (!x.pad.empty() || x.layout != Layout::Plain) materialize(x);  // throws why
  std::string type = n.op_type() == "Relu"      ? "ReLU"
                     : n.op_type() == "Sigmoid" ? "Sigmoid"
                     : n.op_type() == "Tanh"    ? "Tanh"
                                                : "LeakyReLU";
  Attrs a;
  if (type == "LeakyReLU") {
    const float alpha = attr_f(n, "alpha", 0.01f);
    if (alpha < 0 || alpha > 1) throw NotSupported{"alpha outside [0, 1]"};
    a.set("slope", double(alpha));
  }
  // Elementwise: on the layer's values as they are, keeping the view.
  Val o = x;
  o.node = add(type, clean_name(layer_base(n)), a, {x.node});
  out(n, 0, o);
}

void Importer::op_clip(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  if (!x.pad.empty() || x.layout != Layout::Plain) materialize(x);
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  if (opset_ < 11) {
    lo = attr_f(n, "min", lo);
    hi = attr_f(n, "max", hi);
  } else {
    if (has_in(n, 1)) lo = float(cin(n, 1, "min").at(0));
    if (has_in(n, 2)) hi = float(cin(n, 2, "max").at(0));
  }
  std::string type;
  if (lo == 0 && hi == 6)
    type = "ReLU6";
  else if (lo == 0 && std::isinf(hi))
    type = "ReLU";
  else
    throw NotSupported{"Clip(" + std::to_string(lo) + ", " + std::to_string(hi) +
                       "): only ReLU (0, inf) and ReLU6 (0, 6) are supported"};
  Val o = x;
  o.node = add(type, clean_name(layer_base(n)), {}, {x.node});
  out(n, 0, o);
}

void Importer::op_softmax(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  const int rank = int(view_of(x).size()) + 1;
  int64_t axis = attr_i(n, "axis", opset_ >= 13 ? -1 : 1);
  if (axis < 0) axis += rank;
  // Before opset 13 the input is folded to 2-D at axis, the same as the
  // last axis when axis is the last one.
  if (axis != rank - 1)
    throw NotSupported{"softmax over axis " + std::to_string(axis) +
                       " (only the last axis is supported)"};
  out(n, 0, plain(add("Softmax", clean_name(layer_base(n)), {}, {materialize(x)})));
}

void Importer::op_pool(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  const bool max = n.op_type() == "MaxPool";
  const auto& v = view_of(x);
  if (v.size() != 3) throw NotSupported{"only 2-D pooling is supported"};
  const auto k = attr_ints(n, "kernel_shape");
  const auto s = attr_ints(n, "strides", {1, 1});
  auto pads = attr_ints(n, "pads", {0, 0, 0, 0});
  if (k.size() != 2 || s.size() != 2 || pads.size() != 4)
    throw NotSupported{"kernel_shape, strides or pads of the wrong length"};
  if (attr_s(n, "auto_pad", "NOTSET") != "NOTSET" && attr_s(n, "auto_pad", "") != "VALID")
    throw NotSupported{"auto_pad " + attr_s(n, "auto_pad", "")};
  for (int64_t d : attr_ints(n, "dilations", {1, 1}))
    if (d != 1) throw NotSupported{"dilated pooling"};
  if (attr_i(n, "storage_order", 0) != 0) throw NotSupported{"storage_order 1"};
  if (n.output_size() > 1) poison(n, 1, "its indices output is used");
  Val base = x;
  if (!x.pad.empty()) {
    // A zero Pad before average pooling counts the zeros: the engine's own
    // average pooling with that padding (how DeepCanvas exports it).
    if (max || pads != std::vector<int64_t>{0, 0, 0, 0}) materialize(x);
    pads = x.pad;
    base.pad.clear();
  } else if (!max && attr_i(n, "count_include_pad", 0) == 0 &&
             pads != std::vector<int64_t>{0, 0, 0, 0}) {
    throw NotSupported{
        "padded average pooling without count_include_pad (DeepCanvas counts the padding)"};
  }
  if (pads[0] != pads[2] || pads[1] != pads[3])
    throw NotSupported{"uneven padding " + dims_str(pads)};
  // Refuses a zero stride, a kernel below 1, negative padding or sizes that
  // overflow before the ceil_mode arithmetic below divides by the stride.
  for (int d = 0; d < 2; ++d)
    conv_window(v[size_t(d + 1)], k[size_t(d)], s[size_t(d)], 1, pads[size_t(d)],
                pads[size_t(d + 2)], d == 0 ? "height" : "width");
  Attrs a;
  a.set("kernel", k);
  a.set("stride", s);
  a.set("padding", std::vector<int64_t>{pads[0], pads[1]});
  if (attr_i(n, "ceil_mode", 0)) {
    // Only where it changes the size; average pooling rounds down here.
    bool differs = false;
    for (int d = 0; d < 2; ++d) {
      // (Checked above: the padded size fits, so neither side overflows.)
      const int64_t in = v[size_t(d + 1)], p = pads[size_t(d)], st = s[size_t(d)];
      const int64_t span = in + 2 * p - k[size_t(d)];
      if (span >= 0 && span % st != 0 && st < in + p - (span - span % st)) differs = true;
    }
    if (differs && !max) throw NotSupported{"average pooling with ceil_mode"};
    if (differs) a.set("ceil_mode", true);
  }
  const NodeId src = materialize(base);
  out(n, 0, plain(add(max ? "MaxPool2D" : "AvgPool2D", clean_name(layer_base(n)), a, {src})));
}

void Importer::op_global_pool(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  if (view_of(x).size() != 3) throw NotSupported{"only 2-D global pooling is supported"};
  Val o = plain(add("GlobalAvgPool2D", clean_name(layer_base(n)), {}, {materialize(x)}));
  o.view = {o.view[0], 1, 1};  // ONNX keeps the 1×1
  out(n, 0, o);
}

void Importer::op_reduce_mean(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  if (view_of(x).size() != 3)
    throw NotSupported{"only the mean over height and width of an image is supported"};
  std::vector<int64_t> axes =
      opset_ >= 18 && has_in(n, 1) ? cin(n, 1, "axes").i : attr_ints(n, "axes");
  for (int64_t& a : axes)
    if (a < 0) a += 4;
  std::sort(axes.begin(), axes.end());
  if (axes != std::vector<int64_t>{2, 3})
    throw NotSupported{"mean over axes " + dims_str(axes) +
                       " (only over height and width, [2, 3])"};
  Val o = plain(add("GlobalAvgPool2D", clean_name(layer_base(n)), {}, {materialize(x)}));
  if (attr_i(n, "keepdims", 1)) o.view = {o.view[0], 1, 1};
  out(n, 0, o);
}

void Importer::op_flatten(const onnx::NodeProto& n) {
  const Val& x = in(n, 0);
  if (x.is_const) throw NotSupported{"Flatten of a constant"};
  const auto& v = view_of(x);
  int64_t axis = attr_i(n, "axis", 1);
  if (axis < 0) axis += int64_t(v.size()) + 1;
  if (axis != 1)
    throw NotSupported{"Flatten at axis " + std::to_string(axis) +
                       " (only axis 1, keeping the batch)"};
  if (!x.pad.empty()) materialize(x);
  Val o = x;
  o.view = {product(v)};
  o.regroup_name = clean_name(layer_base(n));
  out(n, 0, o);
}

void Importer::op_reshape(const onnx::NodeProto& n) {
  const Val& x = in(n, 0);
  const Const& sc = cin(n, 1, "the shape");
  std::vector<int64_t> shape = sc.integer ? sc.i : std::vector<int64_t>{};
  if (!sc.integer) throw NotSupported{"a shape that is not int64"};
  for (int64_t d : shape)
    if (d < -1 && d != kBatch)
      throw NotSupported{"shape " + dims_str(shape)};
    else if (d > (int64_t(1) << 30))
      throw NotSupported{"shape " + dims_str(shape) + " is too large"};
  if (x.is_const) {  // folded
    Const c = x.c;
    int64_t known = 1, infer = -1;
    for (size_t k = 0; k < shape.size(); ++k) {
      if (shape[k] == 0 && k < x.c.dims.size()) shape[k] = x.c.dims[k];
      if (shape[k] == -1)
        infer = int64_t(k);
      else if ((known *= std::max<int64_t>(shape[k], 1)) > (int64_t(1) << 32))
        throw NotSupported{"shape " + dims_str(shape) + " is too large"};
    }
    if (infer >= 0) shape[size_t(infer)] = known ? c.numel() / known : 0;
    if (product(shape) != c.numel())
      throw NotSupported{"Reshape of a constant to a size that differs"};
    c.dims = shape;
    out(n, 0, constant(c));
    return;
  }
  if (x.layout == Layout::RnnFinal) {  // [N, H] -> [-1, H]: the same
    if (shape.size() != 2 || (shape[1] != x.H && shape[1] != -1))
      throw NotSupported{"reshape of a recurrent state to " + dims_str(shape)};
    out(n, 0, x);
    return;
  }
  if (x.layout == Layout::RnnYTNDH || x.layout == Layout::RnnYNTDH) {
    if (final_.count(x.node))
      throw NotSupported{"both the final state and the sequence of a recurrent layer are used"};
    sequence_used_.insert(x.node);
    // [T, N, D, H] -> [T, N, D*H] (the next layer's input), or
    // [N, T, D, H] -> [N, T, D*H] (the sequence, batch first).
    const bool tf = x.layout == Layout::RnnYTNDH;
    if (shape.size() != 3 || (shape[tf ? 0 : 1] != 0 && shape[tf ? 0 : 1] != x.T) ||
        (shape[2] != -1 && shape[2] != x.D * x.H))
      throw NotSupported{"reshape of a recurrent output to " + dims_str(shape)};
    Val o;
    o.node = x.node;
    if (x.layout == Layout::RnnYTNDH) {
      o.layout = Layout::TimeFirst;
      o.view = {x.T, x.D * x.H};
    } else {
      o.view = {x.T, x.D * x.H};
    }
    out(n, 0, o);
    return;
  }
  const auto& v = view_of(x);
  if (!x.pad.empty()) materialize(x);
  if (shape.empty()) throw NotSupported{"reshape to a scalar"};
  const int64_t b = shape[0];
  const bool batch_first =
      b == 0 || b == kBatch ||
      (b == -1 && std::count(shape.begin(), shape.end(), -1) == 1 &&
       product(std::vector<int64_t>(shape.begin() + 1, shape.end())) == product(v)) ||
      (fixed_batch_ > 0 && b == fixed_batch_);
  if (!batch_first)
    throw NotSupported{"reshape to " + dims_str(shape) + ", which changes the batch dimension"};
  std::vector<int64_t> view;
  int64_t known = 1, infer = -1;
  for (size_t k = 1; k < shape.size(); ++k) {
    int64_t d = shape[k];
    if (d == 0) {
      if (k - 1 >= v.size())
        throw NotSupported{"shape " + dims_str(shape) + " copies a dimension the input lacks"};
      d = v[k - 1];
    }
    if (d == -1) {
      if (infer >= 0) throw NotSupported{"two -1 in shape " + dims_str(shape)};
      infer = int64_t(view.size());
    } else if (d <= 0) {
      throw NotSupported{"shape " + dims_str(shape)};
    } else if ((known *= d) > (int64_t(1) << 32)) {
      throw NotSupported{"shape " + dims_str(shape) + " is too large"};
    }
    view.push_back(d);
  }
  if (b == -1 && infer < 0) infer = -2;  // the batch was the -1
  if (infer >= 0) view[size_t(infer)] = product(v) / known;
  if (product(view) != product(v))
    throw NotSupported{"reshape of " + dims_str(v) + " to " + dims_str(shape)};
  Val o = x;
  o.view = view;
  o.regroup_name = clean_name(layer_base(n));
  out(n, 0, o);
}

std::vector<int64_t> Importer::axes_of(const onnx::NodeProto& n, int input, int rank) {
  std::vector<int64_t> axes;
  if (opset_ >= 13) {
    if (has_in(n, input)) axes = cin(n, input, "axes").i;
  } else {
    axes = attr_ints(n, "axes");
  }
  for (int64_t& a : axes)
    if (a < 0) a += rank;
  std::sort(axes.begin(), axes.end());
  return axes;
}

void Importer::op_squeeze(const onnx::NodeProto& n) {
  const Val& x = in(n, 0);
  if (x.is_const) {
    Const c = x.c;
    auto axes = axes_of(n, 1, int(c.dims.size()));
    std::vector<int64_t> d;
    for (size_t k = 0; k < c.dims.size(); ++k)
      if (axes.empty() ? c.dims[k] != 1 : !std::binary_search(axes.begin(), axes.end(), int64_t(k)))
        d.push_back(c.dims[k]);
    c.dims = d;
    out(n, 0, constant(c));
    return;
  }
  if (x.layout == Layout::RnnY) {  // [T, 1, N, H] -> [T, N, H]
    auto axes = axes_of(n, 1, 4);
    if (axes != std::vector<int64_t>{1} || x.D != 1)
      throw NotSupported{"squeeze of a recurrent output other than its single direction"};
    Val o;
    o.node = x.node;
    o.layout = Layout::TimeFirst;
    o.view = {x.T, x.H};
    sequence_used_.insert(x.node);
    out(n, 0, o);
    return;
  }
  const auto& v = view_of(x);
  auto axes = axes_of(n, 1, int(v.size()) + 1);
  std::vector<int64_t> view;
  for (size_t k = 0; k < v.size(); ++k) {
    const bool drop =
        axes.empty() ? v[k] == 1 : std::binary_search(axes.begin(), axes.end(), int64_t(k + 1));
    if (drop && v[k] != 1)
      throw NotSupported{"squeeze of a dimension of size " + std::to_string(v[k])};
    if (!drop) view.push_back(v[k]);
  }
  if (!axes.empty() && axes[0] == 0) throw NotSupported{"squeeze of the batch dimension"};
  Val o = x;
  o.view = view;
  out(n, 0, o);
}

void Importer::op_unsqueeze(const onnx::NodeProto& n) {
  const Val& x = in(n, 0);
  const int rank = x.is_const ? int(x.c.dims.size()) : int(view_of(x).size()) + 1;
  std::vector<int64_t> axes;
  if (opset_ >= 13)
    axes = cin(n, 1, "axes").i;
  else
    axes = attr_ints(n, "axes");
  if (axes.size() > 8) throw NotSupported{"more than 8 new axes"};
  const int out_rank = rank + int(axes.size());
  for (int64_t& a : axes)
    if (a < 0) a += out_rank;
  std::sort(axes.begin(), axes.end());
  std::vector<int64_t> src = x.is_const ? x.c.dims : view_of(x), d;
  if (!x.is_const) src.insert(src.begin(), 1);  // the batch's place
  size_t j = 0;
  for (int k = 0; k < out_rank; ++k)
    d.push_back(std::binary_search(axes.begin(), axes.end(), int64_t(k))
                    ? 1
                    : (j < src.size() ? src[j++] : 1));
  if (x.is_const) {
    Const c = x.c;
    c.dims = d;
    out(n, 0, constant(c));
    return;
  }
  if (!axes.empty() && axes[0] == 0) throw NotSupported{"unsqueeze before the batch dimension"};
  Val o = x;
  o.view.assign(d.begin() + 1, d.end());
  out(n, 0, o);
}

void Importer::op_transpose(const onnx::NodeProto& n) {
  const Val& xv = in(n, 0);
  const auto perm = attr_ints(n, "perm");
  if (xv.is_const) {  // a 2-D constant (PyTorch's pad arithmetic)
    const Const& c = xv.c;
    if (c.dims.size() != 2 || (!perm.empty() && perm != std::vector<int64_t>{1, 0}))
      throw NotSupported{"Transpose of a constant other than a matrix"};
    Const o;
    o.integer = c.integer;
    o.dims = {c.dims[1], c.dims[0]};
    fold(c.numel());
    for (int64_t q = 0; q < (c.numel() ? c.dims[1] : 0); ++q)  // none over an empty one
      for (int64_t r = 0; r < c.dims[0]; ++r) {
        if (c.integer)
          o.i.push_back(c.i[size_t(r * c.dims[1] + q)]);
        else
          o.f.push_back(c.f[size_t(r * c.dims[1] + q)]);
      }
    out(n, 0, constant(o));
    return;
  }
  const Val& x = xv;
  using P = std::vector<int64_t>;
  Val o;
  o.node = x.node;
  o.T = x.T;
  o.D = x.D;
  o.H = x.H;
  if (x.layout == Layout::Plain && x.view.size() == 2 && perm == P{1, 0, 2}) {
    o.node = materialize(x);  // [N, T, F] -> [T, N, F], into a recurrent layer
    o.layout = Layout::TimeFirst;
    o.view = x.view;
  } else if (x.layout == Layout::TimeFirst && perm == P{1, 0, 2}) {
    o.layout = Layout::Plain;
    o.view = x.view;
  } else if (x.layout == Layout::RnnY && perm == P{0, 2, 1, 3}) {
    o.layout = Layout::RnnYTNDH;
  } else if (x.layout == Layout::RnnY && perm == P{2, 0, 1, 3}) {
    o.layout = Layout::RnnYNTDH;
  } else {
    throw NotSupported{"Transpose with perm " + dims_str(perm) +
                       " (only the transposes around recurrent layers are supported)"};
  }
  out(n, 0, o);
}

Val Importer::last_step(const onnx::NodeProto& n, const Val& x, int64_t index, bool keep_dim) {
  const auto& v = view_of(x);
  if (v.size() != 2) throw NotSupported{"picking one step needs a steps×features input"};
  if (index < -v[0] || index >= v[0])
    throw NotSupported{"index " + std::to_string(index) + " is outside the " +
                       std::to_string(v[0]) + " steps"};
  // One spelling per step (the exporter writes T-1 for -1, which OpenCV needs).
  if (index < 0) index += v[0];
  Attrs a;
  a.set("index", index == v[0] - 1 ? int64_t(-1) : index);
  Val o = plain(add("LastStep", clean_name(layer_base(n)), a, {materialize(x)}));
  if (keep_dim) o.view = {1, v[1]};
  return o;
}

void Importer::op_gather(const onnx::NodeProto& n) {
  const Val& x = in(n, 0);
  const Const& idx = cin(n, 1, "the indices");
  int64_t axis = attr_i(n, "axis", 0);
  if (x.is_const) {
    const Const& c = x.c;
    const int rank = int(c.dims.size());
    if (rank == 0) throw NotSupported{"Gather from a scalar"};
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) throw NotSupported{"axis out of range"};
    // The loops below run outer × indices × inner times, also when some of
    // them are 0 (an empty constant): the extent, with 0s read as 1s.
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < axis; ++k) outer *= c.dims[size_t(k)];
    for (int k = int(axis) + 1; k < rank; ++k) inner *= c.dims[size_t(k)];
    const int64_t len = c.dims[size_t(axis)];
    fold(product({std::max<int64_t>(outer, 1), std::max<int64_t>(idx.numel(), 1),
                  std::max<int64_t>(inner, 1)}));
    Const o;
    o.integer = c.integer;
    o.dims.assign(c.dims.begin(), c.dims.begin() + axis);
    o.dims.insert(o.dims.end(), idx.dims.begin(), idx.dims.end());
    o.dims.insert(o.dims.end(), c.dims.begin() + axis + 1, c.dims.end());
    for (int64_t a = 0; a < outer; ++a)
      for (int64_t q = 0; q < idx.numel(); ++q) {
        int64_t j = idx.int_at(q);
        if (j < 0) j += len;
        if (j < 0 || j >= len) throw NotSupported{"index out of range"};
        for (int64_t b = 0; b < inner; ++b) o.push_from(c, (a * len + j) * inner + b);
      }
    out(n, 0, constant(o));
    return;
  }
  if (x.layout == Layout::RnnY || x.layout == Layout::RnnStep) {
    // Y[t] then [d]: one direction's state at one step.
    if (axis != 0 || idx.numel() != 1 || !idx.dims.empty())
      throw NotSupported{"a Gather of a recurrent output other than one step, then one direction"};
    const bool step = x.layout == Layout::RnnY;
    const int64_t len = step ? x.T : x.D;
    int64_t i = idx.int_at(0);
    if (i < 0) i += len;
    if (i < 0 || i >= len) throw NotSupported{"index out of range"};
    Val o = x;
    o.layout = step ? Layout::RnnStep : Layout::RnnFinal;
    (step ? o.t : o.d) = i;
    out(n, 0, o);
    return;
  }
  if (axis < 0) axis += int64_t(view_of(x).size()) + 1;
  if (axis != 1 || idx.numel() != 1)
    throw NotSupported{"Gather on axis " + std::to_string(axis) +
                       " (only one step of a sequence, axis 1, is supported)"};
  out(n, 0, last_step(n, x, idx.int_at(0), !idx.dims.empty()));
}

void Importer::op_slice(const onnx::NodeProto& n) {
  const Val& x = in(n, 0);
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset_ >= 10) {
    starts = cin(n, 1, "starts").i;
    ends = cin(n, 2, "ends").i;
    if (has_in(n, 3)) axes = cin(n, 3, "axes").i;
    if (has_in(n, 4)) steps = cin(n, 4, "steps").i;
  } else {
    starts = attr_ints(n, "starts");
    ends = attr_ints(n, "ends");
    axes = attr_ints(n, "axes");
  }
  const int rank = x.is_const ? int(x.c.dims.size()) : int(view_of(x).size()) + 1;
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(int64_t(k));
  steps.resize(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size())
    throw NotSupported{"starts, ends and axes differ in length"};
  std::vector<int64_t> dims = x.is_const ? x.c.dims : view_of(x);
  if (!x.is_const) dims.insert(dims.begin(), 1);
  // The indices taken along each axis, start + i·step for i < count (ONNX's
  // clamping rules, steps of either sign: PyTorch writes a reversal as a
  // slice with step -1). Counted, not listed: an axis may be 2^62 long in
  // an empty constant, and a step may be near 2^63.
  struct Range {
    int64_t start = 0, count = 0, step = 1;
    int64_t at(int64_t i) const { return start + i * step; }  // i·|step| < the axis length
  };
  std::vector<Range> take(static_cast<size_t>(rank));
  for (int k = 0; k < rank; ++k) take[size_t(k)] = {0, dims[size_t(k)], 1};
  for (size_t k = 0; k < starts.size(); ++k) {
    const int64_t a = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (a < 0 || a >= rank || steps[k] == 0)
      throw NotSupported{"a slice with step 0 or an axis out of range"};
    const int64_t len = dims[size_t(a)], st = steps[k];
    auto norm = [&](int64_t v) { return v < 0 ? (v < -len ? -1 : v + len) : v; };
    int64_t b = norm(starts[k]), e = norm(ends[k]);
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, len);
      e = std::clamp<int64_t>(e, 0, len);
    } else {
      b = std::clamp<int64_t>(b, -1, len - 1);
      e = std::clamp<int64_t>(e, -1, len - 1);
    }
    // Both within [-1, len], so the gap cannot overflow; |step| as unsigned
    // (-INT64_MIN does not fit).
    const int64_t gap = st > 0 ? e - b : b - e;
    const uint64_t stride = st > 0 ? uint64_t(st) : 0 - uint64_t(st);
    take[size_t(a)] = {b, gap > 0 ? int64_t((uint64_t(gap) - 1) / stride) + 1 : 0, st};
  }
  if (x.is_const) {
    const Const& c = x.c;
    Const o;
    o.integer = c.integer;
    for (int k = 0; k < rank; ++k) o.dims.push_back(take[size_t(k)].count);
    const int64_t total = product(o.dims);  // at most c's
    fold(total);
    std::vector<int64_t> idx(size_t(rank), 0);
    for (int64_t q = 0; q < total; ++q) {
      int64_t r = q, s = 0;
      for (int k = rank - 1; k >= 0; --k) {
        idx[size_t(k)] = take[size_t(k)].at(r % o.dims[size_t(k)]);
        r /= o.dims[size_t(k)];
      }
      for (int k = 0; k < rank; ++k) s = s * dims[size_t(k)] + idx[size_t(k)];
      o.push_from(c, s);
    }
    out(n, 0, constant(o));
    return;
  }
  // One step of a sequence, x[:, t:t+1]; every other axis whole and in order.
  for (int k = 0; k < rank; ++k) {
    const Range& t = take[size_t(k)];
    if (k != 1 && (t.count != dims[size_t(k)] || (t.count > 1 && (t.start != 0 || t.step != 1))))
      throw NotSupported{"a slice other than one step of a sequence"};
  }
  if (rank != 3 || take[1].count != 1)
    throw NotSupported{"a slice other than one step of a sequence"};
  out(n, 0, last_step(n, x, take[1].start, true));
}

void Importer::op_gemm(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  const Const& w = cin(n, 1, "B (the weight)");
  if (attr_i(n, "transA", 0) != 0 || attr_f(n, "alpha", 1.f) != 1.f ||
      attr_f(n, "beta", 1.f) != 1.f)
    throw NotSupported{"Gemm with transA, alpha or beta (only y = x·Wᵀ + b)"};
  if (view_of(x).size() != 1 || w.dims.size() != 2) throw NotSupported{"Gemm of a non-matrix"};
  const bool tb = attr_i(n, "transB", 0) != 0;
  const int64_t in_f = tb ? w.dims[1] : w.dims[0], units = tb ? w.dims[0] : w.dims[1];
  if (in_f != x.view[0])
    throw NotSupported{"the weight does not match the input's " + std::to_string(x.view[0]) +
                       " features"};
  Tensor wt{Shape{units, in_f}};
  for (int64_t o = 0; o < units; ++o)
    for (int64_t i = 0; i < in_f; ++i)
      wt.f32()[o * in_f + i] = float(tb ? w.at(o * in_f + i) : w.at(i * units + o));
  Attrs a;
  a.set("units", units);
  std::vector<std::pair<std::string, Tensor>> p = {{"weight", wt}};
  a.set("bias", has_in(n, 2));
  if (has_in(n, 2)) {
    const Const& b = cin(n, 2, "C (the bias)");
    Tensor bt{Shape{units}};
    if (b.numel() == 1)
      for (int64_t o = 0; o < units; ++o) bt.f32()[o] = float(b.at(0));
    else if (b.numel() == units)
      for (int64_t o = 0; o < units; ++o) bt.f32()[o] = float(b.at(o));
    else
      throw NotSupported{"C is not one value per output"};
    p.push_back({"bias", bt});
  }
  out(n, 0,
      plain(add("Dense", base_name(n, n.input(1), "weight"), a, {materialize(x)}, std::move(p))));
}

void Importer::op_matmul(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  const Const& w = cin(n, 1, "the second operand");
  const auto& v = view_of(x);
  if (w.dims.size() != 2 || v.empty() || v.back() != w.dims[0])
    throw NotSupported{"MatMul by something other than a [features, outputs] weight"};
  const int64_t in_f = w.dims[0], units = w.dims[1];
  Tensor wt{Shape{units, in_f}};
  for (int64_t o = 0; o < units; ++o)
    for (int64_t i = 0; i < in_f; ++i) wt.f32()[o * in_f + i] = float(w.at(i * units + o));
  Attrs a;
  a.set("units", units);
  a.set("bias", false);  // a following Add of a constant becomes its bias
  std::string type = v.size() == 1 ? "Dense" : v.size() == 2 ? "TimeDistributedDense" : "";
  if (type.empty()) throw NotSupported{"MatMul of a " + std::to_string(v.size() + 1) + "-D input"};
  std::string base = module_from_initializer(n.input(1), "weight");
  if (base.empty()) base = layer_base(n);
  out(n, 0, plain(add(type, clean_name(base), a, {materialize(x)}, {{"weight", wt}})));
}

void Importer::op_add(const onnx::NodeProto& n) {
  std::vector<const Val*> ins;
  for (int k = 0; k < n.input_size(); ++k) ins.push_back(&in(n, k));
  const bool all_const =
      std::all_of(ins.begin(), ins.end(), [](const Val* v) { return v->is_const; });
  if (all_const) {
    op_arith(n);
    return;
  }
  if (ins.size() == 2 && (ins[0]->is_const || ins[1]->is_const)) {
    // A bias after MatMul (or a bias-free Conv/Dense): folded into the layer.
    const Val& x = ins[0]->is_const ? *ins[1] : *ins[0];
    const Const& b = ins[0]->is_const ? ins[0]->c : ins[1]->c;
    Node& node = g_.node(x.node);
    const bool biasless =
        (node.type == "Dense" || node.type == "TimeDistributedDense" || node.type == "Conv2D") &&
        !node.attrs.b("bias") && g_.out_edges(x.node).empty() && x.layout == Layout::Plain;
    const std::string& xname = ins[0]->is_const ? n.input(1) : n.input(0);
    if (!biasless || uses_[xname] != 1)
      throw NotSupported{"Add of a constant other than the bias of the layer before it"};
    const int64_t units = node.type == "Conv2D" ? node.attrs.i("filters") : node.attrs.i("units");
    Tensor bt{Shape{units}};
    if (b.numel() == units)
      for (int64_t o = 0; o < units; ++o) bt.f32()[o] = float(b.at(o));
    else if (b.numel() == 1)
      for (int64_t o = 0; o < units; ++o) bt.f32()[o] = float(b.at(0));
    else
      throw NotSupported{"the constant is not one value per output of the layer before it"};
    if (node.type == "Conv2D" && b.numel() == units &&
        !(b.dims.size() == 3 && b.dims[1] == 1 && b.dims[2] == 1) &&
        !(b.dims.size() == 4 && b.dims[2] == 1 && b.dims[3] == 1))
      throw NotSupported{"the constant is not one value per channel of the Conv before it"};
    g_.set_attr(x.node, "bias", true);
    params_[x.node].push_back({"bias", bt});
    out(n, 0, x);
    return;
  }
  if (ins.size() < 2 || ins.size() > 8)
    throw NotSupported{"a sum of " + std::to_string(ins.size()) + " inputs (2 to 8 are supported)"};
  std::vector<NodeId> srcs;
  for (const Val* v : ins) {
    if (v->is_const) throw NotSupported{"a sum of computed values and constants"};
    if (view_of(*v) != view_of(*ins[0]))
      throw NotSupported{"Add with broadcasting (shapes " + dims_str(ins[0]->view) + " and " +
                         dims_str(v->view) + ")"};
  }
  for (const Val* v : ins) srcs.push_back(materialize(*v));
  Attrs a;
  a.set("inputs", int64_t(ins.size()));
  out(n, 0, plain(add("Add", clean_name(layer_base(n)), a, srcs)));
}

// Elementwise arithmetic on constants (shape computations), with scalar or
// equal-shape operands.
void Importer::op_arith(const onnx::NodeProto& n) {
  std::vector<const Const*> cs;
  for (int k = 0; k < n.input_size(); ++k) cs.push_back(&cin(n, k, "each operand"));
  // Decided once: the loops below may run over millions of folded values.
  const std::string& name = n.op_type();
  const char op = name == "Sub" ? '-' : name == "Mul" ? '*' : name == "Div" ? '/' : '+';
  Const o = *cs[0];
  for (size_t j = 1; j < cs.size(); ++j) {
    const Const& b = *cs[j];
    fold(std::max(o.numel(), b.numel()));
    if (b.numel() != 1 && b.numel() != o.numel()) {
      if (o.numel() == 1) {
        Const t = b;
        for (int64_t k = 0; k < t.numel(); ++k) {
          if (t.integer)
            t.i[size_t(k)] = o.int_at(0);
          else
            t.f[size_t(k)] = float(o.at(0));
        }
        o = t;
      } else {
        throw NotSupported{"broadcasting between constants of shapes " + dims_str(o.dims) +
                           " and " + dims_str(b.dims)};
      }
    }
    for (int64_t k = 0; k < o.numel(); ++k) {
      const int64_t bk = b.numel() == 1 ? 0 : k;
      if (o.integer && b.integer) {
        int64_t x = o.i[size_t(k)], y = b.i[size_t(bk)];
        if (op == '/' && y == 0) throw NotSupported{"division by zero"};
        int64_t r = 0;
        const bool over = op == '-'   ? __builtin_sub_overflow(x, y, &r)
                          : op == '*' ? __builtin_mul_overflow(x, y, &r)
                          : op == '/' ? (y == -1 && x == INT64_MIN) || (r = x / y, false)
                                      : __builtin_add_overflow(x, y, &r);
        if (over) throw NotSupported{"integer overflow in a shape computation"};
        o.i[size_t(k)] = r;
      } else {
        if (o.integer) {
          o.f.assign(o.i.begin(), o.i.end());
          o.i.clear();
          o.integer = false;
        }
        const float x = o.f[size_t(k)], y = float(b.at(bk));
        o.f[size_t(k)] = op == '-' ? x - y : op == '*' ? x * y : op == '/' ? x / y : x + y;
      }
    }
  }
  out(n, 0, constant(o));
}

void Importer::op_concat(const onnx::NodeProto& n) {
  std::vector<const Val*> ins;
  for (int k = 0; k < n.input_size(); ++k) ins.push_back(&in(n, k));
  int64_t axis = attr_i(n, "axis", 0);
  if (std::all_of(ins.begin(), ins.end(), [](const Val* v) { return v->is_const; })) {
    Const o;
    o.integer = ins[0]->c.integer;
    const int rank = int(ins[0]->c.dims.size());
    if (rank != 1 || (axis != 0 && axis != -1))
      throw NotSupported{"Concat of constants other than 1-D ones"};
    for (const Val* v : ins) {
      if (v->c.dims.size() != 1) throw NotSupported{"Concat of constants of different ranks"};
      fold(v->c.numel());
      for (int64_t k = 0; k < v->c.numel(); ++k) {
        if (o.integer)
          o.i.push_back(v->c.int_at(k));
        else
          o.f.push_back(float(v->c.at(k)));
      }
    }
    o.dims = {o.numel()};
    out(n, 0, constant(o));
    return;
  }
  if (ins.size() == 2 && ins[0]->layout == Layout::RnnFinal && ins[1]->layout == Layout::RnnFinal) {
    // Both directions' final states, forward first, along the features.
    const Val& f = *ins[0];
    const Val& r = *ins[1];
    if (f.node != r.node || f.D != 2 || (axis != 1 && axis != -1) || f.d != 0 || f.t != f.T - 1 ||
        r.d != 1 || r.t != 0)
      throw NotSupported{"a Concat of recurrent states other than both directions' final ones"};
    out(n, 0, plain(final_state(f)));
    return;
  }
  if (ins.size() < 2 || ins.size() > 8)
    throw NotSupported{"Concat of " + std::to_string(ins.size()) +
                       " inputs (2 to 8 are supported)"};
  const int rank = int(view_of(*ins[0]).size()) + 1;
  if (axis < 0) axis += rank;
  if (axis < 1 || axis >= rank) throw NotSupported{"Concat along the batch dimension"};
  std::vector<NodeId> srcs;
  for (const Val* v : ins) srcs.push_back(materialize(*v));
  Attrs a;
  a.set("inputs", int64_t(ins.size()));
  a.set("axis", axis - 1);
  out(n, 0, plain(add("Concat", clean_name(layer_base(n)), a, srcs)));
}

void Importer::op_pad(const onnx::NodeProto& n) {
  const Val& x = layer_in(n, 0);
  std::vector<int64_t> pads;
  float value = 0.f;
  if (opset_ >= 11) {
    pads = cin(n, 1, "pads").i;
    if (has_in(n, 2)) value = float(cin(n, 2, "the constant value").at(0));
    if (has_in(n, 3)) throw NotSupported{"Pad with axes"};
  } else {
    pads = attr_ints(n, "pads");
    value = attr_f(n, "value", 0.f);
  }
  if (attr_s(n, "mode", "constant") != "constant" || value != 0.f)
    throw NotSupported{"only zero padding (mode constant, value 0) is supported"};
  const auto& v = view_of(x);
  if (v.size() != 3 || pads.size() != 8)
    throw NotSupported{"only padding of an image (N, C, H, W) is supported"};
  if (pads[0] || pads[1] || pads[4] || pads[5])
    throw NotSupported{"padding of the batch or channel dimension"};
  for (int64_t p : pads)
    if (p < 0) throw NotSupported{"negative padding (cropping)"};
  Val o = x;
  if (o.pad.empty()) o.pad = {0, 0, 0, 0};
  for (int s = 0; s < 4; ++s)  // top, left, bottom, right from ONNX's begins and ends
    o.pad[size_t(s)] = checked_add(o.pad[size_t(s)], pads[size_t(s < 2 ? s + 2 : s + 4)], "pads");
  out(n, 0, o);
}

void Importer::op_shape(const onnx::NodeProto& n) {
  const Val& x = in(n, 0);
  Const c;
  c.integer = true;
  if (x.is_const) {
    c.i = x.c.dims;
  } else if (x.layout == Layout::Plain) {
    if (!x.pad.empty()) throw NotSupported{"the shape of a padded value"};
    c.i = x.view;
    c.i.insert(c.i.begin(), kBatch);
  } else if (x.layout == Layout::TimeFirst) {
    c.i = {x.view[0], kBatch, x.view[1]};
  } else if (x.layout == Layout::RnnY) {
    c.i = {x.T, x.D, kBatch, x.H};
  } else if (x.layout == Layout::RnnYTNDH) {
    c.i = {x.T, kBatch, x.D, x.H};
  } else if (x.layout == Layout::RnnStep) {
    c.i = {x.D, kBatch, x.H};
  } else if (x.layout == Layout::RnnFinal) {
    c.i = {kBatch, x.H};
  } else {
    c.i = {kBatch, x.T, x.D, x.H};
  }
  const int64_t r = int64_t(c.i.size());
  int64_t s = attr_i(n, "start", 0), e = attr_i(n, "end", r);
  if (s < 0) s += r;
  if (e < 0) e += r;
  s = std::clamp<int64_t>(s, 0, r);
  e = std::clamp<int64_t>(e, s, r);
  c.i = std::vector<int64_t>(c.i.begin() + s, c.i.begin() + e);
  c.dims = {int64_t(c.i.size())};
  out(n, 0, constant(c));
}

void Importer::op_cast(const onnx::NodeProto& n) {
  const Val& x = in(n, 0);
  const int64_t to = attr_i(n, "to", onnx::TensorProto::FLOAT);
  const bool to_float = to == onnx::TensorProto::FLOAT || to == onnx::TensorProto::DOUBLE;
  if (!x.is_const) {
    if (!to_float) throw NotSupported{"Cast of computed values to a non-float type"};
    out(n, 0, x);
    return;
  }
  Const c = x.c;
  fold(c.numel());
  if (to_float && c.integer) {
    c.f.assign(c.i.begin(), c.i.end());
    c.i.clear();
    c.integer = false;
  } else if (!to_float && !c.integer) {
    for (float f : c.f) c.i.push_back(to_int(f));
    c.f.clear();
    c.integer = true;
  }
  out(n, 0, constant(c));
}

// A constant of the dimensions `shape` holds (the batch read as one sample:
// one stands for any), each element the single value of `value`:
// ConstantOfShape and Expand of a scalar.
Const Importer::filled(const Const& shape, const Const& value) {
  Const c;
  c.integer = value.integer;
  for (int64_t k = 0; k < shape.numel(); ++k) {
    const int64_t d = shape.int_at(k);
    c.dims.push_back(d == kBatch ? 1 : d);
    if (c.dims.back() < 0 || c.dims.back() > (1 << 24))
      throw NotSupported{"shape " + dims_str(c.dims)};
  }
  const int64_t n = product(c.dims);
  fold(n);
  if (c.integer)
    c.i.assign(size_t(n), value.int_at(0));
  else
    c.f.assign(size_t(n), float(value.at(0)));
  return c;
}

void Importer::op_constant_of_shape(const onnx::NodeProto& n) {
  Const v;  // float 0 unless given
  v.f = {0.f};
  if (const auto* a = find_attr(n, "value")) {
    v = read_tensor(a->t());
    if (v.numel() != 1) throw NotSupported{"a value that is not a single number"};
  }
  out(n, 0, constant(filled(cin(n, 0, "the shape"), v)));
}

void Importer::op_expand(const onnx::NodeProto& n) {
  const Const& x = cin(n, 0, "the input");
  if (x.numel() != 1) throw NotSupported{"Expand of more than one value"};
  out(n, 0, constant(filled(cin(n, 1, "the shape"), x)));
}

// ONNX's gate order back to PyTorch's (the exporter's gate_order, inverted):
// ONNX block p holds PyTorch block torch_block[p].
std::vector<int> torch_block(const std::string& op) {
  if (op == "LSTM") return {0, 3, 1, 2};  // i,o,f,c -> i,f,g,o
  if (op == "GRU") return {1, 0, 2};      // z,r,h -> r,z,n
  return {0};
}

void Importer::op_recurrent(const onnx::NodeProto& n) {
  const std::string op = n.op_type();
  const Val& x = layer_in(n, 0);
  if (x.layout != Layout::TimeFirst)
    throw NotSupported{
        "its input is not a sequence in time-first order (a Transpose of [N, T, F] or a recurrent "
        "layer's output)"};
  const Const& W = cin(n, 1, "W");
  const Const& R = cin(n, 2, "R");
  const int64_t H = attr_i(n, "hidden_size", 0);
  const std::string dir = attr_s(n, "direction", "forward");
  if (dir != "forward" && dir != "bidirectional")
    throw NotSupported{"direction " + dir + " (forward and bidirectional are supported)"};
  const int64_t D = dir == "bidirectional" ? 2 : 1;
  const auto order = torch_block(op);
  const int64_t G = int64_t(order.size());
  const int64_t F = x.view[1];
  // hidden_size is the model's: G·H checked (a wrapped product could match
  // an empty W), and 2·G·H below is then at most W's extent doubled.
  if (H < 1) throw NotSupported{"hidden_size " + std::to_string(H) + " (at least 1)"};
  const int64_t GH = checked_mul(G, H, "gates × hidden_size");
  if (W.dims != std::vector<int64_t>{D, GH, F} || R.dims != std::vector<int64_t>{D, GH, H})
    throw NotSupported{"W or R has an unexpected shape"};
  if (has_in(n, 4)) throw NotSupported{"sequence_lens (sequences of different lengths)"};
  for (int k : {5, 6})
    if (has_in(n, k)) {
      const Const& s = cin(n, k, k == 5 ? "initial_h" : "initial_c");
      for (int64_t q = 0; q < s.numel(); ++q)
        if (s.at(q) != 0) throw NotSupported{"a non-zero initial state"};
    }
  if (has_in(n, 7)) throw NotSupported{"peephole weights"};
  if (find_attr(n, "clip")) throw NotSupported{"cell clipping"};
  if (attr_i(n, "input_forget", 0) || attr_i(n, "layout", 0))
    throw NotSupported{"input_forget or layout 1"};
  Attrs a;
  a.set("hidden_size", H);
  a.set("num_layers", int64_t(1));
  a.set("bidirectional", D == 2);
  a.set("return_sequences", true);
  a.set("bias", has_in(n, 3));
  std::string type = op == "LSTM" ? "LSTM" : op == "GRU" ? "GRU" : "SimpleRNN";
  if (const auto* at = find_attr(n, "activations")) {
    std::vector<std::string> def = op == "LSTM"
                                       ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                   : op == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                 : std::vector<std::string>{"Tanh"};
    const size_t per = def.size();
    for (int k = 0; k < at->strings_size(); ++k) {
      const std::string& s = at->strings(k);
      if (op == "RNN" && (s == "Relu" || s == "Tanh")) {
        a.set("nonlinearity", std::string(s == "Relu" ? "relu" : "tanh"));
        continue;
      }
      if (s != def[size_t(k) % per])
        throw NotSupported{"activation " + s + " (only the default ones are supported)"};
    }
  }
  if (op == "GRU" && attr_i(n, "linear_before_reset", 0) != 1)
    throw NotSupported{
        "linear_before_reset 0 (DeepCanvas's GRU is PyTorch's, which applies the reset gate after "
        "the recurrent product: linear_before_reset 1)"};
  std::vector<std::pair<std::string, Tensor>> p;
  auto reorder = [&](const Const& c, int64_t d, int64_t offset, int64_t row) {
    Tensor t{row > 1 ? Shape{GH, row} : Shape{GH}};
    const int64_t block = H * row;
    for (int64_t q = 0; q < G; ++q) {
      const int64_t src = offset + q * block, dst = int64_t(order[size_t(q)]) * block;
      for (int64_t e = 0; e < block; ++e)
        t.f32()[dst + e] = float(c.at(d * (c.numel() / D) + src + e));
    }
    return t;
  };
  const Const* B = has_in(n, 3) ? &cin(n, 3, "B") : nullptr;
  if (B && B->dims != std::vector<int64_t>{D, 2 * GH})
    throw NotSupported{"B has an unexpected shape"};
  for (int64_t d = 0; d < D; ++d) {
    const std::string sfx = std::string("_l0") + (d ? "_reverse" : "");
    p.push_back({"weight_ih" + sfx, reorder(W, d, 0, F)});
    p.push_back({"weight_hh" + sfx, reorder(R, d, 0, H)});
    if (B) {
      p.push_back({"bias_ih" + sfx, reorder(*B, d, 0, 1)});
      p.push_back({"bias_hh" + sfx, reorder(*B, d, GH, 1)});
    }
  }
  std::string base = layer_base(n);
  if (base.empty()) base = type == "SimpleRNN" ? "rnn" : type == "LSTM" ? "lstm" : "gru";
  Val o;
  o.node = add(type, clean_name(base), a, {x.node}, std::move(p));
  o.layout = Layout::RnnY;
  o.T = x.view[0];
  o.D = D;
  o.H = H;
  out(n, 0, o);
  for (int k = 1; k < n.output_size(); ++k)
    poison(n, k,
           "its final state output " + std::string(k == 1 ? "Y_h" : "Y_c") +
               " is used (supported: the output sequence Y, e.g. y[:, -1])");
}

void Importer::add_input(const onnx::ValueInfoProto& vi) {
  const auto& t = vi.type().tensor_type();
  if (!vi.type().has_tensor_type()) throw Error("input '" + vi.name() + "' is not a tensor");
  if (t.elem_type() != onnx::TensorProto::FLOAT)
    throw Error("input '" + vi.name() + "' has element type " + std::to_string(t.elem_type()) +
                "; DeepCanvas networks take float32 inputs (token-id inputs are not imported yet)");
  std::vector<int64_t> dims;
  const int rank = t.shape().dim_size();
  if (rank < 2 || rank > 4)
    throw Error("input '" + vi.name() + "' has " + std::to_string(rank) +
                " dimensions; supported: [N, features], [N, steps, features] or [N, C, H, W]");
  for (int k = 0; k < rank; ++k) {
    const auto& d = t.shape().dim(k);
    if (k == 0) {
      if (d.has_dim_value()) fixed_batch_ = d.dim_value();
      continue;
    }
    if (!d.has_dim_value() || d.dim_value() <= 0)
      throw Error("input '" + vi.name() + "' has a dynamic size in dimension " + std::to_string(k) +
                  (d.has_dim_param() ? " ('" + d.dim_param() + "')" : std::string()) +
                  "; DeepCanvas needs a fixed input size: export the model with a fixed size (only "
                  "the batch, dimension 0, may be dynamic)");
    dims.push_back(d.dim_value());
  }
  // Before anything is made from it (each dimension is range-checked by the
  // layer; their product is checked here).
  checked_numel(dims, "input '" + vi.name() + "' of shape " + dims_str(dims));
  Attrs a;
  std::string type = "Input";
  if (rank == 3) {
    type = "SequenceInput";
    a.set("steps", dims[0]);
    a.set("features", dims[1]);
  } else {
    a.set("shape", dims);
  }
  std::string name = clean_name(vi.name());
  if (name.empty()) name = "input";
  const NodeId id = g_.add_node(type, name, a);
  scope_[id] = name;
  shapes_[id] = Shape(dims);
  params_[id] = {};
  vals_[vi.name()] = plain(id);
}

// PyTorch writes a stacked nn.LSTM/GRU as one ONNX op per layer; the layers
// of one module (same scope, same form) become one DeepCanvas layer again,
// whose weights then carry PyTorch's names (rnn.weight_ih_l1).
void Importer::merge_recurrent() {
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [id, node] : g_.nodes()) {
      if (node.type != "LSTM" && node.type != "GRU" && node.type != "SimpleRNN") continue;
      const auto outs = g_.out_edges(id);
      if (outs.size() != 1 || !node.attrs.b("return_sequences")) continue;
      const NodeId next = outs[0].dst;
      const Node& b = g_.node(next);
      if (b.type != node.type || scope_[next] != scope_[id]) continue;
      bool same = true;
      for (const char* k : {"hidden_size", "bidirectional", "bias", "nonlinearity"}) {
        auto x = node.attrs.values().find(k), y = b.attrs.values().find(k);
        if ((x == node.attrs.values().end()) != (y == b.attrs.values().end()) ||
            (x != node.attrs.values().end() && x->second != y->second))
          same = false;
      }
      if (!same) continue;
      const int64_t L = node.attrs.i("num_layers");
      for (auto& [pname, t] : params_[next]) {
        // "weight_ih_l0_reverse" -> "weight_ih_l<L + 0>_reverse"
        const size_t at = pname.find("_l");
        const size_t end = pname.find_first_not_of("0123456789", at + 2);
        const int64_t layer = std::stoll(pname.substr(at + 2, end - at - 2));
        params_[id].push_back({pname.substr(0, at) + "_l" + std::to_string(L + layer) +
                                   (end == std::string::npos ? "" : pname.substr(end)),
                               t});
      }
      const int64_t more = b.attrs.i("num_layers");
      const bool seq = b.attrs.b("return_sequences");
      const std::vector<Edge> onward = g_.out_edges(next);
      params_.erase(next);
      g_.remove_node(next);  // (b refers to it: read above)
      g_.set_attr(id, "num_layers", L + more);
      g_.set_attr(id, "return_sequences", seq);
      for (const Edge& e : onward) g_.connect_without_cycle_check(id, e.dst, e.dst_port);
      changed = true;
      break;
    }
  }
}

void Importer::prune(NodeId output) {
  std::set<NodeId> keep = {output};
  std::vector<NodeId> stack = {output};
  while (!stack.empty()) {
    const NodeId id = stack.back();
    stack.pop_back();
    for (const Edge& e : g_.in_edges(id))
      if (keep.insert(e.src).second) stack.push_back(e.src);
  }
  std::vector<NodeId> drop;
  for (const auto& [id, node] : g_.nodes())
    if (!keep.count(id)) drop.push_back(id);
  for (NodeId id : drop) {
    g_.remove_node(id);
    params_.erase(id);
  }
}

// Columns by longest path from the input (the app re-lays it out for its
// canvas; this keeps a CLI-written project readable too).
void Importer::lay_out() {
  std::map<NodeId, int> depth;
  std::map<int, int> rows;
  for (NodeId id : g_.topo_order()) {
    int d = 0;
    for (const Edge& e : g_.in_edges(id)) d = std::max(d, depth[e.src] + 1);
    depth[id] = d;
    g_.move(id, 190.0 * d, 100.0 * rows[d]++);
  }
}

OnnxImport Importer::run() {
  register_builtin_layers();
  const onnx::GraphProto& graph = m_.graph();
  std::set<std::string> inits;
  for (const auto& t : graph.initializer()) {
    if (inits.count(t.name())) throw Error("initializer '" + t.name() + "' is defined twice");
    inits.insert(t.name());
    try {
      vals_[t.name()] = constant(read_tensor(t));
    } catch (const NotSupported& e) {
      throw Error(e.why);
    }
  }
  std::vector<const onnx::ValueInfoProto*> inputs;
  for (const auto& vi : graph.input())
    if (!inits.count(vi.name())) inputs.push_back(&vi);
  if (inputs.size() != 1)
    throw Error("the model has " + std::to_string(inputs.size()) +
                " inputs; a DeepCanvas network has exactly one");
  if (graph.output_size() != 1)
    throw Error("the model has " + std::to_string(graph.output_size()) +
                " outputs; a DeepCanvas network has exactly one");
  add_input(*inputs[0]);
  for (const auto& n : graph.node())
    for (const auto& i : n.input()) ++uses_[i];
  for (const auto& o : graph.output()) ++uses_[o.name()];

  for (const auto& n : graph.node()) {
    std::set<int> inherited;
    for (const auto& i : n.input()) {
      auto it = vals_.find(i);
      if (it != vals_.end())
        inherited.insert(it->second.problems.begin(), it->second.problems.end());
    }
    if (!inherited.empty()) {
      // Downstream of a problem; still named when it is one itself, so the
      // message lists every unsupported op at once.
      if (!handlers().count(n.op_type()))
        inherited.insert(problem(n, "no DeepCanvas layer for this op"));
      for (const auto& o : n.output()) {
        Val v;
        v.problems = inherited;
        vals_[o] = v;
      }
      continue;
    }
    try {
      if (!n.domain().empty() && n.domain() != "ai.onnx")
        throw NotSupported{"an op of domain '" + n.domain() + "'"};
      auto h = handlers().find(n.op_type());
      if (h == handlers().end()) throw NotSupported{"no DeepCanvas layer for this op"};
      (this->*(h->second))(n);
    } catch (const NotSupported& e) {
      refuse(n, e.why);
    } catch (const ShapeError& e) {
      // The checked arithmetic's refusal (deepcanvas/checked.h): a zero
      // stride, an overflowing size, a tensor beyond the limits.
      refuse(n, e.what());
    }
  }

  const std::string& out_name = graph.output(0).name();
  auto it = vals_.find(out_name);
  if (it == vals_.end())
    throw Error("the model's output '" + out_name + "' is not computed by any node");
  std::set<int> probs = it->second.problems;
  NodeId out_node = -1;
  if (probs.empty()) {
    if (it->second.is_const) throw Error("the model's output is a constant");
    try {
      out_node = materialize(it->second);
    } catch (const NotSupported& e) {
      probs.insert(int(problems_.size()));
      problems_.push_back("output '" + out_name + "': " + e.why);
    }
  }
  if (!probs.empty()) {
    std::string m = std::to_string(probs.size()) +
                    (probs.size() == 1 ? " operation" : " operations") + " cannot be imported:";
    for (int p : probs) m += "\n  " + problems_[size_t(p)];
    throw Error(m);
  }
  prune(out_node);
  merge_recurrent();
  lay_out();

  // Refused before a Plan allocates it: the activations of one sample
  // beyond 2^31 values (8 GiB) are no network one trains or runs here.
  int64_t values = 0;
  for (const auto& [id, node] : g_.nodes())
    if ((values += shapes_.at(id).numel()) > (int64_t(1) << 31))
      throw Error("the network is too large: one sample's activations pass 2^31 values");
  OnnxImport r;
  r.name = graph.name();
  for (NodeId id : g_.topo_order())
    for (auto& [p, t] : params_[id]) r.weights.push_back({g_.node(id).name + "." + p, t});
  try {
    g_.validate();
    Plan plan(g_, 1);  // every weight has its place and shape
    plan.load_state(r.weights, source_);
  } catch (const std::exception& e) {
    throw Error(std::string("the imported network does not build (a bug in DeepCanvas's importer; "
                            "please report it): ") +
                e.what());
  }
  r.graph = std::move(g_);
  return r;
}

}  // namespace

OnnxImport onnx_import_bytes(const std::string& bytes, const std::string& source) {
  const std::string where = "cannot import " + source + ": ";
  if (int64_t(bytes.size()) > kOnnxImportMaxBytes)
    throw Error(
        where +
        "the file is larger than 2 GB, the most an ONNX file can hold without external data");
  onnx::ModelProto m;
  if (bytes.empty() || !m.ParseFromString(bytes))
    throw Error(
        where +
        "not an ONNX model, or the file is truncated (it does not parse as an ONNX ModelProto)");
  if (!m.has_graph() || m.graph().node_size() == 0 || m.opset_import_size() == 0)
    throw Error(where + "not an ONNX model (no graph, nodes or opset)");
  for (const auto& t : m.graph().initializer())
    if (t.data_location() == onnx::TensorProto::EXTERNAL || t.external_data_size() > 0)
      throw Error(where + "initializer '" + t.name() +
                  "' keeps its data in an external file, which the importer does not read; save "
                  "the model with its weights inside (onnx.save_model(m, path, "
                  "save_as_external_data=False), possible below 2 GB)");
  try {
    onnx::checker::check_model(m);
  } catch (const std::exception& e) {
    throw Error(where + "the ONNX checker refuses the model: " + e.what());
  }
  try {
    return Importer(m, source).run();
  } catch (const Error& e) {
    throw Error(where + e.what());
  }
}

OnnxImport onnx_import_file(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (!ec && int64_t(size) > kOnnxImportMaxBytes)
    throw Error("cannot import " + path + ": the file is " + std::to_string(size >> 20) +
                " MiB, more than the 2 GB an ONNX file can hold without external data");
  return onnx_import_bytes(read_file(path, kOnnxImportMaxBytes, "ONNX model"), path);
}

std::string onnx_import_checkpoint_path(const std::string& project_path) {
  return fs::path(project_path).replace_extension(".safetensors").string();
}

std::string import_onnx(const std::string& onnx_path, const std::string& project_path) {
  OnnxImport im = onnx_import_file(onnx_path);
  Project p;
  p.name = im.name.empty() || im.name == "main_graph" || im.name == "torch_jit"
               ? fs::path(onnx_path).stem().string()
               : im.name;
  p.graph = std::move(im.graph);
  const std::string ck = onnx_import_checkpoint_path(project_path);
  CheckpointMeta meta;
  const auto shapes = p.graph.infer_shapes();
  meta.input_shape = shapes.at(p.graph.inputs().at(0)).shape->str(true);
  const Shape& out = *shapes.at(p.graph.outputs().at(0)).shape;
  if (out.rank() == 1) meta.num_classes = out[0];
  write_checkpoint(ck, im.weights, {}, meta);
  // Training the imported model starts from its weights (a fresh run: new
  // optimizer, epoch 1), so fine-tuning it or a new head on it just works.
  p.training.init_weights = fs::path(ck).filename().string();
  try {
    save_project(p, project_path);
  } catch (...) {
    std::error_code ec;
    fs::remove(ck, ec);
    throw;
  }
  return ck;
}

}  // namespace dc
