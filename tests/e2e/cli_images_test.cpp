// deepcanvas-cli on a folder of the user's own pictures (issue 31): train,
// eval, sweep, lr-find and advise read it through the engine's
// prepare_run(), print one summary of it, and name a bad file in it.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <vector>

#include "cli_util.h"

namespace dc::e2e {
namespace {

// A 24-bit BMP of w×h pixels, each (r, g, b) plus a little per-pixel noise
// so that no two images are alike; with `centre`, the middle half of each
// side is that colour instead.
struct Rgb {
  int r, g, b;
};
void write_bmp(const std::string& path, int w, int h, int r, int g, int b, uint32_t seed,
               std::optional<Rgb> centre = std::nullopt) {
  const int row = (w * 3 + 3) / 4 * 4;
  const uint32_t data = uint32_t(row * h), size = 54 + data;
  std::vector<uint8_t> f(size, 0);
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) f[at + size_t(i)] = uint8_t(v >> (8 * i));
  };
  f[0] = 'B';
  f[1] = 'M';
  put32(2, size);
  put32(10, 54);
  put32(14, 40);
  put32(18, uint32_t(w));
  put32(22, uint32_t(h));
  f[26] = 1;
  f[28] = 24;
  put32(34, data);
  uint32_t s = seed * 2654435761u + 1;
  auto noise = [&] {
    s = s * 1664525u + 1013904223u;
    return int(s >> 28) - 8;  // -8..7
  };
  auto clamp = [](int v) { return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v); };
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* px = &f[54 + size_t(y) * size_t(row) + size_t(x) * 3];
      const bool inner = centre && x >= w / 4 && x < w - w / 4 && y >= h / 4 && y < h - h / 4;
      const Rgb c = inner ? *centre : Rgb{r, g, b};
      px[0] = clamp(c.b + noise());
      px[1] = clamp(c.g + noise());
      px[2] = clamp(c.r + noise());
    }
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(f.data()), f.size());
}

// Two classes of 12 small pictures, reddish and bluish; with `bad`, a text
// file named like a PNG among the cats.
std::string photo_folder(const Tmp& t, bool bad) {
  const std::string root = t.path("photos");
  for (const char* cls : {"cat", "dog"}) {
    fs::create_directories(root + "/" + cls);
    const bool red = std::string(cls) == "cat";
    for (int i = 0; i < 12; ++i)
      write_bmp(root + "/" + cls + "/img" + std::to_string(i) + ".bmp", 40, 36, red ? 200 : 40, 90,
                red ? 40 : 200, uint32_t(i + (red ? 0 : 100)));
  }
  if (bad) std::ofstream(root + "/cat/broken.png") << "this is not a picture\n";
  return root;
}

// A small CNN whose Input is 3×32×32 and whose last Dense has 2 units; its
// own dataset is the bundled IDX subset, so --data alone makes it read
// the photos.
std::string image_project(const Tmp& t) {
  nlohmann::json p = nlohmann::json::parse(sample_text());
  auto node = [](int id, const char* type, const char* name, nlohmann::json attrs) {
    return nlohmann::json{
        {"id", id}, {"type", type}, {"name", name}, {"attrs", attrs}, {"pos", {40 * id, 100}}};
  };
  p["graph"]["nodes"] = {
      node(1, "Input", "input", {{"shape", {3, 32, 32}}}),
      node(2, "Conv2D", "conv1", {{"filters", 4}, {"kernel", {3, 3}}, {"padding", {1, 1}}}),
      node(3, "ReLU", "relu1", nlohmann::json::object()),
      node(4, "MaxPool2D", "pool1", {{"kernel", {4, 4}}, {"stride", {4, 4}}}),
      node(5, "Flatten", "flatten", nlohmann::json::object()),
      node(6, "Dense", "head", {{"units", 2}})};
  nlohmann::json edges = nlohmann::json::array();
  const char* chain[] = {"input", "conv1", "relu1", "pool1", "flatten", "head"};
  for (int i = 0; i + 1 < 6; ++i)
    edges.push_back({{"from", chain[i]}, {"to", chain[i + 1]}, {"port", 0}});
  p["graph"]["edges"] = edges;
  p["training"]["batch"] = 8;
  return project_in(t, p.dump(2));
}

