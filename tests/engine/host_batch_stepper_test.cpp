// The device steppers fed by the host loader, checked without a GPU: a
// DevicePlan that runs its forward, backward and update on a second host
// Plan stands in for the plugin, so what is checked is the stepper's own
// part (batches, the order of the plan's calls, seeds, the statistics).
// Each must train exactly as the CPU stepper does:
// - the host-batch stepper with a host loss, the path a GPU run of a
//   network that predicts every step takes (the Character Transformer on
//   CUDA);
// - the streamed stepper, the path of an image folder on a GPU: batches
//   cross as bytes and the plan normalises and augments them (here with the
//   host's code, which tests/cuda/cuda_augment_test.cpp holds the device's
//   kernels to).
#include <deepcanvas/backend.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/evaluate.h>
#include <deepcanvas/image_data.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/metrics.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/sequence_data.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

// The steppers are the Trainer's private classes.
#include "../../engine/train/stepper.h"
#include "test_util.h"

namespace dc {
namespace {

// A DevicePlan on the host: the entry points the host-fed steppers use run
// on `plan` with a CPU optimizer (a streamed batch's step with a host copy
// of the configured loss and augmentation); resident data is not used by
// them and throws.
class HostDevicePlan : public DevicePlan {
 public:
  HostDevicePlan(Plan& plan, const TrainConfig& c)
      : plan_(plan),
        opt_(make_optimizer(c.optimizer)),
        params_(plan.trainable()),
        loss_(make_loss(c.loss)),
        augment_(c.augment) {}

  void upload_params() override {}
  void download_params() override {}
  void download_grads() override {}
  void forward(const Tensor& x, Tensor& out, bool training, uint64_t seed) override {
    rng_.reseed(seed);
    ctx_ = RunContext{training, &rng_};
    out.copy_from(plan_.forward(x, ctx_));
  }
  void backward(const Tensor& dout) override { plan_.backward(dout, ctx_); }
  void zero_grad() override { plan_.zero_grad(); }
  float loss(const int32_t*, const Tensor*, Tensor*) override { unused("loss"); }
  void step(double lr) override {
    opt_->step(params_, lr);
    ++steps_;
  }
  int add_dataset(const Dataset&) override { unused("add_dataset"); }
  int add_batch_dataset(const Dataset& d, int64_t capacity) override {
    batch_ = d;  // its shape, classes and statistics; none of its pictures
    batch_.images.reset();
    capacity_ = capacity;
    return kBatchDataset;
  }
  void set_batch(int dataset, const uint8_t* pixels, const int32_t* labels, int64_t n) override {
    if (dataset != kBatchDataset || n > capacity_) throw Error("set_batch: not a batch dataset");
    batch_.pixels.assign(pixels, pixels + n * batch_.sample_shape.numel());
    batch_.labels.assign(labels, labels + n);
    ++batches_set_;
  }
  // As CudaPlan's step: gather (normalise), augment with the step's seed,
  // forward, the configured loss, backward, update.
  void train_step(int dataset, const int64_t* idx, int64_t n, double lr, uint64_t seed) override {
    if (dataset != kBatchDataset) unused("train_step on resident data");
    Tensor x(batch_.sample_shape.with_batch(n));
    std::vector<int32_t> labels(static_cast<size_t>(n));
    batch_.gather(idx, n, x.f32(), labels.data());
    if (augment_.enabled())
      augment_batch(augment_, batch_.sample_shape, augment_levels(batch_), seed, x.f32(), n);
    Tensor out(plan_.output_shape().with_batch(n)), dout(out.shape());
    forward(x, out, true, seed);
    BatchScorer scorer(*loss_, false);
    ClassificationMetrics m;
    float shown = 0;
    scorer.train(out, x, labels.data(), dout, &m, &shown);
    stats_.loss_sum += double(shown) * double(n);
    stats_.correct += m.top1_hits();
    stats_.samples += n;
    zero_grad();
    backward(dout);
    step(lr);
  }
  DeviceStepStats take_stats() override {
    DeviceStepStats s = stats_;
    stats_ = {};
    ++reads_;
    return s;
  }
  // As CudaPlan's: gather (normalise) and run in inference mode.
  void predict(int dataset, const int64_t* idx, int64_t n, float* out) override {
    if (dataset != kBatchDataset) unused("predict on resident data");
    Tensor x(batch_.sample_shape.with_batch(n));
    batch_.gather(idx, n, x.f32(), nullptr);
    RunContext ctx{false, nullptr};
    const Tensor& y = plan_.forward(x, ctx);
    std::copy_n(y.f32(), y.numel(), out);
  }
  std::vector<std::pair<std::string, Tensor>> optimizer_state() override { return {}; }
  void load_optimizer_state(const std::vector<std::pair<std::string, Tensor>>&) override {}
  int64_t optimizer_steps() const override { return steps_; }
  void set_optimizer_steps(int64_t t) override { steps_ = t; }
  DeviceMemory memory() override { return {}; }
  std::string device_name() const override { return "host stand-in"; }
  int batches_set() const { return batches_set_; }
  int reads() const { return reads_; }

