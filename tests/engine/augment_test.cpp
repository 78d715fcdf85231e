// Training-time augmentation (random crop with padding, flips): the draw,
// the transform, the project setting and the Trainer's checks. The CUDA
// plugin repeats the same draw; tests/cuda/cuda_augment_test.cpp compares.
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/project.h>
#include <deepcanvas/trainer.h>
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace dc {
namespace {

TEST(Augment, DrawsCoverEveryOffsetAndFlipAboutHalf) {
  AugmentConfig a;
  a.flip = true;
  a.crop_padding = 2;
  int flips = 0;
  std::set<int> dys, dxs;
  for (int64_t i = 0; i < 2000; ++i) {
    AugmentDraw d = augment_draw(a, 12345, i);
    flips += d.flip;
    dys.insert(d.dy);
    dxs.insert(d.dx);
    AugmentDraw again = augment_draw(a, 12345, i);
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
  EXPECT_FALSE(augment_draw(none, 1, 0).flip);
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
    AugmentDraw d = augment_draw(a, 99, i);
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
