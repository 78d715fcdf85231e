#include <deepcanvas/errors.h>
#include <deepcanvas/settings.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace dc {

namespace {

constexpr double kUnbounded = 1e300;

// A field's value as an AttrValue and back. Enums travel as their word and
// the device as its name, so rows of every type share one reader and writer.
template <typename T>
AttrValue to_attr(const T& v) {
  if constexpr (std::is_same_v<T, bool>)
    return v;
  else if constexpr (std::is_enum_v<T>)
    return std::string(enum_name(v));
  else if constexpr (std::is_integral_v<T>)
    return int64_t(v);
  else if constexpr (std::is_floating_point_v<T>)
    return double(v);
  else if constexpr (std::is_same_v<T, DeviceSpec>)
    return v.str();
  else
    return std::string(v);
}

template <typename T>
void from_attr(const AttrValue& a, T& out) {
  if constexpr (std::is_same_v<T, bool>)
    out = std::get<bool>(a);
  else if constexpr (std::is_enum_v<T>)
    out = *enum_from_name<T>(std::get<std::string>(a));
  else if constexpr (std::is_integral_v<T>)
    out = T(std::get<int64_t>(a));  // the range check before this kept it in T
  else if constexpr (std::is_floating_point_v<T>) {
    if (auto p = std::get_if<int64_t>(&a))
      out = T(*p);
    else
      out = T(std::get<double>(a));
  } else if constexpr (std::is_same_v<T, DeviceSpec>)
    out = parse_device(std::get<std::string>(a));
  else
    out = std::get<std::string>(a);
}

template <typename T>
constexpr AttrType attr_type_of() {
  if constexpr (std::is_same_v<T, bool>)
    return AttrType::Bool;
  else if constexpr (std::is_enum_v<T>)
    return AttrType::Enum;
  else if constexpr (std::is_integral_v<T>)
    return AttrType::Int;
  else if constexpr (std::is_floating_point_v<T>)
    return AttrType::Float;
  else
    return AttrType::String;
}

struct Range {
  double min = -kUnbounded, max = kUnbounded;
  bool min_open = false, max_open = false;
};

// One row. `ref` is a generic lambda returning a reference to the field, so
// the type, the default (TrainConfig's own initialiser) and the choices of
// an enum all come from the field itself.
template <typename Ref>
SettingSpec row(const char* key, const char* label, const char* group, const char* flag, Range r,
                const char* help, Ref ref) {
  using T = std::remove_cvref_t<decltype(ref(std::declval<TrainConfig&>()))>;
  SettingSpec s;
  s.attr.name = key;
  s.attr.type = attr_type_of<T>();
  const TrainConfig defaults;
  s.attr.def = to_attr(ref(defaults));
  s.attr.help = help;
  if constexpr (std::is_enum_v<T>) s.attr.choices = enum_names<T>();
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // Never wider than the field: a 64-bit value read from a file must not
    // wrap into a small int.
    r.min = std::max(r.min, double(std::numeric_limits<T>::min()));
    r.max = std::min(r.max, double(std::numeric_limits<T>::max()));
  }
  s.attr.min = r.min;
  s.attr.max = r.max;
  s.min_open = r.min_open;
  s.max_open = r.max_open;
  s.label = label;
  s.group = group;
  s.flag = flag;
  s.get = [ref](const TrainConfig& c) { return to_attr(ref(c)); };
  s.set = [ref](TrainConfig& c, const AttrValue& v) { from_attr(v, ref(c)); };
  return s;
}

#define DC_FIELD(expr)   \
  [](auto& c) -> auto& { \
    return c.expr;       \
  }

