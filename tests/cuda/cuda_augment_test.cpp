// Augmentation on the device (random crop with padding, flips, rotation,
// translation, brightness, in the batch gather) against the CPU trainer's
// augment_batch: the same steps of
// SGD from the same weights must give the same weights, through eager steps
// and CUDA graph replays (the seed then comes from device memory). A run
// without augmentation shows the comparison would notice a difference.
// Skips without a GPU.
#include <deepcanvas/data.h>
#include <deepcanvas/device.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/loss.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "cuda_test_util.h"

namespace dc {
namespace {

using test::A;

using test::rel_err;

Graph net() {
  register_builtin_layers();
  Graph g;
  NodeId in = g.add_node("Input", "input", A({{"shape", std::vector<int64_t>{2, 10, 9}}}));
  NodeId f = g.add_node("Flatten", "flat");
  NodeId d = g.add_node("Dense", "fc", A({{"units", int64_t(5)}}));
  g.connect(in, f);
  g.connect(f, d);
  return g;
}

constexpr int64_t kB = 8, kS = 64, kSteps = 6;

// Bytes (brightness capped at white) or floats (not capped); per_channel:
// bytes with a mean and std per channel (a pretrained base's statistics).
Dataset data(bool floats = false, bool per_channel = false) {
  Dataset ds;
  ds.sample_shape = Shape{2, 10, 9};
  Rng r(3);
  for (int64_t i = 0; i < kS * 180; ++i) {
    const uint8_t v = uint8_t(r.below(256));
    if (floats)
      ds.values.push_back(float(v) / 255.0f);
    else
      ds.pixels.push_back(v);
  }
  for (int64_t i = 0; i < kS; ++i) ds.labels.push_back(int32_t(r.below(5)));
  ds.num_classes = 5;
  ds.mean = 0.45f;
  ds.stddev = 0.29f;
  if (per_channel) {
    ds.channel_mean = {0.4f, 0.6f};
    ds.channel_std = {0.2f, 0.35f};
  }
  return ds;
}

std::vector<int64_t> batch(int step) {
  std::vector<int64_t> idx(kB);
  for (int64_t i = 0; i < kB; ++i) idx[size_t(i)] = (step * 13 + i * 7) % kS;
  return idx;
}

OptimizerConfig sgd() {
  OptimizerConfig o;
  o.type = OptimizerType::Sgd;
  o.momentum = 0.0;
  return o;
}

Tensor cpu_weights(const AugmentConfig& aug, bool floats = false, bool per_channel = false) {
  Graph g = net();
  Plan host(g, kB);
  host.init_params(11);
  Dataset ds = data(floats, per_channel);
  auto opt = make_optimizer(sgd());
  auto loss = make_loss(LossType::SoftmaxCrossEntropy);
  // As the Trainer computes them.
  const float inv = 1.0f / ds.stddev, pad = (0.0f - ds.mean) * inv;
  const float white = floats ? INFINITY : (1.0f - ds.mean) * inv;
  for (int s = 0; s < kSteps; ++s) {
    std::vector<int64_t> idx = batch(s);
    Tensor x(Shape{kB, 2, 10, 9});
    std::vector<int32_t> labels(kB);
    ds.gather(idx.data(), kB, x.f32(), labels.data());
    if (per_channel)  // each channel's own black and white (tested in augment_test)
      augment_batch(aug, ds.sample_shape, augment_levels(ds), uint64_t(1000 + s), x.f32(), kB);
    else
      augment_batch(aug, ds.sample_shape, pad, uint64_t(1000 + s), x.f32(), kB, white);
    test::cpu_step(host, x, labels.data(), *loss, *opt, 0.05);
  }
  return host.params()[0].param->value.clone();
}

// The network on the device from the seeded weights, with SGD and `aug`.
struct DeviceRun {
  Graph g = net();
  Plan host{g, kB};
  std::unique_ptr<DevicePlan> dev;
  DeviceRun(DeviceBackend* be, const AugmentConfig& aug) {
    host.init_params(11);
    DevicePlanOptions o;
    o.max_batch = kB;
    o.optimizer = sgd();
    o.augment = aug;
    dev = be->create_plan(g, host, o);
    dev->upload_params();
  }
  // The first layer's weights after the queued steps.
  Tensor weights() {
    dev->take_stats();
    dev->download_params();
    return host.params()[0].param->value.clone();
  }
};

Tensor gpu_weights(DeviceBackend* be, const AugmentConfig& aug, bool floats = false,
                   bool per_channel = false) {
  DeviceRun r(be, aug);
  int h = r.dev->add_dataset(data(floats, per_channel));
  for (int s = 0; s < kSteps; ++s) {
    std::vector<int64_t> idx = batch(s);
    r.dev->train_step(h, idx.data(), kB, 0.05, uint64_t(1000 + s));
  }
  return r.weights();
}

// The same steps with the batches streamed as bytes (an image folder on a
// GPU, issue 31): add_batch_dataset, then each step's bytes and labels
// through set_batch and the step over indices 0..kB-1. Full batches, so the
// later steps replay a captured CUDA graph whose gather reads the batch
// buffer that set_batch refills.
Tensor gpu_weights_streamed(DeviceBackend* be, const AugmentConfig& aug, bool per_channel = false) {
  DeviceRun r(be, aug);
  DevicePlan* dev = r.dev.get();
  const Dataset ds = data(false, per_channel);
  const int h = dev->add_batch_dataset(ds, kB);
  const int64_t F = ds.sample_shape.numel();
  std::vector<int64_t> iota(kB);
  for (int64_t i = 0; i < kB; ++i) iota[size_t(i)] = i;
  std::vector<uint8_t> bytes(size_t(kB * F));
  std::vector<int32_t> labels(kB);
  // The samples of idx, as the loader would gather their bytes.
  auto send = [&](const std::vector<int64_t>& idx) {
    for (int64_t i = 0; i < kB; ++i) {
      std::copy_n(ds.pixels.begin() + idx[size_t(i)] * F, F, bytes.begin() + i * F);
      labels[size_t(i)] = ds.labels[size_t(idx[size_t(i)])];
    }
    dev->set_batch(h, bytes.data(), labels.data(), kB);
  };
  for (int s = 0; s < kSteps; ++s) {
    send(batch(s));
    // The host buffers are free again at once: the next batch may reuse them.
    std::fill(bytes.begin(), bytes.end(), uint8_t(0));
    dev->train_step(h, iota.data(), kB, 0.05, uint64_t(1000 + s));
  }
  Tensor trained = r.weights();
  // Inference over a streamed batch (evaluating an image folder) gives the
  // logits of the same samples resident.
  const int resident = dev->add_dataset(ds);
  send(batch(0));
  std::vector<float> streamed_out(size_t(kB * 5)), resident_out(size_t(kB * 5));
  dev->predict(h, iota.data(), kB, streamed_out.data());
  dev->predict(resident, batch(0).data(), kB, resident_out.data());
  EXPECT_EQ(streamed_out, resident_out);
  // Misuse is refused before anything is queued: more samples than the
  // room, and indices past the batch last set.
  EXPECT_THROW(dev->set_batch(h, bytes.data(), labels.data(), kB + 1), Error);
  dev->set_batch(h, bytes.data(), labels.data(), 3);
  EXPECT_THROW(dev->train_step(h, iota.data(), kB, 0.05, 1), DataError);
  return trained;
}

TEST(CudaAugment, CropAndFlipMatchTheCpuTrainer) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  AugmentConfig aug;
  aug.flip = true;
  aug.crop_padding = 3;
  Tensor cpu = cpu_weights(aug);
  Tensor gpu = gpu_weights(be, aug);
  EXPECT_LE(rel_err(gpu, cpu), 1e-5);
  // The control: the same steps without augmentation end elsewhere.
  Tensor plain = gpu_weights(be, AugmentConfig{});
  EXPECT_GT(rel_err(plain, cpu), 1e-3) << "the comparison cannot tell augmented from plain";
  AugmentConfig flip_only;
  flip_only.flip = true;
  EXPECT_LE(rel_err(gpu_weights(be, flip_only), cpu_weights(flip_only)), 1e-5);
}

// Rotation (bilinear), whole-pixel translation and brightness on top of
// flips and crops: the device compiles the engine's augment_pixel.h, so
// the batches should agree to the last bit; 1e-5 leaves room for the
// forward and backward, not for a different augmentation.
TEST(CudaAugment, RotationTranslationAndBrightnessMatchTheCpuTrainer) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  AugmentConfig aug;
  aug.flip = true;
  aug.crop_padding = 1;
  aug.rotate = 20;
  aug.translate = 0.25;  // 2 of 9 columns, 2 of 10 rows
  aug.brightness = 0.4;
  Tensor cpu = cpu_weights(aug);
  EXPECT_LE(rel_err(gpu_weights(be, aug), cpu), 1e-5);
  // The control: flips and crops alone end elsewhere.
  AugmentConfig old;
  old.flip = true;
  old.crop_padding = 1;
  EXPECT_GT(rel_err(cpu_weights(old), cpu), 1e-3) << "the new transforms changed nothing";
  // Each on its own, and float data (no white cap, the kernel's float path).
  AugmentConfig rot;
  rot.rotate = 180;
  EXPECT_LE(rel_err(gpu_weights(be, rot), cpu_weights(rot)), 1e-5);
  AugmentConfig shift;
  shift.translate = 0.5;
  EXPECT_LE(rel_err(gpu_weights(be, shift), cpu_weights(shift)), 1e-5);
  AugmentConfig bright;
  bright.brightness = 1.0;
  EXPECT_LE(rel_err(gpu_weights(be, bright), cpu_weights(bright)), 1e-5);
  EXPECT_LE(rel_err(gpu_weights(be, aug, true), cpu_weights(aug, true)), 1e-5);
}

