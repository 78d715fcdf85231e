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

bool input_is_tokens(const std::vector<PlanStep>& steps) {
  for (const PlanStep& s : steps)
    if (s.is_input) return s.type == "SequenceInput" && s.attrs.s("kind") == "tokens";
  return false;
}

std::map<NodeId, std::string> pytorch_attribute_names(const Graph& g) {
  std::map<NodeId, std::string> out;
  std::set<std::string> taken;
  for (const auto& [id, n] : g.nodes()) {
    std::string s;
    for (char c : n.name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "layer_" + s;
    // Dunder names are Python's; a leading underscore would hide the layer.
    while (s[0] == '_') s = "layer" + s;
    if (reserved().count(s)) s += "_";
    std::string u = s;
    for (int k = 2; taken.count(u); ++k) u = s + "_" + std::to_string(k);
    taken.insert(u);
    out[id] = u;
  }
  return out;
}

std::string pytorch_model_py(const Project& p, const std::string& version) {
  return pytorch_model_py(p, lower_graph(p.graph), version);
}

std::string pytorch_model_py(const Project& p, const std::vector<PlanStep>& steps,
                             const std::string& version) {
  if (auto bad = pytorch_unsupported(steps); !bad.empty())
    throw Error("cannot export to PyTorch:\n  " + joined(bad, "\n  "));
  // The steps are the flattened graph's (lower_graph), blocks' layers too.
  const auto names = pytorch_attribute_names(flatten_blocks(p.graph));
  const bool tokens = input_is_tokens(steps);
  Shape in_shape;

  std::string init, fwd, renamed, frozen;
  for (const PlanStep& s : steps) {
    NodeCtx c{s.attrs, s.in_shapes, {}, names.at(s.id)};
    for (int i : s.inputs) c.args.push_back(names.at(steps[size_t(i)].id));
    if (c.name != s.name)
      renamed += "    " + escape::py_str(c.name) + ": " + escape::py_str(s.name) + ",\n";
    const std::string comment =
        "  # " + s.type + " " + escape::py_str(s.name) + ": " + s.out_shape.str(true);
    if (s.is_input) {
      in_shape = s.out_shape;
      fwd += "        " + c.name + " = " + (tokens ? "x.long()" : "x") + comment + "\n";
      continue;
    }
    Written w = writers().at(s.type)(c);
    if (!w.module.empty()) init += "        self." + c.name + " = " + w.module + "\n";
    // A frozen layer: the engine neither updates its parameters nor
    // re-estimates its running statistics (a transfer-learning base).
    if (s.frozen && !w.module.empty()) frozen += "    " + escape::py_str(c.name) + ",\n";
    std::string expr = w.expr.empty() ? "self." + c.name + "(" + c.args.at(0) + ")" : w.expr;
    fwd += "        " + c.name + " = " + expr + comment + "\n";
  }
  fwd += "        return " + names.at(steps.back().id) + "\n";

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
        "# Layers whose DeepCanvas name is not a usable Python name: attribute -> name.\n"
        "RENAMED = {\n" +
        renamed +
        "}\n"
        "# Layers frozen in DeepCanvas (not trainable): their parameters take no\n"
        "# gradient, and their BatchNorms normalise with the running statistics and\n"
        "# keep them in training too, as the engine does for a frozen layer.\n"
        "FROZEN = (\n" +
        frozen + ")\n";
  py += template_text("model_support.py");
  py +=
      "\n\nclass Model(nn.Module):\n"
      "    def __init__(self):\n"
      "        super().__init__()\n" +
      (init.empty() ? "        pass\n" : init) +
      "        for name in FROZEN:\n"
      "            getattr(self, name).requires_grad_(False)\n"
      "\n    def train(self, mode=True):\n"
      "        super().train(mode)\n"
      "        for name in FROZEN:\n"
      "            m = getattr(self, name)\n"
      "            # Only layers with state: a frozen Dropout still drops.\n"
      "            if any(True for _ in m.parameters()) or any(True for _ in m.buffers()):\n"
      "                m.eval()\n"
      "        return self\n"
      "\n    def forward(self, x):\n" +
      fwd;
  return py;
}

}  // namespace dc
