#pragma once
// A sweep's search space: which training settings (schema keys or their CLI
// flags: "lr", "optimizer.lr") and layer attributes ("conv1.filters") vary,
// and over what: "lr=log:1e-4:1e-2", "dropout.rate=float:0:0.5",
// "conv1.filters=int:16:64", "batch=choice:32,64,128". Every bound and
// choice is checked against the setting's or attribute's own schema, so a
// sweep never starts a trial the Trainer would refuse.
#include <deepcanvas/attrs.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/settings.h>
#include <deepcanvas/train_config.h>

#include <string>
#include <vector>

namespace dc {

struct SearchParam {
  enum class Kind { Log, Float, Int, Choice };
  std::string name;  // as written ("lr", "conv1.filters")
  Kind kind = Kind::Float;
  double lo = 0, hi = 1;             // Log, Float, Int (inclusive)
  std::vector<std::string> choices;  // Choice: the values as written
  bool integer = false;              // the target holds integers: values are rounded
  // What it sets: a training setting, or attribute `attr` of node `node`.
  const SettingSpec* setting = nullptr;
  std::string node, attr;
  AttrSpec spec;  // the target's schema (type, range, choices)

  std::string spec_text() const;  // "lr=log:0.0001:0.01", as parsed
};

struct SearchSpace {
  std::vector<SearchParam> params;
};

// A point of the space: one number per parameter (Choice: the index).
using SearchPoint = std::vector<double>;

// A spec the parser refuses. what() is the CLI's text ("--param SPEC: why",
// or "no --param given: ..."); the parts let another front end (the app's
// space editor) word it without the CLI's flag and point at the row.
class SearchSpaceError : public Error {
 public:
  enum class Problem {
    BadSpec,          // the spec itself: its syntax, name, kind or range
    DuplicateTarget,  // a second spec for a setting or attribute already in the space
    Empty,            // no spec at all
  };
  SearchSpaceError(Problem problem, std::string spec, std::string detail, int index = -1);
  Problem problem() const { return problem_; }
  const std::string& spec() const { return spec_; }      // the subject; "" for Empty
  const std::string& detail() const { return detail_; }  // why, without "--param SPEC: "
  // The spec's position in parse_search_space's list; -1 from parse_search_param.
  int index() const { return index_; }

 private:
  Problem problem_;
  std::string spec_, detail_;
  int index_;
};

// Parses "NAME=KIND:ARGS" against the graph's nodes and the settings
// schema. Throws SearchSpaceError with the whole spec in the message: an unknown name
// (with the nearest known one), an unknown kind, an empty range, a log range
// that reaches 0 or below, bounds or choices outside the schema's range, a
// kind that does not fit the target (float for an integer setting).
SearchParam parse_search_param(const std::string& spec, const Graph& g);
SearchSpace parse_search_space(const std::vector<std::string>& specs, const Graph& g);

// The typed value a point's coordinate stands for (rounded for integers,
// the choice parsed for its target).
AttrValue search_value(const SearchParam& p, double x);
// Writes a point into a copy of the graph and settings. Throws Error when a
// value is refused (an attribute whose new value breaks the network's shapes
// is found later, when the trial's network is built).
void apply_search_point(const SearchSpace& s, const SearchPoint& x, Graph& g, TrainConfig& c);
// The point that stands for g's and c's current values (a layer attribute
// the project leaves out counts as its default). Returns "" and fills x, or
// says which value lies outside the space ("lr = 0.05 is outside
// log:0.0001:0.01"), as a sweep's baseline trial needs.
std::string current_search_point(const SearchSpace& s, const Graph& g, const TrainConfig& c,
                                 SearchPoint& x);

}  // namespace dc
