#include <deepcanvas/errors.h>
#include <deepcanvas/format.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/search_space.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace dc {

namespace {

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

double parse_number(const std::string& spec, const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw SearchSpaceError(SearchSpaceError::Problem::BadSpec, spec,
                         "'" + text + "' is not a number");
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  for (;;) {
    const size_t end = s.find(sep, at);
    out.push_back(s.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) return out;
    at = end + 1;
  }
}

// Every name a parameter could have, for "did you mean".
std::vector<std::string> known_names(const Graph& g) {
  std::vector<std::string> names;
  for (const SettingSpec& s : training_settings()) {
    names.push_back(s.attr.name);
    if (!s.flag.empty()) names.push_back(s.flag);
  }
  for (const auto& [id, n] : g.nodes())
    if (const LayerDescriptor* d = LayerRegistry::instance().find(n.type))
      for (const AttrSpec& a : d->attrs) names.push_back(n.name + "." + a.name);
  return names;
}

// The value text means for the target (a setting's or an attribute's type).
AttrValue typed(const SearchParam& p, const std::string& text) {
  return p.setting ? parse_setting_text(*p.setting, text) : parse_attr_text(p.spec, text);
}

// "" when the target takes v, else what is wrong.
std::string problem(const SearchParam& p, const AttrValue& v) {
  return p.setting ? setting_problem(*p.setting, v) : validate_attr(p.spec, v);
}

AttrValue numeric(const SearchParam& p, double x) {
  if (p.spec.type == AttrType::Int) return int64_t(std::llround(x));
  return x;
}

}  // namespace

std::string SearchParam::spec_text() const {
  switch (kind) {
    case Kind::Log:
      return name + "=log:" + number_text(lo) + ":" + number_text(hi);
    case Kind::Float:
      return name + "=float:" + number_text(lo) + ":" + number_text(hi);
    case Kind::Int:
      return name + "=int:" + number_text(lo) + ":" + number_text(hi);
    case Kind::Choice:
      break;
  }
  std::string s = name + "=choice:";
  for (size_t i = 0; i < choices.size(); ++i) s += (i ? "," : "") + choices[i];
  return s;
}

namespace {

std::string search_space_message(SearchSpaceError::Problem problem, const std::string& spec,
                                 const std::string& detail) {
  if (problem == SearchSpaceError::Problem::Empty) return "no search parameter given: " + detail;
  return "search parameter " + spec + ": " + detail;
}

}  // namespace

SearchSpaceError::SearchSpaceError(Problem problem, std::string spec, std::string detail, int index)
    : Error(search_space_message(problem, spec, detail)),
      problem_(problem),
      spec_(std::move(spec)),
      detail_(std::move(detail)),
      index_(index) {}

SearchParam parse_search_param(const std::string& spec, const Graph& g) {
  const size_t eq = spec.find('=');
  const auto bad = [&](const std::string& detail) {
    return SearchSpaceError(SearchSpaceError::Problem::BadSpec, spec, detail);
  };
  if (eq == std::string::npos || eq == 0)
    throw bad(
        "expected NAME=KIND:ARGS, e.g. lr=log:1e-4:1e-2, batch=choice:32,64,128, "
        "conv1.filters=int:16:64, dropout.rate=float:0:0.5");
  SearchParam p;
  p.name = spec.substr(0, eq);
  // The target: a setting by flag or key, else node.attribute.
  p.setting = find_setting_by_flag(p.name);
  if (!p.setting) p.setting = find_setting(p.name);
  if (!p.setting && p.name.rfind("training.", 0) == 0) p.setting = find_setting(p.name.substr(9));
  if (p.setting) {
    p.spec = p.setting->attr;
  } else {
    const size_t dot = p.name.rfind('.');
    const Node* n = dot == std::string::npos ? nullptr : g.find_by_name(p.name.substr(0, dot));
    const LayerDescriptor* d = n ? LayerRegistry::instance().find(n->type) : nullptr;
    const AttrSpec* a = d ? d->find_attr(p.name.substr(dot + 1)) : nullptr;
    if (!a) {
      std::string best;
      size_t best_d = SIZE_MAX;
      for (const std::string& k : known_names(g))
        if (size_t dd = edit_distance(p.name, k); dd < best_d) best_d = dd, best = k;
      const std::string hint =
          best_d <= std::max<size_t>(2, p.name.size() / 3) ? " (did you mean '" + best + "'?)" : "";
      throw bad("unknown parameter '" + p.name + "'" + hint +
                "; a parameter is a training setting (lr, batch, optimizer.weight_decay, ...) "
                "or LAYER.ATTRIBUTE of a layer in the network (conv1.filters)");
    }
    p.node = n->name;
    p.attr = a->name;
    p.spec = *a;
  }
  const std::string body = spec.substr(eq + 1);
  const size_t colon = body.find(':');
  const std::string kind = body.substr(0, colon);
  const std::string args = colon == std::string::npos ? "" : body.substr(colon + 1);
  const AttrType t = p.spec.type;
  const bool numeric_target = t == AttrType::Int || t == AttrType::Float;
  p.integer = t == AttrType::Int;
  if (kind == "choice") {
    p.kind = SearchParam::Kind::Choice;
    if (args.empty()) throw bad("choice needs at least one value (choice:32,64,128)");
    p.choices = split(args, ',');
    for (const std::string& c : p.choices) {
      if (c.empty()) throw bad("an empty value in the choice list");
      AttrValue v;
      try {
        v = typed(p, c);
      } catch (const std::exception& e) {
        throw bad("value '" + c + "' does not fit " + p.name + ": " + e.what());
      }
      if (std::string why = problem(p, v); !why.empty())
        throw bad("value " + c + " is outside what " + p.name + " takes: " + why);
    }
    return p;
  }
  if (kind != "log" && kind != "float" && kind != "int")
    throw bad("unknown kind '" + kind + "'; use log:LO:HI, float:LO:HI, int:LO:HI " +
              "or choice:A,B,...");
  if (!numeric_target)
    throw bad(p.name + " takes " + attr_type_with_article(t) + ", not a number; use choice:" +
              (p.spec.choices.empty() ? std::string("A,B") : p.spec.choices.front() + ",..."));
  const std::vector<std::string> lohi = split(args, ':');
  if (lohi.size() != 2 || lohi[0].empty() || lohi[1].empty())
    throw bad(kind + " needs two bounds, " + kind + ":LO:HI");
  p.lo = parse_number(spec, lohi[0]);
  p.hi = parse_number(spec, lohi[1]);
  p.kind = kind == "log"   ? SearchParam::Kind::Log
           : kind == "int" ? SearchParam::Kind::Int
                           : SearchParam::Kind::Float;
  if (!(p.lo < p.hi))
    throw bad("empty range: the lower bound " + lohi[0] + " must be less than the upper bound " +
              lohi[1]);
  if (p.kind == SearchParam::Kind::Log && p.lo <= 0)
    throw bad("a log range must be above 0 (it cannot reach or cross 0), got " + lohi[0] + ".." +
              lohi[1] + "; use float:LO:HI for a linear range");
  if (p.kind == SearchParam::Kind::Int && (p.lo != std::floor(p.lo) || p.hi != std::floor(p.hi)))
    throw bad("int bounds must be whole numbers");
  if (p.kind == SearchParam::Kind::Float && p.integer)
    throw bad(p.name + " is an integer; use int:LO:HI, log:LO:HI or choice:");
  for (double b : {p.lo, p.hi})
    if (std::string why = problem(p, numeric(p, b)); !why.empty())
      throw bad("bound " + number_text(b) + " is outside what " + p.name + " takes: " + why);
  return p;
}