TEST(CliImages, TrainEvalSweepLrFindAndAdviseReadAPhotoFolder) {
  Tmp t;
  const std::string photos = photo_folder(t, false);
  const std::string proj = image_project(t);
  const std::string ck = t.path("model.safetensors");

  CliRun tr = cli("train " + proj + " --data " + photos + " --epochs 1 --checkpoint " + ck);
  ASSERT_EQ(tr.code, 0) << tr.out;
  EXPECT_NE(tr.out.find("images in " + photos + ": 2 classes"), std::string::npos) << tr.out;
  // 12 per class, a tenth of each (one picture) held out for testing.
  EXPECT_NE(tr.out.find("train 22 (cat 11, dog 11)"), std::string::npos) << tr.out;
  EXPECT_NE(tr.out.find("test 2 (cat 1, dog 1)"), std::string::npos) << tr.out;
  EXPECT_NE(tr.out.find("test accuracy"), std::string::npos) << tr.out;
  ASSERT_TRUE(fs::exists(ck));

  CliRun ev = cli("eval " + proj + " --data " + photos + " --checkpoint " + ck);
  ASSERT_EQ(ev.code, 0) << ev.out;
  EXPECT_NE(ev.out.find("images in " + photos), std::string::npos) << ev.out;
  EXPECT_NE(ev.out.find("2 test samples: accuracy"), std::string::npos) << ev.out;

  // predict given the whole folder: the classes are named and eval offered.
  CliRun pr = cli("predict " + proj + " --checkpoint " + ck + " " + photos);
  EXPECT_EQ(pr.code, 1) << pr.out;
  EXPECT_NE(pr.out.find(photos + " holds class folders (cat, dog), not pictures"),
            std::string::npos)
      << pr.out;
  EXPECT_NE(pr.out.find("eval PROJECT --checkpoint FILE --data " + photos), std::string::npos)
      << pr.out;

  CliRun sw = cli("sweep " + proj + " --data " + photos +
                  " --trials 2 --epochs 1 --pruner none --param lr=log:1e-3:1e-2 --state " +
                  t.path("sweep.json"));
  ASSERT_EQ(sw.code, 0) << sw.out;
  EXPECT_NE(sw.out.find("images in " + photos), std::string::npos) << sw.out;
  EXPECT_NE(sw.out.find("2 trials:"), std::string::npos) << sw.out;

  CliRun lr = cli("lr-find " + proj + " --data " + photos + " --steps 10");
  ASSERT_EQ(lr.code, 0) << lr.out;
  EXPECT_NE(lr.out.find("images in " + photos), std::string::npos) << lr.out;
  EXPECT_NE(lr.out.find("suggested learning rate"), std::string::npos) << lr.out;

  CliRun ad = cli("advise " + proj + " --data " + photos);
  ASSERT_EQ(ad.code, 0) << ad.out;
  EXPECT_NE(ad.out.find("images in " + photos), std::string::npos) << ad.out;
}

TEST(CliImages, ABadPictureIsNamedAndTrainingGoesOn) {
  Tmp t;
  const std::string photos = photo_folder(t, true);
  const std::string proj = image_project(t);
  CliRun tr = cli("train " + proj + " --data " + photos + " --epochs 1");
  ASSERT_EQ(tr.code, 0) << tr.out;
  EXPECT_NE(tr.out.find("skipped 1 file: cat/broken.png ("), std::string::npos) << tr.out;
  // The eleven good cats are still there.
  EXPECT_NE(tr.out.find("train 22 (cat 11, dog 11)"), std::string::npos) << tr.out;
}

