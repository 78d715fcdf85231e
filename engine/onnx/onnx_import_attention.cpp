// Recognising the ops torch.onnx writes for nn.MultiheadAttention and
// nn.GELU back into one MultiHeadAttention or GELU layer. torch 1.13 (opset
// 17) decomposes self-attention, batch_first, into: the input transposed to
// [T, N, E], one MatMul with in_proj_weight's transpose plus in_proj_bias,
// three Slices of it (query, key, value) each reshaped to [T, N·H, D] and
// transposed, the query divided by √D, the scores MatMul, Softmax, the
// value MatMul, the heads joined by Transpose/Reshape [T·N, E], the output
// projection (Gemm), and the result reshaped and transposed back to
// [N, T, E]. Cross-attention whose keys and values are one tensor (a
// decoder's attention over a second branch of the same input) differs only
// in its projections: the query's MatMul [E, E] on its own transposed input,
// and one [E, 2E] on the other's, sliced into key and value; it becomes a
// MultiHeadAttention in cross mode with both inputs. Those ops have no
// DeepCanvas layer each (a MatMul of two
// activations, heads folded into the batch), and the layer that computes
// exactly this exists, so the subgraph is matched as a whole, before the
// walk, from the ONNX structure alone; anything that differs is left to the
// op handlers, which refuse it naming the op.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "onnx_import_internal.h"

namespace dc::onnx_import {

namespace {

struct Net {
  std::map<std::string, const onnx::NodeProto*> producer;
  std::map<std::string, std::vector<const onnx::NodeProto*>> consumers;
};

}  // namespace

// The value of a constant input (an initializer or a Constant node), or
// nullptr.
static const Const* known(const std::map<std::string, Val>& vals, const Net& net,
                          std::map<std::string, Const>& cache, const std::string& name) {
  auto v = vals.find(name);
  if (v != vals.end() && v->second.is_const) return &v->second.c;
  auto c = cache.find(name);
  if (c != cache.end()) return &c->second;
  auto p = net.producer.find(name);
  // torch.onnx shares equal initializers through Identity (a cloned layer's
  // weights).
  if (p != net.producer.end() && p->second->op_type() == "Identity")
    return known(vals, net, cache, p->second->input(0));
  if (p == net.producer.end() || p->second->op_type() != "Constant") return nullptr;
  const auto* t = find_attr(*p->second, "value");
  if (!t || !t->has_t()) return nullptr;
  try {
    return &(cache[name] = read_tensor(t->t()));
  } catch (const NotSupported&) {
    return nullptr;
  }
}

void Importer::find_fusions() {
  // Only ops of the standard domain take part: the checker has verified
  // their input counts, which the matchers below index by (a foreign op
  // is refused by the walk, naming its domain).
  auto standard = [](const onnx::NodeProto& n) {
    return n.domain().empty() || n.domain() == "ai.onnx";
  };
  Net net;
  for (const auto& n : m_.graph().node()) {
    if (!standard(n)) continue;
    for (const auto& o : n.output()) net.producer[o] = &n;
    for (const auto& i : n.input()) net.consumers[i].push_back(&n);
  }
  std::map<std::string, Const> cache;
  auto cst = [&](const std::string& name) { return known(vals_, net, cache, name); };
  auto made = [&](const std::string& name, const char* op) -> const onnx::NodeProto* {
    auto p = net.producer.find(name);
    return p != net.producer.end() && p->second->op_type() == op ? p->second : nullptr;
  };
  // The single consumer of n's output, of type op, but for Shapes (with a
  // dynamic batch, torch.onnx reads the sizes from the values).
  auto next = [&](const onnx::NodeProto* n, const char* op) -> const onnx::NodeProto* {
    if (!n || n->output_size() != 1) return nullptr;
    auto c = net.consumers.find(n->output(0));
    if (c == net.consumers.end() || uses_[n->output(0)] != int(c->second.size())) return nullptr;
    const onnx::NodeProto* found = nullptr;
    for (const auto* u : c->second) {
      if (u->op_type() == "Shape") continue;
      if (found || u->op_type() != op) return nullptr;
      found = u;
    }
    return found;
  };
  auto perm = [](const onnx::NodeProto* n, std::vector<int64_t> p) {
    return n && attr_ints(*n, "perm") == p;
  };
  auto scalar = [&](const std::string& name, double want) {
    const Const* c = cst(name);
    return c && c->numel() == 1 && std::abs(c->at(0) - want) <= 1e-5 * std::abs(want);
  };
  // The other input of a two-input op, given one.
  auto other = [](const onnx::NodeProto* n, const std::string& one) {
    return n->input(0) == one ? n->input(1) : n->input(0);
  };

  // A matched pattern becomes one fusion keyed by its last node, when every
  // value inside is used inside only, or by Shape (the arithmetic of the
  // Slices and Reshapes, which goes with it); its other nodes are skipped,
  // with the Shapes of values inside and (to a fixed point) what feeds only
  // skipped nodes.
  auto claim = [&](const std::vector<const onnx::NodeProto*>& core, const onnx::NodeProto* last,
                   Fusion f) {
    std::set<const onnx::NodeProto*> inside(core.begin(), core.end());
    for (const auto* n : core) {
      if (n == last) continue;
      for (const auto& out : n->output())
        for (const auto* c : net.consumers[out])
          if (!inside.count(c) && c->op_type() != "Shape") return false;
    }
    std::set<const onnx::NodeProto*> skip(core.begin(), core.end());
    skip.erase(last);
    for (const auto* n : core)
      for (const auto& out : n->output())
        for (const auto* c : net.consumers[out])
          if (c->op_type() == "Shape") skip.insert(c);
    for (bool grew = true; grew;) {
      grew = false;
      std::vector<const onnx::NodeProto*> more;
      for (const auto* n : skip)
        for (const auto& i : n->input()) {
          auto p = net.producer.find(i);
          if (p == net.producer.end() || skip.count(p->second) || i == f.input || i == f.input2)
            continue;
          bool only = true;
          for (const auto& out : p->second->output())
            for (const auto* c : net.consumers[out]) only = only && skip.count(c);
          if (only) more.push_back(p->second);
        }
      for (const auto* n : more) grew = skip.insert(n).second || grew;
    }
    skipped_.insert(skip.begin(), skip.end());
    fusions_[last] = std::move(f);
    return true;
  };
  // A causal mask [T, S]: −inf where the key comes after the query, else 0.
  auto causal_mask = [](const Const& m) {
    if (m.integer || m.dims.size() < 2) return false;
    const int64_t T = m.dims[m.dims.size() - 2], S = m.dims.back();
    if (T * S != m.numel() || T < 1) return false;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t u = 0; u < S; ++u) {
        const double v = m.at(t * S + u);
        if (u > t ? !(std::isinf(v) && v < 0) : v != 0) return false;
      }
    return true;
  };

