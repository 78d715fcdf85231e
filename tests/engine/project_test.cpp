#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/plan.h>
#include <deepcanvas/project.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace dc {
namespace {

namespace fs = std::filesystem;

std::string templates() {
  return std::string(DC_SOURCE_DIR) + "/resources/templates/";
}

std::string expect_error(const std::string& text) {
  try {
    parse_project(text, "bad.dcproj");
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << text.substr(0, 200);
  return "";
}

std::string sample_text() {
  return read_file(templates() + "two_conv_cnn.dcproj");
}

std::string replace(std::string s, const std::string& a, const std::string& b) {
  auto p = s.find(a);
  EXPECT_NE(p, std::string::npos) << a;
  if (p != std::string::npos) s.replace(p, a.size(), b);
  return s;
}

TEST(Project, EveryTemplateLoadsValidatesAndRoundTrips) {
  int n = 0;
  for (auto& f : fs::directory_iterator(templates())) {
    if (f.path().extension() != ".dcproj") continue;
    ++n;
    Project p = load_project(f.path().string());
    EXPECT_NO_THROW(p.graph.validate()) << f.path();
    Plan plan(p.graph, 2);
    // Classifiers end in the 10 Fashion-MNIST classes; the character models
    // predict the next character over their corpus's vocabulary.
    // The Character Transformer predicts at every step ([T, V]).
    const bool text = f.path().stem() == "char_lstm" || f.path().stem() == "char_transformer";
    EXPECT_EQ(plan.output_shape().rank(), f.path().stem() == "char_transformer" ? 2u : 1u)
        << f.path();
    if (!text) {
      EXPECT_EQ(plan.output_shape(), (Shape{10})) << f.path();
    }
    Project q = parse_project(project_to_json(p), "roundtrip");
    EXPECT_TRUE(q.graph == p.graph) << f.path();
    EXPECT_EQ(project_to_json(q), project_to_json(p)) << f.path();
  }
  // Four CNN, four recurrent and three attention templates.
  EXPECT_EQ(n, 11);
}

// The allocation-free count agrees with the built Plan on every template,
// and says "unknown" for a graph whose shapes do not infer.
TEST(Project, ParameterCountWithoutAllocatingMatchesThePlan) {
  int n = 0;
  for (auto& f : fs::directory_iterator(templates())) {
    if (f.path().extension() != ".dcproj") continue;
    Project p = load_project(f.path().string());
    Plan plan(p.graph, 1);
    EXPECT_EQ(count_parameters(p.graph), plan.num_parameters()) << f.path();
    ++n;
  }
  EXPECT_EQ(n, 11);
  Project p = load_project(templates() + "two_conv_cnn.dcproj");
  p.graph.set_attr(p.graph.find_by_name("conv2")->id, "kernel", std::vector<int64_t>{40, 40});
  EXPECT_EQ(count_parameters(p.graph), -1);
}

TEST(Project, TwoConvTemplateIsTheClassicNetwork) {
  Project p = load_project(templates() + "two_conv_cnn.dcproj");
  Plan plan(p.graph, 1);
  // conv1 320 + conv2 18496 + dense1 401536 + dense2 1290
  EXPECT_EQ(plan.num_parameters(), 320 + 18496 + 401536 + 1290);
}

TEST(Project, SaveIsAtomicAndReloads) {
  fs::path dir = fs::temp_directory_path() / "dc_project_test";
  fs::create_directories(dir);
  std::string path = (dir / "p.dcproj").string();
  Project p = load_project(templates() + "lenet5.dcproj");
  p.training.epochs = 7;
  save_project(p, path);
  Project q = load_project(path);
  EXPECT_EQ(q.training.epochs, 7);
  EXPECT_TRUE(q.graph == p.graph);
  for (auto& f : fs::directory_iterator(dir))
    EXPECT_EQ(f.path().filename(), "p.dcproj") << "temp file left behind";
  fs::remove_all(dir);
}

// Issue 36 item 2: Save As into another folder (the installed sample lives
// in read-only /usr/share) keeps the dataset and init weights reachable.
TEST(Project, SaveAsIntoAnotherFolderRebasesRelativePaths) {
  const fs::path root = fs::temp_directory_path() / ("dc_rebase_" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "share" / "data");
  fs::create_directories(root / "home" / "work");
  Project p = load_project(templates() + "two_conv_cnn.dcproj");
  p.dataset.path = "data";
  p.training.init_weights = "weights/base.safetensors";
  p.file = (root / "share" / "sample.dcproj").string();

  // Elsewhere: absolute, so the saved project still finds the folder.
  save_project(p, (root / "home" / "work" / "mine.dcproj").string());
  Project back = load_project((root / "home" / "work" / "mine.dcproj").string());
  EXPECT_EQ(back.dataset.path, (root / "share" / "data").generic_string());
  EXPECT_EQ(back.training.init_weights,
            (root / "share" / "weights" / "base.safetensors").generic_string());
  EXPECT_EQ(resolve_dataset_dir(back), (root / "share" / "data").string());
  EXPECT_EQ(p.dataset.path, back.dataset.path);  // the open project follows the file

  // Into a folder below the data's: relative again.
  fs::create_directories(root / "share" / "sub");
  save_project(back, (root / "share" / "sub" / "x.dcproj").string());
  EXPECT_EQ(load_project((root / "share" / "sub" / "x.dcproj").string()).dataset.path,
            (root / "share" / "data").generic_string());
  back.dataset.path = "../data";
  back.file = (root / "share" / "sub" / "x.dcproj").string();
  save_project(back, (root / "share" / "y.dcproj").string());
  EXPECT_EQ(load_project((root / "share" / "y.dcproj").string()).dataset.path, "data");

  // Names that are not paths stay as they are; the same folder changes nothing.
  back.dataset.path = "sample:fashion-mnist-subset";
  save_project(back, (root / "home" / "z.dcproj").string());
  EXPECT_EQ(load_project((root / "home" / "z.dcproj").string()).dataset.path,
            "sample:fashion-mnist-subset");
  back.dataset.path = "rel";
  save_project(back, (root / "home" / "z2.dcproj").string());
  EXPECT_EQ(back.dataset.path, "rel");
  fs::remove_all(root);
}

TEST(Project, MalformedAndTruncatedFiles) {
  std::string t = sample_text();
  EXPECT_NE(expect_error(t.substr(0, t.size() / 2)).find("not valid JSON"), std::string::npos);
  EXPECT_NE(expect_error("").find("not valid JSON"), std::string::npos);
  EXPECT_NE(expect_error("[1,2]").find("not a DeepCanvas project"), std::string::npos);
  EXPECT_THROW(load_project("/nonexistent/x.dcproj"), IoError);
  // Wrong JSON types where a string belongs: one clear error naming the
  // place, not the JSON library's exception (the project fuzzer found the
  // node name; its input is in tests/fuzz/corpus/project).
  std::string e = expect_error(replace(t, "\"name\": \"conv1\"", "\"name\": {\"a\": 1}"));
  EXPECT_NE(e.find("'name' must be a string"), std::string::npos) << e;
  EXPECT_NE(e.find("graph.nodes["), std::string::npos) << e;
  e = expect_error(replace(t, "\"format\": \"deepcanvas-project\"", "\"format\": 5"));
  EXPECT_NE(e.find("not a DeepCanvas project"), std::string::npos) << e;
}

TEST(Project, NewerVersionIsRefusedClearly) {
  std::string e = expect_error(replace(sample_text(), "\"version\": 1", "\"version\": 99"));
  EXPECT_NE(e.find("newer DeepCanvas"), std::string::npos) << e;
}

TEST(Project, UnknownLayerTypeNamesTheNode) {
  std::string e = expect_error(replace(sample_text(), "\"type\": \"ReLU\"", "\"type\": \"Relu\""));
  EXPECT_NE(e.find("unknown layer type 'Relu'"), std::string::npos) << e;
  EXPECT_NE(e.find("graph.nodes["), std::string::npos) << e;
}

TEST(Project, UnknownMissingWrongTypeAndOutOfRangeAttributes) {
  std::string t = sample_text();
  std::string e = expect_error(replace(t, "\"filters\": 32", "\"filterz\": 32"));
  EXPECT_NE(e.find("unknown attribute 'filterz'"), std::string::npos) << e;
  EXPECT_NE(e.find("conv1"), std::string::npos) << e;
  e = expect_error(replace(t, "\"filters\": 32", "\"filters\": \"32\""));
  EXPECT_NE(e.find("must be an integer"), std::string::npos) << e;
  e = expect_error(replace(t, "\"filters\": 32", "\"filters\": -3"));
  EXPECT_NE(e.find("outside"), std::string::npos) << e;
  e = expect_error(replace(t, "\"filters\": 32", "\"filters\": 2.5"));
  EXPECT_NE(e.find("filters"), std::string::npos) << e;
  // A missing attribute takes its default (forward compatible); the file loads.
  Project p = parse_project(replace(t, "\"filters\": 32,", ""), "ok");
  EXPECT_EQ(p.graph.find_by_name("conv1")->attrs.i("filters"), 32);
}

TEST(Project, CycleUnconnectedAndShapeMismatch) {
  std::string t = sample_text();
  // relu3 -> dense1 closes dense1 -> relu3 -> dense1 (dense1's port is taken
  // first, so also drop the flatten edge).
  std::string cyc = replace(t, "\"from\": \"flatten\",\n        \"to\": \"dense1\"",
                            "\"from\": \"relu3\",\n        \"to\": \"dense1\"");
  std::string e = expect_error(cyc);
  EXPECT_NE(e.find("cycle"), std::string::npos) << e;

  e = expect_error(replace(t, "\"to\": \"dense1\",\n        \"port\": 0",
                           "\"to\": \"dense1\",\n        \"port\": 1"));
  EXPECT_NE(e.find("does not exist"), std::string::npos) << e;

  // Without the Flatten the file loads (it is a valid drawing) but the
  // network does not validate, and the message names the node to fix.
  Project p = parse_project(replace(t, "\"from\": \"flatten\",\n        \"to\": \"dense1\"",
                                    "\"from\": \"pool2\",\n        \"to\": \"dense1\""),
                            "x");
  try {
    p.graph.validate();
    ADD_FAILURE() << "validated a Dense on a 3-D input";
  } catch (const GraphError& ex) {
    EXPECT_NE(std::string(ex.what()).find("Dense 'dense1'"), std::string::npos) << ex.what();
  }
}

TEST(Project, DuplicateEdgeAndUnknownNodeInEdge) {
  std::string t = sample_text();
  std::string e = expect_error(replace(t, "\"to\": \"relu1\"", "\"to\": \"nowhere\""));
  EXPECT_NE(e.find("no node named 'nowhere'"), std::string::npos) << e;
}

TEST(Project, TrainingFieldsAreChecked) {
  std::string t = sample_text();
  std::string e = expect_error(replace(t, "\"epochs\": 3", "\"epochs\": \"three\""));
  EXPECT_NE(e.find("training.epochs"), std::string::npos) << e;
  e = expect_error(replace(t, "\"epochs\": 3", "\"epoch\": 3"));
  EXPECT_NE(e.find("unknown field 'epoch'"), std::string::npos) << e;
  e = expect_error(replace(t, "\"type\": \"adam\"", "\"type\": \"adagrad\""));
  EXPECT_NE(e.find("training.optimizer.type"), std::string::npos) << e;
  e = expect_error(replace(t, "\"epochs\": 3", "\"epochs\": 0"));
  EXPECT_NE(e.find("at least 1"), std::string::npos) << e;
}

TEST(Project, DatasetResolution) {
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  std::string d = resolve_dataset_dir(p);
  EXPECT_TRUE(fs::exists(fs::path(d) / "train-images-idx3-ubyte.gz")) << d;
  Project t = load_project(templates() + "two_conv_cnn.dcproj");
  EXPECT_EQ(fs::canonical(resolve_dataset_dir(t)), fs::canonical(d));
  EXPECT_THROW(resolve_dataset_dir(p, "/nonexistent/data"), IoError);
}

TEST(Project, ADatasetOutsideTheProjectFolderIsNamedAndASampleNameStaysASample) {
  Project p;
  p.file = "/home/me/projects/cnn.dcproj";
  for (const char* inside : {"data", "./data/train", "", "sample:fashion-mnist-subset",
                             "fashion-mnist", "sub/../data"}) {
    p.dataset.path = inside;
    EXPECT_EQ(dataset_location_note(p), "") << inside;
  }
  for (const char* outside : {"/etc", "../../etc", "data/../../x", "/home/me/projects2"}) {
    p.dataset.path = outside;
    const std::string note = dataset_location_note(p);
    EXPECT_NE(note.find("outside the project's folder"), std::string::npos) << outside;
  }
  p.dataset.path = "/tmp/evil\x1b[2Jname";
  EXPECT_NE(dataset_location_note(p).find("/tmp/evil\\x1B[2Jname"), std::string::npos)
      << dataset_location_note(p);
  for (const char* bad : {"sample:../../../etc", "sample:/etc", "sample:..",
                          "sample:", "sample:text/../../etc", "sample:text/./corpus.txt"}) {
    p.dataset.path = bad;
    try {
      resolve_dataset_dir(p);
      FAIL() << bad << " was resolved";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("is not a sample's name"), std::string::npos)
          << e.what();
    }
  }
  // A file inside the sample folder, as the character templates name their corpus.
  p.dataset.path = "sample:text/corpus.txt";
  EXPECT_EQ(fs::path(resolve_dataset_dir(p)).filename(), "corpus.txt");
}

}  // namespace
}  // namespace dc
