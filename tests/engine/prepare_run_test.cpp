// prepare_run(): the problems come back structured, with the numbers and
// subjects a front end words them from, and name no CLI flag.
#include <deepcanvas/prepare_run.h>
#include <deepcanvas/project.h>
#include <deepcanvas/sysinfo.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace dc {
namespace {

namespace fs = std::filesystem;

Project sample() {
  return load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
}

const RunProblem* find_kind(const PreparedRun& r, RunProblem::Kind k) {
  for (const RunProblem& p : r.problems)
    if (p.kind == k) return &p;
  return nullptr;
}

void expect_no_flag(const PreparedRun& r) {
  for (const RunProblem& p : r.problems)
    EXPECT_EQ(p.message.find("--"), std::string::npos) << p.message;
}

TEST(PrepareRun, ASampleProjectIsReadyWithItsDataset) {
  const Project p = sample();
  PrepareOptions o;
  o.config = p.training;
  const PreparedRun r = prepare_run(p, o);
  EXPECT_TRUE(r.ok()) << (r.first_blocking() ? r.first_blocking()->message : "");
  EXPECT_TRUE(r.loaded);
  EXPECT_GT(r.data.data.train.size(), 0);
  EXPECT_GT(r.data.data.test.size(), 0);
  EXPECT_TRUE(r.device_fallback.empty());
}

TEST(PrepareRun, ABatchTooLargeForMemoryCarriesTheBytesAndTheBatchThatFits) {
  if (available_memory_bytes() < 0) GTEST_SKIP() << "this machine does not say its free memory";
  const Project p = sample();
  PrepareOptions o;
  o.config = p.training;
  o.config.batch = 1'000'000;
  o.data = DataNeed::Required;
  const PreparedRun r = prepare_run(p, o);
  const RunProblem* m = find_kind(r, RunProblem::Kind::Memory);
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(m->warning);
  EXPECT_EQ(r.first_blocking(), m);
  EXPECT_EQ(m->subject, "training.batch");
  EXPECT_GT(m->needed_bytes, m->available_bytes);
  EXPECT_GT(m->available_bytes, 0);
  EXPECT_GE(m->suggested_batch, 1);
  EXPECT_LT(m->suggested_batch, 1'000'000);
  EXPECT_NE(m->message.find("training at batch 1000000 needs about"), std::string::npos)
      << m->message;
  // A blocked run reads no dataset.
  EXPECT_FALSE(r.loaded);
  expect_no_flag(r);
  // Two runs at once get half the memory each: the batch that fits shrinks.
  o.concurrent = 2;
  const PreparedRun two = prepare_run(p, o);
  const RunProblem* m2 = find_kind(two, RunProblem::Kind::Memory);
  ASSERT_NE(m2, nullptr);
  EXPECT_NE(m2->message.find("2 training at batch"), std::string::npos) << m2->message;
  EXPECT_LT(m2->suggested_batch, m->suggested_batch);
}

TEST(PrepareRun, AnUnwritableOutputNamesItsRoleAndTheSystemsReason) {
  const Project p = sample();
  PrepareOptions o;
  o.config = p.training;
  o.data = DataNeed::None;
  // Below a regular file nothing can be created, not even by root.
  o.outputs = {{"checkpoint", "/etc/hostname/m.safetensors", false}};
  const PreparedRun r = prepare_run(p, o);
  const RunProblem* out = find_kind(r, RunProblem::Kind::Output);
  ASSERT_NE(out, nullptr);
  EXPECT_FALSE(out->warning);
  EXPECT_EQ(out->subject, "checkpoint");
  EXPECT_EQ(out->path, "/etc/hostname/m.safetensors");
  EXPECT_FALSE(out->reason.empty());
  EXPECT_EQ(out->message.rfind("checkpoint /etc/hostname/m.safetensors: cannot create", 0), 0u)
      << out->message;
  EXPECT_NE(out->message.find(out->reason), std::string::npos) << out->message;
  expect_no_flag(r);

  // A writable one passes, its missing folders created.
  const fs::path dir = fs::temp_directory_path() / ("dc_prepare_" + std::to_string(::getpid()));
  o.outputs = {{"checkpoint folder", (dir / "a" / "b").string(), true}};
  const PreparedRun ok = prepare_run(p, o);
  EXPECT_EQ(find_kind(ok, RunProblem::Kind::Output), nullptr);
  EXPECT_TRUE(fs::is_directory(dir / "a" / "b"));
  fs::remove_all(dir);
}

TEST(PrepareRun, ClassesThatDoNotFitTheNetworkAreADataProblem) {
  Project p = sample();
  const Node* head = p.graph.find_by_name("dense2");
  ASSERT_NE(head, nullptr);
  p.graph.set_attr(head->id, "units", int64_t(3));  // Fashion-MNIST has 10 classes
  PrepareOptions o;
  o.config = p.training;
  const PreparedRun r = prepare_run(p, o);
  EXPECT_TRUE(r.loaded);
  const RunProblem* d = r.first_blocking();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->kind, RunProblem::Kind::Data);
  EXPECT_FALSE(d->subject.empty());
  EXPECT_NE(d->message.find("10 classes"), std::string::npos) << d->message;
  EXPECT_NE(d->message.find("outputs 3 values"), std::string::npos) << d->message;
  expect_no_flag(r);
  // Evaluation holds the test set against the network too.
  o.purpose = RunPurpose::Evaluate;
  const PreparedRun e = prepare_run(p, o);
  ASSERT_NE(e.first_blocking(), nullptr);
  EXPECT_EQ(e.first_blocking()->kind, RunProblem::Kind::Data);
}

TEST(PrepareRun, NoDatasetIsADataProblemOnTheDatasetPath) {
  Project p = sample();
  p.dataset.path.clear();
  PrepareOptions o;
  o.config = p.training;
  const PreparedRun r = prepare_run(p, o);
  EXPECT_FALSE(r.loaded);
  const RunProblem* d = r.first_blocking();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->kind, RunProblem::Kind::Data);
  EXPECT_EQ(d->subject, "dataset.path");
  expect_no_flag(r);
  // Where the data is optional (an estimate), the same is a warning.
  o.data = DataNeed::Optional;
  const PreparedRun opt = prepare_run(p, o);
  EXPECT_TRUE(opt.ok());
  ASSERT_EQ(opt.problems.size(), 1u);
  EXPECT_TRUE(opt.problems[0].warning);
  // A folder that is not a dataset: the loader's reason, as a Data problem.
  o.data = DataNeed::Required;
  o.data_override = (fs::temp_directory_path() / "dc_prepare_no_such_folder").string();
  const PreparedRun missing = prepare_run(p, o);
  ASSERT_NE(missing.first_blocking(), nullptr);
  EXPECT_EQ(missing.first_blocking()->kind, RunProblem::Kind::Data);
  EXPECT_EQ(missing.first_blocking()->subject, o.data_override);
  expect_no_flag(missing);
}

TEST(PrepareRun, ReducedPrecisionOnTheCpuNamesTheSettingNotAFlag) {
  const Project p = sample();
  PrepareOptions o;
  o.config = p.training;
  o.config.precision = Precision::Bf16;
  o.data = DataNeed::None;
  const PreparedRun r = prepare_run(p, o);
  const RunProblem* d = r.first_blocking();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->kind, RunProblem::Kind::Device);
  EXPECT_EQ(d->subject, "training.precision");
  expect_no_flag(r);
}

}  // namespace
}  // namespace dc
