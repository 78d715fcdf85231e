// End-to-end tests of deepcanvas-cli: real processes on the bundled sample
// project and deliberately broken inputs. Bad input must give one clear
// message, a non-zero exit, and leave no partial output file.
#include <deepcanvas/io.h>
#include <deepcanvas/npy.h>
#include <gtest/gtest.h>

#include "cli_util.h"

#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

namespace {

using namespace dc::e2e;

TEST(Cli, TrainsTheSampleProjectToAUsefulAccuracy) {
  // The correctness check the README promises: 2 epochs on the bundled
  // 10k-image subset reach >= 80% test accuracy.
  Tmp t;
  std::string ck = t.path("model.safetensors");
  CliRun r = cli("train " + kSample + " --epochs 2 --json --quiet --checkpoint " + ck);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = last_json_line(r.out);
  for (const char* k : {"test_accuracy", "train_samples_per_s", "epochs", "train_seconds"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["epochs"], 2);
  EXPECT_GE(j["test_accuracy"].get<double>(), 0.80) << r.out;
  ASSERT_TRUE(fs::exists(ck));

  // The saved model evaluates to the same accuracy and predicts a sample.
  CliRun e = cli("eval " + kSample + " --checkpoint " + ck + " --json");
  ASSERT_EQ(e.code, 0) << e.out;
  auto je = last_json_line(e.out);
  EXPECT_NEAR(je["test_accuracy"].get<double>(), j["test_accuracy"].get<double>(), 1e-9);
  // Per-class scores agree with the confusion matrix they come from.
  const auto& conf = je["confusion"];
  ASSERT_EQ(je["per_class"].size(), conf.size());
  int64_t total = 0;
  for (size_t k = 0; k < conf.size(); ++k) {
    const auto& pc = je["per_class"][k];
    int64_t row = 0, col = 0;
    for (size_t i = 0; i < conf.size(); ++i) {
      row += conf[k][i].get<int64_t>();
      col += conf[i][k].get<int64_t>();
    }
    const double tp = conf[k][k].get<double>();
    EXPECT_EQ(pc["support"].get<int64_t>(), row);
    EXPECT_NEAR(pc["recall"].get<double>(), tp / double(row), 1e-12);
    EXPECT_NEAR(pc["precision"].get<double>(), tp / double(col), 1e-12);
    total += row;
  }
  EXPECT_EQ(total, je["samples"].get<int64_t>());
  EXPECT_GT(je["macro_f1"].get<double>(), 0.7);
  EXPECT_LE(je["macro_f1"].get<double>(), 1.0);
  CliRun et = cli("eval " + kSample + " --checkpoint " + ck);
  EXPECT_NE(et.out.find("per class precision    recall        F1   support"), std::string::npos)
      << et.out;
  EXPECT_NE(et.out.find("macro F1 0."), std::string::npos) << et.out;
  CliRun p = cli("predict " + kSample + " --checkpoint " + ck + " --index 0");
  ASSERT_EQ(p.code, 0) << p.out;
  EXPECT_NE(p.out.find("true class"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("%"), std::string::npos) << p.out;

  // Image files: a missing one and one that is not an image each give one
  // line naming the file (and no OpenCV warning before it).
  CliRun missing = cli("predict " + kSample + " --checkpoint " + ck + " " + t.path("none.png"));
  EXPECT_NE(missing.code, 0);
  EXPECT_EQ(missing.out, "deepcanvas-cli: " + t.path("none.png") + ": no such file\n");
  std::string junk = t.write("junk.png", "this is not a PNG");
  CliRun bad = cli("predict " + kSample + " --checkpoint " + ck + " " + junk);
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("cannot be read as an image"), std::string::npos) << bad.out;
}

TEST(Cli, SummaryListsLayersAndTotals) {
  CliRun r = cli("summary " + kSample);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("conv2"), std::string::npos);
  EXPECT_NE(r.out.find("64x14x14"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("421.6k parameters"), std::string::npos) << r.out;
  CliRun j = cli("summary " + kSample + " --json");
  ASSERT_EQ(j.code, 0) << j.out;
  auto js = nlohmann::json::parse(j.out);
  EXPECT_EQ(js["params"], 421642);
}

TEST(Cli, FreezeUntilShowsTheSavingsAndTrainsOnTheCpu) {
  CliRun j = cli("summary " + kSample + " --json --freeze-until pool2");
  ASSERT_EQ(j.code, 0) << j.out;
  auto js = nlohmann::json::parse(j.out);
  // conv1: 32·9 + 32, conv2: 64·32·9 + 64.
  EXPECT_EQ(js["frozen_params"], 320 + 18496);
  EXPECT_EQ(js["trainable_params"], 421642 - 320 - 18496);
  EXPECT_GT(js["frozen_saves_bytes"].get<int64_t>(), 0);
  CliRun t = cli("summary " + kSample + " --freeze-until pool2");
  EXPECT_NE(t.out.find("frozen: 18.8k"), std::string::npos) << t.out;
  CliRun bad = cli("summary " + kSample + " --freeze-until nope");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("no layer named 'nope'"), std::string::npos) << bad.out;
  CliRun tr =
      cli("train " + kSample + " --epochs 1 --steps-per-epoch 2 --quiet --freeze-until relu2");
  EXPECT_EQ(tr.code, 0) << tr.out;
}

// libgomp's idle threads spin long by default, which starves another busy
// process's threads (engine/core/parallel.cpp): the CLI restarts itself
// with a short spin when other threads are running as it starts, and
// leaves a user's own setting alone. (Whether it keeps the default on an
// idle machine cannot be tested here: other tests run beside this one.)
TEST(Cli, ShortOpenMpSpinWhenOtherThreadsRun) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> busy;
  for (int i = 0; i < 2; ++i)
    busy.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  CliRun v =
      cli_command("env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY " + std::string(DC_CLI) + " --version");
  CliRun own = cli_command("env GOMP_SPINCOUNT=12345 " + std::string(DC_CLI) + " --version");
  stop = true;
  for (auto& t : busy) t.join();
  EXPECT_EQ(v.code, 0) << v.out;
  EXPECT_NE(v.out.find("OpenMP waits: GOMP_SPINCOUNT=3000"), std::string::npos) << v.out;
  EXPECT_NE(own.out.find("OpenMP waits: GOMP_SPINCOUNT=12345"), std::string::npos) << own.out;
}

