// The int8 model file: the calibrated input scales of the quantized ops,
// checked against the network and weights they are loaded with.
#include <deepcanvas/errors.h>
#include <deepcanvas/int8_inference.h>
#include <deepcanvas/io.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace dc {

namespace {

using json = nlohmann::json;

constexpr const char* kFormat = "deepcanvas-int8";
constexpr int kVersion = 1;

// FNV-1a over the bits of the op's folded float weight and bias: the
// weights are quantized again when the file is loaded, so this is what
// ties the scales to the weights they were calibrated with.
std::string weights_fingerprint(const QuantNetwork& net, const std::string& layer) {
  uint64_t h = 1469598103934665603ull;
  auto add = [&](const std::string& name) {
    auto it = net.weights.find(name);
    if (it == net.weights.end()) return;
    const Tensor& t = it->second;
    const auto* p = reinterpret_cast<const unsigned char*>(t.f32());
    for (int64_t i = 0; i < t.numel() * int64_t(sizeof(float)); ++i) {
      h ^= p[i];
      h *= 1099511628211ull;
    }
  };
  add(layer + ".weight");
  add(layer + ".bias");
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

std::string int8_model_json(const QuantizedNetwork& q, const Int8ModelInfo& info) {
  json ops = json::array();
  for (const QuantOp& o : q.ops) {
    const PlanStep& s = q.net.steps[size_t(o.step)];
    ops.push_back({{"layer", s.name},
                   {"type", s.type},
                   {"input", q.net.steps[size_t(o.input_step)].name},
                   // A float is exactly a double, and nlohmann writes doubles
                   // with enough digits to read them back exactly.
                   {"input_scale", double(o.input_scale)},
                   {"weights_fnv1a", weights_fingerprint(q.net, s.name)}});
  }
  json j = {{"format", kFormat},
            {"version", kVersion},
            {"scheme",
             "int8 symmetric (zero point 0): activations per tensor in [-128, 127], "
             "weights per output channel in [-127, 127], bias float"},
            {"calibration", calibration_name(q.method)},
            {"calibration_samples", info.calibration_samples},
            {"folded", q.net.folded},
            {"left_in_float", q.left_in_float},
            {"ops", ops}};
  if (q.method == CalibrationMethod::Percentile) j["percentile"] = info.percentile;
  if (!info.checkpoint.empty()) j["checkpoint"] = info.checkpoint;
  return j.dump(2) + "\n";
}

void save_int8_model(const std::string& path, const QuantizedNetwork& q,
                     const Int8ModelInfo& info) {
  write_file_atomic(path, int8_model_json(q, info));
}

std::string int8_model_path_for(const std::string& onnx_path) {
  const std::string ext = ".onnx";
  std::string base = onnx_path;
  if (base.size() > ext.size() && base.compare(base.size() - ext.size(), ext.size(), ext) == 0)
    base.resize(base.size() - ext.size());
  return base + ".int8.json";
}

QuantizedNetwork parse_int8_model(const std::string& text, const QuantNetwork& net,
                                  const std::string& path) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(path + " is not an int8 model file (not JSON: " + e.what() + ")");
  }
  if (!j.is_object() || j.value("format", std::string()) != kFormat)
    throw Error(path + " is not an int8 model file (no \"format\": \"" + kFormat +
                "\"); it is written by deepcanvas-cli export --precision int8 beside the .onnx");
  if (!j.contains("version") || !j["version"].is_number_integer() || j["version"] != kVersion)
    throw Error(path + " is an int8 model file of version " +
                (j.contains("version") ? j["version"].dump() : std::string("(none)")) +
                "; this DeepCanvas reads version " + std::to_string(kVersion));
  QuantizedNetwork q;
  q.net = net;
  try {
    const auto m = parse_calibration(j.value("calibration", std::string("percentile")));
    if (m) q.method = *m;
    q.left_in_float = j.value("left_in_float", std::vector<std::string>{});
    std::set<std::string> seen;
    for (const json& e : j.at("ops")) {
      const std::string layer = e.at("layer").get<std::string>();
      int step = -1;
      for (size_t i = 0; i < q.net.steps.size(); ++i)
        if (q.net.steps[i].name == layer) step = int(i);
      const std::string what = path + " was written for another network: ";
      if (step < 0) throw Error(what + "this one has no layer '" + layer + "'");
      const PlanStep& s = q.net.steps[size_t(step)];
      if (!quantizable_type(s.type) || s.inputs.size() != 1 ||
          e.value("type", std::string()) != s.type)
        throw Error(what + "its '" + layer + "' is a " + e.value("type", std::string("?")) +
                    ", here it is a " + s.type);
      if (!seen.insert(layer).second) throw Error(path + " names '" + layer + "' twice");
      const double scale = e.at("input_scale").get<double>();
      if (!(scale > 0) || !std::isfinite(scale) || scale > 3.4e38)
        throw Error(path + ": the input scale of '" + layer +
                    "' must be a positive finite number, not " + e.at("input_scale").dump());
      if (e.value("weights_fnv1a", std::string()) != weights_fingerprint(q.net, layer))
        throw Error(path + " was calibrated with other weights than these (layer '" + layer +
                    "' differs): export it again from this checkpoint (deepcanvas-cli export "
                    "--precision int8)");
      QuantOp op;
      op.step = step;
      op.input_step = s.inputs[0];
      op.input_scale = float(scale);
      auto w = q.net.weights.find(layer + ".weight");
      if (w == q.net.weights.end()) throw Error(what + "'" + layer + "' has no weight");
      op.weight = quantize_per_channel(w->second);
      q.ops.push_back(std::move(op));
    }
  } catch (const json::exception& e) {
    throw Error(path + " is not a valid int8 model file (" + e.what() + ")");
  }
  // Every Conv2D and Dense is quantized at export; one the file lacks means
  // it was written for another network.
  for (size_t i = 0; i < q.net.steps.size(); ++i) {
    const PlanStep& s = q.net.steps[i];
    if (!s.is_input && quantizable_type(s.type) && s.inputs.size() == 1 && !q.op_for(int(i)))
      throw Error(path + " was written for another network: it has no input scale for " + s.label);
  }
  return q;
}

QuantizedNetwork load_int8_model(const std::string& path, const QuantNetwork& net) {
  return parse_int8_model(read_file(path, int64_t(64) << 20), net, path);
}

QuantizedNetwork load_int8_model(const std::string& path, const Plan& plan) {
  return load_int8_model(path, fold_batch_norms(plan.steps(), plan.state()));
}

}  // namespace dc
