// prepare_run() on data the caller has already read (the app keeps the
// Dataset tab's data loaded), and the dataset's one-line description the
// front ends show instead of switching on the dataset kind themselves.
#include <deepcanvas/prepare_run.h>
#include <deepcanvas/project.h>
#include <gtest/gtest.h>

#include <string>

namespace dc {
namespace {

Project sample() {
  return load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
}

TEST(Prep31GivenData, NoGivenDataIsADataProblemAndNothingIsRead) {
  Project p = sample();
  // A path that does not exist: reading it would be a different problem.
  p.dataset.path = "/nonexistent/dc-prep31-dataset";
  PrepareOptions o;
  o.config = p.training;
  o.given_data = true;
  const PreparedRun r = prepare_run(p, o);
  EXPECT_FALSE(r.loaded);
  const RunProblem* b = r.first_blocking();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->kind, RunProblem::Kind::Data);
  EXPECT_EQ(b->subject, "dataset");
  EXPECT_EQ(b->message.find("nonexistent"), std::string::npos) << b->message;
}

TEST(Prep31GivenData, GivenDataIsCheckedAsTheReadDatasetWouldBe) {
  Project p = sample();
  const Node* head = p.graph.find_by_name("dense2");
  ASSERT_NE(head, nullptr);
  p.graph.set_attr(head->id, "units", int64_t(3));  // Fashion-MNIST has 10 classes
  const ProjectData d = load_project_dataset(p);
  PrepareOptions read;
  read.config = p.training;
  const PreparedRun from_disk = prepare_run(p, read);
  PrepareOptions given = read;
  given.given_data = true;
  given.train = &d.data.train;
  given.test = &d.data.test;
  const PreparedRun from_memory = prepare_run(p, given);
  EXPECT_FALSE(from_memory.loaded);
  ASSERT_NE(from_disk.first_blocking(), nullptr);
  ASSERT_NE(from_memory.first_blocking(), nullptr);
  EXPECT_EQ(from_memory.first_blocking()->kind, RunProblem::Kind::Data);
  EXPECT_EQ(from_memory.first_blocking()->kind, from_disk.first_blocking()->kind);
  EXPECT_EQ(from_memory.first_blocking()->message, from_disk.first_blocking()->message);

  // The same data against a network that fits it: ready.
  const Project fits = sample();
  given.config = fits.training;
  const PreparedRun ok = prepare_run(fits, given);
  EXPECT_TRUE(ok.ok()) << (ok.first_blocking() ? ok.first_blocking()->message : "");
}

TEST(Prep31GivenData, DescribesTheDatasetByItsKind) {
  const Project p = sample();
  Project q = p;
  q.dataset.path = "sample:fashion-mnist-subset";
  q.dataset.kind = "idx";
  ProjectData d;
  d.dir = "/x/y";
  EXPECT_EQ(describe_dataset(q.dataset, d), "bundled sample: fashion-mnist-subset");
  DatasetSpec s;
  s.path = "pets";
  s.kind = "image_folder";
  EXPECT_EQ(describe_dataset(s, d), "image folder: /x/y");
  s.kind = "image_csv";
  EXPECT_EQ(describe_dataset(s, d), "image list: /x/y");
  s.kind = "csv_sequence";
  EXPECT_EQ(describe_dataset(s, d), "CSV series: /x/y");
  s.kind = "text";
  EXPECT_EQ(describe_dataset(s, d), "text corpus: /x/y");
  s.kind = "idx";
  EXPECT_EQ(describe_dataset(s, d), "IDX folder: /x/y");
}

}  // namespace
}  // namespace dc