  // The MultiHeadAttention a matched pattern becomes, reading queries from
  // q and, in cross-attention, keys and values from kv (""): both matchers
  // (torch's form and DeepCanvas's own export) describe it alike.
  auto attention_layer = [](const std::string& q, const std::string& kv, int64_t heads,
                            int64_t mask_steps, bool bias) {
    Fusion f;
    f.type = "MultiHeadAttention";
    f.input = q;
    f.input2 = kv;
    f.attrs.set("mode", std::string(kv.empty() ? "self" : "cross"));
    f.attrs.set("heads", heads);
    f.attrs.set("causal", mask_steps > 0);
    f.mask_steps = mask_steps;
    f.attrs.set("bias", bias);
    f.attrs.set("dropout", 0.0);
    return f;
  };
  auto attention = [&](const onnx::NodeProto& sm) {
    std::vector<const onnx::NodeProto*> core = {&sm};
    auto take = [&](const onnx::NodeProto* n) {
      if (n) core.push_back(n);
      return n;
    };
    // Scores, optionally masked.
    const onnx::NodeProto* s = made(sm.input(0), "MatMul");
    const onnx::NodeProto* mask = made(sm.input(0), "Add");
    bool causal = false;
    int64_t mask_steps = 0;
    if (mask) {
      take(mask);
      const onnx::NodeProto* a = made(mask->input(0), "MatMul");
      std::string mname = a ? mask->input(1) : mask->input(0);
      if (!a) a = made(mask->input(1), "MatMul");
      // With attn_mask, torch writes baddbmm: the scores times 1, then + mask.
      const onnx::NodeProto* one = made(mask->input(0), "Mul");
      if (!a && one && !cst(mask->input(0))) {
        mname = mask->input(1);
        a = made(one->input(0), "MatMul");
        if (!a || !scalar(one->input(1), 1) || uses_[one->output(0)] != 1) return false;
        take(one);
      }
      const Const* m = cst(mname);
      // Square: [T, T] against the scores [N·H, T, T] (a [1, T] row or a
      // [T, 1] column would broadcast to another mask); T is checked
      // against the sequence when the layer is made.
      if (!a || !m || !causal_mask(*m) || m->dims.back() != m->dims[m->dims.size() - 2])
        return false;  // another mask than the causal one
      mask_steps = m->dims.back();
      causal = true;
      s = a;
      if (uses_[s->output(0)] != 1) return false;
    }
    // Over the keys: the last of the three axes (before opset 13 the default
    // is 1, and axis 2 flattens to the same rows).
    const int64_t axis = attr_i(sm, "axis", opset_ < 13 ? 1 : -1);
    if (!take(s) || (axis != -1 && axis != 2)) return false;
    // Query: Div(Transpose[1,0,2](Reshape(Slice)), √D); key: Transpose[1,2,0].
    const onnx::NodeProto* dq = made(s->input(0), "Div");
    const onnx::NodeProto* tk = take(made(s->input(1), "Transpose"));
    if (!take(dq) || !perm(tk, {1, 2, 0})) return false;
    const onnx::NodeProto* tq = take(made(dq->input(0), "Transpose"));
    const onnx::NodeProto* o = take(next(&sm, "MatMul"));
    if (!perm(tq, {1, 0, 2}) || !o || o->input(0) != sm.output(0)) return false;
    const onnx::NodeProto* tv = take(made(o->input(1), "Transpose"));
    if (!perm(tv, {1, 0, 2})) return false;
    const onnx::NodeProto* r[3] = {take(made(tq->input(0), "Reshape")),
                                   take(made(tk->input(0), "Reshape")),
                                   take(made(tv->input(0), "Reshape"))};
    if (!r[0] || !r[1] || !r[2]) return false;
    // Self-attention: q, k and v are Slices of one projection of the input.
    // Cross-attention (torch's path when the key is the value but not the
    // query): q is a projection of its own input, k and v Slices of a
    // projection of the other.
    const bool cross = !made(r[0]->input(0), "Slice");
    const int first = cross ? 1 : 0;
    const onnx::NodeProto* sl[3] = {};
    bool ok = true;
    for (int k = first; k < 3 && ok; ++k) {
      ok = (sl[k] = take(made(r[k]->input(0), "Slice"))) != nullptr &&
           sl[k]->input(0) == sl[first]->input(0) && sl[k]->input_size() >= 4;
      if (ok) {
        const Const* ax = cst(sl[k]->input(3));
        ok = ax && ax->numel() == 1 && (ax->int_at(0) == -1 || ax->int_at(0) == 2) &&
             (sl[k]->input_size() < 5 || sl[k]->input(4).empty() || scalar(sl[k]->input(4), 1));
      }
    }
    // In order: each Slice starts where the one before ends.
    const Const* s0 = ok ? cst(sl[first]->input(1)) : nullptr;
    if (!ok || !s0 || s0->numel() != 1 || s0->int_at(0) != 0 ||
        (!cross && sl[1]->input(1) != sl[0]->input(2)) || sl[2]->input(1) != sl[1]->input(2))
      return false;
    // An in-projection of `parts` blocks of E outputs:
    // Add(bias, MatMul(Transpose[1,0,2](x), W [E, parts·E])). With a fixed
    // batch torch.onnx folds W and the bias to constants. With a dynamic
    // one it leaves cross-attention's split of in_proj_weight [3E, E] to
    // the graph: W = Transpose[1,0](Slice(in_proj_weight, a, b, axis 0)),
    // the bias Slice(in_proj_bias, a', b'), bounds computed from Shapes.
    struct Proj {
      const Const *w = nullptr, *b = nullptr;              // W [E, cols], or in_proj_weight's rows
      const onnx::NodeProto *ws = nullptr, *bs = nullptr;  // the Slices, when sliced
      const onnx::NodeProto* tx = nullptr;
      int64_t E = 0, cols = 0;
    };
    // A Slice on axis 0 with unit steps of a constant.
    auto sliced = [&](const std::string& value, const onnx::NodeProto*& s) -> const Const* {
      s = take(made(value, "Slice"));
      if (!s || s->input_size() < 4) return nullptr;
      const Const* ax = cst(s->input(3));
      const bool unit = s->input_size() < 5 || s->input(4).empty() || scalar(s->input(4), 1);
      return ax && ax->numel() == 1 && ax->int_at(0) == 0 && unit ? cst(s->input(0)) : nullptr;
    };
    auto projection = [&](const std::string& value, int64_t parts, Proj& p) {
      const onnx::NodeProto* ab = take(made(value, "Add"));
      if (!ab) return false;
      const onnx::NodeProto* mm = made(ab->input(0), "MatMul");
      if (!mm) mm = made(ab->input(1), "MatMul");
      if (!take(mm)) return false;
      p.tx = take(made(mm->input(0), "Transpose"));
      if (!perm(p.tx, {1, 0, 2})) return false;
      const std::string& bias = other(ab, mm->output(0));
      if ((p.w = cst(mm->input(1)))) {
        if (p.w->dims.size() != 2) return false;
        p.E = p.w->dims[0];
        p.cols = p.w->dims[1];
        p.b = cst(bias);
      } else {
        const onnx::NodeProto* wt = take(made(mm->input(1), "Transpose"));
        if (!perm(wt, {1, 0}) || !(p.w = sliced(wt->input(0), p.ws)) || !(p.b = sliced(bias, p.bs)))
          return false;
        if (p.w->dims.size() != 2 || p.w->dims[0] != 3 * p.w->dims[1] ||
            p.b->numel() != p.w->dims[0])
          return false;
        p.E = p.w->dims[1];
        p.cols = parts * p.E;
      }
      return p.b && !p.w->integer && !p.b->integer && p.cols == parts * p.E &&
             (p.bs || p.b->numel() == p.cols);
    };
    Proj pq, pkv;
    if (cross ? !projection(r[0]->input(0), 1, pq) || !projection(sl[1]->input(0), 2, pkv) ||
                    pkv.E != pq.E
              : !projection(sl[0]->input(0), 3, pq))
      return false;
    // Sliced (cross only): both from one in_proj_weight and in_proj_bias,
    // the query's rows from 0, the keys' and values' from where they end.
    // That the query's end is E follows from the model's own validity: the
    // keys take the first half of the rest, the values the second, and the
    // out-projection [E, E] reads the values' E columns, so the query,
    // whose width the keys' must equal, has E.
    if (pq.ws || pkv.ws) {
      auto zero = [&](const onnx::NodeProto* s) {
        const Const* c = cst(s->input(1));
        return c && c->numel() == 1 && c->int_at(0) == 0;
      };
      if (!cross || !pq.ws || !pkv.ws || pq.w != pkv.w || pq.b != pkv.b || !zero(pq.ws) ||
          !zero(pq.bs) || pkv.ws->input(1) != pq.ws->input(2) ||
          pkv.bs->input(1) != pq.bs->input(2))
        return false;
    }
    const int64_t E = pq.E;
    // The heads: D from the scale √D; the Reshapes' [T, N·H, D] are
    // constants with a fixed batch, else computed from Shapes (which go
    // with the pattern).
    const Const* sc = cst(dq->input(1));
    if (!sc || sc->integer || sc->numel() != 1) return false;
    const int64_t D = std::llround(sc->at(0) * sc->at(0));
    if (D <= 0 || E % D != 0 || !scalar(dq->input(1), std::sqrt(double(D)))) return false;
    const int64_t H = E / D;
    for (int k = 0; k < 3; ++k)
      if (const Const* c = cst(r[k]->input(1))) ok = ok && c->numel() == 3 && c->int_at(2) == D;
    if (!ok) return false;
    // Heads joined, out-projection, back to [N, T, E].
    const onnx::NodeProto* to = take(next(o, "Transpose"));
    const onnx::NodeProto* ro = take(next(to, "Reshape"));
    const onnx::NodeProto* gm = take(next(ro, "Gemm"));
    const onnx::NodeProto* rg = take(next(gm, "Reshape"));
    const onnx::NodeProto* ty = take(next(rg, "Transpose"));
    if (!perm(to, {1, 0, 2}) || !ro || !gm || !rg || !perm(ty, {1, 0, 2}) ||
        gm->input(0) != ro->output(0) || gm->input_size() < 3 || attr_i(*gm, "transA", 0) != 0 ||
        attr_i(*gm, "transB", 0) != 1 || attr_f(*gm, "alpha", 1) != 1 ||
        attr_f(*gm, "beta", 1) != 1)
      return false;
    const Const* wout = cst(gm->input(1));
    const Const* bout = cst(gm->input(2));
    if (!wout || !bout || wout->integer || bout->integer || wout->dims != std::vector{E, E} ||
        bout->numel() != E)
      return false;
    Fusion f = attention_layer(pq.tx->input(0), cross ? pkv.tx->input(0) : std::string(), H,
                               causal ? mask_steps : 0, /*bias=*/true);
    Tensor w_in{Shape{3 * E, E}}, b_in{Shape{3 * E}}, w_out{Shape{E, E}}, b_out{Shape{E}};
    if (pq.ws) {
      // Sliced: in_proj_weight and in_proj_bias themselves, PyTorch's layout.
      std::copy(pq.w->f.begin(), pq.w->f.end(), w_in.f32());
      std::copy(pq.b->f.begin(), pq.b->f.end(), b_in.f32());
    } else {
      // ONNX's W [E, parts·E] is the transpose of PyTorch's rows; cross
      // stacks the query's rows over the key/value ones, as in_proj_weight.
      int64_t row = 0;
      std::vector<const Proj*> parts = {&pq};
      if (cross) parts.push_back(&pkv);
      for (const Proj* pj : parts) {
        for (int64_t i = 0; i < E; ++i)
          for (int64_t o = 0; o < pj->cols; ++o)
            w_in.f32()[(row + o) * E + i] = pj->w->f[size_t(i * pj->cols + o)];
        for (int64_t o = 0; o < pj->cols; ++o) b_in.f32()[row + o] = pj->b->f[size_t(o)];
        row += pj->cols;
      }
    }
    for (int64_t k = 0; k < E * E; ++k) w_out.f32()[k] = wout->f[size_t(k)];
    for (int64_t k = 0; k < E; ++k) b_out.f32()[k] = bout->f[size_t(k)];
    f.params = {{"in_proj_weight", w_in},
                {"in_proj_bias", b_in},
                {"out_proj_weight", w_out},
                {"out_proj_bias", b_out}};
    f.base = module_from_initializer(gm->input(1), "out_proj.weight");
    if (f.base.empty()) f.base = module_from_node_name(ty->name());
    if (f.base.empty()) f.base = "attention";
    f.base = clean_name(f.base);
    return claim(core, ty, std::move(f));
  };