SearchSpace parse_search_space(const std::vector<std::string>& specs, const Graph& g) {
  SearchSpace s;
  for (const std::string& spec : specs) {
    SearchParam p;
    try {
      p = parse_search_param(spec, g);
    } catch (const SearchSpaceError& e) {
      throw SearchSpaceError(e.problem(), e.spec(), e.detail(), int(s.params.size()));
    }
    for (const SearchParam& q : s.params)
      if ((p.setting && p.setting == q.setting) ||
          (!p.setting && p.node == q.node && p.attr == q.attr))
        throw SearchSpaceError(SearchSpaceError::Problem::DuplicateTarget, spec,
                               p.name + " is already in the search space (" + q.spec_text() + ")",
                               int(s.params.size()));
    s.params.push_back(std::move(p));
  }
  if (s.params.empty())
    throw SearchSpaceError(SearchSpaceError::Problem::Empty, "", "say what the sweep varies");
  return s;
}

AttrValue search_value(const SearchParam& p, double x) {
  if (p.kind == SearchParam::Kind::Choice) {
    const size_t i = size_t(std::clamp(x, 0.0, double(p.choices.size() - 1)));
    return typed(p, p.choices[i]);
  }
  return numeric(p, x);
}

void apply_search_point(const SearchSpace& s, const SearchPoint& x, Graph& g, TrainConfig& c) {
  for (size_t i = 0; i < s.params.size(); ++i) {
    const SearchParam& p = s.params[i];
    const AttrValue v = search_value(p, x.at(i));
    if (std::string why = problem(p, v); !why.empty())
      throw Error(p.name + " = " + attr_to_string(v) + ": " + why);
    if (p.setting) {
      p.setting->set(c, v);
    } else {
      const Node* n = g.find_by_name(p.node);
      if (!n) throw Error("the network has no layer named '" + p.node + "'");
      g.set_attr(n->id, p.attr, v);
    }
  }
}

std::string current_search_point(const SearchSpace& s, const Graph& g, const TrainConfig& c,
                                 SearchPoint& x) {
  SearchPoint out;
  for (const SearchParam& p : s.params) {
    AttrValue v;
    if (p.setting) {
      v = p.setting->get(c);
    } else {
      const Node* n = g.find_by_name(p.node);
      if (!n) return "the network has no layer named '" + p.node + "'";
      v = n->attrs.has(p.attr) ? n->attrs.get(p.attr) : p.spec.def;
    }
    const std::string outside = p.name + " = " + attr_to_string(v) + " is outside " +
                                p.spec_text().substr(p.name.size() + 1);
    if (p.kind == SearchParam::Kind::Choice) {
      size_t i = 0;
      while (i < p.choices.size() && !(typed(p, p.choices[i]) == v)) ++i;
      if (i == p.choices.size()) return outside;
      out.push_back(double(i));
      continue;
    }
    double d;
    if (const auto* iv = std::get_if<int64_t>(&v))
      d = double(*iv);
    else if (const auto* fv = std::get_if<double>(&v))
      d = *fv;
    else
      return p.name + " = " + attr_to_string(v) + " is not a number";
    // Bounds as written ("3e-4") and values stored (0.0003) may differ in
    // the last bit.
    const double slack = 1e-9 * std::max(std::abs(p.lo), std::abs(p.hi));
    if (!(d >= p.lo - slack && d <= p.hi + slack)) return outside;
    out.push_back(std::clamp(d, p.lo, p.hi));
  }
  x = std::move(out);
  return "";
}

}  // namespace dc