TEST(Cli, VersionDevicesAndUsage) {
  CliRun v = cli("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("deepcanvas-cli"), std::string::npos);
  CliRun d = cli("devices");
  EXPECT_EQ(d.code, 0);
  EXPECT_NE(d.out.find("cpu"), std::string::npos);
  EXPECT_NE(cli("").code, 0);
  EXPECT_NE(cli("frobnicate").code, 0);
  // No machine has 100 GPUs: without a GPU the device is "not available",
  // with one it "does not exist"; either way nothing trains.
  CliRun c = cli("train " + kSample + " --device cuda:99");
  EXPECT_NE(c.code, 0);
  EXPECT_TRUE(c.out.find("not available") != std::string::npos ||
              c.out.find("does not exist") != std::string::npos)
      << c.out;
  CliRun bad = cli("train " + kSample + " --epochs many");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("--epochs must be an integer"), std::string::npos) << bad.out;
}

TEST(Cli, AugmentationFlagsAreAcceptedAndRangeChecked) {
  CliRun usage = cli("");
  for (const char* f : {"--augment-rotate", "--augment-translate", "--augment-brightness"})
    EXPECT_NE(usage.out.find(f), std::string::npos) << f << " is missing from the usage";
  CliRun ok = cli("train " + kSample +
                  " --epochs 1 --steps-per-epoch 3 --quiet --json --augment-flip --crop-padding 2"
                  " --augment-rotate 10 --augment-translate 0.1 --augment-brightness 0.2");
  EXPECT_EQ(ok.code, 0) << ok.out;
  for (auto [flag, value] : {std::pair<const char*, const char*>{"--augment-rotate", "181"},
                             {"--augment-rotate", "-5"},
                             {"--augment-translate", "0.6"},
                             {"--augment-brightness", "2"},
                             {"--augment-brightness", "bright"}}) {
    CliRun r =
        cli("train " + kSample + " --epochs 1 --steps-per-epoch 1 --quiet " + flag + " " + value);
    EXPECT_NE(r.code, 0) << flag << " " << value;
    EXPECT_NE(r.out.find(std::string(flag) + " must be a number in ["), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(value), std::string::npos) << r.out;
  }
}