  // DeepCanvas's own export (onnx_attention.cpp), the heads a dimension of
  // their own: per part k (query, key, value) Reshape [0, rows, H, D] of
  // x·Slice(in_proj_weightᵀ, kE..(k+1)E, axis 1) (+ Slice(in_proj_bias)),
  // Transposed to [N, H, rows, D] (the keys to [N, H, D, S]); the scores
  // times 1/√D, the causal mask added, Softmax on axis 3, the heads joined
  // by Transpose [0, 2, 1, 3] and Reshape [0, T, E], then x·out_proj_weightᵀ
  // (+ out_proj_bias). The weights are PyTorch's, as initializers.
  auto exported = [&](const onnx::NodeProto& sm) {
    std::vector<const onnx::NodeProto*> core = {&sm};
    auto take = [&](const onnx::NodeProto* n) {
      if (n) core.push_back(n);
      return n;
    };
    const int64_t axis = attr_i(sm, "axis", opset_ < 13 ? 1 : -1);
    if (axis != 3 && axis != -1) return false;
    const onnx::NodeProto* scaled = made(sm.input(0), "Mul");
    const onnx::NodeProto* masked = scaled ? nullptr : take(made(sm.input(0), "Add"));
    if (masked) {
      const Const* m = cst(masked->input(1));
      scaled = made(masked->input(0), "Mul");
      if (!m || !causal_mask(*m) || (scaled && uses_[scaled->output(0)] != 1)) return false;
    }
    const onnx::NodeProto* sc = take(scaled);
    const onnx::NodeProto* qk = sc ? take(made(sc->input(0), "MatMul")) : nullptr;
    if (!qk || uses_[qk->output(0)] != 1) return false;
    const onnx::NodeProto* pv = take(next(&sm, "MatMul"));
    if (!pv || pv->input(0) != sm.output(0)) return false;
    // The three parts: the Transposes, Reshapes and projections.
    const std::string part_of[3] = {qk->input(0), qk->input(1), pv->input(1)};
    const std::vector<int64_t> perms[3] = {{0, 2, 1, 3}, {0, 2, 3, 1}, {0, 2, 1, 3}};
    std::string x[3];
    const onnx::NodeProto *w_t = nullptr, *bias_all = nullptr;
    int64_t E = 0, H = 0, D = 0, rows[3] = {};
    bool has_bias = false;
    for (int k = 0; k < 3; ++k) {
      const onnx::NodeProto* t = take(made(part_of[k], "Transpose"));
      if (!perm(t, perms[k])) return false;
      const onnx::NodeProto* r = take(made(t->input(0), "Reshape"));
      const Const* shape = r ? cst(r->input(1)) : nullptr;
      if (!shape || shape->numel() != 4 || shape->int_at(0) != 0) return false;
      rows[k] = shape->int_at(1);
      if (k == 0) {
        H = shape->int_at(2);
        D = shape->int_at(3);
        E = H * D;
      } else if (shape->int_at(2) != H || shape->int_at(3) != D) {
        return false;
      }
      // x·W_k (+ b_k), W_k a Slice of one Transpose[1, 0] of in_proj_weight.
      const onnx::NodeProto* add = made(r->input(0), "Add");
      if (k == 0) has_bias = add != nullptr;
      if (has_bias != (add != nullptr)) return false;
      const onnx::NodeProto* mm = take(made(add ? add->input(0) : r->input(0), "MatMul"));
      if (!mm) return false;
      take(add);
      auto slice_of = [&](const std::string& value, int64_t axis_want) -> const onnx::NodeProto* {
        const onnx::NodeProto* sl = take(made(value, "Slice"));
        if (!sl || sl->input_size() < 4) return nullptr;
        const Const *from = cst(sl->input(1)), *to = cst(sl->input(2)), *ax = cst(sl->input(3));
        const bool unit = sl->input_size() < 5 || sl->input(4).empty() || scalar(sl->input(4), 1);
        if (!from || !to || !ax || from->numel() != 1 || to->numel() != 1 || ax->numel() != 1 ||
            from->int_at(0) != k * E || to->int_at(0) != (k + 1) * E ||
            ax->int_at(0) != axis_want || !unit)
          return nullptr;
        return sl;
      };
      const onnx::NodeProto* ws = slice_of(mm->input(1), 1);
      if (!ws) return false;
      const onnx::NodeProto* wt = made(ws->input(0), "Transpose");
      if (!perm(wt, {1, 0}) || (w_t && wt != w_t)) return false;
      if (!w_t) take(w_t = wt);
      if (add) {
        const onnx::NodeProto* bs = slice_of(add->input(1), 0);
        if (!bs || (bias_all && bs->input(0) != bias_all->input(0))) return false;
        bias_all = bs;
      }
      x[k] = mm->input(0);
    }
    const bool cross = x[1] != x[0];
    if (x[2] != x[1] || rows[0] < 1 || rows[1] != rows[2] || (!cross && rows[1] != rows[0]) ||
        !scalar(sc->input(1), 1.0 / std::sqrt(double(D))))
      return false;
    const Const* w_in = cst(w_t->input(0));
    const Const* b_in = bias_all ? cst(bias_all->input(0)) : nullptr;
    if (!w_in || w_in->integer || w_in->dims != std::vector{3 * E, E} ||
        (has_bias && (!b_in || b_in->integer || b_in->numel() != 3 * E)))
      return false;
    if (masked) {
      const Const* m = cst(masked->input(1));
      if (m->dims.back() != rows[1] || m->dims[m->dims.size() - 2] != rows[0]) return false;
    }
    // Heads joined, then the out-projection.
    const onnx::NodeProto* tj = take(next(pv, "Transpose"));
    const onnx::NodeProto* rj = take(next(tj, "Reshape"));
    const onnx::NodeProto* mo = take(next(rj, "MatMul"));
    const Const* joined = rj ? cst(rj->input(1)) : nullptr;
    if (!perm(tj, {0, 2, 1, 3}) || !joined || joined->numel() != 3 || joined->int_at(0) != 0 ||
        joined->int_at(2) != E || !mo || mo->input(0) != rj->output(0))
      return false;
    const onnx::NodeProto* wo_t = take(made(mo->input(1), "Transpose"));
    const Const* w_out = wo_t ? cst(wo_t->input(0)) : nullptr;
    if (!perm(wo_t, {1, 0}) || !w_out || w_out->integer || w_out->dims != std::vector{E, E})
      return false;
    const onnx::NodeProto* last = mo;
    const Const* b_out = nullptr;
    if (has_bias) {
      last = take(next(mo, "Add"));
      b_out = last ? cst(other(last, mo->output(0))) : nullptr;
      if (!b_out || b_out->integer || b_out->dims != std::vector{E}) return false;
    }
    Fusion f =
        attention_layer(x[0], cross ? x[1] : std::string(), H, masked ? rows[0] : 0, has_bias);
    auto tensor = [](const Const& c, Shape s) {
      Tensor t(s);
      std::copy(c.f.begin(), c.f.end(), t.f32());
      return t;
    };
    f.params = {{"in_proj_weight", tensor(*w_in, Shape{3 * E, E})},
                {"out_proj_weight", tensor(*w_out, Shape{E, E})}};
    if (has_bias) {
      f.params.insert(f.params.begin() + 1, {"in_proj_bias", tensor(*b_in, Shape{3 * E})});
      f.params.push_back({"out_proj_bias", tensor(*b_out, Shape{E})});
    }
    f.base = clean_name(layer_base(*last));
    if (f.base.empty()) f.base = "attention";
    return claim(core, last, std::move(f));
  };

