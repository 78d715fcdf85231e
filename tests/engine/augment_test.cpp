// Training-time augmentation (random crop with padding, flips, rotation,
// translation, brightness): the draw, the transform, the project setting and
// the Trainer's checks. The CUDA plugin compiles the same draw and pixel
// code (augment_pixel.h); tests/cuda/cuda_augment_test.cpp compares.
#include "test_util.h"

#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/preflight.h>
#include <deepcanvas/project.h>
#include <deepcanvas/trainer.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace dc {
namespace {

// Input {3,8,8} -> Flatten -> Dense (16) -> ReLU -> Dense (4).
Graph rgb_mlp() {
  register_builtin_layers();
  Graph g;
  NodeId a = g.add_node("Input", "input", test::attrs({{"shape", std::vector<int64_t>{3, 8, 8}}}));
  NodeId f = g.add_node("Flatten");
  NodeId d1 = g.add_node("Dense", "hidden", test::attrs({{"units", int64_t(16)}}));
  NodeId r = g.add_node("ReLU");
  NodeId d2 = g.add_node("Dense", "out", test::attrs({{"units", int64_t(4)}}));
  g.connect(a, f);
  g.connect(f, d1);
  g.connect(d1, r);
  g.connect(r, d2);
  return g;
}

TEST(Augment, DrawsCoverEveryOffsetAndFlipAboutHalf) {
  AugmentConfig a;
  a.flip = true;
  a.crop_padding = 2;
  int flips = 0;
  std::set<int> dys, dxs;
  for (int64_t i = 0; i < 2000; ++i) {
    AugmentDraw d = augment_draw(a, Shape{1, 8, 8}, 12345, i);
    flips += d.flip;
    dys.insert(d.dy);
    dxs.insert(d.dx);
    AugmentDraw again = augment_draw(a, Shape{1, 8, 8}, 12345, i);
    EXPECT_EQ(d.flip, again.flip);
    EXPECT_EQ(d.dy, again.dy);
    EXPECT_EQ(d.dx, again.dx);
  }
  EXPECT_GT(flips, 900);
  EXPECT_LT(flips, 1100);
  EXPECT_EQ(dys, (std::set<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(dxs, (std::set<int>{0, 1, 2, 3, 4}));
  AugmentConfig none;
  EXPECT_FALSE(none.enabled());
  EXPECT_FALSE(augment_draw(none, Shape{1, 8, 8}, 1, 0).flip);
}

TEST(Augment, CropsWithPaddingAndFlipsAsDrawn) {
  AugmentConfig a;
  a.flip = true;
  a.crop_padding = 2;
  const int64_t C = 2, H = 5, W = 4, N = 64;
  const Shape s{C, H, W};
  std::vector<float> x(size_t(N * C * H * W));
  for (size_t k = 0; k < x.size(); ++k) x[k] = float(k % size_t(C * H * W));
  std::vector<float> orig = x;
  augment_batch(a, s, -7.f, 99, x.data(), N);
  int shifted = 0;
  for (int64_t i = 0; i < N; ++i) {
    AugmentDraw d = augment_draw(a, s, 99, i);
    shifted += d.dy != 2 || d.dx != 2;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t xo = 0; xo < W; ++xo) {
          int64_t xc = d.flip ? W - 1 - xo : xo;
          int64_t sy = y + d.dy - 2, sx = xc + d.dx - 2;
          float want = sy >= 0 && sy < H && sx >= 0 && sx < W
                           ? orig[size_t(i * C * H * W + (c * H + sy) * W + sx)]
                           : -7.f;
          ASSERT_EQ(x[size_t(i * C * H * W + (c * H + y) * W + xo)], want)
              << "sample " << i << " c " << c << " y " << y << " x " << xo;
        }
  }
  EXPECT_GT(shifted, 0);
  EXPECT_THROW(augment_batch(a, Shape{20}, 0.f, 1, x.data(), 1), DataError);
}

TEST(Augment, VerticalFlipsMirrorRowsAndLeaveTheOtherDrawsAlone) {
  AugmentConfig a;
  a.vflip = true;
  const int64_t C = 1, H = 4, W = 3, N = 200;
  const Shape s{C, H, W};
  std::vector<float> x(size_t(N * C * H * W));
  for (size_t k = 0; k < x.size(); ++k) x[k] = float(k % size_t(C * H * W));
  const std::vector<float> orig = x;
  augment_batch(a, s, 0.f, 5, x.data(), N);
  int flipped = 0;
  for (int64_t i = 0; i < N; ++i) {
    const AugmentDraw d = augment_draw(a, s, 5, i);
    EXPECT_FALSE(d.flip);
    flipped += d.vflip;
    for (int64_t y = 0; y < H; ++y)
      for (int64_t xo = 0; xo < W; ++xo) {
        const int64_t sy = d.vflip ? H - 1 - y : y;
        ASSERT_EQ(x[size_t(i * H * W + y * W + xo)], orig[size_t(i * H * W + sy * W + xo)])
            << "sample " << i << " y " << y << " x " << xo;
      }
  }
  EXPECT_GT(flipped, 70);
  EXPECT_LT(flipped, 130);
  // Turning vertical flips on changes no other draw of the same seed.
  AugmentConfig h, hv;
  h.flip = hv.flip = true;
  h.crop_padding = hv.crop_padding = 2;
  hv.vflip = true;
  for (int64_t i = 0; i < 50; ++i) {
    const AugmentDraw d0 = augment_draw(h, s, 9, i), d1 = augment_draw(hv, s, 9, i);
    EXPECT_EQ(d0.flip, d1.flip);
    EXPECT_EQ(d0.dy, d1.dy);
    EXPECT_EQ(d0.dx, d1.dx);
    EXPECT_FALSE(d0.vflip);
  }
}

TEST(Augment, SineAndCosineOfThePolynomialAreAccurate) {
  for (float deg = -180.f; deg <= 180.f; deg += 0.37f) {
    float sn, cs;
    aug::sincos_deg(deg, sn, cs);
    const double rad = double(deg) * 3.14159265358979323846 / 180.0;
    EXPECT_NEAR(sn, std::sin(rad), 1e-6) << deg;
    EXPECT_NEAR(cs, std::cos(rad), 1e-6) << deg;
  }
  float sn, cs;
  aug::sincos_deg(90.f, sn, cs);
  EXPECT_EQ(sn, 1.f);
  EXPECT_EQ(cs, 0.f);
}

// A single bright pixel to the right of the centre; rotated by +90 degrees
// (counter-clockwise as seen, y pointing down) it lands above the centre.
TEST(Augment, RotationByAKnownAngleMovesAKnownPixel) {
  aug::Params p;
  p.H = 5;
  p.W = 5;
  p.max_deg = 90;
  p.black = -1.f;
  aug::Draw d;
  aug::sincos_deg(90.f, d.sin_a, d.cos_a);
  std::vector<float> img(25, 0.f);
  img[2 * 5 + 4] = 9.f;  // (y 2, x 4): two right of the centre (2, 2)
  auto at = [&](int64_t off) { return img[size_t(off)]; };
  for (int y = 0; y < 5; ++y)
    for (int x = 0; x < 5; ++x) {
      // Source pixels outside the image (the corners' sources) are black.
      const float want = y == 0 && x == 2 ? 9.f : 0.f;
      const float got = aug::pixel(p, d, 0, y, x, at);
      if (y == 0 && x == 2) {
        EXPECT_EQ(got, want);
      } else {
        EXPECT_TRUE(got == 0.f || got == -1.f) << y << "," << x << " " << got;
      }
    }
  // Half way, at 45 degrees, it sits between: sqrt(2) up and right, so
  // bilinear weights spread it over the four pixels around (0.59, 3.41).
  aug::sincos_deg(45.f, d.sin_a, d.cos_a);
  const double off = 2.0 / std::sqrt(2.0);
  const double fy = 2 - off, fx = 2 + off;
  const int y0 = int(std::floor(fy)), x0 = int(std::floor(fx));
  // Output pixel (y0, x0) maps back to a point near (2, 4): its value is the
  // bright pixel's bilinear weight there.
  const float v = aug::pixel(p, d, 0, y0, x0, at);
  EXPECT_GT(v, 0.f);
  EXPECT_LT(v, 9.f);
}

// A linear ramp survives bilinear sampling exactly, so every output pixel
// whose source lies inside the image can be predicted from the drawn angle
// and shift by plain geometry, in double.
TEST(Augment, RotatesAndTranslatesAsDrawn) {
  AugmentConfig a;
  a.rotate = 30;
  a.translate = 0.2;
  const int64_t H = 11, W = 15, N = 32;
  const Shape s{1, H, W};
  auto ramp = [](double y, double x) { return 0.5 * x - 0.25 * y + 1.0; };
  std::vector<float> x(size_t(N * H * W));
  for (int64_t i = 0; i < N; ++i)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t xo = 0; xo < W; ++xo) x[size_t((i * H + y) * W + xo)] = float(ramp(y, xo));
  const float black = -50.f;
  augment_batch(a, s, black, 7, x.data(), N);
  int checked = 0, filled = 0, rotated = 0, shifted = 0;
  for (int64_t i = 0; i < N; ++i) {
    AugmentDraw d = augment_draw(a, s, 7, i);
    const double ang = std::atan2(double(d.sin_a), double(d.cos_a)) * 180.0 / 3.14159265358979;
    ASSERT_LE(std::abs(ang), 30.0 + 1e-4);
    ASSERT_LE(std::abs(d.tx), 3);  // floor(0.2 * 15)
    ASSERT_LE(std::abs(d.ty), 2);  // floor(0.2 * 11)
    rotated += std::abs(ang) > 1;
    shifted += d.tx != 0 || d.ty != 0;
    const double cx = (W - 1) / 2.0, cy = (H - 1) / 2.0, r = ang * 3.14159265358979 / 180.0;
    for (int64_t y = 0; y < H; ++y)
      for (int64_t xo = 0; xo < W; ++xo) {
        // Undo the shift, then the counter-clockwise rotation about the centre.
        const double X = double(xo - d.tx) - cx, Y = double(y - d.ty) - cy;
        const double u = std::cos(r) * X - std::sin(r) * Y + cx;
        const double v = std::sin(r) * X + std::cos(r) * Y + cy;
        const float got = x[size_t((i * H + y) * W + xo)];
        if (u >= 0 && u <= W - 1 && v >= 0 && v <= H - 1) {
          ASSERT_NEAR(got, ramp(v, u), 2e-4) << "sample " << i << " y " << y << " x " << xo;
          ++checked;
        } else if (u < -1 || u > W || v < -1 || v > H) {
          ASSERT_EQ(got, black) << "sample " << i << " y " << y << " x " << xo;
          ++filled;
        }
      }
  }
  EXPECT_GT(checked, N * H * W / 2);
  EXPECT_GT(filled, 0);
  EXPECT_GT(rotated, N / 2);
  EXPECT_GT(shifted, N / 2);
}

TEST(Augment, TranslationShiftsWholePixelsAndZeroFills) {
  AugmentConfig a;
  a.translate = 0.25;  // 2 pixels of 8
  const int64_t C = 2, H = 8, W = 8, N = 40;
  const Shape s{C, H, W};
  std::vector<float> x(size_t(N * C * H * W));
  for (size_t k = 0; k < x.size(); ++k) x[k] = float(k % size_t(C * H * W)) + 1.f;
  const std::vector<float> orig = x;
  augment_batch(a, s, -3.f, 5, x.data(), N);
  std::set<int> txs, tys;
  for (int64_t i = 0; i < N; ++i) {
    AugmentDraw d = augment_draw(a, s, 5, i);
    txs.insert(d.tx);
    tys.insert(d.ty);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t xo = 0; xo < W; ++xo) {
          const int64_t sy = y - d.ty, sx = xo - d.tx;
          const float want = sy >= 0 && sy < H && sx >= 0 && sx < W
                                 ? orig[size_t(((i * C + c) * H + sy) * W + sx)]
                                 : -3.f;
          ASSERT_EQ(x[size_t(((i * C + c) * H + y) * W + xo)], want)
              << "sample " << i << " shift " << d.tx << "," << d.ty;
        }
  }
  EXPECT_EQ(txs, (std::set<int>{-2, -1, 0, 1, 2}));
  EXPECT_EQ(tys, (std::set<int>{-2, -1, 0, 1, 2}));
}