// Issue 17: an unknown option, a stray argument or a bad value stops the
// command with one message and exit status 1, instead of being ignored.
TEST(Cli, UnknownOptionsAndStrayArgumentsAreRefused) {
  CliRun typo = cli("train " + kSample + " --chekpoint /tmp/x");
  EXPECT_EQ(typo.code, 1) << typo.out;
  EXPECT_NE(typo.out.find("unknown option --chekpoint"), std::string::npos) << typo.out;
  EXPECT_NE(typo.out.find("did you mean --checkpoint"), std::string::npos) << typo.out;
  CliRun stray = cli("train " + kSample + " extra.dcproj --epochs 1");
  EXPECT_EQ(stray.code, 1) << stray.out;
  EXPECT_NE(stray.out.find("extra.dcproj"), std::string::npos) << stray.out;
  CliRun missing = cli("train " + kSample + " --epochs");
  EXPECT_EQ(missing.code, 1) << missing.out;
  EXPECT_NE(missing.out.find("--epochs"), std::string::npos) << missing.out;
  // A training flag on a command that does not train is a mistake too.
  CliRun wrong = cli("summary " + kSample + " --epochs 3");
  EXPECT_EQ(wrong.code, 1) << wrong.out;
  EXPECT_NE(wrong.out.find("--epochs"), std::string::npos) << wrong.out;
}

// Every training setting of the schema is a flag of `train`, listed by
// `train --help` with its range or choices and its default.
TEST(Cli, TrainHelpListsEverySettingWithRangeAndDefault) {
  CliRun h = cli("train --help");
  EXPECT_EQ(h.code, 0) << h.out;
  for (const char* line :
       {"--epochs", "[1, 100000], default 3", "--optimizer", "sgd|adam|adamw, default adam",
        "--augment-vflip", "--eps", "--no-normalize", "--precision", "--checkpoint", "--json"})
    EXPECT_NE(h.out.find(line), std::string::npos) << line << " missing from:\n" << h.out;
  CliRun s = cli("summary --help");
  EXPECT_EQ(s.code, 0) << s.out;
  EXPECT_EQ(s.out.find("--epochs"), std::string::npos) << s.out;
}

TEST(Cli, FlagsOfEveryKindAreParsedOrRefused) {
  CliRun r = cli("train " + kSample +
                 " --epochs 1 --steps-per-epoch 2 --quiet --json --no-normalize --augment-vflip"
                 " --optimizer sgd --momentum 0.5 --schedule cosine");
  EXPECT_EQ(r.code, 0) << r.out;
  CliRun bad = cli("train " + kSample + " --epochs 1 --optimizer rmsprop");
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("sgd, adam, adamw"), std::string::npos) << bad.out;
  CliRun eps = cli("train " + kSample + " --epochs 1 --eps 0");
  EXPECT_EQ(eps.code, 1) << eps.out;
  EXPECT_NE(eps.out.find("--eps must be a number in (0, 1]"), std::string::npos) << eps.out;
}