  // A MatMul of two computed values before a Softmax is attention of a form
  // not matched above: named as such, so the refusal says why.
  for (const auto& sm : m_.graph().node()) {
    if (!standard(sm)) continue;
    if (sm.op_type() != "Softmax" || attention(sm) || exported(sm)) continue;
    const onnx::NodeProto* p =
        net.producer.count(sm.input(0)) ? net.producer[sm.input(0)] : nullptr;
    for (int hop = 0; hop < 3 && p && p->op_type() != "MatMul"; ++hop) {
      auto q = net.producer.find(p->input(0));
      p = q == net.producer.end() ? nullptr : q->second;
    }
    if (p && p->op_type() == "MatMul" && !cst(p->input(0)) && !cst(p->input(1)))
      attention_miss_.insert(&sm);
  }

  // GELU, exact: torch's Mul(Mul(x, Add(Erf(Div(x, √2)), 1)), 0.5), or
  // DeepCanvas's own Mul(Mul(x, 0.5), Add(Erf(Div(x, √2)), 1)).
  for (const auto& erf : m_.graph().node()) {
    if (!standard(erf)) continue;
    if (erf.op_type() != "Erf") continue;
    const onnx::NodeProto* dv = made(erf.input(0), "Div");
    const onnx::NodeProto* ad = next(&erf, "Add");
    const onnx::NodeProto* m1 = next(ad, "Mul");
    if (!dv || uses_[dv->output(0)] != 1 || !scalar(dv->input(1), std::sqrt(2.0)) || !m1 ||
        !scalar(other(ad, erf.output(0)), 1))
      continue;
    const std::string& x = dv->input(0);
    const onnx::NodeProto* last = nullptr;
    const onnx::NodeProto* inner = nullptr;  // the Mul before the last
    if (other(m1, ad->output(0)) == x) {
      const onnx::NodeProto* m2 = next(m1, "Mul");
      if (m2 && scalar(other(m2, m1->output(0)), 0.5)) last = m2, inner = m1;
    } else {
      const onnx::NodeProto* half = made(other(m1, ad->output(0)), "Mul");
      if (half && uses_[half->output(0)] == 1 && half->input_size() == 2 &&
          (half->input(0) == x || half->input(1) == x) && scalar(other(half, x), 0.5))
        last = m1, inner = half;
    }
    if (!last) continue;
    Fusion f;
    f.type = "GELU";
    f.input = x;
    f.base = clean_name(layer_base(*last));
    skipped_.insert({dv, &erf, ad, inner});
    fusions_[last] = std::move(f);
  }

