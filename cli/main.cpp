// deepcanvas-cli: train, evaluate and inspect DeepCanvas projects without the
// desktop app. Every failure prints one message (naming the file, node or
// field) and exits non-zero; nothing is written unless it succeeds.
#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/parallel.h>
#include <deepcanvas/project.h>
#include <deepcanvas/sequence_data.h>
#include <deepcanvas/trainer.h>

#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "args.h"
#include "generate.h"
#include "interrupt.h"
#include "outcome.h"
#include "predict.h"
#include "preflight.h"

#ifndef DC_VERSION
#define DC_VERSION "0.0.0"
#endif

namespace dc::cli {
namespace {

using json = nlohmann::json;

const char* kUsage =
    "usage: deepcanvas-cli COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  train PROJECT     train the project's network on its dataset\n"
    "      --epochs N --batch N --lr X --seed N --threads N --device cpu|cuda[:N]\n"
    "      --precision fp32|bf16|fp16 (CUDA: reduced-precision convolutions and GEMMs)\n"
    "      --augment-flip --crop-padding N (random flips / crops of image batches)\n"
    "      --augment-rotate DEG (0-180) --augment-translate FRAC (0-0.5 of the size)\n"
    "      --augment-brightness DELTA (0-1: intensity x [1-DELTA, 1+DELTA])\n"
    "      --data DIR (IDX folder, or 'fashion-mnist' for Debian's full set)\n"
    "      --checkpoint FILE (save the trained model) --checkpoint-dir DIR (per epoch)\n"
    "      --resume FILE --val-split F --steps-per-epoch N --json --quiet\n"
    "      --overwrite (replace --checkpoint even with a worse or diverged model)\n"
    "  eval PROJECT --checkpoint FILE [--data DIR] [--batch N] [--json]\n"
    "  predict PROJECT --checkpoint FILE (IMAGE... | --index N [--data DIR]) [--top K]\n"
    "  summary PROJECT [--batch N] [--json]\n"
    "  generate PROJECT --checkpoint FILE [--prompt TEXT] [--length N]\n"
    "      [--temperature T] [--top-k K] [--seed N]   (character models)\n"
    "  devices           list compute devices\n"
    "  --version         print the version, build options and whether a GPU is usable\n";

double peak_rss_mb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (b >= 1024 && u < 3) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return buf;
}

std::string human_count(double n) {
  char buf[32];
  if (n >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2fG", n / 1e9);
  else if (n >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2fM", n / 1e6);
  else if (n >= 1e3)
    std::snprintf(buf, sizeof buf, "%.1fk", n / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f", n);
  return buf;
}

std::string clock_text(double s) {
  if (!std::isfinite(s) || s < 0) return "--:--";
  int t = int(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%02d:%02d", t / 60, t % 60);
  return buf;
}

// Throws with the reason ("device 'cuda:0' is not available: no NVIDIA
// driver ...") when a GPU is asked for and cannot be used.
void check_device(const std::string& dev) {
  require_device(parse_device(dev));
}

struct LoadedData {
  std::shared_ptr<Dataset> train, test;
  std::string dir;
};

LoadedData load_data(const Project& p, const std::string& override_dir) {
  LoadedData d;
  d.dir = resolve_dataset_dir(p, override_dir);
  TrainTest tt;
  if (p.dataset.kind == "text")
    tt = load_text_dataset(d.dir, {p.dataset.window, p.dataset.stride, p.dataset.test_fraction});
  else if (p.dataset.kind == "csv_sequence")
    tt = load_csv_sequences(d.dir, {p.dataset.window, p.dataset.target, p.dataset.test_fraction});
  else
    tt = d.dir.find("fashion") != std::string::npos ? load_fashion_mnist(d.dir)
                                                    : load_idx_folder(d.dir);
  d.train = std::make_shared<Dataset>(std::move(tt.train));
  d.test = std::make_shared<Dataset>(std::move(tt.test));
  return d;
}

Project load(const Args& a) {
  if (a.positional.empty()) throw Error("missing PROJECT (a .dcproj file)");
  return load_project(a.positional[0]);
}

// Saves the model of a run stopped by a signal where --resume can pick it up:
// the epochs it completed and the optimizer's step count, so resuming
// repeats only the interrupted epoch.
int save_interrupted(Trainer& t, const InterruptGuard& stop, const TrainConfig& c,
                     const std::string& out_ckpt, int epochs_done, int64_t steps_done) {
  if (steps_done < 0) {
    std::fprintf(stderr, "deepcanvas-cli: %s before the first step; nothing to save\n",
                 stop.signal_name().c_str());
    return kInterruptedExit;
  }
  std::string path = interrupted_checkpoint_path(c.checkpoint_dir, out_ckpt);
  t.save_checkpoint(path, epochs_done, steps_done);
  std::fprintf(stderr,
               "deepcanvas-cli: %s: training stopped after %lld steps (%d complete epochs); "
               "model saved to %s (continue with --resume %s)\n",
               stop.signal_name().c_str(), (long long)steps_done, epochs_done, path.c_str(),
               path.c_str());
  return kInterruptedExit;
}

int cmd_train(const Args& a) {
  Project p = load(a);
  TrainConfig c = p.training;
  c.epochs = a.get_int("epochs", c.epochs, 1, 100000);
  c.batch = a.get_int("batch", c.batch, 1, 1 << 20);
  c.optimizer.lr = a.get_double("lr", c.optimizer.lr, 1e-12, 1e6);
  c.seed = static_cast<uint64_t>(a.get_int("seed", int64_t(c.seed), 0, INT64_MAX));
  c.threads = int(a.get_int("threads", c.threads, 0, 1024));
  c.val_split = a.get_double("val-split", c.val_split, 0, 0.99);
  c.steps_per_epoch_limit = a.get_int("steps-per-epoch", 0, 0, INT64_MAX);
  c.device = a.get("device", c.device);
  c.precision = a.get("precision", c.precision);
  if (a.flag("augment-flip")) c.augment.flip = true;
  c.augment.crop_padding = int(a.get_int("crop-padding", c.augment.crop_padding, 0, 64));
  c.augment.rotate = a.get_double("augment-rotate", c.augment.rotate, 0, 180);
  c.augment.translate = a.get_double("augment-translate", c.augment.translate, 0, 0.5);
  c.augment.brightness = a.get_double("augment-brightness", c.augment.brightness, 0, 1);
  c.checkpoint_dir = a.get("checkpoint-dir", "");
  c.resume = a.get("resume", "");
  std::string out_ckpt = a.get("checkpoint", "");
  bool as_json = a.flag("json"), quiet = a.flag("quiet");
  if (a.has("device")) {
    check_device(c.device);  // asked for on the command line: unavailable is an error
  } else if (parse_device(c.device).cuda) {
    // The project was saved on a GPU machine; on this one the CPU still trains
    // it (the same numbers up to rounding), so say why and carry on.
    try {
      check_device(c.device);
    } catch (const Error& e) {
      std::fprintf(stderr, "note: the project asks for %s, but %s; training on the CPU\n",
                   c.device.c_str(), e.what());
      c.device = "cpu";
      if (c.precision != "fp32") {
        std::fprintf(stderr, "note: %s precision needs a GPU; the CPU computes in fp32\n",
                     c.precision.c_str());
        c.precision = "fp32";
      }
    }
  }
  // What would fail late fails first: an unwritable output, too little memory.
  check_writable("--checkpoint", out_ckpt, false);
  check_writable("--checkpoint-dir", c.checkpoint_dir, true);
  check_network_size(p.graph);
  if (!parse_device(c.device).cuda) {
    Plan sizing(p.graph, 1);
    check_cpu_memory(sizing.training_bytes(c.batch), c.batch, sizing.activation_bytes(1, true));
  }
  LoadedData data = load_data(p, a.get("data", ""));

  // For a text model, what ignoring context would reach: the loss to beat.
  const double unigram = data.train->tokens ? label_entropy(*data.train) : NAN;
  Trainer t(p.graph, c, data.train, data.test);
  bool tty = isatty(STDERR_FILENO) && !quiet;
  if (!quiet)
    std::fprintf(stderr, "Training '%s' on %s (%lld train / %lld test samples, %d threads)\n",
                 p.name.c_str(), data.dir.c_str(), (long long)data.train->size(),
                 (long long)data.test->size(), num_threads());
  if (!quiet && std::isfinite(unigram))
    std::fprintf(stderr, "unigram entropy of the training text: %.4f nats per character\n",
                 unigram);
  InterruptGuard stop;
  t.start();
  auto last_print = std::chrono::steady_clock::now() - std::chrono::seconds(10);
  int last_pct = -1;
  bool done = false;
  json history = json::array();  // per epoch, for benchmarks (--json)
  double first_loss = NAN;       // the untrained model's, to tell divergence
  int epochs_done = 0;           // complete epochs at the last step seen
  int64_t steps_done = -1;
  double final_accuracy = NAN;
  while (!done) {
    if (stop.requested()) t.cancel();
    auto ev = t.events().pop(std::chrono::milliseconds(200));
    if (!ev) continue;
    const TrainEvent& e = *ev;
    switch (e.kind) {
      case TrainEvent::Kind::Step: {
        if (std::isnan(first_loss)) first_loss = e.batch_loss;
        epochs_done = e.step_in_epoch == e.steps_per_epoch ? e.epoch : e.epoch - 1;
        steps_done = e.step;
        if (quiet) break;
        auto now = std::chrono::steady_clock::now();
        int pct =
            int(100.0 * double(e.step_in_epoch) / double(std::max<int64_t>(1, e.steps_per_epoch)));
        bool due =
            tty ? now - last_print > std::chrono::milliseconds(100) : pct / 25 != last_pct / 25;
        if (!due && e.step_in_epoch != e.steps_per_epoch) break;
        last_print = now;
        last_pct = pct;
        int width = 24, fill = pct * width / 100;
        std::string bar(fill, '#');
        bar += std::string(width - fill, '.');
        std::fprintf(stderr,
                     "%sepoch %d/%d [%s] %3d%%  loss %.4f  acc %.2f%%  %.0f samples/s  ETA %s%s",
                     tty ? "\r" : "", e.epoch, e.epochs, bar.c_str(), pct, e.loss, 100 * e.accuracy,
                     e.samples_per_s, clock_text(e.eta_s).c_str(), tty ? "\033[K" : "\n");
        break;
      }
      case TrainEvent::Kind::Epoch:
        final_accuracy = e.train_accuracy;
        history.push_back(
            {{"epoch", e.epoch},
             {"train_samples_per_s", e.samples_per_s},
             {"train_loss", e.train_loss},
             {"test_accuracy", std::isfinite(e.test_accuracy) ? e.test_accuracy : -1.0}});
        if (!quiet) {
          std::fprintf(stderr, "%sepoch %d/%d: train loss %.4f acc %.2f%%", tty ? "\r\033[K" : "",
                       e.epoch, e.epochs, e.train_loss, 100 * e.train_accuracy);
          if (std::isfinite(e.val_accuracy))
            std::fprintf(stderr, " | val loss %.4f acc %.2f%%", e.val_loss, 100 * e.val_accuracy);
          if (std::isfinite(e.test_accuracy))
            std::fprintf(stderr, " | test loss %.4f acc %.2f%%", e.test_loss,
                         100 * e.test_accuracy);
          std::fprintf(stderr, " | %.0f samples/s%s\n", e.samples_per_s, e.best ? " *" : "");
          if (!e.message.empty()) std::fprintf(stderr, "%s\n", e.message.c_str());
        }
        break;
      case TrainEvent::Kind::Checkpoint:
        if (!quiet) std::fprintf(stderr, "checkpoint written: %s\n", e.message.c_str());
        break;
      case TrainEvent::Kind::Finished:
      case TrainEvent::Kind::Failed:
      case TrainEvent::Kind::Cancelled:
        done = true;
        break;
      default:
        break;
    }
  }
  t.wait();
  const TrainResult& r = t.result();
  if (r.cancelled && stop.requested())
    return save_interrupted(t, stop, c, out_ckpt, epochs_done, steps_done);
  if (!r.ok) throw Error("training failed: " + r.error);
  const bool diverged = run_diverged(first_loss, r.final_train_loss);
  SaveDecision save = decide_save(out_ckpt, a.flag("overwrite"), diverged, r.test_accuracy);
  if (!save.path.empty()) {
    t.save_checkpoint(save.path, r.epochs_run, 0, r.test_accuracy);
    if (!quiet) std::fprintf(stderr, "model saved to %s\n", save.path.c_str());
  }
  if (!save.note.empty()) std::fprintf(stderr, "note: %s\n", save.note.c_str());
  if (diverged) {
    char what[256];
    std::snprintf(what, sizeof what,
                  "training diverged: the training loss rose from %.4g at the first step to %.4g "
                  "(train accuracy %.2f%%); lower the learning rate (--lr, now %g) or normalise "
                  "the inputs",
                  first_loss, r.final_train_loss, 100 * final_accuracy, c.optimizer.lr);
    throw Error(what);
  }
  if (as_json) {
    json j = {{"test_accuracy", r.test_accuracy},
              {"test_top5", r.test_top5},
              {"test_loss", r.test_loss},
              {"train_samples_per_s", r.train_samples_per_s},
              {"epochs", r.epochs_run},
              {"best_epoch", r.best_epoch},
              {"train_seconds", r.train_seconds},
              {"final_train_loss", r.final_train_loss},
              {"batch", c.batch},
              {"threads", num_threads()},
              {"peak_rss_mb", peak_rss_mb()},
              {"device", c.device},
              {"history", history}};
    if (std::isfinite(r.val_accuracy)) j["val_accuracy"] = r.val_accuracy;
    if (std::isfinite(unigram)) j["unigram_entropy"] = unigram;
    std::cout << j.dump() << std::endl;
  } else {
    std::printf("test accuracy %.2f%% (top-5 %.2f%%), %d epochs, %.1f s training, %.0f samples/s\n",
                100 * r.test_accuracy, 100 * r.test_top5, r.epochs_run, r.train_seconds,
                r.train_samples_per_s);
  }
  return 0;
}

// Loads the project, a checkpoint into a plan, and returns both.
struct Loaded {
  Project project;
  std::unique_ptr<Plan> plan;
  CheckpointInfo ck;
  float mean = 0, stddev = 1;
  std::vector<std::string> class_names;
};

Loaded load_trained(const Args& a, int64_t batch) {
  Loaded l;
  l.project = load(a);
  std::string ck = a.get("checkpoint", "");
  if (ck.empty()) throw Error("missing --checkpoint FILE (written by 'train --checkpoint')");
  l.plan = std::make_unique<Plan>(l.project.graph, batch);
  l.ck = read_checkpoint(ck);
  l.plan->load_state(l.ck.model, ck);
  try {
    l.mean = std::stof(l.ck.metadata.at("mean"));
    l.stddev = std::stof(l.ck.metadata.at("stddev"));
    auto names = json::parse(l.ck.metadata.at("class_names"), nullptr, false);
    if (names.is_array())
      for (auto& n : names)
        if (n.is_string()) l.class_names.push_back(n);
  } catch (const std::exception&) {
    throw IoError(ck + ": checkpoint metadata lacks the input normalisation (mean/stddev)");
  }
  return l;
}

int cmd_eval(const Args& a) {
  int64_t batch = a.get_int("batch", 256, 1, 1 << 20);
  set_num_threads(int(a.get_int("threads", 0, 0, 1024)));
  Loaded l = load_trained(a, batch);
  LoadedData d = load_data(l.project, a.get("data", ""));
  d.test->mean = l.mean;
  d.test->stddev = l.stddev;
  auto loss = make_loss(l.project.training.loss, float(l.project.training.label_smoothing));
  DeviceSpec dev = parse_device(a.get("device", "cpu"));
  EvalResult r;
  if (DeviceBackend* backend = require_device(dev)) {
    DevicePlanOptions o;
    o.device = dev.index;
    o.max_batch = batch;
    o.loss = l.project.training.loss;
    o.label_smoothing = l.project.training.label_smoothing;
    auto dp = backend->create_plan(l.project.graph, *l.plan, o);
    dp->upload_params();
    int h = dp->add_dataset(*d.test);
    r = evaluate_device(*dp, h, *d.test, l.plan->output_shape(), {}, batch, *loss);
  } else {
    r = evaluate(*l.plan, *d.test, {}, batch, *loss);
  }
  if (a.flag("json")) {
    json j = {{"test_accuracy", r.top1},
              {"test_top5", r.top5},
              {"test_loss", r.loss},
              {"samples", r.samples},
              {"confusion", r.confusion}};
    std::cout << j.dump() << std::endl;
    return 0;
  }
  std::printf("%lld test samples: accuracy %.2f%%, top-5 %.2f%%, loss %.4f\n", (long long)r.samples,
              100 * r.top1, 100 * r.top5, r.loss);
  std::printf("confusion matrix (rows: true class, columns: predicted):\n");
  for (size_t i = 0; i < r.confusion.size(); ++i) {
    std::printf("%14s",
                i < l.class_names.size() ? l.class_names[i].c_str() : std::to_string(i).c_str());
    for (int64_t v : r.confusion[i]) std::printf(" %5lld", (long long)v);
    std::printf("\n");
  }
  return 0;
}

int cmd_predict(const Args& a) {
  Loaded l = load_trained(a, 1);
  int top = int(a.get_int("top", 5, 1, 1000));
  std::vector<std::pair<std::string, Tensor>> inputs;  // label, [1, ...input]
  const Shape& in = l.plan->input_shape();
  if (a.has("index")) {
    LoadedData d = load_data(l.project, a.get("data", ""));
    int64_t i = a.get_int("index", 0, 0, d.test->size() - 1);
    d.test->mean = l.mean;
    d.test->stddev = l.stddev;
    Tensor x(in.with_batch(1));
    int32_t label;
    d.test->gather(&i, 1, x.f32(), &label);
    std::string truth =
        label < int(l.class_names.size()) ? l.class_names[label] : std::to_string(label);
    inputs.emplace_back("test sample " + std::to_string(i) + " (true class: " + truth + ")", x);
  }
  for (const std::string& path : image_paths(
           {a.positional.begin() + std::min<size_t>(1, a.positional.size()), a.positional.end()}))
    inputs.emplace_back(path, load_image_input(path, in, l.mean, l.stddev));
  if (inputs.empty()) throw Error("nothing to predict: give image files or --index N");
  RunContext ctx{false, nullptr};
  for (auto& [what, x] : inputs) {
    const Tensor& out = l.plan->forward(x, ctx);
    int c = int(out.numel());
    std::vector<double> prob(c);
    double mx = -1e30, sum = 0;
    for (int i = 0; i < c; ++i) mx = std::max(mx, double(out.f32()[i]));
    for (int i = 0; i < c; ++i) sum += prob[i] = std::exp(double(out.f32()[i]) - mx);
    std::vector<int> order(c);
    for (int i = 0; i < c; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return prob[x] > prob[y]; });
    std::printf("%s\n", what.c_str());
    for (int k = 0; k < std::min(top, c); ++k) {
      int i = order[k];
      std::string name =
          i < int(l.class_names.size()) ? l.class_names[i] : "class " + std::to_string(i);
      std::printf("  %-14s %6.2f%%\n", name.c_str(), 100 * prob[i] / sum);
    }
  }
  return 0;
}

int cmd_summary(const Args& a) {
  Project p = load(a);
  int64_t batch = a.get_int("batch", p.training.batch, 1, 1 << 20);
  check_network_size(p.graph);
  Plan plan(p.graph, 1);
  auto rows = plan.summary();
  int64_t params = 0, macs = 0, act = 0;
  for (auto& r : rows) {
    params += r.cost.params;
    macs += r.cost.macs;
    if (!is_input_type(r.type)) act += r.activation_bytes;
  }
  int64_t train_bytes = plan.training_bytes(batch);
  if (a.flag("json")) {
    json layers = json::array();
    for (auto& r : rows)
      layers.push_back({{"name", r.name},
                        {"type", r.type},
                        {"output", r.out.dims()},
                        {"params", r.cost.params},
                        {"macs", r.cost.macs},
                        {"activation_bytes", r.activation_bytes}});
    std::cout << json{{"layers", layers}, {"params", params},
                      {"macs", macs},     {"activation_bytes_per_sample", act},
                      {"batch", batch},   {"training_bytes", train_bytes}}
                     .dump(2)
              << std::endl;
    return 0;
  }
  std::printf("%-16s %-16s %-14s %12s %12s %12s\n", "layer", "type", "output", "params", "MACs",
              "act/sample");
  for (auto& r : rows)
    std::printf("%-16s %-16s %-14s %12s %12s %12s\n", r.name.c_str(), r.type.c_str(),
                r.out.str(true).c_str(), human_count(double(r.cost.params)).c_str(),
                human_count(double(r.cost.macs)).c_str(),
                human_bytes(double(r.activation_bytes)).c_str());
  std::printf("total: %s parameters (%s), %s MACs per sample, %s activations per sample\n",
              human_count(double(params)).c_str(), human_bytes(double(params) * 4).c_str(),
              human_count(double(macs)).c_str(), human_bytes(double(act)).c_str());
  std::printf(
      "training at batch %lld needs about %s (activations and their gradients, "
      "weights, gradients and Adam state)\n",
      (long long)batch, human_bytes(double(train_bytes)).c_str());
  return 0;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

int cmd_devices(const Args& a) {
  std::string why;
  std::vector<GpuInfo> gpus = list_gpus(&why);
  if (a.flag("json")) {
    json j = {{"cpu", {{"name", cpu_model()}, {"threads", std::thread::hardware_concurrency()}}}};
    json g = json::array();
    for (const GpuInfo& d : gpus)
      g.push_back(
          {{"device", "cuda:" + std::to_string(d.index)},
           {"name", d.name},
           {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
           {"multiprocessors", d.multiprocessors},
           {"memory_bytes", d.total_bytes},
           {"free_bytes", d.free_bytes},
           {"tensor_cores", d.tensor_cores}});
    j["cuda"] = g;
    if (gpus.empty()) j["cuda_unavailable"] = why;
    std::cout << j.dump() << std::endl;
    return 0;
  }
  std::printf("cpu      %s, %u hardware threads\n", cpu_model().c_str(),
              std::thread::hardware_concurrency());
  if (gpus.empty()) std::printf("cuda     not available: %s\n", why.c_str());
  for (const GpuInfo& d : gpus)
    std::printf(
        "cuda:%-3d %s, compute capability %d.%d, %d SMs, %.1f GiB (%.1f GiB free), "
        "tensor cores: %s, driver CUDA %d.%d\n",
        d.index, d.name.c_str(), d.cc_major, d.cc_minor, d.multiprocessors,
        double(d.total_bytes) / (1 << 30), double(d.free_bytes) / (1 << 30),
        d.tensor_cores ? "yes" : "no", d.driver_version / 1000, d.driver_version % 1000 / 10);
  return 0;
}

int run(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cmd == "--version") {
    std::printf("deepcanvas-cli %s (OpenCV: %s, GEMM: %s, CUDA: %s)\n", DC_VERSION,
                opencv_enabled() ? "on" : "off", gemm_backend_name(), cuda_status().c_str());
    return 0;
  }
  register_builtin_layers();
  Args a = parse_args(argc - 2, argv + 2);
  if (cmd == "train") return cmd_train(a);
  if (cmd == "eval") return cmd_eval(a);
  if (cmd == "predict") return cmd_predict(a);
  if (cmd == "summary") return cmd_summary(a);
  if (cmd == "generate") return cmd_generate(a);
  if (cmd == "devices") return cmd_devices(a);
  std::fprintf(stderr, "deepcanvas-cli: unknown command '%s'\n\n%s", cmd.c_str(), kUsage);
  return 2;
}

}  // namespace
}  // namespace dc::cli

int main(int argc, char** argv) {
  try {
    return dc::cli::run(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "deepcanvas-cli: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "deepcanvas-cli: %s\n", e.what());
  }
  return 1;
}