// `run` feeds a NumPy array through the trained network in batches and
// writes the outputs; the batch size must not change a single number.
TEST(Cli, RunMapsANumPyArrayToTheOutputsInBatches) {
  Tmp t;
  const std::string ck = t.path("m.safetensors");
  CliRun tr =
      cli("train " + kSample + " --epochs 1 --steps-per-epoch 3 --quiet --checkpoint " + ck);
  ASSERT_EQ(tr.code, 0) << tr.out;
  dc::Tensor x(dc::Shape{13, 1, 28, 28});
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = float((i * 7919) % 255) / 255.f - 0.3f;
  dc::save_npy(t.path("x.npy"), x);
  std::vector<dc::NpyArray> outs;
  for (const char* batch : {"1", "5", "64"}) {
    const std::string y = t.path(std::string("y") + batch + ".npy");
    CliRun r = cli("run " + kSample + " --checkpoint " + ck + " --input " + t.path("x.npy") +
                   " --output " + y + " --json --batch " + batch);
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("\"samples\":13"), std::string::npos) << r.out;
    // Planned for the 13 samples there are, not 64 (issue 29: a large input
    // at batch 64 reserved memory one sample never uses).
    if (std::string(batch) == "64") {
      EXPECT_NE(r.out.find("\"batch\":13"), std::string::npos) << r.out;
    }
    outs.push_back(dc::load_npy(y));
    ASSERT_EQ(outs.back().shape, (std::vector<int64_t>{13, 10}));
  }
  for (size_t k = 1; k < outs.size(); ++k)
    for (int64_t i = 0; i < 130; ++i)
      EXPECT_NEAR(outs[k].data.f32()[i], outs[0].data.f32()[i], 1e-5f) << k << " " << i;

  // --repeat (benchmarking): one time per pass, the same output.
  CliRun rep = cli("run " + kSample + " --checkpoint " + ck + " --input " + t.path("x.npy") +
                   " --output " + t.path("rep.npy") + " --json --repeat 3 --batch 5");
  ASSERT_EQ(rep.code, 0) << rep.out;
  const nlohmann::json j = nlohmann::json::parse(rep.out.substr(rep.out.find('{')));
  ASSERT_EQ(j.at("pass_seconds").size(), 3u) << rep.out;
  for (const auto& sec : j.at("pass_seconds")) EXPECT_GT(sec.get<double>(), 0.0);
  EXPECT_GT(j.at("samples_per_s").get<double>(), 0.0);
  EXPECT_EQ(j.at("batch").get<int>(), 5);
  dc::NpyArray rep_out = dc::load_npy(t.path("rep.npy"));
  for (int64_t i = 0; i < 130; ++i)
    EXPECT_NEAR(rep_out.data.f32()[i], outs[0].data.f32()[i], 1e-5f) << i;

  // A single image without its batch dimension, a missing --output, a
  // file that is not an array: one message each, exit 1, no output file.
  dc::save_npy(t.path("one.npy"), dc::Tensor(dc::Shape{1, 28, 28}));
  CliRun shape = cli("run " + kSample + " --checkpoint " + ck + " --input " + t.path("one.npy") +
                     " --output " + t.path("bad.npy"));
  EXPECT_EQ(shape.code, 1) << shape.out;
  EXPECT_NE(shape.out.find("N x 1x28x28 (batch first)"), std::string::npos) << shape.out;
  EXPECT_FALSE(fs::exists(t.path("bad.npy")));
  CliRun no_out = cli("run " + kSample + " --checkpoint " + ck + " --input " + t.path("x.npy"));
  EXPECT_EQ(no_out.code, 1);
  EXPECT_NE(no_out.out.find("missing --output"), std::string::npos) << no_out.out;
  CliRun not_npy = cli("run " + kSample + " --checkpoint " + ck + " --input " + kSample +
                       " --output " + t.path("bad.npy"));
  EXPECT_EQ(not_npy.code, 1);
  EXPECT_NE(not_npy.out.find("not a NumPy .npy file"), std::string::npos) << not_npy.out;
  EXPECT_FALSE(fs::exists(t.path("bad.npy")));
}