TEST(Augment, ZeroSettingsAndSubPixelShiftsAreTheIdentity) {
  const Shape s{3, 6, 7};
  std::vector<float> x(size_t(4 * s.numel()));
  for (size_t k = 0; k < x.size(); ++k) x[k] = float(k) * 0.5f - 3.f;
  const std::vector<float> orig = x;
  AugmentConfig none;
  EXPECT_FALSE(none.enabled());
  augment_batch(none, s, -9.f, 1, x.data(), 4);
  EXPECT_EQ(x, orig);
  // 0.1 of 6 or 7 pixels is less than one: no shift, nothing changes.
  AugmentConfig tiny;
  tiny.translate = 0.1;
  EXPECT_TRUE(tiny.enabled());
  augment_batch(tiny, s, -9.f, 1, x.data(), 4);
  EXPECT_EQ(x, orig);
  // Each setting on its own turns augmentation on.
  for (auto set :
       {+[](AugmentConfig& c) { c.rotate = 1; }, +[](AugmentConfig& c) { c.translate = 0.2; },
        +[](AugmentConfig& c) { c.brightness = 0.1; }}) {
    AugmentConfig c;
    set(c);
    EXPECT_TRUE(c.enabled());
  }
}

// Normalised as the trainer does it (mean 0.5, std 0.25): the factor scales
// the intensity in [0, 1], is capped at white, and leaves black (padding) black.
TEST(Augment, BrightnessScalesIntensitiesAndIsCappedAtWhite) {
  AugmentConfig a;
  a.brightness = 0.5;
  a.crop_padding = 1;
  const float mean = 0.5f, inv = 4.f, black = (0.f - mean) * inv, white = (1.f - mean) * inv;
  const int64_t H = 4, W = 4, N = 64;
  const Shape s{1, H, W};
  std::vector<float> p(size_t(N * H * W)), x(p.size());
  for (size_t k = 0; k < p.size(); ++k) {
    p[k] = float(k % 16) / 15.f;
    x[k] = (p[k] - mean) * inv;
  }
  augment_batch(a, s, black, 3, x.data(), N, white);
  double lo = 2, hi = 0;
  for (int64_t i = 0; i < N; ++i) {
    AugmentDraw d = augment_draw(a, s, 3, i);
    lo = std::min(lo, double(d.gain));
    hi = std::max(hi, double(d.gain));
    ASSERT_GE(d.gain, 0.5f);
    ASSERT_LE(d.gain, 1.5f);
    for (int64_t y = 0; y < H; ++y)
      for (int64_t xo = 0; xo < W; ++xo) {
        const int64_t sy = y + d.dy - 1, sx = xo + d.dx - 1;
        const bool inside = sy >= 0 && sy < H && sx >= 0 && sx < W;
        const double intensity =
            inside ? std::min(1.0, double(p[size_t((i * H + sy) * W + sx)]) * d.gain) : 0.0;
        const float got = x[size_t((i * H + y) * W + xo)];
        ASSERT_NEAR(got, (intensity - mean) * inv, 1e-5) << "sample " << i;
        if (!inside) {
          ASSERT_EQ(got, black);
        }
        ASSERT_LE(got, white);
      }
  }
  EXPECT_LT(lo, 0.7);
  EXPECT_GT(hi, 1.3);
}

