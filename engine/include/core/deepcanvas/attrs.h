#pragma once
// Typed layer attributes and the schema that describes them. The property
// editor is generated from AttrSpec, and project files are validated against
// it, so each spec carries its default, range, choices and help text.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace dc {

enum class AttrType { Int, Float, Bool, String, Enum, IntPair, IntList };

const char* attr_type_name(AttrType t);
// "an integer", "a number", ... for messages.
std::string attr_type_with_article(AttrType t);

// IntPair and IntList both hold std::vector<int64_t> (a pair has 2 entries).
using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

struct AttrSpec {
  std::string name;
  AttrType type = AttrType::Int;
  AttrValue def;
  double min = -1e18;  // numeric range, inclusive; for pairs/lists per element
  double max = 1e18;
  std::vector<std::string> choices;  // Enum only
  std::string help;
};

class Attrs {
 public:
  Attrs() = default;
  void set(const std::string& name, AttrValue v) { values_[name] = std::move(v); }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  const AttrValue& get(const std::string& name) const;  // throws GraphError
  int64_t i(const std::string& name) const;
  double f(const std::string& name) const;  // also accepts an Int value
  bool b(const std::string& name) const;
  const std::string& s(const std::string& name) const;
  const std::vector<int64_t>& ints(const std::string& name) const;
  const std::map<std::string, AttrValue>& values() const { return values_; }
  bool operator==(const Attrs& o) const { return values_ == o.values_; }

 private:
  std::map<std::string, AttrValue> values_;
};

// Checks one value against its spec; returns an error message or "".
std::string validate_attr(const AttrSpec& spec, const AttrValue& v);
// The value `text` gives an attribute of spec.type (the CLI's edit --set,
// a sweep's values): an integer or number that is the whole text, true or
// false (1 or 0), a list as 3x64x64, 3×64×64 or 3,64,64 (a pair may be one
// number for both), else the text itself. Throws Error saying what is
// wrong; the range is validate_attr's to check.
AttrValue parse_attr_text(const AttrSpec& spec, const std::string& text);
// Human-readable value, e.g. "3×3", "same", "0.5".
std::string attr_to_string(const AttrValue& v);

}  // namespace dc
