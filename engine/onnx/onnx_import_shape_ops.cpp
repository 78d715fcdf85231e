// The importer's shape ops: Identity, Flatten, Reshape, Squeeze, Unsqueeze,
// Transpose, Gather, Slice, Concat and Pad. On constants they fold; on
// computed values most only change how the ONNX tensor relates to the layer
// output (its view or layout), so they need no layer of their own.
#include <deepcanvas/checked.h>

#include <algorithm>

#include "onnx_import_internal.h"

namespace dc::onnx_import {

void Importer::op_alias(const onnx::NodeProto& n) {
  out(n, 0, in(n, 0));
  for (int k = 1; k < n.output_size(); ++k)
    poison(n, k, "its output " + std::to_string(k) + " (a dropout mask) is used");
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

// A feature map [C, H, W] viewed as [C, H·W] (a Reshape or Flatten(2) not
// applied yet).
bool Importer::image_tokens(const Val& x) const {
  if (x.is_const || x.layout != Layout::Plain || !x.pad.empty() || x.view.size() != 2) return false;
  const std::vector<int64_t> d = shapes_.at(x.node).dims();
  return d.size() == 3 && x.view[0] == d[0] && x.view[1] == d[1] * d[2];
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
  } else if (channel_shuffle(n, x, perm)) {
    return;
  } else if (image_tokens(x) && perm == P{0, 2, 1}) {
    // [N, C, H·W] → [N, H·W, C]: a feature map's pixels as tokens (a ViT's
    // x.flatten(2).transpose(1, 2)), one ImageToTokens layer.
    out(n, 0, plain(add("ImageToTokens", clean_name(layer_base(n)), {}, {x.node})));
    return;
  } else {
    throw NotSupported{"Transpose with perm " + dims_str(perm) +
                       " (only the transposes around recurrent layers and a channel shuffle's are "
                       "supported)"};
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
  // The first step is the class token's place: TokenPooling's "first" (the
  // same values as LastStep at 0, and what DeepCanvas exports it from).
  const bool first = index == 0 && v[0] > 1;
  if (first)
    a.set("mode", std::string("first"));
  else
    a.set("index", index == v[0] - 1 ? int64_t(-1) : index);
  Val o = plain(
      add(first ? "TokenPooling" : "LastStep", clean_name(layer_base(n)), a, {materialize(x)}));
  if (keep_dim) o.view = {1, v[1]};
  return o;
}

// The network's input itself, untouched: a float [N, steps] input or token
// ids.
bool Importer::graph_input(const Val& x) const {
  if (x.is_const || x.layout != Layout::Plain || !x.pad.empty()) return false;
  const Node& node = g_.node(x.node);
  return (node.type == "Input" || node.type == "SequenceInput") &&
         shapes_.at(x.node).dims() == x.view;
}

// Gather(table [V, E], ids [N, T]): an Embedding. The ids are the
// network's input: int64/int32 (nn.Embedding's), or float Cast to integers
// (how DeepCanvas exports it); a float [N, steps] Input becomes a
// SequenceInput of kind tokens.
void Importer::embedding(const onnx::NodeProto& n, const Const& table, const Val& ids) {
  if (!ids.ids)
    throw NotSupported{
        "Gather from a constant by computed indices other than token ids (the "
        "network's input)"};
  const int64_t axis = attr_i(n, "axis", 0);
  if (axis != 0 && axis != -2)
    throw NotSupported{"Gather by token ids on axis " + std::to_string(axis) +
                       " (an embedding lookup gathers the table's rows, axis 0)"};
  if (table.dims.size() != 2 || table.integer)
    throw NotSupported{"an embedding table of shape " + dims_str(table.dims) +
                       " (a float [vocabulary, dim] is expected)"};
  if (ids.view.size() != 1 || !graph_input(ids))
    throw NotSupported{"token ids of shape " + dims_str(ids.view) +
                       " (one id per step, [N, steps])"};
  const int64_t T = ids.view[0];
  Node& input = g_.node(ids.node);
  if (input.type == "Input") {
    if (!g_.out_edges(ids.node).empty())
      throw NotSupported{"the input is used both as numbers and as token ids"};
    const std::string name = input.name;
    g_.remove_node(ids.node);
    g_.add_node("SequenceInput", name, token_input_attrs(T), 0, 0, ids.node);
  }
  // From here the input is token ids: a later use as numbers is refused.
  token_inputs_.insert(ids.node);
  Attrs a;
  a.set("vocab_size", table.dims[0]);
  a.set("dim", table.dims[1]);
  a.set("padding_idx", int64_t(-1));  // training-only: ONNX does not say
  std::string base = module_from_initializer(n.input(0), "weight");
  if (base.empty()) base = layer_base(n);
  out(n, 0,
      plain(add("Embedding", clean_name(base), a, {ids.node}, {{"weight", to_tensor(table)}})));
}

void Importer::op_gather(const onnx::NodeProto& n) {
  if (in(n, 0).is_const && !in(n, 1).is_const) return embedding(n, in(n, 0).c, in(n, 1));
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
  // A range of channels (the first per-sample axis), step 1, every other
  // axis whole: ShuffleNetV2's chunk(2, dim=1). One step of a sequence is
  // the LastStep below.
  bool channels = rank >= 2 && take[1].count > 0 && (take[1].step == 1 || take[1].count == 1) &&
                  !(rank == 3 && take[1].count == 1);
  for (int k = 0; k < rank && channels; ++k) {
    const Range& t = take[size_t(k)];
    if (k != 1 && (t.count != dims[size_t(k)] || (t.count > 1 && (t.start != 0 || t.step != 1))))
      channels = false;
  }
  if (channels) {
    out(n, 0, channel_slice(n, x, take[1].start, take[1].count, ""));
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
  if (ins.size() == 2 && ins[0]->is_const && !ins[1]->is_const) {
    // One constant token [1, 1, E] (expanded over the batch) before a
    // sequence [N, T, E]: a ViT's class token, torch.cat((cls, x), 1).
    const Const& c = ins[0]->c;
    const auto& v = view_of(*ins[1]);
    if (v.size() == 2 && (axis == 1 || axis == -2) && c.dims.size() == 3 && c.dims[0] == 1 &&
        c.dims[1] == 1 && c.dims[2] == v[1] && !c.integer) {
      Tensor token = to_tensor(c, {v[1]});
      const std::string base =
          named_by_parameter(n, ins[0]->origin.empty() ? n.input(0) : ins[0]->origin, {"token"});
      out(n, 0, plain(add("ClassToken", base, {}, {materialize(*ins[1])}, {{"token", token}})));
      return;
    }
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

}  // namespace dc::onnx_import