TEST(Augment, DrawsDependOnSeedStepAndSample) {
  AugmentConfig a;
  a.rotate = 10;
  a.translate = 0.1;
  a.brightness = 0.2;
  const Shape s{1, 28, 28};
  std::set<float> angles, gains;
  std::set<std::pair<int, int>> shifts;
  for (uint64_t seed : {1ull, 2ull, 1000ull})
    for (int64_t i = 0; i < 50; ++i) {
      AugmentDraw d = augment_draw(a, s, seed, i);
      AugmentDraw again = augment_draw(a, s, seed, i);
      EXPECT_EQ(d.sin_a, again.sin_a);
      EXPECT_EQ(d.tx, again.tx);
      EXPECT_EQ(d.gain, again.gain);
      EXPECT_LE(std::abs(d.sin_a), std::sin(10.0 * 3.14159265358979 / 180.0) + 1e-6);
      EXPECT_LE(std::abs(d.tx), 2);  // floor(0.1 * 28)
      EXPECT_GE(d.gain, 0.8f);
      EXPECT_LE(d.gain, 1.2f);
      angles.insert(d.sin_a);
      gains.insert(d.gain);
      shifts.insert({d.tx, d.ty});
    }
  EXPECT_GT(angles.size(), 140u);  // 150 draws, practically all different
  EXPECT_GT(gains.size(), 140u);
  EXPECT_EQ(shifts.size(), 25u);
  // The flip and crop of a seed do not depend on the newer settings.
  AugmentConfig old;
  old.flip = true;
  old.crop_padding = 3;
  AugmentConfig both = a;
  both.flip = true;
  both.crop_padding = 3;
  for (int64_t i = 0; i < 50; ++i) {
    AugmentDraw d0 = augment_draw(old, s, 9, i), d1 = augment_draw(both, s, 9, i);
    EXPECT_EQ(d0.flip, d1.flip);
    EXPECT_EQ(d0.dy, d1.dy);
    EXPECT_EQ(d0.dx, d1.dx);
  }
}

