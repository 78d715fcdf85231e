// Recognising the ops torch.onnx writes for nn.MultiheadAttention and
// nn.GELU back into one MultiHeadAttention or GELU layer. torch 1.13 (opset
// 17) decomposes self-attention, batch_first, into: the input transposed to
// [T, N, E], one MatMul with in_proj_weight's transpose plus in_proj_bias,
// three Slices of it (query, key, value) each reshaped to [T, N·H, D] and
// transposed, the query divided by √D, the scores MatMul, Softmax, the
// value MatMul, the heads joined by Transpose/Reshape [T·N, E], the output
// projection (Gemm), and the result reshaped and transposed back to
// [N, T, E]. Those ops have no DeepCanvas layer each (a MatMul of two
// activations, heads folded into the batch), and the layer that computes
// exactly this exists, so the subgraph is matched as a whole, before the
// walk, from the ONNX structure alone; anything that differs is left to the
// op handlers, which refuse it naming the op.
#include <cmath>
#include <limits>

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
  Net net;
  for (const auto& n : m_.graph().node()) {
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
      if (!a || !m || m->integer || m->numel() < 1) return false;
      const int64_t T = m->dims.empty() ? 0 : m->dims.back();
      if (T * T != m->numel()) return false;
      bool ok = true;
      for (int64_t t = 0; t < T; ++t)
        for (int64_t u = 0; u < T; ++u) {
          const double v = m->at(t * T + u);
          ok = ok && (u > t ? std::isinf(v) && v < 0 : v == 0);
        }
      if (!ok) return false;  // another mask than the causal one
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
    const onnx::NodeProto* r[3] = {made(tq->input(0), "Reshape"), made(tk->input(0), "Reshape"),
                                   made(tv->input(0), "Reshape")};
    const onnx::NodeProto* sl[3] = {};
    bool ok = true;
    for (int k = 0; k < 3 && ok; ++k) {
      ok = take(r[k]) && (sl[k] = take(made(r[k]->input(0), "Slice"))) != nullptr &&
           sl[k]->input(0) == sl[0]->input(0) && sl[k]->input_size() >= 4;
      if (ok) {
        const Const* ax = cst(sl[k]->input(3));
        ok = ax && ax->numel() == 1 && (ax->int_at(0) == -1 || ax->int_at(0) == 2) &&
             (sl[k]->input_size() < 5 || sl[k]->input(4).empty() || scalar(sl[k]->input(4), 1));
      }
    }
    // q, k, v in order: each Slice starts where the one before ends.
    const Const* q0 = ok ? cst(sl[0]->input(1)) : nullptr;
    if (!ok || !q0 || q0->numel() != 1 || q0->int_at(0) != 0 ||
        sl[1]->input(1) != sl[0]->input(2) || sl[2]->input(1) != sl[1]->input(2))
      return false;
    // In-projection: Add(bias, MatMul(Transpose[1,0,2](x), W [E, 3E])).
    const onnx::NodeProto* ab = take(made(sl[0]->input(0), "Add"));
    if (!ab) return false;
    const onnx::NodeProto* mm = made(ab->input(0), "MatMul");
    if (!mm) mm = made(ab->input(1), "MatMul");
    if (!take(mm)) return false;
    const Const* bin = cst(other(ab, mm->output(0)));
    const Const* win = cst(mm->input(1));
    const onnx::NodeProto* tx = take(made(mm->input(0), "Transpose"));
    if (!bin || !win || !perm(tx, {1, 0, 2}) || win->integer || bin->integer ||
        win->dims.size() != 2 || win->dims[1] != 3 * win->dims[0] || bin->numel() != win->dims[1])
      return false;
    const int64_t E = win->dims[0];
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
    // Every value inside is used inside only, or by Shape (the arithmetic
    // of the Slices and Reshapes, which goes with it).
    std::set<const onnx::NodeProto*> inside(core.begin(), core.end());
    for (const auto* n : core) {
      if (n == ty) continue;
      for (const auto& out : n->output())
        for (const auto* c : net.consumers[out]) {
          if (inside.count(c) || c->op_type() == "Shape") continue;
          ok = false;
        }
    }
    if (!ok) return false;

    Fusion f;
    f.type = "MultiHeadAttention";
    f.input = tx->input(0);
    f.attrs.set("heads", H);
    f.attrs.set("causal", causal);
    f.attrs.set("bias", true);
    f.attrs.set("dropout", 0.0);
    Tensor w_in{Shape{3 * E, E}}, b_in{Shape{3 * E}}, w_out{Shape{E, E}}, b_out{Shape{E}};
    for (int64_t i = 0; i < E; ++i)
      for (int64_t o3 = 0; o3 < 3 * E; ++o3)
        w_in.f32()[o3 * E + i] = win->f[size_t(i * 3 * E + o3)];
    for (int64_t k = 0; k < 3 * E; ++k) b_in.f32()[k] = bin->f[size_t(k)];
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
    std::set<const onnx::NodeProto*> skip(core.begin(), core.end());
    skip.erase(ty);
    // The Shapes of values inside, then (to a fixed point) what feeds only
    // the skipped nodes.
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
          if (p == net.producer.end() || skip.count(p->second) || p->second == tx || i == f.input)
            continue;
          bool only = true;
          for (const auto& out : p->second->output())
            for (const auto* c : net.consumers[out]) only = only && skip.count(c);
          if (only) more.push_back(p->second);
        }
      for (const auto* n : more) grew = skip.insert(n).second || grew;
    }
    skipped_.insert(skip.begin(), skip.end());
    fusions_[ty] = std::move(f);
    return true;
  };

  // A MatMul of two computed values before a Softmax is attention of a form
  // not matched above: named as such, so the refusal says why.
  for (const auto& sm : m_.graph().node()) {
    if (sm.op_type() != "Softmax" || attention(sm)) continue;
    const onnx::NodeProto* p =
        net.producer.count(sm.input(0)) ? net.producer[sm.input(0)] : nullptr;
    for (int hop = 0; hop < 3 && p && p->op_type() != "MatMul"; ++hop) {
      auto q = net.producer.find(p->input(0));
      p = q == net.producer.end() ? nullptr : q->second;
    }
    if (p && p->op_type() == "MatMul" && !cst(p->input(0)) && !cst(p->input(1)))
      attention_miss_.insert(&sm);
  }

  // GELU, exact: Mul(Mul(x, Add(Erf(Div(x, √2)), 1)), 0.5).
  for (const auto& erf : m_.graph().node()) {
    if (erf.op_type() != "Erf") continue;
    const onnx::NodeProto* dv = made(erf.input(0), "Div");
    const onnx::NodeProto* ad = next(&erf, "Add");
    const onnx::NodeProto* m1 = next(ad, "Mul");
    const onnx::NodeProto* m2 = next(m1, "Mul");
    if (!dv || uses_[dv->output(0)] != 1 || !scalar(dv->input(1), std::sqrt(2.0)) || !m2 ||
        !scalar(other(ad, erf.output(0)), 1) || other(m1, ad->output(0)) != dv->input(0) ||
        !scalar(other(m2, m1->output(0)), 0.5))
      continue;
    Fusion f;
    f.type = "GELU";
    f.input = dv->input(0);
    f.base = clean_name(layer_base(*m2));
    skipped_.insert({dv, &erf, ad, m1});
    fusions_[m2] = std::move(f);
  }
}

void Importer::emit_fusion(const onnx::NodeProto& n, const Fusion& f) {
  auto it = vals_.find(f.input);
  if (it == vals_.end()) throw NotSupported{"input '" + f.input + "' is not defined before it"};
  const Val& x = it->second;
  if (x.is_const) throw NotSupported{"a computation on constants only is not supported"};
  if (f.type == "GELU") {
    if (!x.pad.empty() || x.layout != Layout::Plain) materialize(x);  // throws why
    Val o = x;
    o.node = add("GELU", f.base, f.attrs, {x.node});
    out(n, 0, o);
    return;
  }
  const auto& v = view_of(x);
  if (v.size() != 2)
    throw NotSupported{"attention over a " + std::to_string(v.size() + 1) +
                       "-D input; MultiHeadAttention takes a sequence [N, steps, features]"};
  out(n, 0, plain(add(f.type, f.base, f.attrs, {materialize(x)}, f.params)));
}

}  // namespace dc::onnx_import
