// The training-settings table: every row is read and written by the project
// format, refused out of range with the setting named, and parsed from the
// command line; 64-bit values never wrap into a small field.
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/project.h>
#include <deepcanvas/settings.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

namespace dc {
namespace {

std::string sample_text() {
  return read_file(std::string(DC_SOURCE_DIR) + "/resources/templates/two_conv_cnn.dcproj");
}

std::string replaced(std::string s, const std::string& a, const std::string& b) {
  auto p = s.find(a);
  EXPECT_NE(p, std::string::npos) << a;
  if (p != std::string::npos) s.replace(p, a.size(), b);
  return s;
}

std::string load_error(const std::string& text) {
  try {
    parse_project(text, "bad.dcproj");
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

// A valid value different from the row's default.
AttrValue other_value(const SettingSpec& s) {
  const AttrSpec& a = s.attr;
  switch (a.type) {
    case AttrType::Int: {
      int64_t d = std::get<int64_t>(a.def);
      return d + 1 <= a.max ? d + 1 : d - 1;
    }
    case AttrType::Float: {
      double d = std::get<double>(a.def);
      double v = d * 0.5 + (a.min > -1e100 ? a.min * 0.25 : 0) + (a.max < 1e100 ? a.max * 0.25 : 1);
      return v == d ? v * 0.5 : v;
    }
    case AttrType::Bool:
      return !std::get<bool>(a.def);
    case AttrType::Enum:
      for (const auto& c : a.choices)
        if (c != std::get<std::string>(a.def)) return c;
      break;
    default:
      return std::string("cuda:1");  // free text: the device, init_weights (a file name)
  }
  ADD_FAILURE() << s.attr.name << " has no second value";
  return a.def;
}

TEST(Settings, KeysAndFlagsAreUniqueAndEveryRowIsComplete) {
  std::set<std::string> keys, flags;
  for (const auto& s : training_settings()) {
    EXPECT_TRUE(keys.insert(s.attr.name).second) << s.attr.name;
    EXPECT_TRUE(flags.insert(s.flag).second) << s.flag;
    EXPECT_FALSE(s.label.empty()) << s.attr.name;
    EXPECT_FALSE(s.group.empty()) << s.attr.name;
    EXPECT_FALSE(s.attr.help.empty()) << s.attr.name;
    EXPECT_EQ(setting_problem(s, s.attr.def), "") << s.attr.name << ": its default is refused";
    EXPECT_EQ(find_setting(s.attr.name), &s);
    EXPECT_EQ(find_setting_by_flag(s.flag), &s);
  }
  EXPECT_GE(keys.size(), 30u);
  EXPECT_TRUE(validate(TrainConfig{}).empty());
}

TEST(Settings, EveryRowRoundTripsThroughTheProjectFile) {
  Project p = parse_project(sample_text(), "two_conv_cnn.dcproj");
  for (const auto& s : training_settings()) {
    SCOPED_TRACE(s.attr.name);
    Project q = p;
    AttrValue v = other_value(s);
    ASSERT_EQ(setting_problem(s, v), "");
    s.set(q.training, v);
    Project r = parse_project(project_to_json(q), "round trip");
    EXPECT_EQ(s.get(r.training), v);
    // Every other setting is untouched by the round trip.
    for (const auto& o : training_settings()) {
      if (&o != &s) {
        EXPECT_EQ(o.get(r.training), o.get(p.training)) << o.attr.name;
      }
    }
  }
}

TEST(Settings, OutOfRangeValuesInAProjectNameTheSetting) {
  const std::string t = sample_text();
  struct Case {
    std::string from, to, expect;
  };
  // Values that overflow a 32-bit field must not wrap into a valid one
  // (2^32 + 3 epochs would otherwise read as 3).
  const Case cases[] = {
      {"\"epochs\": 3", "\"epochs\": 4294967299", "training.epochs"},
      {"\"epochs\": 3", "\"epochs\": 100001", "at most 100000"},
      {"\"early_stopping_patience\": 0", "\"early_stopping_patience\": 4294967296",
       "training.early_stopping_patience"},
      {"\"epochs\": 3", "\"epochs\": 3, \"threads\": 100000", "training.threads"},
      {"\"epochs\": 3", "\"epochs\": 3, \"augment\": {\"crop_padding\": 4294967297}",
       "training.augment.crop_padding"},
      {"\"version\": 1", "\"version\": 4294967297", "version"},
      {"\"id\": 1,", "\"id\": 4294967298,", "id"},
      {"\"epochs\": 3", "\"epochs\": 3.5", "training.epochs"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.to);
    std::string e = load_error(replaced(t, c.from, c.to));
    EXPECT_NE(e.find(c.expect), std::string::npos) << e;
  }
}

TEST(Settings, OptimizerAndScheduleEdgesAreRefusedWithTheRange) {
  struct Case {
    void (*set)(TrainConfig&);
    std::string expect;
  };
  const Case cases[] = {
      {[](TrainConfig& c) { c.optimizer.eps = 0; }, "epsilon (training.optimizer.eps)"},
      {[](TrainConfig& c) { c.optimizer.beta1 = 1; },
       "beta1 (training.optimizer.beta1) must be less than 1"},
      {[](TrainConfig& c) { c.optimizer.beta2 = 1; }, "training.optimizer.beta2"},
      {[](TrainConfig& c) { c.optimizer.momentum = 1; }, "range [0, 1)"},
      {[](TrainConfig& c) { c.optimizer.lr = 0; }, "learning rate (training.optimizer.lr)"},
      // Above the width guard: the guard, not "(0, inf)", which 1e308 is in.
      {[](TrainConfig& c) { c.optimizer.lr = 1e308; }, "must be at most 1e+300, got 1e+308"},
      {[](TrainConfig& c) { c.schedule.div_factor = 0; }, "training.schedule.div_factor"},
      {[](TrainConfig& c) { c.schedule.min_lr = -1; },
       "(training.schedule.min_lr) must be at least 0"},
      {[](TrainConfig& c) { c.schedule.step_epochs = 0; }, "training.schedule.step_epochs"},
      {[](TrainConfig& c) { c.schedule.gamma = 0; }, "training.schedule.gamma"},
      {[](TrainConfig& c) { c.label_smoothing = 1; }, "training.label_smoothing"},
      {[](TrainConfig& c) { c.batch = 0; }, "batch size (training.batch) must be at least 1"},
      {[](TrainConfig& c) { c.augment.rotate = 181; }, "training.augment.rotate"},
  };
  for (const auto& c : cases) {
    TrainConfig t;
    c.set(t);
    auto problems = validate(t);
    ASSERT_EQ(problems.size(), 1u) << c.expect;
    EXPECT_NE(problems[0].find(c.expect), std::string::npos) << problems[0];
  }
}

TEST(Settings, CommandLineTextIsParsedOrRefusedWithTheFlag) {
  const SettingSpec& epochs = *find_setting("epochs");
  EXPECT_EQ(parse_setting_text(epochs, "12"), AttrValue(int64_t(12)));
  auto message = [](const SettingSpec& s, const std::string& text) {
    try {
      parse_setting_text(s, text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << s.flag << " accepted '" << text << "'";
    return std::string();
  };
  EXPECT_EQ(message(epochs, "many"), "--epochs must be an integer in [1, 100000], got 'many'");
  EXPECT_NE(message(epochs, "4294967299").find("--epochs"), std::string::npos);
  EXPECT_NE(message(epochs, "3x").find("got '3x'"), std::string::npos);
  const SettingSpec& lr = *find_setting("optimizer.lr");
  EXPECT_EQ(parse_setting_text(lr, "1e-3"), AttrValue(1e-3));
  EXPECT_NE(message(lr, "0").find("--lr must be a number in (0, inf), got '0'"), std::string::npos)
      << message(lr, "0");
  const SettingSpec& norm = *find_setting("normalize");
  EXPECT_EQ(parse_setting_text(norm, "off"), AttrValue(false));
  EXPECT_EQ(parse_setting_text(norm, "yes"), AttrValue(true));
  EXPECT_EQ(parse_setting_text(norm, "1"), AttrValue(true));
  EXPECT_NE(message(norm, "maybe").find("true or false"), std::string::npos);
  EXPECT_NE(message(*find_setting("device"), "tpu").find("--device"), std::string::npos);
  EXPECT_EQ(setting_range_text(epochs), "[1, 100000], default 3");
  EXPECT_EQ(setting_range_text(*find_setting("optimizer.type")), "sgd|adam|adamw, default adam");
}

}  // namespace
}  // namespace dc