  // LayerNorm before LayerNormalization (opset < 17), as torch.onnx and
  // DeepCanvas's own export write it: m = ReduceMean(x), d = Sub(x, m),
  // ReduceMean(Pow(d, 2) or Mul(d, d)) + eps, Sqrt, Div(d, ·), then
  // optionally Mul by the weight and Add the bias. Both means over the last
  // axis, kept (checked against the input's rank when emitted).
  auto last_axis = [&](const onnx::NodeProto* m, std::optional<int64_t>& axis) {
    if (!m || attr_i(*m, "keepdims", 1) != 1) return false;
    std::vector<int64_t> axes = attr_ints(*m, "axes");
    if (axes.empty() && m->input_size() > 1)
      if (const Const* c = cst(m->input(1)); c && c->integer) axes = c->i;
    if (axes.size() != 1 || (axis && axes[0] != *axis)) return false;
    axis = axes[0];
    return true;
  };
  // One value per position: [D], or [1, …, 1, D].
  auto per_position = [](const Const* c) {
    if (!c || c->integer || c->dims.empty()) return false;
    for (size_t k = 0; k + 1 < c->dims.size(); ++k)
      if (c->dims[k] != 1) return false;
    return true;
  };
  for (const auto& sub : m_.graph().node()) {
    if (!standard(sub)) continue;
    if (sub.op_type() != "Sub" || sub.input_size() != 2) continue;
    const std::string& x = sub.input(0);
    const onnx::NodeProto* mean = made(sub.input(1), "ReduceMean");
    std::optional<int64_t> axis;
    if (!mean || mean->input(0) != x || uses_[mean->output(0)] != 1 || !last_axis(mean, axis))
      continue;
    // d feeds the square and the Div only.
    const auto& users = net.consumers[sub.output(0)];
    const onnx::NodeProto *sq = nullptr, *dv = nullptr;
    for (const auto* u : users) {
      if (u->op_type() == "Div" && u->input(0) == sub.output(0))
        dv = u;
      else if ((u->op_type() == "Pow" && u->input(0) == sub.output(0) && scalar(u->input(1), 2)) ||
               (u->op_type() == "Mul" && u->input(0) == sub.output(0) &&
                u->input(1) == sub.output(0)))
        sq = u;
    }
    const int reads = 2 + (sq && sq->op_type() == "Mul");  // Mul(d, d) reads it twice
    if (!sq || !dv || int(users.size()) != reads || uses_[sub.output(0)] != reads) continue;
    const onnx::NodeProto* var = next(sq, "ReduceMean");
    const onnx::NodeProto* add_eps = next(var, "Add");
    const onnx::NodeProto* sqrt = next(add_eps, "Sqrt");
    if (!var || !last_axis(var, axis) || !add_eps || !sqrt || dv->input(1) != sqrt->output(0) ||
        uses_[sqrt->output(0)] != 1)
      continue;
    const Const* eps = cst(other(add_eps, var->output(0)));
    if (!eps || eps->integer || eps->numel() != 1 || !(eps->at(0) >= 0)) continue;
    Fusion f;
    f.type = "LayerNorm";
    f.input = x;
    f.axis = *axis;
    f.attrs.set("eps", shortest_decimal(float(eps->at(0))));
    std::vector<const onnx::NodeProto*> inner = {mean, &sub, sq, var, add_eps, sqrt};
    const onnx::NodeProto* last = dv;
    // The affine part: × weight [D], + bias [D].
    const onnx::NodeProto* mw = next(dv, "Mul");
    const onnx::NodeProto* ab = next(mw, "Add");
    const Const* w = mw ? cst(other(mw, dv->output(0))) : nullptr;
    const Const* b = ab ? cst(other(ab, mw->output(0))) : nullptr;
    f.attrs.set("affine", per_position(w) && per_position(b) && w->numel() == b->numel());
    if (f.attrs.b("affine")) {
      f.params = {{"weight", to_tensor(*w, {w->numel()})}, {"bias", to_tensor(*b, {b->numel()})}};
      inner.push_back(dv);
      inner.push_back(mw);
      last = ab;
    }
    f.base = clean_name(layer_base(*last));
    skipped_.insert(inner.begin(), inner.end());
    fusions_[last] = std::move(f);
  }
}

