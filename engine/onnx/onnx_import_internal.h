#pragma once
// What the importer's files share: the constants it folds, the values it
// tracks (how each ONNX tensor relates to the layer that computes it), the
// reading of attributes and tensors, and the Importer whose op handlers are
// defined beside each op family (onnx_import_layers.cpp,
// onnx_import_shape_ops.cpp, onnx_import_recurrent.cpp,
// onnx_import_constants.cpp; the attention and GELU patterns matched before
// the walk in onnx_import_attention.cpp); onnx_import.cpp drives them.
#include <deepcanvas/graph.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/onnx.h>
#include <deepcanvas/tensor.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

namespace dc::onnx_import {

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

// Why a Softmax over the product of two computed tensors is refused.
inline constexpr const char* kAttentionMiss =
    "attention in a form the importer does not recognise: it reads the ops torch.onnx writes for "
    "nn.MultiheadAttention (batch_first, opset 17; self-attention, or cross-attention whose keys "
    "and values are one tensor; no mask or a causal -inf mask) as one MultiHeadAttention layer";

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
  bool ids = false;          // token ids: an integer input, or a float one Cast to integers
  std::string origin;        // a constant's initializer, through an Expand (a class token)
};

// --- constants and attributes (onnx_import_constants.cpp) ---
std::string dims_str(const std::vector<int64_t>& d);
int64_t product(const std::vector<int64_t>& d);
void check_extent(const std::vector<int64_t>& d, const std::string& what);
const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name);
int64_t attr_i(const onnx::NodeProto& n, const std::string& name, int64_t def);
float attr_f(const onnx::NodeProto& n, const std::string& name, float def);
std::string attr_s(const onnx::NodeProto& n, const std::string& name, const std::string& def);
std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name,
                               std::vector<int64_t> def = {});
Const read_tensor(const onnx::TensorProto& t);
Tensor to_tensor(const Const& c, std::vector<int64_t> dims = {});
double shortest_decimal(float v);

// The attributes of a SequenceInput of `steps` token ids (an Embedding's
// input), whether the graph input is known to be ids from its type or only
// from the Gather that reads it.
inline Attrs token_input_attrs(int64_t steps) {
  Attrs a;
  a.set("steps", steps);
  a.set("features", int64_t(1));
  a.set("kind", std::string("tokens"));
  return a;
}

// --- layer names (onnx_import_names.cpp) ---
std::string module_from_node_name(const std::string& node_name);
std::string layer_base(const onnx::NodeProto& n);
std::string clean_name(const std::string& s);
std::string module_from_initializer(const std::string& name, const std::string& param);
std::string parameter_name(const std::string& init);
std::string named_by_parameter(const onnx::NodeProto& n, const std::string& init,
                               const std::vector<std::string>& params);

class Importer {
 public:
  Importer(const onnx::ModelProto& m, std::string source) : m_(m), source_(std::move(source)) {
    for (const auto& op : m.opset_import())
      if (op.domain().empty() || op.domain() == "ai.onnx") opset_ = int(op.version());
  }

  OnnxImport run();  // onnx_import.cpp

 private:
  using Handler = void (Importer::*)(const onnx::NodeProto&);
  static const std::map<std::string, Handler>& handlers();

  // --- values (onnx_import_values.cpp) ---
  const Val& in(const onnx::NodeProto& n, int k);
  bool has_in(const onnx::NodeProto& n, int k) const {
    return k < n.input_size() && !n.input(k).empty();
  }
  const Const& cin(const onnx::NodeProto& n, int k, const char* what);
  void out(const onnx::NodeProto& n, int k, Val v) {
    if (k < n.output_size() && !n.output(k).empty()) vals_[n.output(k)] = std::move(v);
  }
  Val constant(Const c);
  const Val& layer_in(const onnx::NodeProto& n, int k);

  // --- layers (onnx_import_values.cpp; base_name in onnx_import_names.cpp) ---
  std::string base_name(const onnx::NodeProto& n, const std::string& init,
                        const std::string& param);
  NodeId add(const std::string& type, const std::string& base, Attrs a,
             const std::vector<NodeId>& inputs,
             std::vector<std::pair<std::string, Tensor>> params = {});
  Val plain(NodeId id);
  // The layer whose output is exactly v (inserting a Flatten or Reshape
  // where v is a regrouped view of it).
  NodeId materialize(const Val& v);
  // The recurrent layer of v, turned into one that outputs its final state
  // (each direction's state after reading the whole sequence: the forward
  // one at the last step, the reverse one at step 0), which is how
  // DeepCanvas exports return_sequences = false.
  NodeId final_state(const Val& v);
  const std::vector<int64_t>& view_of(const Val& v);

