// Image preprocessing for a pretrained RGB base (dataset.preprocess):
// bilinear resize with half-pixel centres, grey -> RGB, per-channel
// normalisation when batches are gathered, and the project file round trip.
#include <deepcanvas/errors.h>
#include <deepcanvas/project.h>
#include <gtest/gtest.h>

#include "test_util.h"

namespace dc {
namespace {

// Two grey 2x2 images: a left-dark/right-bright one and a constant one.
Dataset two_images() {
  Dataset d;
  d.sample_shape = Shape{1, 2, 2};
  d.pixels = {0, 255, 0, 255, 40, 40, 40, 40};
  d.labels = {0, 1};
  d.num_classes = 2;
  d.source = "two";
  return d;
}

TEST(Preprocess, ResizesBilinearlyAndReplicatesGreyToRgb) {
  Dataset d = two_images();
  ImagePreprocess p;
  p.size = 4;
  p.channels = 3;
  preprocess_images(d, p);
  ASSERT_EQ(d.sample_shape, (Shape{3, 4, 4}));
  ASSERT_EQ(d.pixels.size(), size_t(2 * 3 * 16));
  // Half-pixel centres: output x samples input x at -0.25 (clamped), 0.25,
  // 0.75, 1.25 (clamped): 0, 63.75, 191.25, 255, rounded.
  const std::vector<uint8_t> row = {0, 64, 191, 255};
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x) {
        EXPECT_EQ(d.pixels[size_t(c * 16 + y * 4 + x)], row[size_t(x)])
            << c << "," << y << "," << x;
      }
  for (size_t k = 48; k < 96; ++k) {
    EXPECT_EQ(d.pixels[k], 40) << k;
  }
  EXPECT_EQ(d.labels, (std::vector<int32_t>{0, 1}));
}

TEST(Preprocess, GathersWithPerChannelNormalisation) {
  Dataset d = two_images();
  ImagePreprocess p;
  p.channels = 3;
  p.mean = {0.5f, 0.0f, 0.25f};
  p.std = {0.5f, 1.0f, 2.0f};
  preprocess_images(d, p);
  ASSERT_EQ(d.sample_shape, (Shape{3, 2, 2}));
  // The scalar normalisation must be ignored when per-channel is set.
  d.mean = 0.9f;
  d.stddev = 7.0f;
  std::vector<float> x(12);
  const int64_t i = 0;
  d.gather(&i, 1, x.data(), nullptr);
  // Pixel 255 (x = 1) in each channel: (1 - mean) / std.
  EXPECT_FLOAT_EQ(x[1], 1.0f);
  EXPECT_FLOAT_EQ(x[4 + 1], 1.0f);
  EXPECT_FLOAT_EQ(x[8 + 1], 0.375f);
  // Pixel 0: -mean / std.
  EXPECT_FLOAT_EQ(x[0], -1.0f);
  EXPECT_FLOAT_EQ(x[4], 0.0f);
  EXPECT_FLOAT_EQ(x[8], -0.125f);
}

TEST(Preprocess, RefusesWhatItCannotDoWithClearErrors) {
  ImagePreprocess to_grey;
  to_grey.channels = 1;
  Dataset rgb;
  rgb.sample_shape = Shape{3, 2, 2};
  rgb.pixels.assign(12, 0);
  rgb.labels = {0};
  rgb.source = "rgb";
  EXPECT_THROW(
      {
        try {
          preprocess_images(rgb, to_grey);
        } catch (const DataError& e) {
          EXPECT_NE(std::string(e.what()).find("grey (1 channel) into RGB"), std::string::npos)
              << e.what();
          throw;
        }
      },
      DataError);
  Dataset values;
  values.sample_shape = Shape{4};
  values.values.assign(4, 0.f);
  values.labels = {0};
  ImagePreprocess resize;
  resize.size = 8;
  EXPECT_THROW(preprocess_images(values, resize), DataError);
  ImagePreprocess bad;
  bad.channels = 3;
  bad.mean = {0.5f};
  bad.std = {0.5f};
  EXPECT_NE(preprocess_problem(bad).find("channels is 3"), std::string::npos)
      << preprocess_problem(bad);
  bad.mean = {0.5f, 0.5f, 0.5f};
  bad.std = {0.5f, 0.f, 0.5f};
  EXPECT_NE(preprocess_problem(bad).find("std positive"), std::string::npos);
}

// A size from the project file that the machine cannot hold is refused
// before the result is reserved: a million 1x1 images made 3x1024x1024 are
// 3 TiB.
TEST(Preprocess, AResultLargerThanTheMemoryIsRefusedBeforeReserving) {
  Dataset d;
  d.sample_shape = Shape{1, 1, 1};
  d.pixels.assign(1000000, 7);
  d.labels.assign(1000000, 0);
  d.num_classes = 1;
  d.source = "many";
  ImagePreprocess p;
  p.size = 1024;
  p.channels = 3;
  const std::string e = test::error_of([&] { preprocess_images(d, p); });
  EXPECT_NE(e.find("many: dataset.preprocess makes 1000000 images of 3x1024x1024"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("choose a smaller size"), std::string::npos) << e;
}

TEST(Preprocess, ProjectFileRoundTripAndErrors) {
  Project p;
  p.name = "t";
  p.graph = test::quadrant_mlp();
  p.dataset.path = "fashion-mnist";
  p.dataset.preprocess.size = 96;
  p.dataset.preprocess.channels = 3;
  p.dataset.preprocess.mean = {0.485f, 0.456f, 0.406f};
  p.dataset.preprocess.std = {0.229f, 0.224f, 0.225f};
  p.training.init_weights = "base.safetensors";
  const std::string text = project_to_json(p);
  const Project q = parse_project(text, "t.dcproj");
  EXPECT_EQ(q.dataset.preprocess.size, 96);
  EXPECT_EQ(q.dataset.preprocess.channels, 3);
  EXPECT_EQ(q.dataset.preprocess.mean, p.dataset.preprocess.mean);
  EXPECT_EQ(q.dataset.preprocess.std, p.dataset.preprocess.std);
  EXPECT_EQ(q.training.init_weights, "base.safetensors");
  // A project without them writes neither key.
  Project plain = p;
  plain.dataset.preprocess = {};
  plain.training.init_weights.clear();
  const std::string plain_text = project_to_json(plain);
  EXPECT_EQ(plain_text.find("preprocess"), std::string::npos);
  EXPECT_EQ(plain_text.find("init_weights"), std::string::npos);

  std::string bad = text;
  bad.replace(bad.find("\"channels\": 3"), 13, "\"channels\": 2");
  try {
    parse_project(bad, "bad.dcproj");
    FAIL() << "channels 2 must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dataset.preprocess"), std::string::npos) << e.what();
  }
  // init_weights is relative to the project file.
  Project placed = q;
  placed.file = "/data/projects/t.dcproj";
  EXPECT_EQ(resolve_project_file(placed, placed.training.init_weights),
            "/data/projects/base.safetensors");
  EXPECT_EQ(resolve_project_file(placed, "/abs/w.safetensors"), "/abs/w.safetensors");
}

}  // namespace
}  // namespace dc