// The files' summary gives the command for the Input they suggest, and
// `edit` runs it; a mistake in an edit leaves the project as it was.
TEST(CliImages, EditGivesTheInputTheFilesSuggestAndRefusesMistakes) {
  Tmp t;
  const std::string photos = photo_folder(t, false);
  const std::string proj = image_project(t);
  CliRun small = cli("edit " + proj + " --set input.shape=1x8x8");
  ASSERT_EQ(small.code, 0) << small.out;
  EXPECT_NE(small.out.find("input.shape: 3×32×32 -> 1×8×8"), std::string::npos) << small.out;
  // Colour pictures of 40×36 px through a grey 8×8 Input: 3×64×64 advised.
  CliRun tr = cli("train " + proj + " --data " + photos + " --epochs 1 --steps-per-epoch 1");
  ASSERT_EQ(tr.code, 0) << tr.out;
  const std::string hint = "deepcanvas-cli edit " + proj + " --set input.shape=3x64x64";
  ASSERT_NE(tr.out.find("to use a 3×64×64 Input: " + hint), std::string::npos) << tr.out;

  const std::string before = dc::read_file(proj);
  const std::pair<const char*, const char*> mistakes[] = {
      {"inptu.shape=3x64x64", "no layer named 'inptu'; its layers are input, conv1"},
      {"input.shpe=3x64x64", "'input' (Input) has no attribute 'shpe'; it has shape"},
      {"input.shape=3xl", "--set input.shape: 'l' is not an integer"},
      {"head.units=0", "'units' = 0 is outside"},
      {"input.shape", "expected LAYER.ATTRIBUTE=VALUE"},
      // pool1's 4×4 window does not fit a 2×2 picture.
      {"input.shape=3x2x2", "the network cannot be built: MaxPool2D 'pool1'"}};
  for (const auto& [set, says] : mistakes) {
    CliRun bad = cli("edit " + proj + " --set " + set);
    EXPECT_EQ(bad.code, 1) << set << "\n" << bad.out;
    EXPECT_NE(bad.out.find(says), std::string::npos) << set << "\n" << bad.out;
    EXPECT_EQ(dc::read_file(proj), before) << set;
  }

  // --output leaves the project alone; the hint's own command then edits it.
  const std::string copy = t.path("copy.dcproj");
  ASSERT_EQ(cli("edit " + proj + " --set head.units=3 --output " + copy).code, 0);
  EXPECT_EQ(dc::read_file(proj), before);
  EXPECT_NE(cli("summary " + copy).out.find("head             Dense            3 "),
            std::string::npos);
  CliRun ed = cli_command(std::string(DC_CLI) + hint.substr(std::string("deepcanvas-cli").size()));
  ASSERT_EQ(ed.code, 0) << ed.out;
  EXPECT_NE(ed.out.find("input.shape: 1×8×8 -> 3×64×64"), std::string::npos) << ed.out;
  EXPECT_NE(cli("summary " + proj).out.find("input            Input            3x64x64"),
            std::string::npos);
  CliRun again = cli("train " + proj + " --data " + photos + " --epochs 1 --steps-per-epoch 1");
  ASSERT_EQ(again.code, 0) << again.out;
  EXPECT_EQ(again.out.find("to use a"), std::string::npos) << again.out;
}