  // --- ops ---
  void op_alias(const onnx::NodeProto& n);  // onnx_import_shape_ops.cpp
  // onnx_import_constants.cpp
  void op_constant(const onnx::NodeProto& n);
  void op_equal(const onnx::NodeProto& n);
  void op_where(const onnx::NodeProto& n);
  void op_arith(const onnx::NodeProto& n);
  void op_shape(const onnx::NodeProto& n);
  void op_cast(const onnx::NodeProto& n);
  void op_constant_of_shape(const onnx::NodeProto& n);
  void op_expand(const onnx::NodeProto& n);
  // onnx_import_layers.cpp
  void op_conv(const onnx::NodeProto& n);
  void op_bn(const onnx::NodeProto& n);
  void op_layer_norm(const onnx::NodeProto& n);
  void op_activation(const onnx::NodeProto& n);
  void op_clip(const onnx::NodeProto& n);
  void op_softmax(const onnx::NodeProto& n);
  void op_pool(const onnx::NodeProto& n);
  void op_global_pool(const onnx::NodeProto& n);
  void op_reduce_mean(const onnx::NodeProto& n);
  void op_gemm(const onnx::NodeProto& n);
  void op_matmul(const onnx::NodeProto& n);
  void op_add(const onnx::NodeProto& n);
  // onnx_import_shape_ops.cpp
  void op_flatten(const onnx::NodeProto& n);
  void op_reshape(const onnx::NodeProto& n);
  void op_squeeze(const onnx::NodeProto& n);
  void op_unsqueeze(const onnx::NodeProto& n);
  void op_transpose(const onnx::NodeProto& n);
  void op_gather(const onnx::NodeProto& n);
  void op_slice(const onnx::NodeProto& n);
  void op_concat(const onnx::NodeProto& n);
  void op_pad(const onnx::NodeProto& n);
  // onnx_import_recurrent.cpp
  void op_recurrent(const onnx::NodeProto& n);
  // onnx_import_cnn.cpp
  void op_hard_activation(const onnx::NodeProto& n);
  void op_mul(const onnx::NodeProto& n);
  void op_split(const onnx::NodeProto& n);
  bool fuse_gated(const onnx::NodeProto& n, const Val& x, const Val& s, const std::string& s_name);
  // For op_transpose: false where x and perm are not a channel shuffle.
  bool channel_shuffle(const onnx::NodeProto& n, const Val& x, const std::vector<int64_t>& perm);
  // Channels [start, start + count) of x (x itself when that is all of
  // them); name "" for the op's own.
  Val channel_slice(const onnx::NodeProto& n, const Val& x, int64_t start, int64_t count,
                    const std::string& name);

  std::vector<int64_t> axes_of(const onnx::NodeProto& n, int input, int rank);
  Val last_step(const onnx::NodeProto& n, const Val& x, int64_t index, bool keep_dim);
  void poison(const onnx::NodeProto& n, int k, const std::string& why);
  // Marks every output of n as not importable, for the reason given.
  void refuse(const onnx::NodeProto& n, const std::string& why);
  // Counts n values about to be folded against kMaxFolded.
  void fold(int64_t n);
  Const filled(const Const& shape, const Const& value);
  int problem(const onnx::NodeProto& n, const std::string& why);

  // --- patterns matched before the walk (onnx_import_attention.cpp) ---
  struct Fusion {
    std::string type, input, base;  // the layer, the ONNX value it reads, its name
    std::string input2;             // a second value it reads (cross-attention), or ""
    int64_t axis = 0;               // LayerNorm: the axis of its means (-1 or the last)
    int64_t mask_steps = 0;         // attention: the causal mask's queries (0: no mask)
    Attrs attrs;
    std::vector<std::pair<std::string, Tensor>> params;
  };
  void find_fusions();
  NodeId positions(const onnx::NodeProto& n, const Val& x, const Const& table,
                   const std::string& table_name);
  bool graph_input(const Val& x) const;
  std::set<NodeId> token_inputs_;  // inputs read as token ids by an Embedding
  void embedding(const onnx::NodeProto& n, const Const& table, const Val& ids);
  bool image_tokens(const Val& x) const;
  void emit_fusion(const onnx::NodeProto& n, const Fusion& f);
  std::map<const onnx::NodeProto*, Fusion> fusions_;  // by the pattern's last node
  std::set<const onnx::NodeProto*> skipped_;          // the pattern's other nodes
  std::set<const onnx::NodeProto*> attention_miss_;   // Softmaxes of unmatched attention

  // --- graph clean-up (onnx_import.cpp) ---
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

}  // namespace dc::onnx_import
