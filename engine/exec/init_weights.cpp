// Starting a fresh run from another network's weights (transfer learning):
// tensors are matched by name, so a pretrained base imported from ONNX keeps
// its weights while a new head, which the file does not name, keeps the
// seed's initialisation.
#include <deepcanvas/errors.h>
#include <deepcanvas/plan.h>

#include <map>
#include <set>

namespace dc {

namespace {

std::string layer_of(const std::string& param_name) {
  const size_t dot = param_name.rfind('.');
  return dot == std::string::npos ? param_name : param_name.substr(0, dot);
}

std::string list(const std::vector<std::string>& v, size_t most) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < most; ++i) s += (i ? ", " : "") + v[i];
  if (v.size() > most) s += ", ... (" + std::to_string(v.size() - most) + " more)";
  return s;
}

}  // namespace

std::string Plan::MatchReport::summary() const {
  std::string s = std::to_string(loaded_layers.size()) + " layers loaded (" +
                  std::to_string(loaded_tensors) + " tensors), " +
                  std::to_string(fresh_layers.size()) + " initialised fresh";
  if (!fresh_layers.empty()) s += ": " + list(fresh_layers, 8);
  if (!unused.empty())
    s += "; " + std::to_string(unused.size()) + " tensors of the file unused: " + list(unused, 4);
  return s;
}

Plan::MatchReport Plan::load_matching(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                      const std::string& source) {
  std::map<std::string, const Tensor*> by_name;
  for (auto& [k, t] : tensors) by_name[k] = &t;
  // Check every match before copying anything, so a wrong file leaves the
  // initialised weights as they were.
  int64_t matched = 0;
  for (auto& p : params_) {
    auto it = by_name.find(p.name);
    if (it == by_name.end()) continue;
    ++matched;
    if (it->second->shape() != p.param->value.shape() || it->second->dtype() != DType::F32)
      throw IoError(source + ": tensor '" + p.name + "' is " + it->second->shape().str(true) +
                    " but layer '" + layer_of(p.name) + "' of this network needs " +
                    p.param->value.shape().str(true) +
                    "; change the layer back to the base's size, rename it so it is "
                    "initialised fresh, or use weights made for this network");
  }
  if (matched == 0 && !params_.empty())
    throw IoError(source + ": none of its " + std::to_string(tensors.size()) +
                  " tensors matches a parameter of this network by name (it has e.g. '" +
                  (tensors.empty() ? std::string("nothing") : tensors.front().first) +
                  "', the network needs e.g. '" + params_.front().name +
                  "'); use the weights of the model this project was imported from");

  MatchReport r;
  std::set<std::string> used;
  // Per layer, in plan order: loaded when all its tensors came from the file.
  std::vector<std::string> order;
  std::map<std::string, std::pair<int, int>> counts;  // layer -> {loaded, total}
  for (auto& p : params_) {
    const std::string layer = layer_of(p.name);
    if (!counts.count(layer)) order.push_back(layer);
    auto& c = counts[layer];
    ++c.second;
    auto it = by_name.find(p.name);
    if (it == by_name.end()) continue;
    p.param->value.copy_from(*it->second);
    used.insert(p.name);
    ++c.first;
    ++r.loaded_tensors;
  }
  for (const std::string& layer : order) {
    const auto& c = counts[layer];
    (c.first == c.second ? r.loaded_layers : r.fresh_layers).push_back(layer);
  }
  for (auto& [k, t] : tensors)
    if (!used.count(k)) r.unused.push_back(k);
  return r;
}

}  // namespace dc