 private:
  [[noreturn]] static void unused(const char* what) {
    throw Error(std::string("HostDevicePlan::") + what + " is not used by a host-batch stepper");
  }
  Plan& plan_;
  std::unique_ptr<Optimizer> opt_;
  std::vector<Param*> params_;
  Rng rng_{0};
  RunContext ctx_;
  int64_t steps_ = 0;
  std::unique_ptr<Loss> loss_;
  AugmentConfig augment_;
  static constexpr int kBatchDataset = 7;
  Dataset batch_;
  int64_t capacity_ = 0;
  DeviceStepStats stats_;
  int batches_set_ = 0, reads_ = 0;
};

// Runs `steps` steps of one epoch and returns the statistics.
DeviceStepStats run(Stepper& s, int steps, double lr) {
  s.start_epoch(1);
  DeviceStepStats total;
  for (int k = 0; k < steps && s.next_batch(); ++k) {
    s.step(k, lr);
    const DeviceStepStats st = s.take_stats(k + 1);
    total.loss_sum += st.loss_sum;
    total.correct += st.correct;
    total.samples += st.samples;
  }
  return total;
}

// Every weight of b within 1e-6 of a's.
void expect_same_weights(Plan& a, Plan& b) {
  ASSERT_EQ(a.params().size(), b.params().size());
  for (size_t k = 0; k < a.params().size(); ++k) {
    const Tensor& x = a.params()[k].param->value;
    const Tensor& y = b.params()[k].param->value;
    ASSERT_EQ(x.numel(), y.numel());
    double worst = 0;
    for (int64_t i = 0; i < x.numel(); ++i)
      worst = std::max(worst, double(std::abs(x.f32()[i] - y.f32()[i])));
    EXPECT_LE(worst, 1e-6) << a.params()[k].name;
  }
}

TEST(HostBatchStepper, ANetworkPredictingEveryStepTrainsAsOnTheCpu) {
  test::TmpDir dir;
  std::string text;
  for (int i = 0; i < 60; ++i) text += "the cat sat on the mat. ";
  TrainTest tt = load_text_dataset(dir.write("t.txt", text), {8, 1, 0.1});
  const int64_t V = tt.train.num_classes;
  // With dropout, so the mask's seed is part of what must agree.
  const Graph g = test::every_step_model(8, V, 0.2);
  TrainConfig c;
  c.batch = 16;
  c.seed = 5;
  c.optimizer.type = OptimizerType::Adam;
  c.optimizer.lr = 0.01;
  std::vector<int64_t> idx(size_t(tt.train.size()));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = int64_t(i);

  Plan cpu_plan(g, c.batch), dev_plan(g, c.batch);
  cpu_plan.init_params(11);
  dev_plan.init_params(11);
  auto cpu_loss = make_loss(c.loss), dev_loss = make_loss(c.loss);
  auto cpu_opt = make_optimizer(c.optimizer);
  CpuStepper cpu(cpu_plan, *cpu_loss, *cpu_opt, tt.train, idx, c);
  HostDevicePlan device(dev_plan, c);
  HostBatchDeviceStepper host_batch(device, dev_plan.output_shape(), tt.train, idx, c, *dev_loss);

  const int kSteps = 12;
  const DeviceStepStats a = run(cpu, kSteps, c.optimizer.lr);
  const DeviceStepStats b = run(host_batch, kSteps, c.optimizer.lr);
  ASSERT_EQ(a.samples, kSteps * c.batch);
  EXPECT_EQ(b.samples, a.samples);
  // The figures shown are the last step's loss over V classes: below the
  // uniform log(V) after training, never that of the T x V softmax.
  EXPECT_LT(a.loss_sum / double(a.samples), std::log(double(V)));
  EXPECT_NEAR(b.loss_sum, a.loss_sum, 1e-5 * std::abs(a.loss_sum));
  EXPECT_EQ(b.correct, a.correct);
  // The same updates: every weight agrees.
  expect_same_weights(cpu_plan, dev_plan);
  // And the weights moved: the comparison is not of two untouched copies.
  Plan fresh(g, c.batch);
  fresh.init_params(11);
  double moved = 0;
  const Tensor& w0 = fresh.params().back().param->value;
  const Tensor& w1 = dev_plan.params().back().param->value;
  for (int64_t i = 0; i < w0.numel(); ++i) moved += std::abs(w0.f32()[i] - w1.f32()[i]);
  EXPECT_GT(moved, 1e-3);
}

// A binary PPM (P6) of h×w RGB pixels drawn from `seed`.
void write_ppm(const std::string& path, int h, int w, uint64_t seed) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::string px(size_t(h) * size_t(w) * 3, '\0');
  Rng r(seed);
  const int base = int(r.below(160));
  for (size_t i = 0; i < px.size(); ++i)
    px[i] = char((base + int(i % size_t(w * 3)) / 3 + int(r.below(48))) & 0xff);
  std::ofstream(path, std::ios::binary) << "P6\n" << w << " " << h << "\n255\n" << px;
}

// Image folders on a GPU (issue 31): the loader decodes each batch to
// bytes (its picture-level draws included), the plan gets them through
// set_batch and normalises and augments them; the run must be the CPU
// stepper's step for step, a file that turns out bad mid-epoch dropped
// from its batch on both.
TEST(StreamedStepper, ByteBatchesTrainAsTheCpuStepperWithAugmentation) {
  test::TmpDir dir;
  const std::string root = dir.path("photos");
  for (int k = 0; k < 45; ++k)
    write_ppm(root + "/c" + std::to_string(k % 3) + "/p" + std::to_string(k) + ".ppm",
              14 + (k * 7) % 20, 14 + (k * 11) % 26, uint64_t(k + 1));
  ImageListOptions lo;
  lo.test_fraction = 0;
  ImageTransform t;
  t.input = Shape{3, 12, 12};
  t.random_resized_crop = true;
  t.color_jitter = 0.3;
  ImageLoadOptions o;
  o.mode = ImageLoadOptions::Mode::Stream;
  o.cache_dir = "none";
  o.workers = 2;
  const ImageList list = list_image_folder(root, lo);
  ASSERT_EQ(list.train.size(), 45u);
  // Spoilt after the listing: found only when decoded, mid-epoch.
  std::ofstream(list.train[17].path, std::ios::binary | std::ios::trunc) << "P6\n20 20\n255\nxx";
  TrainTest tt = load_image_dataset(list, t, o);
  ASSERT_TRUE(tt.train.images);
  compute_normalization(tt.train);

  register_builtin_layers();
  Graph g;
  const NodeId in =
      g.add_node("Input", "in", test::attrs({{"shape", std::vector<int64_t>{3, 12, 12}}}));
  const NodeId f = g.add_node("Flatten", "flat");
  const NodeId h = g.add_node("Dense", "hidden", test::attrs({{"units", int64_t(16)}}));
  const NodeId a = g.add_node("ReLU", "relu");
  const NodeId d = g.add_node("Dense", "out", test::attrs({{"units", int64_t(3)}}));
  g.connect(in, f);
  g.connect(f, h);
  g.connect(h, a);
  g.connect(a, d);

  TrainConfig c;
  c.batch = 8;
  c.seed = 9;
  c.optimizer.type = OptimizerType::Adam;
  c.optimizer.lr = 0.01;
  c.augment.flip = true;
  c.augment.rotate = 15;
  c.augment.brightness = 0.3;
  c.augment.crop_padding = 2;
  std::vector<int64_t> idx(size_t(tt.train.size()));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = int64_t(i);

  Plan cpu_plan(g, c.batch), dev_plan(g, c.batch);
  cpu_plan.init_params(11);
  dev_plan.init_params(11);
  auto cpu_loss = make_loss(c.loss);
  auto cpu_opt = make_optimizer(c.optimizer);
  CpuStepper cpu(cpu_plan, *cpu_loss, *cpu_opt, tt.train, idx, c);
  HostDevicePlan device(dev_plan, c);
  StreamedDeviceStepper streamed(device, add_device_dataset(device, tt.train, c.batch), tt.train,
                                 idx, c);

  // Two epochs each (6 batches of 8 or fewer: 45 files, one bad).
  DeviceStepStats a1, b1;
  for (int epoch = 1; epoch <= 2; ++epoch) {
    const DeviceStepStats x = run(cpu, 10, c.optimizer.lr);
    const DeviceStepStats y = run(streamed, 10, c.optimizer.lr);
    a1.loss_sum += x.loss_sum, a1.samples += x.samples, a1.correct += x.correct;
    b1.loss_sum += y.loss_sum, b1.samples += y.samples, b1.correct += y.correct;
  }
  EXPECT_EQ(a1.samples, 2 * 44);  // the spoilt file dropped from its batch
  EXPECT_EQ(b1.samples, a1.samples);
  EXPECT_EQ(device.batches_set(), 12);
  EXPECT_NEAR(b1.loss_sum, a1.loss_sum, 1e-5 * std::abs(a1.loss_sum));
  EXPECT_EQ(b1.correct, a1.correct);
  expect_same_weights(cpu_plan, dev_plan);
  // Evaluation on the device streams the same pictures as bytes (the
  // evaluation crop, no draws) and scores them as the host does.
  const int handle = add_device_dataset(device, tt.train, c.batch);
  const EvalResult on_host = evaluate(cpu_plan, tt.train, {}, c.batch, *cpu_loss);
  const EvalResult on_device =
      evaluate_device(device, handle, tt.train, dev_plan.output_shape(), {}, c.batch, *cpu_loss);
  EXPECT_EQ(on_host.samples, 44);
  EXPECT_EQ(on_device.samples, on_host.samples);
  EXPECT_NEAR(on_device.loss, on_host.loss, 1e-6);
  EXPECT_EQ(on_device.top1, on_host.top1);
  EXPECT_EQ(on_device.confusion, on_host.confusion);

  // The control: the same steps without the batch augmentation end
  // elsewhere, so the comparison above would notice it missing.
  TrainConfig plain = c;
  plain.augment = AugmentConfig{};
  Plan other(g, c.batch);
  other.init_params(11);
  HostDevicePlan device2(other, plain);
  StreamedDeviceStepper unaugmented(device2, add_device_dataset(device2, tt.train, c.batch),
                                    tt.train, idx, plain);
  run(unaugmented, 10, c.optimizer.lr);
  run(unaugmented, 10, c.optimizer.lr);
  double apart = 0;
  const Tensor& w = other.params()[0].param->value;
  for (int64_t i = 0; i < w.numel(); ++i)
    apart += std::abs(w.f32()[i] - dev_plan.params()[0].param->value.f32()[i]);
  EXPECT_GT(apart, 1e-3);
}

// The statistics are read every few steps, not after each (each read waits
// for the device), and at the epoch's end.
TEST(StreamedStepper, ReadsTheDeviceEveryFewStepsAndAtTheEnd) {
  Dataset ds;
  ds.sample_shape = Shape{1, 2, 2};
  ds.pixels.assign(4 * 4, 7);
  ds.labels = {0, 1, 0, 1};
  ds.num_classes = 2;
  TrainConfig c;
  c.batch = 2;
  Graph g;
  register_builtin_layers();
  const NodeId in =
      g.add_node("Input", "in", test::attrs({{"shape", std::vector<int64_t>{1, 2, 2}}}));
  const NodeId f = g.add_node("Flatten", "flat");
  const NodeId d = g.add_node("Dense", "out", test::attrs({{"units", int64_t(2)}}));
  g.connect(in, f);
  g.connect(f, d);
  Plan p(g, c.batch);
  p.init_params(1);
  HostDevicePlan device(p, c);
  StreamedDeviceStepper s(device, device.add_batch_dataset(ds, c.batch), ds, {0, 1, 2, 3}, c);
  EXPECT_FALSE(s.report_due(1, 100, false));
  EXPECT_TRUE(s.report_due(25, 100, false));
  EXPECT_TRUE(s.report_due(7, 7, false));
  EXPECT_TRUE(s.report_due(3, 100, /*interrupted=*/true));
  s.start_epoch(1);
  ASSERT_TRUE(s.next_batch());
  s.step(0, 0.1);
  EXPECT_TRUE(s.stats_pending());
  EXPECT_EQ(s.take_stats(1).samples, 2);
  EXPECT_FALSE(s.stats_pending());
  // Numbers are not bytes: the loader refuses them before any step.
  Dataset numbers = ds;
  numbers.pixels.clear();
  numbers.values.assign(16, 0.5f);
  EXPECT_THROW(StreamedDeviceStepper(device, 7, numbers, {0, 1, 2, 3}, c), DataError);

  // The resident stepper (here on the stand-in's batch set, all four
  // samples in it) also says when steps are unread, so that a stop between
  // two reports reads them before any weights are; and it reports when its
  // order runs out, whatever the step count says.
  const int h = device.add_batch_dataset(ds, 4);
  device.set_batch(h, ds.pixels.data(), ds.labels.data(), 4);
  const std::vector<int64_t> idx = {0, 1, 2, 3};
  DeviceStepper r(device, h, idx, c);
  r.start_epoch(1);
  EXPECT_FALSE(r.stats_pending());
  ASSERT_TRUE(r.next_batch());
  r.step(0, 0.1);
  EXPECT_TRUE(r.stats_pending());
  EXPECT_FALSE(r.report_due(1, 100, false));
  ASSERT_TRUE(r.next_batch());
  r.step(1, 0.1);
  EXPECT_TRUE(r.report_due(2, 100, false));
  EXPECT_EQ(r.take_stats(2).samples, 4);
  EXPECT_FALSE(r.stats_pending());
  EXPECT_FALSE(r.next_batch());
}

}  // namespace
}  // namespace dc
