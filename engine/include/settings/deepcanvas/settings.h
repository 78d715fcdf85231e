#pragma once
// The training settings, described once. Each row names a TrainConfig field
// by its key in project files (under "training", dotted for nested objects:
// "optimizer.lr"), its type, default, range or choices, help text, label
// and command-line flag, and knows how to read and write the field. The
// project reader and writer, the CLI's flags and --help, the app's Training
// tab and validate() are all generated from this table, so adding a setting
// means one row here plus the code that uses it.
#include <deepcanvas/attrs.h>
#include <deepcanvas/train_config.h>

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace dc {

struct SettingSpec {
  // attr.name is the key under "training"; attr.type, def, min, max,
  // choices and help as for layer attributes (Enum rows hold the words).
  AttrSpec attr;
  std::string label;  // "learning rate": messages and the app's forms
  std::string group;  // "Run", "Optimizer", "Schedule", "Augmentation"
  std::string flag;   // CLI flag without "--" ("lr"); bool rows also get --no-FLAG
  // Open ends of the range: (0, 1] for Adam's eps, [0, 1) for momentum.
  bool min_open = false, max_open = false;
  std::function<AttrValue(const TrainConfig&)> get;
  std::function<void(TrainConfig&, const AttrValue&)> set;  // value already validated
  // Extra check beyond type and range ("" when fine), e.g. the device name.
  std::function<std::string(const AttrValue&)> check;
  // Written to project files only when this holds (null: always), so that
  // projects which do not use a newer setting keep their earlier form.
  std::function<bool(const TrainConfig&)> written;
  // Whether the setting has any effect under c's other choices (null:
  // always): momentum only for SGD, betas only for Adam/AdamW, gamma only
  // for the step schedule. The app hides rows that do not apply.
  std::function<bool(const TrainConfig&)> applies;
  // Part of the recipe the PyTorch export's train.py follows (its CONFIG);
  // false for what only DeepCanvas's own runs use (threads, device, ...).
  bool recipe = true;
};

// Every training setting, in the order forms and --help show them.
const std::vector<SettingSpec>& training_settings();
const SettingSpec* find_setting(const std::string& key);
const SettingSpec* find_setting_by_flag(const std::string& flag);

// "" when v is an acceptable value for s, else what is wrong with it
// ("must be at least 1", "must be in [0, 1)", "'adagrad' is not one of:
// sgd, adam, adamw"), without the setting's name.
std::string setting_problem(const SettingSpec& s, const AttrValue& v);

// Reads a command-line value ("3", "1e-3", "adam", "true") for s; throws
// Error naming --flag with the type, range or choices on a bad value.
AttrValue parse_setting_text(const SettingSpec& s, const std::string& text);

// "[1, 100000], default 3" / "sgd|adam|adamw, default adam" for --help and tooltips.
std::string setting_range_text(const SettingSpec& s);

// The settings of c for which keep(s) holds, nested as project files hold
// them under "training" ({"epochs": 3, "optimizer": {"lr": 0.001}}): enums
// as their words, the device as its name. Project files keep the rows that
// are written; the PyTorch export keeps the recipe rows.
nlohmann::json settings_json(const TrainConfig& c,
                             const std::function<bool(const SettingSpec&)>& keep);

// A setting's dotted key ("optimizer.lr") as its path below "training".
std::vector<std::string> setting_key_path(const std::string& key);

// Every setting of c against the table, first problem first, each as
// "<label> (training.<key>) <problem>". Empty when all are fine. The Trainer,
// the CLI and the app call this; project files are checked as they are read.
std::vector<std::string> validate(const TrainConfig& c);

}  // namespace dc