// `export` writes an ONNX model that Debian's python3-onnx checker accepts
// (the numbers are compared with two runtimes in tests/onnx); bad requests
// stop with one message and write nothing.
TEST(Cli, ExportWritesACheckedOnnxModel) {
  Tmp t;
  const std::string ck = t.path("m.safetensors");
  ASSERT_EQ(
      cli("train " + kSample + " --epochs 1 --steps-per-epoch 2 --quiet --checkpoint " + ck).code,
      0);
  const std::string model = t.path("m.onnx");
  CliRun r =
      cli("export " + kSample + " --checkpoint " + ck + " -o " + model + " --opset 12 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"opset\":12"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(model));
  CliRun check = cli_command("/usr/bin/python3 -c \"import onnx; m = onnx.load('" + model +
                             "'); onnx.checker.check_model(m); print(m.graph.input[0].name)\"");
  if (check.out.find("No module named 'onnx'") == std::string::npos) {
    EXPECT_EQ(check.code, 0) << check.out;
    EXPECT_NE(check.out.find("input"), std::string::npos) << check.out;
  }
  struct Bad {
    std::string args, expect;
  };
  for (const Bad& b :
       {Bad{"-o " + t.path("a.onnx") + " --opset 9", "--opset must be"},
        Bad{"-o " + t.path("a.onnx") + " --format tflite", "use --format onnx"},
        Bad{"", "missing -o MODEL.onnx"}, Bad{"-o /proc/a.onnx", "cannot write into /proc"},
        Bad{"-o " + t.path("a.onnx") + " --checkpoint " + kSample, kSample}}) {
    CliRun e = cli("export " + kSample + " " + b.args);
    EXPECT_EQ(e.code, 1) << b.args << "\n" << e.out;
    EXPECT_NE(e.out.find(b.expect), std::string::npos) << b.args << "\n" << e.out;
  }
  EXPECT_FALSE(fs::exists(t.path("a.onnx")));
}