std::vector<SettingSpec> make_table() {
  const char* run = "Run";
  const char* opt = "Optimizer";
  const char* sched = "Schedule";
  const char* aug = "Augmentation";
  auto sgd = [](const TrainConfig& c) { return c.optimizer.type == OptimizerType::Sgd; };
  auto adam = [](const TrainConfig& c) { return c.optimizer.type != OptimizerType::Sgd; };
  auto schedule_is = [](ScheduleType type) {
    return [type](const TrainConfig& c) { return c.schedule.type == type; };
  };
  std::vector<SettingSpec> t;
  t.push_back(row("epochs", "epochs", run, "epochs", {1, 100000}, "Passes over the training set.",
                  DC_FIELD(epochs)));
  t.push_back(row("batch", "batch size", run, "batch", {1, 1 << 20}, "Samples per training step.",
                  DC_FIELD(batch)));
  t.push_back(row("loss", "loss", run, "loss", {},
                  "softmax_cross_entropy for classes; binary_cross_entropy or mse for targets.",
                  DC_FIELD(loss)));
  t.push_back(row("label_smoothing", "label smoothing", run, "label-smoothing", {0, 1, false, true},
                  "Softmax cross-entropy only: weight moved from the true class to the others.",
                  DC_FIELD(label_smoothing)));
  t.back().applies = [](const TrainConfig& c) { return c.loss == LossType::SoftmaxCrossEntropy; };
  t.push_back(row("val_split", "validation split", run, "val-split", {0, 0.99},
                  "Fraction of the training set held out to select the kept weights.",
                  DC_FIELD(val_split)));
  t.push_back(row("seed", "seed", run, "seed", {0, double(INT64_MAX)},
                  "Seed of the initial weights, the shuffling and the augmentation.",
                  DC_FIELD(seed)));
  t.push_back(row("threads", "CPU threads", run, "threads", {0, 1024},
                  "Threads of a CPU run; 0 uses every core.", DC_FIELD(threads)));
  t.back().written = [](const TrainConfig& c) { return c.threads != 0; };
  t.back().recipe = false;
  t.push_back(row("normalize", "normalise inputs", run, "normalize", {},
                  "Standardise inputs with the training set's mean and standard deviation.",
                  DC_FIELD(normalize)));
  t.push_back(row("init_weights", "start from weights", run, "init-weights", {},
                  "A .safetensors file (relative to the project): a fresh run starts from its "
                  "tensors where layer names match (a pretrained base); the rest starts fresh.",
                  DC_FIELD(init_weights)));
  t.back().written = [](const TrainConfig& c) { return !c.init_weights.empty(); };
  t.back().recipe = false;
  t.push_back(row("early_stopping_patience", "early-stopping patience", run, "patience",
                  {0, 100000}, "Epochs without improvement before stopping; 0 = never stop early.",
                  DC_FIELD(early_stopping_patience)));
  t.back().recipe = false;
  t.push_back(row("device", "device", run, "device", {},
                  "cpu, cuda or cuda:N (a GPU through the CUDA plugin).", DC_FIELD(device)));
  t.back().recipe = false;
  t.back().check = [](const AttrValue& v) -> std::string {
    try {
      parse_device(std::get<std::string>(v));
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  };
  t.push_back(row("precision", "precision", run, "precision", {},
                  "CUDA runs: bf16 or fp16 convolutions and matrix products with fp32 weights.",
                  DC_FIELD(precision)));
  t.back().written = [](const TrainConfig& c) { return c.precision != Precision::Fp32; };

  t.push_back(row("optimizer.type", "optimizer", opt, "optimizer", {},
                  "sgd (with momentum), adam, or adamw (decoupled weight decay).",
                  DC_FIELD(optimizer.type)));
  t.push_back(row("optimizer.lr", "learning rate", opt, "lr", {0, kUnbounded, true},
                  "Step size; the peak of the one-cycle schedule.", DC_FIELD(optimizer.lr)));
  t.push_back(row("optimizer.momentum", "momentum", opt, "momentum", {0, 1, false, true},
                  "SGD: fraction of the previous update kept.", DC_FIELD(optimizer.momentum)));
  t.back().applies = sgd;
  t.push_back(row("optimizer.nesterov", "Nesterov momentum", opt, "nesterov", {},
                  "SGD: Nesterov's form of momentum.", DC_FIELD(optimizer.nesterov)));
  t.back().applies = sgd;
  t.push_back(row("optimizer.weight_decay", "weight decay", opt, "weight-decay", {0, 1},
                  "L2 penalty (SGD, Adam) or decoupled decay (AdamW).",
                  DC_FIELD(optimizer.weight_decay)));
  t.push_back(row("optimizer.beta1", "beta1", opt, "beta1", {0, 1, false, true},
                  "Adam: decay of the first-moment average.", DC_FIELD(optimizer.beta1)));
  t.back().applies = adam;
  t.push_back(row("optimizer.beta2", "beta2", opt, "beta2", {0, 1, false, true},
                  "Adam: decay of the second-moment average.", DC_FIELD(optimizer.beta2)));
  t.back().applies = adam;
  t.push_back(row("optimizer.eps", "epsilon", opt, "eps", {0, 1, true},
                  "Adam: added to the denominator for stability.", DC_FIELD(optimizer.eps)));
  t.back().applies = adam;

  t.push_back(row("schedule.type", "schedule", sched, "schedule", {},
                  "constant, step (decay every step_epochs), cosine, or onecycle.",
                  DC_FIELD(schedule.type)));
  t.push_back(row("schedule.warmup_steps", "warm-up steps", sched, "warmup-steps", {0, 1e9},
                  "Linear warm-up from 0 over this many steps (constant, step, cosine).",
                  DC_FIELD(schedule.warmup_steps)));
  t.back().applies = [](const TrainConfig& c) { return c.schedule.type != ScheduleType::OneCycle; };
  t.push_back(row("schedule.step_epochs", "step interval", sched, "step-epochs", {0, 1e6, true},
                  "Step schedule: epochs between decays.", DC_FIELD(schedule.step_epochs)));
  t.back().applies = schedule_is(ScheduleType::Step);
  t.push_back(row("schedule.gamma", "decay factor", sched, "gamma", {0, 1, true},
                  "Step schedule: factor applied at each decay.", DC_FIELD(schedule.gamma)));
  t.back().applies = schedule_is(ScheduleType::Step);
  t.push_back(row("schedule.min_lr", "minimum learning rate", sched, "min-lr", {0, 1e6},
                  "Cosine schedule: the floor it decays to.", DC_FIELD(schedule.min_lr)));
  t.back().applies = schedule_is(ScheduleType::Cosine);
  t.push_back(row("schedule.pct_start", "rising fraction", sched, "pct-start", {0, 1},
                  "One-cycle: fraction of the steps spent rising to the peak.",
                  DC_FIELD(schedule.pct_start)));
  t.back().applies = schedule_is(ScheduleType::OneCycle);
  t.push_back(row("schedule.div_factor", "initial division", sched, "div-factor", {0, 1e9, true},
                  "One-cycle: the first learning rate is the peak divided by this.",
                  DC_FIELD(schedule.div_factor)));
  t.back().applies = schedule_is(ScheduleType::OneCycle);
  t.push_back(row("schedule.final_div_factor", "final division", sched, "final-div-factor",
                  {0, 1e12, true},
                  "One-cycle: the last learning rate is the first divided by this.",
                  DC_FIELD(schedule.final_div_factor)));
  t.back().applies = schedule_is(ScheduleType::OneCycle);

  auto augmenting = [](const TrainConfig& c) { return c.augment.enabled(); };
  t.push_back(row("augment.flip", "horizontal flip", aug, "augment-flip", {},
                  "Mirror training images left-right with probability 1/2.",
                  DC_FIELD(augment.flip)));
  t.back().written = augmenting;
  t.push_back(row("augment.vflip", "vertical flip", aug, "augment-vflip", {},
                  "Mirror training images top-bottom with probability 1/2.",
                  DC_FIELD(augment.vflip)));
  t.back().written = [](const TrainConfig& c) { return c.augment.vflip; };
  t.push_back(row("augment.crop_padding", "crop padding", aug, "crop-padding", {0, 64},
                  "Pad by this many pixels and crop back at a random offset.",
                  DC_FIELD(augment.crop_padding)));
  t.back().written = augmenting;
  t.push_back(row("augment.rotate", "rotation", aug, "augment-rotate", {0, 180},
                  "Rotate by a random angle in [-rotate, rotate] degrees (bilinear).",
                  DC_FIELD(augment.rotate)));
  t.back().written = [](const TrainConfig& c) { return c.augment.rotate > 0; };
  t.push_back(row("augment.translate", "translation", aug, "augment-translate", {0, 0.5},
                  "Shift by up to this fraction of the width and height (whole pixels).",
                  DC_FIELD(augment.translate)));
  t.back().written = [](const TrainConfig& c) { return c.augment.translate > 0; };
  t.push_back(row("augment.brightness", "brightness", aug, "augment-brightness", {0, 1},
                  "Scale intensities by a random factor in [1 - b, 1 + b], capped at white.",
                  DC_FIELD(augment.brightness)));
  t.back().written = [](const TrainConfig& c) { return c.augment.brightness > 0; };
  t.push_back(row("augment.resized_crop", "random resized crop", aug, "augment-resized-crop", {},
                  "Image folders: crop a random 8-100 % of the whole picture (aspect 3/4 to "
                  "4/3) and resize it to the Input, as torchvision's RandomResizedCrop.",
                  DC_FIELD(augment.resized_crop)));
  t.back().written = [](const TrainConfig& c) { return c.augment.resized_crop; };
  t.push_back(row("augment.color_jitter", "colour jitter", aug, "augment-color-jitter", {0, 1},
                  "Image folders: brightness, contrast and saturation factors in [1 - j, 1 + j].",
                  DC_FIELD(augment.color_jitter)));
  t.back().written = [](const TrainConfig& c) { return c.augment.color_jitter > 0; };
  return t;
}

#undef DC_FIELD

// Numbers as people write them: 100000 rather than 1e+05, 0.001 rather than 1.000000e-03.
std::string num(double v) {
  char buf[40];
  if (std::abs(v) < 1e15 && v == std::floor(v))
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// A limit that only guards a field's width (the seed's 2^63) reads better as
// no limit at all.
bool bounded(double x) {
  return std::abs(x) < 1e18;
}

std::string interval(const SettingSpec& s) {
  const bool lo = bounded(s.attr.min), hi = bounded(s.attr.max);
  return std::string(s.min_open || !lo ? "(" : "[") + (lo ? num(s.attr.min) : "-inf") + ", " +
         (hi ? num(s.attr.max) : "inf") + (s.max_open || !hi ? ")" : "]");
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace

const std::vector<SettingSpec>& training_settings() {
  static const std::vector<SettingSpec> table = make_table();
  return table;
}

const SettingSpec* find_setting(const std::string& key) {
  for (const auto& s : training_settings())
    if (s.attr.name == key) return &s;
  return nullptr;
}

const SettingSpec* find_setting_by_flag(const std::string& flag) {
  for (const auto& s : training_settings())
    if (s.flag == flag) return &s;
  return nullptr;
}

std::string setting_problem(const SettingSpec& s, const AttrValue& v) {
  const AttrSpec& a = s.attr;
  switch (a.type) {
    case AttrType::Int:
    case AttrType::Float: {
      double x;
      if (auto p = std::get_if<int64_t>(&v))
        x = double(*p);
      else if (auto q = std::get_if<double>(&v); q && a.type == AttrType::Float)
        x = *q;
      else
        return "must be " + attr_type_with_article(a.type) + ", got " + attr_to_string(v);
      if (!std::isfinite(x)) return "must be a finite number";
      if (s.min_open ? x <= a.min : x < a.min) {
        if (s.min_open && a.min == 0 && !bounded(a.max)) return "must be positive";
        if (!bounded(a.max))
          return std::string(s.min_open ? "must be greater than " : "must be at least ") +
                 num(a.min);
        return (s.min_open ? "must be greater than " : "must be at least ") + num(a.min) +
               " (range " + interval(s) + "), got " + num(x);
      }
      if ((s.max_open ? x >= a.max : x > a.max) && !bounded(a.max))
        // A width guard (1e300, 2^63): the range says "inf", so name the guard.
        return (s.max_open ? "must be less than " : "must be at most ") + num(a.max) + ", got " +
               num(x);
      if (s.max_open ? x >= a.max : x > a.max)
        return (s.max_open ? "must be less than " : "must be at most ") + num(a.max) + " (range " +
               interval(s) + "), got " + num(x);
      break;
    }
    case AttrType::Bool:
      if (!std::holds_alternative<bool>(v))
        return "must be true or false, got " + attr_to_string(v);
      break;
    case AttrType::Enum: {
      auto p = std::get_if<std::string>(&v);
      if (!p) return "must be one of: " + join(a.choices, ", ");
      bool known = false;
      for (const auto& c : a.choices) known = known || c == *p;
      if (!known) return "'" + *p + "' is not one of: " + join(a.choices, ", ");
      break;
    }
    default:
      if (!std::holds_alternative<std::string>(v)) return "must be a string";
      break;
  }
  return s.check ? s.check(v) : "";
}

AttrValue parse_setting_text(const SettingSpec& s, const std::string& text) {
  const std::string opt = "--" + s.flag;
  // A flag also takes yes/no and on/off; the rest is an attribute's text.
  std::string t = text;
  if (s.attr.type == AttrType::Bool) {
    if (t == "yes" || t == "on") t = "true";
    if (t == "no" || t == "off") t = "false";
  }
  AttrValue v = text;
  bool parsed = false;
  try {
    v = parse_attr_text(s.attr, t);
    parsed = true;
  } catch (const Error&) {
  }
  const bool numeric = s.attr.type == AttrType::Int || s.attr.type == AttrType::Float;
  if (!parsed || !setting_problem(s, v).empty()) {
    if (numeric)
      throw Error(opt + " must be " + attr_type_with_article(s.attr.type) + " in " + interval(s) +
                  ", got '" + text + "'");
    if (s.attr.type == AttrType::Bool)
      throw Error(opt + " must be true or false, got '" + text + "'");
    throw Error(opt + ": " + setting_problem(s, v));
  }
  return v;
}

std::string setting_range_text(const SettingSpec& s) {
  std::string r;
  if (s.attr.type == AttrType::Enum)
    r = join(s.attr.choices, "|");
  else if (s.attr.type == AttrType::Int || s.attr.type == AttrType::Float)
    r = interval(s);
  std::string def = attr_to_string(s.attr.def);
  if (s.attr.type == AttrType::Float) def = num(std::get<double>(s.attr.def));
  return (r.empty() ? "" : r + ", ") + "default " + (def.empty() ? "\"\"" : def);
}

std::vector<std::string> setting_key_path(const std::string& key) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot; (dot = key.find('.', start)) != std::string::npos; start = dot + 1)
    parts.push_back(key.substr(start, dot - start));
  parts.push_back(key.substr(start));
  return parts;
}

nlohmann::json settings_json(const TrainConfig& c,
                             const std::function<bool(const SettingSpec&)>& keep) {
  using json = nlohmann::json;
  json t = json::object();
  for (const SettingSpec& s : training_settings()) {
    if (!keep(s)) continue;
    const std::vector<std::string> path = setting_key_path(s.attr.name);
    json* at = &t;
    for (size_t i = 0; i + 1 < path.size(); ++i) at = &(*at)[path[i]];
    (*at)[path.back()] = std::visit([](const auto& x) { return json(x); }, s.get(c));
  }
  return t;
}

std::vector<std::string> validate(const TrainConfig& c) {
  std::vector<std::string> out;
  for (const auto& s : training_settings())
    if (std::string p = setting_problem(s, s.get(c)); !p.empty())
      out.push_back(s.label + " (training." + s.attr.name + ") " + p);
  return out;
}

}  // namespace dc