TEST(Augment, RotationTranslationAndBrightnessAreProjectSettings) {
  register_builtin_layers();
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  // Flips and crops alone are written as before, without the newer keys.
  p.training.augment.flip = true;
  const std::string old_form = project_to_json(p);
  EXPECT_EQ(old_form.find("rotate"), std::string::npos);
  EXPECT_EQ(old_form.find("brightness"), std::string::npos);
  p.training.augment.flip = false;
  p.training.augment.rotate = 12.5;
  p.training.augment.translate = 0.125;
  p.training.augment.brightness = 0.25;
  Project q = parse_project(project_to_json(p), "round trip");
  EXPECT_EQ(q.training.augment.rotate, 12.5);
  EXPECT_EQ(q.training.augment.translate, 0.125);
  EXPECT_EQ(q.training.augment.brightness, 0.25);
  EXPECT_FALSE(q.training.augment.flip);
  for (auto [key, bad] : {std::pair<const char*, const char*>{"rotate", "190"},
                          {"translate", "0.75"},
                          {"brightness", "-0.5"},
                          {"rotate", "\"ten\""}}) {
    std::string text = project_to_json(p);
    const std::string k = std::string("\"") + key + "\": ";
    const size_t at = text.find(k) + k.size();
    text.replace(at, text.find_first_of(",\n}", at) - at, bad);
    try {
      parse_project(text, "bad.dcproj");
      ADD_FAILURE() << key << " " << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("training.augment.") + key),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Augment, TrainerRefusesOutOfRangeSettings) {
  register_builtin_layers();
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  TrainTest tt =
      load_fashion_mnist(std::string(DC_SOURCE_DIR) + "/sample_data/fashion-mnist-subset");
  auto train = std::make_shared<Dataset>(std::move(tt.train));
  for (int k = 0; k < 3; ++k) {
    TrainConfig c = p.training;
    const char* word = k == 0 ? "rotation" : k == 1 ? "translation" : "brightness";
    if (k == 0) c.augment.rotate = 200;
    if (k == 1) c.augment.translate = 0.6;
    if (k == 2) c.augment.brightness = std::nan("");
    try {
      Trainer t(p.graph, c, train, nullptr);
      ADD_FAILURE() << word << " out of range was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
    }
  }
}

TEST(Augment, IsAProjectSettingAndIsValidated) {
  register_builtin_layers();
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  EXPECT_FALSE(p.training.augment.enabled());
  EXPECT_EQ(project_to_json(p).find("augment"), std::string::npos);
  p.training.augment.flip = true;
  p.training.augment.crop_padding = 4;
  Project q = parse_project(project_to_json(p), "round trip");
  EXPECT_TRUE(q.training.augment.flip);
  EXPECT_EQ(q.training.augment.crop_padding, 4);
  std::string bad = project_to_json(p);
  bad.replace(bad.find("\"crop_padding\": 4"), 17, "\"crop_padding\": 99");
  try {
    parse_project(bad, "bad.dcproj");
    FAIL() << "crop_padding 99 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("crop_padding"), std::string::npos) << e.what();
  }
}

// ImageNet's per-channel normalisation (dataset.preprocess.mean/std).
const std::vector<float> kMean{0.485f, 0.456f, 0.406f}, kStd{0.229f, 0.224f, 0.225f};

// n 3-channel 8x8 byte images whose class is the quadrant with the brightest
// blob, normalised per channel as a pretrained base's project asks.
Dataset rgb_quadrants(int64_t n, uint64_t seed) {
  Dataset d = test::quadrant_toy(n, seed);
  ImagePreprocess p;
  p.channels = 3;
  p.mean = kMean;
  p.std = kStd;
  preprocess_images(d, p);
  return d;
}

// Each channel's padding is its own normalised black and its brightened
// pixels stop at its own normalised white, as gather() normalises bytes 0
// and 255 in that channel.
TEST(Augment, PerChannelNormalisationPadsAndCapsEachChannelAtItsOwnLevels) {
  Dataset d = rgb_quadrants(48, 3);
  ASSERT_EQ(d.sample_shape, (Shape{3, 8, 8}));
  // Bright images, so that brightening reaches white.
  for (size_t k = 0; k < d.pixels.size(); ++k) d.pixels[k] = uint8_t(155 + d.pixels[k] % 101);
  const int64_t N = d.size(), C = 3, H = 8, W = 8, F = C * H * W;
  std::vector<int64_t> idx(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) idx[size_t(i)] = i;
  std::vector<float> x(size_t(N * F));
  d.gather(idx.data(), N, x.data(), nullptr);
  const AugmentLevels levels = augment_levels(d);
  ASSERT_EQ(levels.black.size(), 3u);
  ASSERT_EQ(levels.white.size(), 3u);
  // The levels are what bytes 0 and 255 gather to.
  Dataset ends = d;
  std::fill(ends.pixels.begin(), ends.pixels.begin() + F, uint8_t(0));
  std::fill(ends.pixels.begin() + F, ends.pixels.begin() + 2 * F, uint8_t(255));
  std::vector<float> e(size_t(2 * F));
  ends.gather(idx.data(), 2, e.data(), nullptr);
  for (int64_t c = 0; c < C; ++c) {
    EXPECT_EQ(levels.black[size_t(c)], e[size_t(c * H * W)]) << c;
    EXPECT_EQ(levels.white[size_t(c)], e[size_t(F + c * H * W)]) << c;
    EXPECT_FLOAT_EQ(levels.black[size_t(c)], -kMean[size_t(c)] / kStd[size_t(c)]);
  }

  AugmentConfig a;
  a.crop_padding = 2;
  a.brightness = 0.8;
  const std::vector<float> orig = x;
  augment_batch(a, d.sample_shape, levels, 11, x.data(), N);
  int64_t padded = 0, capped = 0;
  for (int64_t i = 0; i < N; ++i) {
    const AugmentDraw dr = augment_draw(a, d.sample_shape, 11, i);
    for (int64_t c = 0; c < C; ++c) {
      const float black = levels.black[size_t(c)], white = levels.white[size_t(c)];
      for (int64_t y = 0; y < H; ++y)
        for (int64_t xo = 0; xo < W; ++xo) {
          const int64_t sy = y + dr.dy - 2, sx = xo + dr.dx - 2;
          const float got = x[size_t(i * F + (c * H + y) * W + xo)];
          if (sy < 0 || sy >= H || sx < 0 || sx >= W) {
            ++padded;
            ASSERT_EQ(got, black) << "sample " << i << " channel " << c;
            continue;
          }
          const float v = orig[size_t(i * F + (c * H + sy) * W + sx)];
          const float want = std::min((v - black) * dr.gain + black, white);
          ASSERT_NEAR(got, want, 1e-5) << "sample " << i << " channel " << c;
          ASSERT_LE(got, white);
          capped += got == white && v < white;
        }
    }
  }
  EXPECT_GT(padded, 0);
  EXPECT_GT(capped, 0);

  // One level for every channel is the scalar form, bit for bit.
  std::vector<float> one = orig, scalar = orig;
  augment_batch(a, d.sample_shape, AugmentLevels{{-1.5f}, {2.f}}, 11, one.data(), N);
  augment_batch(a, d.sample_shape, -1.5f, 11, scalar.data(), N, 2.f);
  EXPECT_EQ(one, scalar);
  EXPECT_THROW(
      augment_batch(a, d.sample_shape, AugmentLevels{{0.f, 1.f}, {1.f}}, 11, one.data(), N),
      DataError);
}

// Preflight lets a run augment per-channel normalised data on either
// device (the CUDA gather normalises and pads per channel as the CPU does,
// through normalize_pixel.h and augment_levels()), and refuses statistics
// that do not fit the samples before anything runs.
TEST(Augment, PreflightAllowsItWithPerChannelNormalisationOnEitherDevice) {
  Graph g = rgb_mlp();
  TrainConfig c;
  c.augment.crop_padding = 1;
  c.augment.brightness = 0.2;
  const Dataset d = rgb_quadrants(64, 1);
  for (const char* device : {"cpu", "cuda"}) {
    c.device = parse_device(device);
    const std::vector<RunProblem> v = run_problems(g, c, &d, nullptr);
    EXPECT_EQ(first_blocking(v), nullptr) << device << ": " << v.front().message;
  }
  Dataset bad = d;
  bad.channel_std.pop_back();
  const std::vector<RunProblem> refused = run_problems(g, c, &bad, nullptr);
  const RunProblem* p = first_blocking(refused);
  ASSERT_NE(p, nullptr);
  EXPECT_NE(p->message.find("per-channel mean/std"), std::string::npos) << p->message;
}

// The normalisation the CUDA gather applies (normalisation(), the same
// norm::apply) is what gather() computes, value for value, and the levels
// augmentation pads and caps with are its black and white.
TEST(Augment, NormalisationParametersReproduceGatherAndTheLevels) {
  const Dataset d = rgb_quadrants(4, 3);
  const norm::Params p = normalisation(d);
  ASSERT_EQ(p.channels, 3);
  const int64_t F = d.sample_shape.numel();
  std::vector<int64_t> idx = {0, 1, 2, 3};
  std::vector<float> x(size_t(4 * F));
  d.gather(idx.data(), 4, x.data(), nullptr);
  for (int64_t s = 0; s < 4; ++s)
    for (int64_t f = 0; f < F; ++f)
      ASSERT_EQ(x[size_t(s * F + f)],
                norm::apply(p, float(d.pixels[size_t(s * F + f)]) / 255.0f, f))
          << s << ", " << f;
  const AugmentLevels lv = augment_levels(d);
  ASSERT_EQ(lv.black.size(), 3u);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(lv.black[size_t(c)], (0.0f - d.channel_mean[size_t(c)]) / d.channel_std[size_t(c)]);
    EXPECT_EQ(lv.white[size_t(c)], (1.0f - d.channel_mean[size_t(c)]) / d.channel_std[size_t(c)]);
  }
  // Without per-channel statistics: one mean and 1/std, as before.
  Dataset scalar = d;
  scalar.channel_mean.clear();
  scalar.channel_std.clear();
  scalar.mean = 0.3f;
  scalar.stddev = 0.2f;
  const norm::Params q = normalisation(scalar);
  EXPECT_EQ(q.channels, 0);
  scalar.gather(idx.data(), 1, x.data(), nullptr);
  EXPECT_EQ(x[5], (float(scalar.pixels[5]) / 255.0f - 0.3f) * (1.0f / 0.2f));
  // More channels than the kernels take is a clear error.
  Dataset wide;
  wide.sample_shape = Shape{9, 1, 1};
  wide.pixels.assign(9, 0);
  wide.labels = {0};
  wide.channel_mean.assign(9, 0.5f);
  wide.channel_std.assign(9, 0.5f);
  EXPECT_THROW(normalisation(wide), DataError);
}

