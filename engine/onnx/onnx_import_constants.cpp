// The importer's constants: reading initializers and Constant ops, and
// folding the shape arithmetic PyTorch writes around view() calls and
// recurrent layers (Shape, Cast, Sub/Mul/Div, ConstantOfShape, Expand) into
// new constants, each checked against kMaxFolded and the tensor limits.
#include <deepcanvas/checked.h>
#include <deepcanvas/errors.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>

#include "onnx_import_internal.h"

namespace dc::onnx_import {

namespace {

// A float used as an integer (an index, a size); one that is no integer in
// range stops the op rather than overflowing.
int64_t to_int(float v) {
  if (!(std::fabs(v) < 1e18f)) throw NotSupported{"a value out of the integer range"};
  return static_cast<int64_t>(v);
}

}  // namespace

int64_t Const::int_at(int64_t k) const {
  return integer ? i[size_t(k)] : to_int(f[size_t(k)]);
}

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
                               std::vector<int64_t> def) {
  const auto* a = find_attr(n, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : def;
}

namespace {

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

}  // namespace

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

double shortest_decimal(float v) {
  // The shortest decimal that reads back as the same float (1e-5, not
  // 9.99999975e-06): the number a float attribute was written from.
  for (int digits = 1; digits <= 9; ++digits) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*g", digits, double(v));
    const double d = std::strtod(buf, nullptr);
    if (float(d) == v) return d;
  }
  return double(v);
}

Tensor to_tensor(const Const& c, std::vector<int64_t> dims) {
  if (dims.empty()) dims = c.dims;
  Tensor t{Shape(dims)};
  for (int64_t k = 0; k < c.numel(); ++k) t.f32()[k] = float(c.at(k));
  return t;
}

void Importer::fold(int64_t n) {
  if (n > kMaxFolded - folded_)
    throw NotSupported{"the constants folded at import would pass " + std::to_string(kMaxFolded) +
                       " values"};
  folded_ += n;
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

// Operations on constants (shape computations) broadcast only the forms
// shape arithmetic takes: operands of one shape, or single values.
namespace {

// The operand whose shape the result has; throws for other broadcasting.
const Const& widest(const std::vector<const Const*>& cs) {
  const Const* w = cs[0];
  for (const Const* c : cs) {
    if (c->numel() != 1 && w->numel() != 1 && c->dims != w->dims)
      throw NotSupported{"broadcasting between constants of shapes " + dims_str(w->dims) + " and " +
                         dims_str(c->dims)};
    if (c->numel() != 1) w = c;
  }
  return *w;
}

}  // namespace

// Equal and Where on constants: torch.onnx's expand(N, -1, -1) replaces
// each -1 by 1 with Where(Equal(sizes, -1), 1, sizes).
void Importer::op_equal(const onnx::NodeProto& n) {
  const Const& a = cin(n, 0, "each operand");
  const Const& b = cin(n, 1, "each operand");
  const Const& w = widest({&a, &b});
  fold(w.numel());
  Const o;
  o.integer = true;
  o.dims = w.dims;
  for (int64_t k = 0; k < w.numel(); ++k) {
    const int64_t ka = a.numel() == 1 ? 0 : k, kb = b.numel() == 1 ? 0 : k;
    const bool eq =
        a.integer && b.integer ? a.i[size_t(ka)] == b.i[size_t(kb)] : a.at(ka) == b.at(kb);
    o.i.push_back(eq);
  }
  out(n, 0, constant(o));
}

void Importer::op_where(const onnx::NodeProto& n) {
  const Const& c = cin(n, 0, "the condition");
  const Const& x = cin(n, 1, "each operand");
  const Const& y = cin(n, 2, "each operand");
  const Const& w = widest({&c, &x, &y});
  fold(w.numel());
  Const o;
  o.integer = x.integer && y.integer;
  o.dims = w.dims;
  for (int64_t k = 0; k < w.numel(); ++k) {
    const Const& from = c.int_at(c.numel() == 1 ? 0 : k) ? x : y;
    const int64_t kf = from.numel() == 1 ? 0 : k;
    if (o.integer)
      o.i.push_back(from.i[size_t(kf)]);
    else
      o.f.push_back(float(from.at(kf)));
  }
  out(n, 0, constant(o));
}

void Importer::op_arith(const onnx::NodeProto& n) {
  std::vector<const Const*> cs;
  for (int k = 0; k < n.input_size(); ++k) cs.push_back(&cin(n, k, "each operand"));
  const Const& w = widest(cs);
  fold(w.numel());
  // Decided once: the loops below may run over millions of folded values.
  const std::string& name = n.op_type();
  const char op = name == "Sub" ? '-' : name == "Mul" ? '*' : name == "Div" ? '/' : '+';
  Const o = *cs[0];
  if (o.numel() == 1 && w.numel() != 1) {
    // A single first value spread over the result's shape, keeping its type.
    o.dims = w.dims;
    if (o.integer)
      o.i.assign(size_t(w.numel()), o.int_at(0));
    else
      o.f.assign(size_t(w.numel()), float(o.at(0)));
  }
  for (size_t j = 1; j < cs.size(); ++j) {
    const Const& b = *cs[j];
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
    // To integers: token ids, from the network's input only, and read by
    // an Embedding only (materialize refuses them as numbers). Ids back
    // to floats would be the input truncated, which no layer computes.
    if (!to_float && !x.ids && !graph_input(x))
      throw NotSupported{
          "Cast of computed values to a non-float type (only the network's input, as token ids)"};
    if (to_float && x.ids)
      throw NotSupported{"token ids Cast back to numbers (only an Embedding reads token ids)"};
    Val o = x;
    o.ids = !to_float;
    out(n, 0, o);
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
  const Const& shape = cin(n, 1, "the shape");
  if (x.numel() == 1) {
    out(n, 0, constant(filled(shape, x)));
    return;
  }
  // A constant of one sample expanded over the batch (a class token's
  // expand(N, -1, -1)): still one sample, as the batch reads as one here.
  bool per_sample = shape.numel() == int64_t(x.dims.size()) && !x.dims.empty() && x.dims[0] == 1;
  for (int64_t k = 0; per_sample && k < shape.numel(); ++k) {
    const int64_t d = shape.int_at(k);
    per_sample = k == 0 ? d == kBatch || d == 1 : d == x.dims[size_t(k)] || d == 1 || d == -1;
  }
  if (!per_sample)
    throw NotSupported{"Expand of more than one value other than over the batch (" +
                       dims_str(x.dims) + " to " + dims_str(shape.i) + ")"};
  Val o = constant(x);
  o.origin = in(n, 0).origin.empty() ? n.input(0) : in(n, 0).origin;
  out(n, 0, o);
}

}  // namespace dc::onnx_import
