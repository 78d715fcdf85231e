#include <deepcanvas/checked.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>

#include <algorithm>
#include <mutex>

#include "builtin.h"

#include <deepcanvas/blocks.h>

namespace dc {

const AttrSpec* LayerDescriptor::find_attr(const std::string& name) const {
  for (const auto& a : attrs)
    if (a.name == name) return &a;
  return nullptr;
}

Attrs LayerDescriptor::with_defaults(const Attrs& a) const {
  Attrs out = a;
  for (const auto& s : attrs)
    if (!out.has(s.name)) out.set(s.name, s.def);
  return out;
}

LayerRegistry& LayerRegistry::instance() {
  static LayerRegistry r;
  return r;
}

void LayerRegistry::add(LayerDescriptor d) {
  if (find(d.type)) throw Error("layer type '" + d.type + "' registered twice");
  // Every shape rule's result is checked here, once for all layers (and
  // for whoever calls a rule: the graph, the importer): a chain of layers
  // that multiplies sizes past 64 bits is an error, not a wrapped count.
  // (Larger than a tensor may be is left to the memory checks, which say
  // what the network would take.)
  if (d.infer)
    d.infer = [rule = std::move(d.infer)](const std::vector<Shape>& in, const Attrs& a) {
      Shape s = rule(in, a);
      checked_product(s.dims(), "the output (" + s.str() + ")");
      return s;
    };
  items_.push_back(std::make_unique<LayerDescriptor>(std::move(d)));
}

const LayerDescriptor* LayerRegistry::find(const std::string& type) const {
  for (const auto& d : items_)
    if (d->type == type) return d.get();
  return nullptr;
}

const LayerDescriptor& LayerRegistry::get(const std::string& type) const {
  if (auto d = find(type)) return *d;
  std::string known;
  for (auto* d : all()) known += (known.empty() ? "" : ", ") + d->type;
  throw GraphError("unknown layer type '" + type + "' (known types: " + known + ")");
}

std::vector<const LayerDescriptor*> LayerRegistry::all() const {
  std::vector<const LayerDescriptor*> v;
  for (const auto& d : items_) v.push_back(d.get());
  std::sort(v.begin(), v.end(), [](auto* a, auto* b) {
    return a->category != b->category ? a->category < b->category : a->type < b->type;
  });
  return v;
}

bool is_input_type(const std::string& type) {
  return type == "Input" || type == "SequenceInput";
}

void register_builtin_layers() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& r = LayerRegistry::instance();
    register_input_layers(r);
    register_dense_layers(r);
    register_shape_layers(r);
    register_activation_layers(r);
    register_merge_layers(r);
    register_conv_layers(r);
    register_pool_layers(r);
    register_norm_layers(r);
    register_dropout_layers(r);
    register_sequence_layers(r);
    register_embedding_layers(r);
    register_recurrent_layers(r);
    register_attention_layers(r);
    register_token_layers(r);
    register_channel_layers(r);
    register_block_layer();
  });
}

}  // namespace dc