// `import` turns an exported model back into a project and its weights:
// running both on the same array gives the same outputs; a file that is not
// ONNX stops with one message and writes nothing.
TEST(Cli, ImportOfAnExportedModelRunsLikeTheOriginal) {
  Tmp t;
  const std::string ck = t.path("m.safetensors"), model = t.path("m.onnx");
  ASSERT_EQ(
      cli("train " + kSample + " --epochs 1 --steps-per-epoch 2 --quiet --checkpoint " + ck).code,
      0);
  CliRun e = cli("export " + kSample + " --checkpoint " + ck + " -o " + model + " --quiet");
  ASSERT_EQ(e.code, 0) << e.out;
  CliRun r = cli("import " + model + " -o " + t.path("imported.dcproj") + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json j = last_json_line(r.out);
  EXPECT_EQ(j["checkpoint"], t.path("imported.safetensors"));
  ASSERT_TRUE(fs::exists(t.path("imported.safetensors")));
  // The same inputs through both.
  dc::Tensor x(dc::Shape{5, 1, 28, 28});
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = float((i * 37) % 101) / 50.f - 1.f;
  dc::save_npy(t.path("x.npy"), x);
  ASSERT_EQ(cli("run " + kSample + " --checkpoint " + ck + " --input " + t.path("x.npy") +
                " --output " + t.path("a.npy"))
                .code,
            0);
  CliRun b =
      cli("run " + t.path("imported.dcproj") + " --checkpoint " + t.path("imported.safetensors") +
          " --input " + t.path("x.npy") + " --output " + t.path("b.npy"));
  ASSERT_EQ(b.code, 0) << b.out;
  const dc::NpyArray ya = dc::load_npy(t.path("a.npy")), yb = dc::load_npy(t.path("b.npy"));
  ASSERT_EQ(ya.shape, yb.shape);
  for (int64_t i = 0; i < ya.data.numel(); ++i)
    EXPECT_NEAR(ya.data.f32()[i], yb.data.f32()[i], 1e-5);

  t.write("notes.onnx", "not a model");
  CliRun bad = cli("import " + t.path("notes.onnx") + " -o " + t.path("bad.dcproj"));
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("not an ONNX model"), std::string::npos) << bad.out;
  EXPECT_FALSE(fs::exists(t.path("bad.dcproj")));
  EXPECT_FALSE(fs::exists(t.path("bad.safetensors")));
  CliRun no_o = cli("import " + model);
  EXPECT_EQ(no_o.code, 1);
  EXPECT_NE(no_o.out.find("missing -o PROJECT.dcproj"), std::string::npos) << no_o.out;
  CliRun help = cli("import --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("PROJECT.safetensors"), std::string::npos) << help.out;
}

struct BadCase {
  const char* what;
  std::string from, to;  // textual edit of the sample project
  const char* expect;    // part of the message
};

TEST(Cli, BadProjectsGiveOneClearMessage) {
  std::string s = sample_text();
  std::vector<BadCase> cases = {
      {"truncated", s, s.substr(0, s.size() / 3), "not valid JSON"},
      {"unknown layer", "\"type\": \"MaxPool2D\"", "\"type\": \"MaxPool\"",
       "unknown layer type 'MaxPool'"},
      {"unknown attribute", "\"units\": 128", "\"neurons\": 128", "unknown attribute 'neurons'"},
      {"wrong type", "\"units\": 128", "\"units\": true", "must be an integer"},
      {"out of range", "\"units\": 128", "\"units\": 0", "outside"},
      {"shape mismatch",
       "\"shape\": [\n            1,\n            28,\n            28\n          ]",
       "\"shape\": [\n            1,\n            28\n          ]", "conv1"},
      {"label outside output", "\"units\": 10", "\"units\": 5",
       "set the last Dense layer's units to 10"},
  };
  for (auto& c : cases) {
    Tmp t;
    std::string text = c.from == s ? c.to : replaced(s, c.from, c.to);
    std::string proj = project_in(t, text);
    std::string ck = t.path("out.safetensors");
    CliRun r = cli("train " + proj + " --epochs 1 --steps-per-epoch 2 --checkpoint " + ck);
    EXPECT_NE(r.code, 0) << c.what;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.what << ": " << r.out;
    EXPECT_FALSE(fs::exists(ck)) << c.what << ": partial output left";
    EXPECT_EQ(r.out.find("terminate called"), std::string::npos) << c.what;
  }
}

TEST(Cli, BadDataAndCheckpointsGiveOneClearMessage) {
  Tmp t;
  // Truncated IDX: copy the subset and cut the training images file short.
  fs::path data = t.path("data");
  fs::create_directories(data);
  for (auto& f : fs::directory_iterator(src("sample_data/fashion-mnist-subset")))
    if (f.path().extension() == ".gz") fs::copy_file(f.path(), data / f.path().filename());
  {
    std::string img = dc::read_file((data / "train-images-idx3-ubyte.gz").string());
    std::ofstream((data / "train-images-idx3-ubyte.gz").string(), std::ios::binary)
        << img.substr(0, img.size() / 2);
  }
  CliRun r = cli("train " + kSample + " --epochs 1 --data " + data.string());
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("train-images-idx3-ubyte.gz"), std::string::npos) << r.out;

  CliRun m = cli("train " + kSample + " --data " + t.path("missing"));
  EXPECT_NE(m.code, 0);
  EXPECT_NE(m.out.find("does not exist"), std::string::npos) << m.out;

  // Unreadable checkpoint and a checkpoint for another graph.
  std::string junk = t.write("junk.safetensors", "this is not a checkpoint");
  CliRun u = cli("eval " + kSample + " --checkpoint " + junk);
  EXPECT_NE(u.code, 0);
  EXPECT_NE(u.out.find("junk.safetensors"), std::string::npos) << u.out;

  std::string other = project_in(t, replaced(sample_text(), "\"units\": 128", "\"units\": 64"));
  std::string ck = t.path("other.safetensors");
  CliRun tr = cli("train " + other + " --epochs 1 --steps-per-epoch 3 --quiet --checkpoint " + ck);
  ASSERT_EQ(tr.code, 0) << tr.out;
  CliRun w = cli("eval " + kSample + " --checkpoint " + ck);
  EXPECT_NE(w.code, 0);
  EXPECT_NE(w.out.find("different network"), std::string::npos) << w.out;
}

}  // namespace

namespace {

// The character template, copied next to its corpus in tmp so that tests can
// swap the corpus; trained for a few steps only (generation is checked for
// its contract, not its prose).
std::string char_project(const Tmp& t, const std::string& corpus_name) {
  std::string text = replaced(dc::read_file(src("resources/templates/char_lstm.dcproj")),
                              "\"sample:text/corpus.txt\"", "\"" + corpus_name + "\"");
  return t.write("char.dcproj", text);
}

}  // namespace

