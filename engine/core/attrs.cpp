#include <deepcanvas/attrs.h>
#include <deepcanvas/errors.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

namespace dc {

const char* attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::Int:
      return "integer";
    case AttrType::Float:
      return "number";
    case AttrType::Bool:
      return "boolean";
    case AttrType::String:
      return "string";
    case AttrType::Enum:
      return "choice";
    case AttrType::IntPair:
      return "pair of integers";
    case AttrType::IntList:
      return "list of integers";
  }
  return "?";
}

std::string attr_type_with_article(AttrType t) {
  // Only "integer" starts with a vowel sound among the names above.
  const std::string n = attr_type_name(t);
  return (n[0] == 'i' ? "an " : "a ") + n;
}

const AttrValue& Attrs::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw GraphError("missing attribute '" + name + "'");
  return it->second;
}

int64_t Attrs::i(const std::string& name) const {
  const AttrValue& v = get(name);
  if (auto p = std::get_if<int64_t>(&v)) return *p;
  if (auto p = std::get_if<bool>(&v)) return *p ? 1 : 0;
  throw GraphError("attribute '" + name + "' is not an integer");
}

double Attrs::f(const std::string& name) const {
  const AttrValue& v = get(name);
  if (auto p = std::get_if<double>(&v)) return *p;
  if (auto p = std::get_if<int64_t>(&v)) return static_cast<double>(*p);
  throw GraphError("attribute '" + name + "' is not a number");
}

bool Attrs::b(const std::string& name) const {
  const AttrValue& v = get(name);
  if (auto p = std::get_if<bool>(&v)) return *p;
  if (auto p = std::get_if<int64_t>(&v)) return *p != 0;
  throw GraphError("attribute '" + name + "' is not a boolean");
}

const std::string& Attrs::s(const std::string& name) const {
  const AttrValue& v = get(name);
  if (auto p = std::get_if<std::string>(&v)) return *p;
  throw GraphError("attribute '" + name + "' is not a string");
}

const std::vector<int64_t>& Attrs::ints(const std::string& name) const {
  const AttrValue& v = get(name);
  if (auto p = std::get_if<std::vector<int64_t>>(&v)) return *p;
  throw GraphError("attribute '" + name + "' is not a list of integers");
}

static std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

static std::string range_text(const AttrSpec& s) {
  std::string lo = s.min > -1e17 ? num(s.min) : "-inf";
  std::string hi = s.max < 1e17 ? num(s.max) : "inf";
  return "[" + lo + ", " + hi + "]";
}

std::string validate_attr(const AttrSpec& s, const AttrValue& v) {
  auto in_range = [&](double x) { return x >= s.min && x <= s.max; };
  auto bad_type = [&]() {
    return "attribute '" + s.name + "' must be " + attr_type_with_article(s.type) + ", got " +
           attr_to_string(v);
  };
  switch (s.type) {
    case AttrType::Int: {
      auto p = std::get_if<int64_t>(&v);
      if (!p) return bad_type();
      if (!in_range(double(*p)))
        return "attribute '" + s.name + "' = " + std::to_string(*p) + " is outside " +
               range_text(s);
      return "";
    }
    case AttrType::Float: {
      double x;
      if (auto p = std::get_if<double>(&v))
        x = *p;
      else if (auto q = std::get_if<int64_t>(&v))
        x = double(*q);
      else
        return bad_type();
      if (!std::isfinite(x) || !in_range(x))
        return "attribute '" + s.name + "' = " + num(x) + " is outside " + range_text(s);
      return "";
    }
    case AttrType::Bool:
      return std::holds_alternative<bool>(v) ? "" : bad_type();
    case AttrType::String:
      return std::holds_alternative<std::string>(v) ? "" : bad_type();
    case AttrType::Enum: {
      auto p = std::get_if<std::string>(&v);
      if (!p) return bad_type();
      for (auto& c : s.choices)
        if (c == *p) return "";
      std::string all;
      for (auto& c : s.choices) all += (all.empty() ? "" : ", ") + c;
      return "attribute '" + s.name + "' = '" + *p + "' is not one of: " + all;
    }
    case AttrType::IntPair:
    case AttrType::IntList: {
      auto p = std::get_if<std::vector<int64_t>>(&v);
      if (!p) return bad_type();
      if (s.type == AttrType::IntPair && p->size() != 2)
        return "attribute '" + s.name + "' must have 2 values, got " + std::to_string(p->size());
      for (int64_t x : *p)
        if (!in_range(double(x)))
          return "attribute '" + s.name + "' value " + std::to_string(x) + " is outside " +
                 range_text(s);
      return "";
    }
  }
  return "";
}

namespace {

// An integer, the whole of `text`.
int64_t whole_int(const std::string& text) {
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw Error("'" + text + "' is not an integer");
  return int64_t(v);
}

}  // namespace

AttrValue parse_attr_text(const AttrSpec& spec, const std::string& text) {
  switch (spec.type) {
    case AttrType::Int:
      return whole_int(text);
    case AttrType::Float: {
      size_t used = 0;
      double v = 0;
      try {
        v = std::stod(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != text.size()) throw Error("'" + text + "' is not a number");
      return v;
    }
    case AttrType::Bool:
      if (text == "true" || text == "1") return true;
      if (text == "false" || text == "0") return false;
      throw Error("'" + text + "' is not true or false");
    case AttrType::IntPair:
    case AttrType::IntList: {
      std::string t = text;
      for (size_t at; (at = t.find("×")) != std::string::npos;) t.replace(at, 2, ",");
      for (char& c : t)
        if (c == 'x' || c == 'X') c = ',';
      std::vector<int64_t> v;
      size_t start = 0;
      for (size_t comma; (comma = t.find(',', start)) != std::string::npos; start = comma + 1)
        v.push_back(whole_int(t.substr(start, comma - start)));
      v.push_back(whole_int(t.substr(start)));
      if (spec.type == AttrType::IntPair && v.size() == 1) v.push_back(v[0]);
      return v;
    }
    case AttrType::String:
    case AttrType::Enum:
      break;
  }
  return text;
}

std::string attr_to_string(const AttrValue& v) {
  if (auto p = std::get_if<int64_t>(&v)) return std::to_string(*p);
  if (auto p = std::get_if<double>(&v)) return num(*p);
  if (auto p = std::get_if<bool>(&v)) return *p ? "true" : "false";
  if (auto p = std::get_if<std::string>(&v)) return *p;
  const auto& l = std::get<std::vector<int64_t>>(v);
  std::string s;
  for (size_t i = 0; i < l.size(); ++i) s += (i ? "\u00d7" : "") + std::to_string(l[i]);
  return s;
}

}  // namespace dc
