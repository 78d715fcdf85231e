// model.py from a graph: one writer per layer type (the table below) turns a
// node into an nn.Module attribute (or an expression, for layers without
// parameters or state that torch has no module for) and one forward line.
#include <deepcanvas/blocks.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/escape.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/pytorch_export.h>

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>

#include "pytorch_model.h"
#include "pytorch_templates.h"

namespace dc {
namespace {

std::string py_bool(bool b) {
  return b ? "True" : "False";
}

std::string py_float(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  std::string t = s.str();
  if (t.find_first_of(".eE") == std::string::npos) t += ".0";
  return t;
}

std::string py_pair(const std::vector<int64_t>& v) {
  return "(" + std::to_string(v.at(0)) + ", " + std::to_string(v.at(1)) + ")";
}

// What one writer gets: the step's attributes (every one filled in) and
// input shapes, its input variables, and its own attribute/variable name.
struct NodeCtx {
  const Attrs& a;
  const std::vector<Shape>& in;
  std::vector<std::string> args;
  std::string name;
};

// module: the constructor expression ("" : none); expr: the forward
// expression ("" : self.NAME(args[0])).
struct Written {
  std::string module, expr;
};

using Writer = std::function<Written(const NodeCtx&)>;

Written conv2d(const NodeCtx& c) {
  const Attrs& a = c.a;
  const std::string mode = a.s("padding_mode");
  std::string args = std::to_string(c.in.at(0)[0]) + ", " + std::to_string(a.i("filters")) +
                     ", kernel_size=" + py_pair(a.ints("kernel")) +
                     ", stride=" + py_pair(a.ints("stride"));
  if (mode == "explicit") args += ", padding=" + py_pair(a.ints("padding"));
  args += ", dilation=" + py_pair(a.ints("dilation")) +
          ", groups=" + std::to_string(a.i("groups")) + ", bias=" + py_bool(a.b("bias"));
  return {(mode == "same" ? "SamePadConv2d(" : "nn.Conv2d(") + args + ")", ""};
}

Written pool(const NodeCtx& c, const std::string& cls, const std::string& extra) {
  return {cls + "(kernel_size=" + py_pair(c.a.ints("kernel")) +
              ", stride=" + py_pair(c.a.ints("stride")) +
              ", padding=" + py_pair(c.a.ints("padding")) + extra + ")",
          ""};
}

Written batch_norm(const NodeCtx& c, const std::string& cls) {
  return {cls + "(" + std::to_string(c.in.at(0)[0]) + ", eps=" + py_float(c.a.f("eps")) +
              ", momentum=" + py_float(c.a.f("momentum")) + ")",
          ""};
}

Written recurrent(const NodeCtx& c, const std::string& cls) {
  const Attrs& a = c.a;
  const Shape& s = c.in.at(0);
  std::string m =
      cls + "(" + std::to_string(s[s.rank() - 1]) + ", " + std::to_string(a.i("hidden_size")) +
      ", num_layers=" + std::to_string(a.i("num_layers")) + ", bias=" + py_bool(a.b("bias"));
  if (cls == "RNN") m += ", nonlinearity=" + escape::py_str(a.s("nonlinearity"));
  m += ", dropout=" + py_float(a.f("dropout")) +
       ", bidirectional=" + py_bool(a.b("bidirectional")) +
       ", return_sequences=" + py_bool(a.b("return_sequences")) +
       ", learned_initial_state=" + py_bool(a.s("initial_state") == "learned") + ")";
  return {m, ""};
}

std::string joined(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

const std::map<std::string, Writer>& writers() {
  static const std::map<std::string, Writer> w = {
      {"Input", [](const NodeCtx&) { return Written{}; }},
      {"SequenceInput", [](const NodeCtx&) { return Written{}; }},
      {"Conv2D", conv2d},
      {"Dense",
       [](const NodeCtx& c) {
         return Written{"nn.Linear(" + std::to_string(c.in.at(0)[0]) + ", " +
                            std::to_string(c.a.i("units")) + ", bias=" + py_bool(c.a.b("bias")) +
                            ")",
                        ""};
       }},
      {"TimeDistributedDense",
       [](const NodeCtx& c) {
         // nn.Linear applies to the last dimension of [N, T, F]: every step.
         return Written{"nn.Linear(" + std::to_string(c.in.at(0)[1]) + ", " +
                            std::to_string(c.a.i("units")) + ", bias=" + py_bool(c.a.b("bias")) +
                            ")",
                        ""};
       }},
      {"MaxPool2D", [](const NodeCtx& c) { return pool(c, "nn.MaxPool2d", ""); }},
      // Padding counts as zeros in the average, as DeepCanvas does.
      {"AvgPool2D",
       [](const NodeCtx& c) { return pool(c, "nn.AvgPool2d", ", count_include_pad=True"); }},
      {"GlobalAvgPool2D",
       [](const NodeCtx& c) {
         return Written{"", c.args.at(0) + ".mean(dim=(2, 3))"};
       }},
      {"BatchNorm2D", [](const NodeCtx& c) { return batch_norm(c, "nn.BatchNorm2d"); }},
      {"BatchNorm1D", [](const NodeCtx& c) { return batch_norm(c, "nn.BatchNorm1d"); }},
      {"MultiHeadAttention",
       [](const NodeCtx& c) {
         const Shape& s = c.in.at(0);
         Written w{"MultiheadAttention(" + std::to_string(s[1]) + ", " +
                       std::to_string(c.a.i("heads")) + ", dropout=" + py_float(c.a.f("dropout")) +
                       ", bias=" + py_bool(c.a.b("bias")) + ", causal=" + py_bool(c.a.b("causal")) +
                       ")",
                   ""};
         // Cross-attention: queries, then keys and values.
         if (c.args.size() == 2)
           w.expr = "self." + c.name + "(" + c.args[0] + ", " + c.args[1] + ")";
         return w;
       }},
      {"ImageToTokens",
       [](const NodeCtx& c) {
         return Written{"", c.args.at(0) + ".flatten(2).transpose(1, 2)"};
       }},
      {"PositionalEmbedding",
       [](const NodeCtx& c) {
         const Shape& s = c.in.at(0);
         return Written{"PositionalEmbedding(" + std::to_string(s[0]) + ", " +
                            std::to_string(s[1]) +
                            ", learned=" + py_bool(c.a.s("kind") == "learned") + ")",
                        ""};
       }},
      {"ClassToken",
       [](const NodeCtx& c) {
         return Written{"ClassToken(" + std::to_string(c.in.at(0)[1]) + ")", ""};
       }},
      {"TokenPooling",
       [](const NodeCtx& c) {
         return Written{"", c.args.at(0) + (c.a.s("mode") == "first" ? "[:, 0]" : ".mean(dim=1)")};
       }},
      {"LayerNorm",
       [](const NodeCtx& c) {
         const Shape& s = c.in.at(0);
         return Written{"nn.LayerNorm(" + std::to_string(s[s.rank() - 1]) +
                            ", eps=" + py_float(c.a.f("eps")) +
                            ", elementwise_affine=" + py_bool(c.a.b("affine")) + ")",
                        ""};
       }},
      {"ReLU",
       [](const NodeCtx&) {
         return Written{"nn.ReLU()", ""};
       }},
      // MobileNet's and EfficientNet-Lite's activation (imported from ONNX
      // as Clip(0, 6)).
      {"ReLU6",
       [](const NodeCtx&) {
         return Written{"nn.ReLU6()", ""};
       }},
      {"LeakyReLU",
       [](const NodeCtx& c) {
         return Written{"nn.LeakyReLU(negative_slope=" + py_float(c.a.f("slope")) + ")", ""};
       }},
      {"Sigmoid",
       [](const NodeCtx&) {
         return Written{"nn.Sigmoid()", ""};
       }},
      {"Tanh",
       [](const NodeCtx&) {
         return Written{"nn.Tanh()", ""};
       }},
      // DeepCanvas's GELU is the exact (erf) form, torch's default.
      {"GELU",
       [](const NodeCtx&) {
         return Written{"nn.GELU()", ""};
       }},
      {"Softmax",
       [](const NodeCtx&) {
         return Written{"nn.Softmax(dim=-1)", ""};
       }},
      {"SiLU",
       [](const NodeCtx&) {
         return Written{"nn.SiLU()", ""};
       }},
      {"HardSwish",
       [](const NodeCtx&) {
         return Written{"nn.Hardswish()", ""};
       }},
      {"HardSigmoid",
       [](const NodeCtx&) {
         return Written{"nn.Hardsigmoid()", ""};
       }},
      // The gate [N, C] or [N, C, 1, 1] broadcast over the values' other
      // dimensions (squeeze-and-excitation's scale * x).
      {"ChannelScale",
       [](const NodeCtx& c) {
         std::string ones;
         for (size_t i = 1; i < c.in.at(0).rank(); ++i) ones += ", 1";
         return Written{"", c.args.at(0) + " * " + c.args.at(1) + ".reshape(" + c.args.at(1) +
                                ".shape[0], " + std::to_string(c.in.at(0)[0]) + ones + ")"};
       }},
      // torchvision's channel_shuffle: groups × C/groups, transposed.
      {"ChannelShuffle",
       [](const NodeCtx& c) {
         const std::string& x = c.args.at(0);
         const int64_t C = c.in.at(0)[0], g = c.a.i("groups");
         return Written{"", x + ".reshape(" + x + ".shape[0], " + std::to_string(g) + ", " +
                                std::to_string(C / g) + ", -1).transpose(1, 2).reshape(" + x +
                                ".shape)"};
       }},
      {"ChannelSlice",
       [](const NodeCtx& c) {
         const int64_t start = c.a.i("start");
         return Written{"", c.args.at(0) + "[:, " + std::to_string(start) + ":" +
                                std::to_string(start + c.a.i("count")) + "]"};
       }},
      {"Dropout",
       [](const NodeCtx& c) {
         return Written{"nn.Dropout(p=" + py_float(c.a.f("rate")) + ")", ""};
       }},
      {"Flatten",
       [](const NodeCtx&) {
         return Written{"nn.Flatten()", ""};
       }},
      {"Reshape",
       [](const NodeCtx& c) {
         std::vector<std::string> d;
         for (int64_t v : c.a.ints("shape")) d.push_back(std::to_string(v));
         return Written{
             "", c.args.at(0) + ".reshape(" + c.args.at(0) + ".shape[0], " + joined(d, ", ") + ")"};
       }},
      {"Add",
       [](const NodeCtx& c) {
         return Written{"", joined(c.args, " + ")};
       }},
      {"Concat",
       [](const NodeCtx& c) {
         return Written{"", "torch.cat([" + joined(c.args, ", ") +
                                "], dim=" + std::to_string(c.a.i("axis") + 1) + ")"};
       }},
      {"Embedding",
       [](const NodeCtx& c) {
         const int64_t pad = c.a.i("padding_idx");
         return Written{"nn.Embedding(" + std::to_string(c.a.i("vocab_size")) + ", " +
                            std::to_string(c.a.i("dim")) +
                            (pad >= 0 ? ", padding_idx=" + std::to_string(pad) : "") + ")",
                        ""};
       }},
      {"LSTM", [](const NodeCtx& c) { return recurrent(c, "LSTM"); }},
      {"GRU", [](const NodeCtx& c) { return recurrent(c, "GRU"); }},
      {"SimpleRNN", [](const NodeCtx& c) { return recurrent(c, "RNN"); }},
      {"LastStep",
       [](const NodeCtx& c) {
         return Written{"", c.args.at(0) + "[:, " + std::to_string(c.a.i("index")) + "]"};
       }},
  };
  return w;
}

// Names a module attribute or a forward() variable must not take: Python
// keywords, what model.py itself uses, and nn.Module's own members.
const std::set<std::string>& reserved() {
  static const std::set<std::string> r = {"False",
                                          "None",
                                          "True",
                                          "and",
                                          "as",
                                          "assert",
                                          "async",
                                          "await",
                                          "break",
                                          "class",
                                          "continue",
                                          "def",
                                          "del",
                                          "elif",
                                          "else",
                                          "except",
                                          "finally",
                                          "for",
                                          "from",
                                          "global",
                                          "if",
                                          "import",
                                          "in",
                                          "is",
                                          "lambda",
                                          "nonlocal",
                                          "not",
                                          "or",
                                          "pass",
                                          "raise",
                                          "return",
                                          "try",
                                          "while",
                                          "with",
                                          "yield",
                                          "self",
                                          "torch",
                                          "nn",
                                          "F",
                                          "dc_safetensors",
                                          "super",
                                          "Model",
                                          "LSTM",
                                          "GRU",
                                          "RNN",
                                          "SamePadConv2d",
                                          "MultiheadAttention",
                                          "PositionalEmbedding",
                                          "ClassToken",
                                          "sinusoids",
                                          "RENAMED",
                                          "training",
                                          "forward",
                                          "eval",
                                          "train",
                                          "to",
                                          "cuda",
                                          "cpu",
                                          "xpu",
                                          "ipu",
                                          "mps",
                                          "type",
                                          "float",
                                          "double",
                                          "half",
                                          "bfloat16",
                                          "apply",
                                          "parameters",
                                          "buffers",
                                          "modules",
                                          "children",
                                          "state_dict",
                                          "load_state_dict",
                                          "register_buffer",
                                          "register_parameter",
                                          "register_module",
                                          "add_module",
                                          "zero_grad",
                                          "requires_grad_",
                                          "extra_repr",
                                          "dump_patches",
                                          "call_super_init",
                                          "get_submodule",
                                          "get_parameter",
                                          "get_buffer",
                                          "get_extra_state",
                                          "set_extra_state",
                                          "share_memory",
                                          "named_parameters",
                                          "named_buffers",
                                          "named_modules",
                                          "named_children",
                                          "compile",
                                          "to_empty"};
  return r;
}

}  // namespace

std::vector<std::string> pytorch_unsupported(const std::vector<PlanStep>& steps) {
  std::vector<std::string> out;
  for (const PlanStep& s : steps)
    if (!writers().count(s.type))
      out.push_back(s.label + ": layer type " + s.type +
                    " has no PyTorch counterpart in this exporter");
  return out;
}

std::vector<std::string> pytorch_unsupported(const Graph& g) {
  return pytorch_unsupported(lower_graph(g));
}

namespace {

// A Python identifier for a layer name, unique within `taken`: never
// starting with an underscore (so the block classes' "_in0" arguments cannot
// be hit) and never a name Python, torch or nn.Module already means.
std::string py_identifier(const std::string& name, std::set<std::string>& taken) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "layer_" + s;
  // Dunder names are Python's; a leading underscore would hide the layer.
  while (s[0] == '_') s = "layer" + s;
  if (reserved().count(s)) s += "_";
  std::string u = s;
  for (int k = 2; taken.count(u); ++k) u = s + "_" + std::to_string(k);
  taken.insert(u);
  return u;
}

// model.py's classes: Model for the project's graph and one nn.Module class
// per block definition (issue 33), whose instances are attributes of the
// graph that uses them. A class's text depends only on its definition and
// the shapes it is used with, so instances of one definition share a
// class; an instance whose input shapes differ gets a class of its own. The
// layers' arguments, shapes and frozen flags come from the flattened steps
// (lower_graph's), found by their flattened names ("<instance>_<layer>",
// blocks.h); the state_dict keys of layers inside blocks are module paths
// ("enc1.ln1.weight"), mapped to the checkpoint names ("enc1_ln1.weight") by
// RENAMED.
class ModelWriter {
 public:
  explicit ModelWriter(const std::vector<PlanStep>& steps) {
    for (const PlanStep& s : steps) by_name_[s.name] = &s;
  }