TEST(CliText, GenerateContinuesThePromptAndRejectsBadInput) {
  Tmp t;
  fs::copy_file(src("sample_data/text/corpus.txt"), t.path("corpus.txt"));
  std::string proj = char_project(t, "corpus.txt");
  std::string ck = t.path("char.safetensors");
  CliRun r =
      cli("train " + proj + " --epochs 1 --steps-per-epoch 20 --quiet --json --checkpoint " + ck);
  ASSERT_EQ(r.code, 0) << r.out;
  // The loss to beat is reported with the result (English text: 2.5 to 3.5 nats).
  auto j = last_json_line(r.out);
  ASSERT_TRUE(j.contains("unigram_entropy")) << r.out;
  EXPECT_GT(j["unigram_entropy"].get<double>(), 2.5);
  EXPECT_LT(j["unigram_entropy"].get<double>(), 3.5);

  CliRun g = cli("generate " + proj + " --checkpoint " + ck +
                 " --prompt 'Shall I' --length 30 --temperature 0.7 --top-k 5 --seed 3");
  ASSERT_EQ(g.code, 0) << g.out;
  EXPECT_EQ(g.out.rfind("Shall I", 0), 0u) << g.out;
  // The prompt, 30 generated characters (all ASCII in this corpus) and a newline.
  EXPECT_EQ(g.out.size(), 7u + 30u + 1u) << g.out;
  // Same seed, same text; the sampler is deterministic.
  CliRun g2 = cli("generate " + proj + " --checkpoint " + ck +
                  " --prompt 'Shall I' --length 30 --temperature 0.7 --top-k 5 --seed 3");
  EXPECT_EQ(g2.out, g.out);

  // A character the corpus never uses has no token.
  CliRun bad = cli("generate " + proj + " --checkpoint " + ck + " --prompt 'x~y'");
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.out.find("'~' never occurs in the training text"), std::string::npos) << bad.out;

  // The checkpoint against a corpus with another vocabulary.
  t.write("other.txt", "abc abc abc, abd.\n");
  std::string other =
      t.write("other.dcproj", replaced(dc::read_file(proj), "\"corpus.txt\"", "\"other.txt\""));
  CliRun mism = cli("generate " + other + " --checkpoint " + ck + " --prompt 'ab'");
  EXPECT_NE(mism.code, 0);
  EXPECT_NE(mism.out.find("different vocabulary"), std::string::npos) << mism.out;

  // An image classifier's checkpoint has no vocabulary to generate from.
  CliRun img = cli("generate " + kSample + " --checkpoint " + ck + " --prompt a");
  EXPECT_NE(img.code, 0);
  EXPECT_NE(img.out.find("token sequence"), std::string::npos) << img.out;
}

// The Character Transformer predicts every step (a TimeDistributedDense
// over its last norm): it trains on its bundled corpus, its checkpoint
// records the vocabulary (V classes, not T x V), and generate samples from
// the last step.
TEST(CliText, TheCharacterTransformerPredictsEveryStepTrainsAndGenerates) {
  Tmp t;
  const std::string proj = src("resources/templates/char_transformer.dcproj");
  const std::string ck = t.path("every.safetensors");
  CliRun r =
      cli("train " + proj + " --epochs 1 --steps-per-epoch 20 --quiet --json --checkpoint " + ck);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = last_json_line(r.out);
  EXPECT_TRUE(std::isfinite(j["test_loss"].get<double>())) << r.out;
  // Scored at the last step against Genesis's 61 symbols: a loss near the
  // uniform log(61) = 4.1 or below, never the T x V softmax's log(2440) = 7.8.
  EXPECT_LT(j["test_loss"].get<double>(), 5.0) << r.out;
  // The epoch's history has its validation and test losses (10 % of the
  // windows validate, the template's split).
  ASSERT_EQ(j["history"].size(), 1u) << r.out;
  const auto& h = j["history"][0];
  ASSERT_TRUE(h.contains("val_loss") && h.contains("val_accuracy")) << h.dump();
  EXPECT_LT(h["val_loss"].get<double>(), 5.0) << h.dump();
  EXPECT_DOUBLE_EQ(h["test_loss"].get<double>(), j["test_loss"].get<double>()) << h.dump();
  CliRun g = cli("generate " + proj + " --checkpoint " + ck +
                 " --prompt 'In the beginning' --length 30 --seed 3");
  ASSERT_EQ(g.code, 0) << g.out;
  EXPECT_EQ(g.out.rfind("In the beginning", 0), 0u) << g.out;
  EXPECT_EQ(g.out.size(), 16u + 30u + 1u) << g.out;
}

