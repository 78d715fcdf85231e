// Layer names for the imported network: PyTorch's module paths, read from
// its scoped node names and initializer names, or the names DeepCanvas's own
// export wrote.
#include <string>

#include "onnx_import_internal.h"

namespace dc::onnx_import {

// "layer1.0.conv1" from PyTorch's scoped node name "/layer1/layer1.0/conv1/Conv"
// (each scope repeats its parent's path when it is a numbered child).
std::string module_from_node_name(const std::string& node_name) {
  std::vector<std::string> parts;
  size_t s = 0;
  while (s <= node_name.size()) {
    size_t e = node_name.find('/', s);
    if (e == std::string::npos) e = node_name.size();
    if (e > s) parts.push_back(node_name.substr(s, e - s));
    s = e + 1;
  }
  // A name without scopes (DeepCanvas's own export: the layer's name, and
  // "conv1/pad" for its helper ops) is the layer's name.
  if (!node_name.empty() && node_name[0] != '/') return node_name.substr(0, node_name.find('/'));
  if (parts.size() < 2) return "";
  parts.pop_back();  // the op ("Conv", "Relu_1")
  std::string path;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (k + 1 < parts.size() && parts[k + 1].rfind(parts[k] + ".", 0) == 0) continue;
    path += (path.empty() ? "" : ".") + parts[k];
  }
  return path;
}

// The layer name an op asks for: its PyTorch module from a scoped name, or,
// for a model DeepCanvas exported, the value it computes (the layer's name;
// the node names there carry a suffix).
std::string layer_base(const onnx::NodeProto& n) {
  if (!n.name().empty() && n.name()[0] == '/') return module_from_node_name(n.name());
  if (n.output_size() > 0) {
    const std::string& o = n.output(0);
    // Helper values are "<layer>/<what>" ("avgpool/pooled", "rnn/Y_l0").
    if (!o.empty() && o[0] != '/' && o.find("::") == std::string::npos &&
        o.find_first_not_of("0123456789") != std::string::npos)
      return o.substr(0, o.find('/'));
  }
  return module_from_node_name(n.name());
}

// Keeps what reads well as a layer name (and as part of a checkpoint name).
std::string clean_name(const std::string& s) {
  std::string o;
  for (char ch : s) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-';
    o += ok ? ch : '_';
  }
  while (!o.empty() && (o.front() == '.' || o.front() == '_')) o.erase(o.begin());
  return o.substr(0, 200);
}

// The module a PyTorch-style initializer belongs to ("fc" for "fc.weight"),
// or "" for a generated one ("onnx::Conv_193").
std::string module_from_initializer(const std::string& name, const std::string& param) {
  const std::string sfx = "." + param;
  if (name.find("::") != std::string::npos || name.size() <= sfx.size() ||
      name.compare(name.size() - sfx.size(), sfx.size(), sfx) != 0)
    return "";
  return name.substr(0, name.size() - sfx.size());
}

// A bare nn.Parameter's name ("cls", "encoder.pos_embedding") where a
// module holds no layer of its own, or "" for a generated one.
std::string parameter_name(const std::string& init) {
  if (init.empty() || init[0] == '/' || init.find("::") != std::string::npos ||
      init.rfind("onnx", 0) == 0)
    return "";
  return clean_name(init);
}

// A layer that holds one parameter: named after DeepCanvas's own
// "<layer>.<param>" initializer, or a bare nn.Parameter's name
// ("encoder.pos_embedding"), or else after the op.
std::string named_by_parameter(const onnx::NodeProto& n, const std::string& init,
                               const std::vector<std::string>& params) {
  for (const auto& p : params)
    if (std::string b = module_from_initializer(init, p); !b.empty()) return clean_name(b);
  if (std::string b = parameter_name(init); !b.empty()) return b;
  return clean_name(layer_base(n));
}

std::string Importer::base_name(const onnx::NodeProto& n, const std::string& init,
                                const std::string& param) {
  std::string b = module_from_initializer(init, param);
  if (b.empty()) b = layer_base(n);
  return clean_name(b);
}

}  // namespace dc::onnx_import
