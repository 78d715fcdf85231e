// Checkpoint reading (issue 17 items 2 and 8): metadata and weights a run
// cannot use are refused with the file and the field, not trained or
// evaluated into NaN.
#include <deepcanvas/checkpoint.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"

namespace dc {
namespace {

using test::TmpDir;

struct Written {
  TmpDir dir;
  std::string path = (dir.dir / "ck.safetensors").string();
  SafetensorsFile file;
};

// A valid checkpoint, then its metadata and tensors as a file to damage.
void write_valid(Written& w) {
  CheckpointMeta m;
  m.epoch = 3;
  m.step = 300;
  m.input_shape = "[1, 28, 28]";
  m.num_classes = 10;
  m.mean = 0.28f;
  m.stddev = 0.35f;
  m.class_names = {"a", "b"};
  write_checkpoint(w.path, {{"dense.weight", Tensor::from(Shape{2}, {1.0f, 2.0f})}},
                   {{"exp_avg.0", Tensor(Shape{2})}, {"exp_avg_sq.0", Tensor(Shape{2})}}, m);
  w.file = load_safetensors(w.path);
}

std::string error_after(Written& w, const std::string& key, const std::string& value) {
  auto meta = w.file.metadata;
  if (value == "<none>")
    meta.erase(key);
  else
    meta[key] = value;
  std::vector<std::pair<std::string, Tensor>> ts(w.file.tensors.begin(), w.file.tensors.end());
  save_safetensors(w.path, ts, meta);
  try {
    read_checkpoint(w.path);
  } catch (const IoError& e) {
    return e.what();
  }
  return "";
}

TEST(Checkpoint, WrittenAndReadBack) {
  Written w;
  write_valid(w);
  CheckpointInfo ck = read_checkpoint(w.path);
  EXPECT_EQ(ck.epoch, 3);
  EXPECT_EQ(ck.step, 300);
  ASSERT_EQ(ck.model.size(), 1u);
  EXPECT_EQ(ck.optimizer.size(), 2u);
  EXPECT_EQ(ck.metadata.at("format_version"), "1");
  EXPECT_EQ(ck.metadata.at("class_names"), "[\"a\",\"b\"]");
}

TEST(Checkpoint, EpochAndStepOutOfRangeAreRefused) {
  Written w;
  write_valid(w);
  for (std::string bad : {"2147483647", "-5", "5abc", "", "1e3", "<none>"}) {
    std::string e = error_after(w, "epoch", bad);
    EXPECT_NE(e.find("ck.safetensors: checkpoint epoch"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("0..100000"), std::string::npos) << e;
  }
  for (std::string bad : {"-1", "9223372036854775807", "99999999999999999999", "x"}) {
    std::string e = error_after(w, "step", bad);
    EXPECT_NE(e.find("checkpoint step '" + bad + "'"), std::string::npos) << e;
  }
  EXPECT_EQ(error_after(w, "step", "0"), "");
}

TEST(Checkpoint, ASweepsKeptWeightsNameTheirTrial) {
  Written w;
  write_valid(w);
  EXPECT_EQ(read_checkpoint(w.path).sweep_trial, -1);   // a run's checkpoint
  EXPECT_EQ(w.file.metadata.count("sweep_trial"), 0u);  // and its form unchanged
  CheckpointMeta m;
  m.sweep_trial = 7;
  write_checkpoint(w.path, {{"dense.weight", Tensor::from(Shape{2}, {1.0f, 2.0f})}}, {}, m);
  EXPECT_EQ(read_checkpoint(w.path).sweep_trial, 7);
  // Asked without its tensors, as a front end asks which trial wrote it.
  const CheckpointInfo head = read_checkpoint_metadata(w.path);
  EXPECT_EQ(head.sweep_trial, 7);
  EXPECT_TRUE(head.model.empty());
  w.file = load_safetensors(w.path);
  for (std::string bad : {"-1", "x", "", "1.5", "99999999999"}) {
    const std::string e = error_after(w, "sweep_trial", bad);
    EXPECT_NE(e.find("checkpoint sweep_trial '" + bad + "' is not a trial number"),
              std::string::npos)
        << bad << ": " << e;
    EXPECT_THROW(read_checkpoint_metadata(w.path), IoError) << bad;
  }
}

TEST(Checkpoint, UnknownFormatVersionIsRefused) {
  Written w;
  write_valid(w);
  EXPECT_NE(error_after(w, "format_version", "99").find("format_version 99 is not one"),
            std::string::npos);
  EXPECT_NE(error_after(w, "format_version", "<none>").find("has no format_version"),
            std::string::npos);
}

TEST(Checkpoint, UnusableNormalisationIsRefused) {
  Written w;
  write_valid(w);
  EXPECT_NE(error_after(w, "stddev", "0").find("stddev '0' is not a positive number"),
            std::string::npos);
  EXPECT_NE(error_after(w, "stddev", "nan").find("stddev 'nan'"), std::string::npos);
  EXPECT_NE(error_after(w, "stddev", "-1").find("stddev '-1'"), std::string::npos);
  EXPECT_NE(error_after(w, "mean", "nan").find("mean 'nan' is not a finite number"),
            std::string::npos);
  EXPECT_NE(error_after(w, "mean", "inf").find("mean 'inf'"), std::string::npos);
}

TEST(Checkpoint, NanOrNonF32WeightsAreRefused) {
  Written w;
  write_valid(w);
  auto with_weight = [&](Tensor t) {
    auto ts = std::vector<std::pair<std::string, Tensor>>{{"dense.weight", t}};
    save_safetensors(w.path, ts, w.file.metadata);
    try {
      read_checkpoint(w.path);
    } catch (const IoError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  std::string e = with_weight(Tensor::from(Shape{2}, {1.0f, NAN}));
  EXPECT_NE(e.find("tensor 'dense.weight' holds NaN or infinite values"), std::string::npos) << e;
  e = with_weight(Tensor(Shape{2}, DType::F16));
  EXPECT_NE(e.find("tensor 'dense.weight' is F16 2; DeepCanvas weights are F32"), std::string::npos)
      << e;
}

}  // namespace
}  // namespace dc