TEST(CliText, EmptyCorpusAndInvalidUtf8FailBeforeTraining) {
  Tmp t;
  t.write("empty.txt", "");
  std::string e = char_project(t, "empty.txt");
  CliRun r = cli("train " + e + " --epochs 1 --quiet");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("the corpus is empty"), std::string::npos) << r.out;
  t.write("bad.txt", std::string("good text\n\xff\xfe more"));
  std::string b = t.write("b.dcproj", replaced(dc::read_file(e), "\"empty.txt\"", "\"bad.txt\""));
  CliRun r2 = cli("train " + b + " --epochs 1 --quiet");
  EXPECT_NE(r2.code, 0);
  EXPECT_NE(r2.out.find("invalid UTF-8 at byte 10 (line 2)"), std::string::npos) << r2.out;
}

TEST(Cli, ProjectSavedForAGpuFallsBackToTheCpuWithANote) {
  CliRun dev = cli("devices --json");
  ASSERT_EQ(dev.code, 0) << dev.out;
  if (!last_json_line(dev.out).contains("cuda_unavailable"))
    GTEST_SKIP() << "this machine has a usable GPU, so there is nothing to fall back from";
  Tmp t;
  std::string p =
      project_in(t, replaced(sample_text(), "\"device\": \"cpu\"", "\"device\": \"cuda\""));
  CliRun r = cli("train " + p + " --epochs 1 --steps-per-epoch 5 --quiet --json");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("the project asks for cuda"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("training on the CPU"), std::string::npos) << r.out;
  // Asked for on the command line, an unavailable GPU stays an error.
  CliRun e = cli("train " + p + " --device cuda --epochs 1 --steps-per-epoch 5 --quiet");
  EXPECT_NE(e.code, 0);
  EXPECT_NE(e.out.find("not available"), std::string::npos) << e.out;
}

TEST(Cli, UnwritableOutputsAndTooLargeBatchesFailBeforeTraining) {
  // Below a regular file nothing can be created, not even by root.
  CliRun r =
      cli("train " + kSample + " --epochs 1 --quiet --checkpoint /etc/hostname/m.safetensors");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.out.find("--checkpoint /etc/hostname/m.safetensors: cannot create the folder"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Nothing was trained"), std::string::npos) << r.out;
  CliRun d = cli("train " + kSample + " --epochs 1 --quiet --checkpoint-dir /etc/hostname/runs");
  EXPECT_NE(d.code, 0);
  EXPECT_NE(d.out.find("--checkpoint-dir"), std::string::npos) << d.out;
  // A million samples of the sample CNN need hundreds of GiB.
  CliRun b = cli("train " + kSample + " --epochs 1 --quiet --batch 1000000");
  EXPECT_NE(b.code, 0);
  EXPECT_NE(b.out.find("training at batch 1000000 needs about"), std::string::npos) << b.out;
  EXPECT_NE(b.out.find("fits"), std::string::npos) << b.out;
}

// An Input of 100,000 × 100,000 makes a Dense layer of 1e12 weights: the
// CLI refuses it with the count instead of running out of memory (or being
// killed) while allocating it.
TEST(Cli, ANetworkTooLargeForTheMachineIsRefusedBeforeAllocating) {
  Tmp t;
  std::string huge = project_in(
      t, replaced(sample_text(),
                  "\"shape\": [\n            1,\n            28,\n            28\n          ]",
                  "\"shape\": [1, 100000, 100000]"));
  for (const char* cmd : {"train ", "summary "}) {
    CliRun r = cli(cmd + huge + " --quiet");
    EXPECT_NE(r.code, 0) << cmd;
    EXPECT_NE(r.out.find("parameters, which with their gradients"), std::string::npos)
        << cmd << r.out;
    EXPECT_NE(r.out.find("make the Input smaller"), std::string::npos) << r.out;
  }
}