void Importer::emit_fusion(const onnx::NodeProto& n, const Fusion& f) {
  auto defined = [&](const std::string& name) -> const Val& {
    auto it = vals_.find(name);
    if (it == vals_.end()) throw NotSupported{"input '" + name + "' is not defined before it"};
    return it->second;
  };
  const Val& x = defined(f.input);
  if (x.is_const) throw NotSupported{"a computation on constants only is not supported"};
  if (f.type == "LayerNorm") {
    const auto& v = view_of(x);
    const int64_t rank = int64_t(v.size()) + 1;
    if (v.empty() || (f.axis != -1 && f.axis != rank - 1))
      throw NotSupported{"a layer normalisation over axis " + std::to_string(f.axis) +
                         " (only the last axis is supported)"};
    if (!f.params.empty() && f.params[0].second.numel() != v.back())
      throw NotSupported{"the layer normalisation's weight does not have one value per position"};
    out(n, 0, plain(add("LayerNorm", f.base, f.attrs, {materialize(x)}, f.params)));
    return;
  }
  if (f.type == "GELU") {
    if (!x.pad.empty() || x.layout != Layout::Plain) materialize(x);  // throws why
    Val o = x;
    o.node = add("GELU", f.base, f.attrs, {x.node});
    out(n, 0, o);
    return;
  }
  // MultiHeadAttention: the queries, and in cross mode the keys/values,
  // each a sequence.
  auto sequence = [&](const Val& s) {
    const auto& v = view_of(s);
    if (v.size() != 2)
      throw NotSupported{"attention over a " + std::to_string(v.size() + 1) +
                         "-D input; MultiHeadAttention takes a sequence [N, steps, features]"};
    return materialize(s);
  };
  std::vector<NodeId> ins = {sequence(x)};
  if (f.mask_steps && view_of(x)[0] != f.mask_steps)
    throw NotSupported{"a causal mask of " + std::to_string(f.mask_steps) +
                       " steps over a sequence of " + std::to_string(view_of(x)[0])};
  if (!f.input2.empty()) {
    const Val& kv = defined(f.input2);
    if (kv.is_const) throw NotSupported{"attention over a constant sequence is not supported"};
    ins.push_back(sequence(kv));
  }
  out(n, 0, plain(add(f.type, f.base, f.attrs, ins, f.params)));
}

}  // namespace dc::onnx_import