  struct Body {
    std::string init, fwd;
  };

  // The body of the module for graph g. prefix: the flattened names' prefix
  // of its layers; path: the module path of this graph's module from Model
  // ("" or "enc1."); outside(node, port): the variable feeding a port that
  // no edge inside g feeds (a block's input).
  Body body(const Graph& g, const std::string& prefix, const std::string& path,
            const std::function<std::string(const std::string&, int)>& outside,
            std::string* out_var) {
    Body b;
    std::set<std::string> taken;
    std::map<NodeId, std::string> var;
    for (const auto& [id, n] : g.nodes()) var[id] = py_identifier(n.name, taken);
    for (NodeId id : g.topo_order()) {
      const Node& n = g.node(id);
      const std::string& name = var.at(id);
      std::vector<std::string> args(size_t(std::max(0, g.num_inputs(id))));
      std::vector<bool> fed(args.size(), false);
      for (const Edge& e : g.in_edges(id))
        if (size_t(e.dst_port) < args.size()) {
          args[size_t(e.dst_port)] = var.at(e.src);
          fed[size_t(e.dst_port)] = true;
        }
      for (size_t k = 0; k < args.size(); ++k)
        if (!fed[k]) args[k] = outside(n.name, int(k));
      if (n.type == kBlockType) {
        const auto def = block_definition_of(n);
        std::string inner_out;
        const Body inner = body(
            def->graph, prefix + n.name + "_", path + name + ".",
            [&def](const std::string& node, int port) {
              for (size_t i = 0; i < def->inputs.size(); ++i)
                for (const BlockPort& t : def->inputs[i])
                  if (t.node == node && t.port == port) return "_in" + std::to_string(i);
              throw Error("block '" + def->name + "': nothing feeds input " + std::to_string(port) +
                          " of layer '" + node + "'");
            },
            &inner_out);
        std::string params;
        for (size_t i = 0; i < def->inputs.size(); ++i) params += ", _in" + std::to_string(i);
        const std::string cls = block_class(*def, inner, params, inner_out);
        b.init += "        self." + name + " = " + cls + "()\n";
        b.fwd += "        " + name + " = self." + name + "(" + joined(args, ", ") + ")  # block " +
                 escape::py_str(def->name) + "\n";
        continue;
      }
      const std::string flat = prefix + n.name;
      auto it = by_name_.find(flat);
      if (it == by_name_.end())
        throw Error("layer '" + flat + "' is missing from the lowered graph");
      const PlanStep& s = *it->second;
      if (path + name != s.name)
        renamed_ += "    " + escape::py_str(path + name) + ": " + escape::py_str(s.name) + ",\n";
      const std::string comment =
          "  # " + s.type + " " + escape::py_str(n.name) + ": " + s.out_shape.str(true);
      if (s.is_input) {
        in_shape_ = s.out_shape;
        tokens_ = s.type == "SequenceInput" && s.attrs.s("kind") == "tokens";
        b.fwd += "        " + name + " = " + (tokens_ ? "x.long()" : "x") + comment + "\n";
        continue;
      }
      NodeCtx c{s.attrs, s.in_shapes, args, name};
      Written w = writers().at(s.type)(c);
      if (!w.module.empty()) b.init += "        self." + name + " = " + w.module + "\n";
      // A frozen layer: the engine neither updates its parameters nor
      // re-estimates its running statistics (a transfer-learning base).
      if (s.frozen && !w.module.empty()) frozen_ += "    " + escape::py_str(path + name) + ",\n";
      std::string expr = w.expr.empty() ? "self." + name + "(" + c.args.at(0) + ")" : w.expr;
      b.fwd += "        " + name + " = " + expr + comment + "\n";
    }
    if (out_var) {
      // The output: the one layer nothing inside consumes (Graph::validate
      // and check_block_definition hold that there is exactly one).
      *out_var = "";
      for (const auto& [id, n] : g.nodes())
        if (g.out_edges(id).empty()) *out_var = var.at(id);
    }
    return b;
  }