// A short CPU run of a tiny network with augmentation and per-channel
// normalisation both on trains and learns.
TEST(Augment, TrainsWithPerChannelNormalisationOnTheCpu) {
  TrainConfig c;
  c.epochs = 4;
  c.batch = 32;
  c.threads = 2;
  c.optimizer.lr = 0.01;
  c.augment.crop_padding = 1;
  c.augment.brightness = 0.3;
  c.augment.rotate = 5;
  Trainer t(rgb_mlp(), c, std::make_shared<Dataset>(rgb_quadrants(512, 1)),
            std::make_shared<Dataset>(rgb_quadrants(128, 2)));
  t.start();
  for (;;) {
    auto e = t.events().pop(std::chrono::milliseconds(30000));
    ASSERT_TRUE(e.has_value()) << "no event for 30 s";
    if (e->kind == TrainEvent::Kind::Failed || e->kind == TrainEvent::Kind::Cancelled) {
      t.wait();
      FAIL() << e->message;
    }
    if (e->kind == TrainEvent::Kind::Finished) break;
  }
  t.wait();
  EXPECT_TRUE(t.result().ok) << t.result().error;
  EXPECT_EQ(t.result().epochs_run, 4);
  EXPECT_TRUE(std::isfinite(t.result().final_train_loss));
  EXPECT_GT(t.result().test_accuracy, 0.8);
}