TEST(CliImages, ProblemsBeforeARunNameTheFlagThatFixesThem) {
  Tmp t;
  const std::string photos = photo_folder(t, false);
  const std::string proj = image_project(t);
  // The checkpoint's folder cannot be made below a file.
  CliRun out = cli("train " + proj + " --data " + photos +
                   " --epochs 1 --checkpoint /etc/hostname/m.safetensors");
  EXPECT_EQ(out.code, 1) << out.out;
  EXPECT_NE(out.out.find("--checkpoint /etc/hostname/m.safetensors: cannot create the folder"),
            std::string::npos)
      << out.out;
  // A million samples of the sample CNN need hundreds of GiB.
  CliRun mem = cli("lr-find " + kSample + " --batch 1000000");
  EXPECT_EQ(mem.code, 1) << mem.out;
  EXPECT_NE(mem.out.find("Lower --batch"), std::string::npos) << mem.out;
  // An epoch count below a resumed run's: the engine names the setting,
  // the CLI its flag.
  ASSERT_EQ(cli("train " + proj + " --data " + photos + " --epochs 2 --quiet --checkpoint-dir " +
                t.path("runs"))
                .code,
            0);
  CliRun resume = cli("train " + proj + " --data " + photos + " --epochs 1 --quiet --resume " +
                      t.path("runs/last.safetensors"));
  EXPECT_EQ(resume.code, 1) << resume.out;
  EXPECT_NE(resume.out.find("ask for more than that (--epochs)"), std::string::npos) << resume.out;
}

// predict reads a picture as evaluation does (read_image_chw, as the
// Inference tab): for a project on an image folder, resized and
// centre-cropped by its crop_fraction. Before, predict resized the whole
// picture whatever the project said, so a red picture with a blue centre
// scored alike under every crop.
TEST(CliImages, PredictCropsAPictureAsTheProjectsEvaluationDoes) {
  Tmp t;
  const std::string photos = photo_folder(t, false);
  const std::string ck = t.path("model.safetensors");
  ASSERT_EQ(cli("train " + image_project(t) + " --data " + photos + " --epochs 2 --quiet " +
                "--checkpoint " + ck)
                .code,
            0);
  const std::string pic = t.path("framed.bmp");
  write_bmp(pic, 64, 64, 200, 90, 40, 7, Rgb{40, 90, 200});
  auto predicted = [&](double crop) {
    nlohmann::json p = nlohmann::json::parse(read_file(image_project(t)));
    p["dataset"] = {{"kind", "image_folder"}, {"path", photos}, {"crop_fraction", crop}};
    const std::string proj = t.write("crop.dcproj", p.dump(2));
    CliRun r = cli("predict " + proj + " --checkpoint " + ck + " " + pic);
    EXPECT_EQ(r.code, 0) << r.out;
    return r.out;
  };
  const std::string whole = predicted(1.0), centre = predicted(0.5);
  EXPECT_NE(whole.find("framed.bmp"), std::string::npos) << whole;
  EXPECT_NE(whole, centre) << "the crop fraction changed nothing:\n" << whole;
  // A crop of half keeps only the blue centre: nearly the scores of a
  // plain blue picture under crop 1 (the noise and the edges of the
  // resize differ), far from the framed picture's as a whole.
  const std::string blue = t.path("blue.bmp");
  write_bmp(blue, 32, 32, 40, 90, 200, 7);
  nlohmann::json p = nlohmann::json::parse(read_file(image_project(t)));
  p["dataset"] = {{"kind", "image_folder"}, {"path", photos}, {"crop_fraction", 1.0}};
  CliRun b =
      cli("predict " + t.write("whole.dcproj", p.dump(2)) + " --checkpoint " + ck + " " + blue);
  ASSERT_EQ(b.code, 0) << b.out;
  // The printed probability of "cat".
  const auto cat = [](const std::string& out) {
    const size_t at = out.find("  cat ");
    return at == std::string::npos ? -1.0 : std::stod(out.substr(at + 6));
  };
  std::printf("cat %%: whole %.2f, centre %.2f, blue %.2f\n", cat(whole), cat(centre), cat(b.out));
  EXPECT_NEAR(cat(centre), cat(b.out), 2.0) << centre << b.out;
  EXPECT_GT(std::abs(cat(whole) - cat(centre)), 10.0) << whole << centre;
}

}  // namespace
}  // namespace dc::e2e