  const std::string& classes() const { return classes_; }
  const std::string& renamed() const { return renamed_; }
  const std::string& frozen() const { return frozen_; }
  const Shape& in_shape() const { return in_shape_; }
  bool tokens() const { return tokens_; }

 private:
  // The class for a definition with this body: an existing one when the
  // text is the same, else a new one named after the definition.
  std::string block_class(const BlockDef& def, const Body& b, const std::string& params,
                          const std::string& out) {
    const std::string text = "    def __init__(self):\n        super().__init__()\n" +
                             (b.init.empty() ? "        pass\n" : b.init) +
                             "\n    def forward(self" + params + "):\n" + b.fwd +
                             "        return " + out + "\n";
    if (auto it = class_of_.find(text); it != class_of_.end()) return it->second;
    std::string base = "Block_";
    for (char c : def.name) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    std::string cls = base;
    for (int k = 2; class_names_.count(cls); ++k) cls = base + "_" + std::to_string(k);
    class_names_.insert(cls);
    class_of_[text] = cls;
    classes_ += "\n\nclass " + cls + "(nn.Module):\n    \"\"\"Block " + escape::py_text(def.name) +
                "\"\"\"\n\n" + text;
    return cls;
  }

  std::map<std::string, const PlanStep*> by_name_;
  std::map<std::string, std::string> class_of_;
  std::set<std::string> class_names_;
  std::string classes_, renamed_, frozen_;
  Shape in_shape_;
  bool tokens_ = false;
};

}  // namespace

std::map<NodeId, std::string> pytorch_attribute_names(const Graph& g) {
  std::map<NodeId, std::string> out;
  std::set<std::string> taken;
  for (const auto& [id, n] : g.nodes()) out[id] = py_identifier(n.name, taken);
  return out;
}

std::string pytorch_model_py(const Project& p, const std::string& version) {
  return pytorch_model_py(p, lower_graph(p.graph), version);
}

std::string pytorch_model_py(const Project& p, const std::vector<PlanStep>& steps,
                             const std::string& version) {
  if (auto bad = pytorch_unsupported(steps); !bad.empty())
    throw Error("cannot export to PyTorch:\n  " + joined(bad, "\n  "));
  ModelWriter mw(steps);
  std::string out;
  const ModelWriter::Body top = mw.body(
      p.graph, "", "",
      [](const std::string& node, int) -> std::string {
        throw Error("layer '" + node + "' has an input port nothing feeds");
      },
      &out);
  const bool tokens = mw.tokens();
  const Shape in_shape = mw.in_shape();
  const std::string &init = top.init, &renamed = mw.renamed(), &frozen = mw.frozen();
  const std::string fwd = top.fwd + "        return " + out + "\n";

  std::string dims;
  for (int64_t d : in_shape.dims()) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  if (in_shape.rank() == 1) dims += ",";  // a one-element tuple
  std::string py;
  py += "\"\"\"" + escape::py_text(p.name) + " as a PyTorch module, generated by DeepCanvas" +
        (version.empty() ? "" : " " + escape::py_text(version)) +
        (p.file.empty() ? "" : " from " + escape::py_text(p.file)) +
        ".\n\n"
        "One attribute per layer of the DeepCanvas graph, named as the layer, and\n"
        "forward() in the graph's topological order. The state_dict keys are the\n"
        "tensor names of DeepCanvas checkpoints (safetensors), so\n"
        "load_model(\"weights.safetensors\") gives the network with those weights.\n"
        "\"\"\"\n"
        "import torch\n"
        "from torch import nn\n"
        "import torch.nn.functional as F\n\n"
        "import dc_safetensors\n\n"
        "# One sample as the network takes it (no batch dimension).\n"
        "INPUT_SHAPE = (" +
        dims + ")\n" + "INPUT_IS_TOKENS = " + py_bool(tokens) +
        "  # token ids (int64) rather than values\n"
        "# Layers whose DeepCanvas name is not their module path (a name that is not\n"
        "# a usable Python name, or a layer inside a block): path -> name.\n"
        "RENAMED = {\n" +
        renamed +
        "}\n"
        "# Layers frozen in DeepCanvas (not trainable): their parameters take no\n"
        "# gradient, and their BatchNorms normalise with the running statistics and\n"
        "# keep them in training too, as the engine does for a frozen layer.\n"
        "FROZEN = (\n" +
        frozen + ")\n";
  py += template_text("model_support.py");
  py += mw.classes();
  py +=
      "\n\nclass Model(nn.Module):\n"
      "    def __init__(self):\n"
      "        super().__init__()\n" +
      (init.empty() ? "        pass\n" : init) +
      "        for name in FROZEN:\n"
      "            self.get_submodule(name).requires_grad_(False)\n"
      "\n    def train(self, mode=True):\n"
      "        super().train(mode)\n"
      "        for name in FROZEN:\n"
      "            m = self.get_submodule(name)\n"
      "            # Only layers with state: a frozen Dropout still drops.\n"
      "            if any(True for _ in m.parameters()) or any(True for _ in m.buffers()):\n"
      "                m.eval()\n"
      "        return self\n"
      "\n    def forward(self, x):\n" +
      fwd;
  return py;
}

}  // namespace dc