TEST(Augment, TrainerRefusesItForSequenceInputs) {
  register_builtin_layers();
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/resources/templates/lstm_rows.dcproj");
  TrainTest tt =
      load_fashion_mnist(std::string(DC_SOURCE_DIR) + "/sample_data/fashion-mnist-subset");
  TrainConfig c = p.training;
  c.augment.flip = true;
  try {
    Trainer t(p.graph, c, std::make_shared<Dataset>(std::move(tt.train)), nullptr);
    FAIL() << "augmentation of row sequences was accepted";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("augmentation"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dc

namespace dc {
namespace {

// Flips alone take a fast path (mirrored rows in place); it must give what
// the per-pixel path defines: column W-1-x and row H-1-y of the sample.
TEST(Augment, FlipsAloneMirrorTheSampleExactly) {
  AugmentConfig a;
  a.flip = true;
  a.vflip = true;
  const Shape s{3, 5, 7};
  const int64_t n = 16, F = s.numel();
  std::vector<float> x(size_t(n * F));
  for (size_t k = 0; k < x.size(); ++k) x[k] = float(k % 97) * 0.25f - 3.0f;
  const std::vector<float> before = x;
  augment_batch(a, s, AugmentLevels{{-1.f}, {2.f}}, 99, x.data(), n);
  int flipped = 0, vflipped = 0;
  for (int64_t i = 0; i < n; ++i) {
    const AugmentDraw d = augment_draw(a, s, 99, i);
    flipped += d.flip;
    vflipped += d.vflip;
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < 5; ++y)
        for (int xx = 0; xx < 7; ++xx) {
          const int sy = d.vflip ? 4 - y : y, sx = d.flip ? 6 - xx : xx;
          ASSERT_EQ(x[size_t(i * F + (c * 5 + y) * 7 + xx)],
                    before[size_t(i * F + (c * 5 + sy) * 7 + sx)])
              << "sample " << i << " c " << c << " y " << y << " x " << xx;
        }
  }
  EXPECT_GT(flipped, 0);
  EXPECT_LT(flipped, n);
  EXPECT_GT(vflipped, 0);
}

}  // namespace
}  // namespace dc