// Flips, crops, rotation and brightness at once.
AugmentConfig every_batch_transform() {
  AugmentConfig a;
  a.flip = true;
  a.crop_padding = 2;
  a.rotate = 15;
  a.brightness = 0.5;
  return a;
}

// Streamed byte batches (image folders on a GPU) are normalised and
// augmented by the same gather as resident data, through graph replays
// too: the same weights as resident data and as the CPU trainer.
TEST(CudaAugment, StreamedByteBatchesTrainAsResidentData) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  const AugmentConfig aug = every_batch_transform();
  for (bool per_channel : {false, true}) {
    const Tensor streamed = gpu_weights_streamed(be, aug, per_channel);
    EXPECT_LE(rel_err(streamed, gpu_weights(be, aug, false, per_channel)), 1e-6) << per_channel;
    EXPECT_LE(rel_err(streamed, cpu_weights(aug, false, per_channel)), 1e-5) << per_channel;
  }
  EXPECT_LE(rel_err(gpu_weights_streamed(be, AugmentConfig{}), cpu_weights(AugmentConfig{})), 1e-5);
}

// Per-channel normalisation (dataset.preprocess.mean/std): the device
// gathers with each channel's mean and std and pads and caps each channel
// at its own levels, as the CPU trainer does.
TEST(CudaAugment, PerChannelNormalisationMatchesTheCpuTrainer) {
  DeviceBackend* be = test::gpu_or_skip();
  if (!be) GTEST_SKIP() << test::skip_reason();
  const AugmentConfig aug = every_batch_transform();
  const Tensor cpu = cpu_weights(aug, false, true);
  EXPECT_LE(rel_err(gpu_weights(be, aug, false, true), cpu), 1e-5);
  EXPECT_LE(rel_err(gpu_weights(be, AugmentConfig{}, false, true),
                    cpu_weights(AugmentConfig{}, false, true)),
            1e-5);
  // The control: the shared mean and std end elsewhere.
  EXPECT_GT(rel_err(cpu_weights(aug), cpu), 1e-3) << "per-channel statistics changed nothing";
}

}  // namespace
}  // namespace dc
