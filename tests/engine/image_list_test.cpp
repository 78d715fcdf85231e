// Listing image folders and CSV lists (issue 31): the documented walk and
// split (train.py repeats them), and bad files that lose nothing and stop
// nothing: each is named in ImageList::skipped with its reason while the
// good images still load.
#include <deepcanvas/image_data.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "test_util.h"

namespace dc {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  std::ifstream f(std::string(DC_SOURCE_DIR) + "/tests/data/fixtures/" + name, std::ios::binary);
  EXPECT_TRUE(f) << name;
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write(const fs::path& p, const std::string& bytes) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << bytes;
}

// A good image (the same bytes each time: the listing reads no pixels).
void good(const fs::path& p) {
  write(p, fixture("corner_32x16.jpg"));
}

// A PNG whose IHDR claims 60000×60000 (a few dozen bytes; CRCs not checked
// by the listing).
std::string huge_png() {
  std::string b("\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0\xea\x60\0\0\xea\x60\x08\x02\0\0\0", 29);
  b += std::string(4, '\0');
  b += std::string("\0\0\0\0IEND\xae\x42\x60\x82", 12);
  return b;
}

const SkippedFile* find_skipped(const ImageList& l, const std::string& rel) {
  for (const SkippedFile& s : l.skipped)
    if (s.path == rel) return &s;
  return nullptr;
}

std::vector<std::string> names(const std::vector<ImageItem>& v, const std::string& root) {
  std::vector<std::string> r;
  for (const ImageItem& i : v) r.push_back(fs::path(i.path).lexically_relative(root).string());
  return r;
}

ImageListOptions no_split() {
  ImageListOptions o;
  o.test_fraction = 0;
  return o;
}

TEST(ImageList, BadFilesAreSkippedAndNamedWhileTheGoodOnesLoad) {
  test::TmpDir t;
  const fs::path r = t.dir / "photos";
  good(r / "cats" / "a.jpg");
  good(r / "cats" / "deeper" / "b.jpg");
  write(r / "cats" / "b.bmp", fixture("quad_8x6.bmp"));
  const std::string j = fixture("corner_32x16.jpg");
  write(r / "cats" / "truncated.jpg", j.substr(0, j.size() / 2));
  write(r / "cats" / "empty.png", "");
  write(r / "cats" / "text.jpg", "not a picture\n");
  write(r / "cats" / "huge.png", huge_png());
  write(r / "cats" / "notes.txt", "hello");
  good(r / "cats" / ".hidden.jpg");
  good(r / ".thumbnails" / "x.jpg");                                  // a hidden class folder
  good(r / "cats" / ".cache" / "y.jpg");                              // a hidden folder in a class
  fs::create_directory_symlink("..", r / "cats" / "up");              // a loop to the root
  fs::create_directory_symlink(".", r / "cats" / "deeper" / "here");  // to itself
  fs::create_symlink("self.jpg", r / "cats" / "self.jpg");            // a file link to itself
  fs::create_symlink("nowhere.jpg", r / "cats" / "dangling.jpg");
  good(r / "dogs" / "ünï cödé 狗.jpg");
  good(r / "żółw" / "1.jpg");
  write(r / "no_images" / "readme.txt", "x");
  fs::create_directory(r / "nothing");

  const ImageList l = list_image_folder(r.string(), no_split());
  EXPECT_EQ(l.class_names, (std::vector<std::string>{"cats", "dogs", "żółw"}));
  EXPECT_EQ(l.empty_classes, (std::vector<std::string>{"no_images", "nothing"}));
  EXPECT_EQ(names(l.train, r.string()),
            (std::vector<std::string>{"cats/a.jpg", "cats/b.bmp", "cats/deeper/b.jpg",
                                      "dogs/ünï cödé 狗.jpg", "żółw/1.jpg"}));
  EXPECT_EQ(l.train[3].label, 1);
  EXPECT_EQ(l.train[4].label, 2);
  EXPECT_TRUE(l.test.empty());
  struct Want {
    const char* path;
    const char* why;
    bool bad;
  };
  for (const Want& w :
       {Want{"cats/truncated.jpg", "truncated", true}, Want{"cats/empty.png", "empty file", true},
        Want{"cats/text.jpg", "not an image", true}, Want{"cats/huge.png", "too large", true},
        Want{"cats/notes.txt", "not an image (.txt)", false},
        Want{"cats/.hidden.jpg", "hidden", false}, Want{"cats/.cache", "hidden", false},
        Want{"cats/up", "symlink loop", false}, Want{"cats/deeper/here", "symlink loop", false},
        Want{"cats/self.jpg", "symlink loop", true},
        Want{"no_images/readme.txt", "not an image (.txt)", false}}) {
    const SkippedFile* s = find_skipped(l, w.path);
    ASSERT_NE(s, nullptr) << w.path << " is not in the skipped list";
    EXPECT_EQ(s->why, w.why) << w.path;
    EXPECT_EQ(s->bad_image, w.bad) << w.path;
  }
  const SkippedFile* d = find_skipped(l, "cats/dangling.jpg");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->why.find("No such file"), std::string::npos) << d->why;
  // Inside a hidden folder nothing is looked at, and the folder is named once.
  EXPECT_EQ(find_skipped(l, "cats/.cache/y.jpg"), nullptr);
  // Non-ASCII names survive as UTF-8 bytes and are readable.
  EXPECT_NO_THROW(check_image_file(l.train[3].path));
  EXPECT_TRUE(fs::path(l.train[0].path).is_absolute());
}

TEST(ImageList, BadImagesAreErrorsWhenAsked) {
  test::TmpDir t;
  good(t.dir / "a" / "1.jpg");
  write(t.dir / "a" / "notes.txt", "x");  // not an image by name: still only skipped
  write(t.dir / "b" / "broken.png", huge_png().substr(0, 20));
  ImageListOptions o = no_split();
  EXPECT_NO_THROW(list_image_folder(t.dir.string(), o));
  o.bad_images_are_errors = true;
  try {
    list_image_folder(t.dir.string(), o);
    FAIL() << "a bad image did not stop the listing";
  } catch (const ImageError& e) {
    EXPECT_NE(e.path().find("broken.png"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("broken.png"), std::string::npos);
    EXPECT_EQ(int(e.fault()), int(ImageFault::Truncated));
  }
}

TEST(ImageList, UnreadableFilesAndFoldersAreSkippedWithTheReason) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root, which reads chmod 000 files anyway";
  test::TmpDir t;
  good(t.dir / "a" / "ok.jpg");
  good(t.dir / "a" / "locked.jpg");
  good(t.dir / "a" / "shut" / "x.jpg");
  fs::permissions(t.dir / "a" / "locked.jpg", fs::perms::none);
  fs::permissions(t.dir / "a" / "shut", fs::perms::none);
  const ImageList l = list_image_folder(t.dir.string(), no_split());
  fs::permissions(t.dir / "a" / "shut", fs::perms::owner_all);
  EXPECT_EQ(l.train.size(), 1u);
  const SkippedFile* f = find_skipped(l, "a/locked.jpg");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->why, "unreadable (Permission denied)");
  const SkippedFile* d = find_skipped(l, "a/shut");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->why.find("ermission denied"), std::string::npos) << d->why;
}

TEST(ImageList, ProblemsThatStopTheListingNameTheFolder) {
  test::TmpDir t;
  auto message = [](const std::string& dir) -> std::string {
    try {
      list_image_folder(dir, ImageListOptions{});
    } catch (const Error& e) {
      return e.what();
    }
    return "listed";
  };
  const std::string gone = t.path("missing");
  EXPECT_NE(message(gone).find("'" + gone + "' does not exist"), std::string::npos);
  const std::string file = t.write("file.jpg", "x");
  EXPECT_NE(message(file).find("is a file, not a folder"), std::string::npos);
  EXPECT_THROW(list_image_folder(file, {}), IoError);
  write(t.dir / "flat" / "1.jpg", "x");
  EXPECT_NE(message(t.path("flat")).find("no class folders"), std::string::npos);
  EXPECT_THROW(list_image_folder(t.path("flat"), {}), DataError);
  write(t.dir / "bad" / "a" / "1.jpg", "not an image");
  const std::string m = message(t.path("bad"));
  EXPECT_NE(m.find("no usable image"), std::string::npos) << m;
  EXPECT_NE(m.find("a/1.jpg: not an image"), std::string::npos) << m;
}

// The split as image_data.h documents it, computed here independently.
std::set<std::string> expected_test(const std::vector<std::vector<std::string>>& classes,
                                    double fraction, uint64_t seed) {
  std::set<std::string> out;
  Rng rng(seed);
  for (std::vector<std::string> v : classes) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    for (size_t i = n; i >= 2; --i) std::swap(v[i - 1], v[rng.below(i)]);
    size_t k = size_t(double(n) * fraction + 0.5);
    k = std::min(k, n - 1);
    out.insert(v.begin(), v.begin() + long(k));
  }
  return out;
}

TEST(ImageList, TheTestSplitIsSeededPerClassAndDeterministic) {
  test::TmpDir t;
  std::vector<std::vector<std::string>> classes(3);
  const int counts[3] = {10, 7, 1};
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < counts[c]; ++i) {
      const fs::path p = t.dir / std::string(1, char('a' + c)) / (std::to_string(i) + ".jpg");
      good(p);
      classes[size_t(c)].push_back(p.string());
    }
  ImageListOptions o;
  o.test_fraction = 0.25;
  o.split_seed = 7;
  const ImageList l = list_image_folder(t.dir.string(), o);
  std::map<int, int> n_test;
  std::set<std::string> test, all;
  for (const ImageItem& i : l.test) {
    ++n_test[i.label];
    test.insert(i.path);
  }
  // round(n · fraction), at most n − 1: 10 -> 3 (2.5 rounds up), 7 -> 2, 1 -> 0.
  EXPECT_EQ(n_test[0], 3);
  EXPECT_EQ(n_test[1], 2);
  EXPECT_EQ(n_test[2], 0);
  EXPECT_EQ(l.train.size() + l.test.size(), 18u);
  EXPECT_EQ(test, expected_test(classes, 0.25, 7));
  for (const ImageItem& i : l.train) all.insert(i.path);
  for (const std::string& s : test) EXPECT_EQ(all.count(s), 0u) << s;
  // Ordered by class, then path.
  for (const auto* v : {&l.train, &l.test})
    for (size_t k = 1; k < v->size(); ++k)
      EXPECT_TRUE((*v)[k - 1].label < (*v)[k].label ||
                  ((*v)[k - 1].label == (*v)[k].label && (*v)[k - 1].path < (*v)[k].path));
  // The same seed, the same split; another seed, another.
  const ImageList again = list_image_folder(t.dir.string(), o);
  EXPECT_EQ(names(again.test, t.dir.string()), names(l.test, t.dir.string()));
  o.split_seed = 8;
  EXPECT_EQ(test.size(), expected_test(classes, 0.25, 8).size());
  std::set<std::string> other;
  for (const ImageItem& i : list_image_folder(t.dir.string(), o).test) other.insert(i.path);
  EXPECT_EQ(other, expected_test(classes, 0.25, 8));
  EXPECT_NE(other, test);
}

TEST(ImageList, TrainValAndTestFoldersAreHonoured) {
  test::TmpDir t;
  for (const char* f : {"train/a/1.jpg", "train/a/2.jpg", "train/b/1.jpg", "train/b/2.jpg",
                        "val/a/v.jpg", "val/b/v.jpg", "test/a/t.jpg", "test/c/t.jpg"})
    good(t.dir / f);
  const ImageList l = list_image_folder(t.dir.string(), ImageListOptions{});
  EXPECT_EQ(l.class_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(names(l.train, t.dir.string()),
            (std::vector<std::string>{"train/a/1.jpg", "train/a/2.jpg", "train/b/1.jpg",
                                      "train/b/2.jpg"}));
  EXPECT_EQ(names(l.val, t.dir.string()), (std::vector<std::string>{"val/a/v.jpg", "val/b/v.jpg"}));
  // test/ exists: no fraction taken from train; test/c is not a class.
  EXPECT_EQ(names(l.test, t.dir.string()), (std::vector<std::string>{"test/a/t.jpg"}));
  // Without test/, the fraction splits train; val still from val/.
  fs::remove_all(t.dir / "test");
  ImageListOptions o;
  o.test_fraction = 0.5;
  const ImageList s = list_image_folder(t.dir.string(), o);
  EXPECT_EQ(s.test.size(), 2u);
  EXPECT_EQ(s.train.size(), 2u);
  EXPECT_EQ(s.val.size(), 2u);
}

TEST(ImageList, ACsvListEqualsTheFolder) {
  test::TmpDir t;
  const fs::path r = t.dir / "data";
  std::string csv = "\xEF\xBB\xBFlabel,path\r\n";  // BOM, CRLF, columns in any order
  for (const char* c : {"cats", "dogs", "ẞ"})
    for (int i = 0; i < 6; ++i) {
      const std::string name = std::string(c) + "/" + (i == 2 ? "a, \"b\"" : "") +
                               std::to_string(i * 7 % 5) + std::to_string(i) + ".jpg";
      good(r / name);
      std::string q = name;
      for (size_t k = q.find('"'); k != std::string::npos; k = q.find('"', k + 2))
        q.insert(k, "\"");
      // Rows in a shuffled order; quoted where they must be.
      csv += std::string(c) + ",\"" + q + "\"\r\n";
    }
  write(r / "list.csv", csv);
  ImageListOptions o;
  o.test_fraction = 0.3;
  o.split_seed = 3;
  const ImageList a = list_image_folder(r.string(), o);
  const ImageList b = list_image_csv((r / "list.csv").string(), o);
  EXPECT_EQ(a.class_names, b.class_names);
  EXPECT_EQ(a.root, b.root);
  for (auto [x, y] : {std::pair{&a.train, &b.train}, std::pair{&a.test, &b.test}}) {
    ASSERT_EQ(x->size(), y->size());
    for (size_t k = 0; k < x->size(); ++k) {
      EXPECT_EQ((*x)[k].path, (*y)[k].path);
      EXPECT_EQ((*x)[k].label, (*y)[k].label);
    }
  }
  EXPECT_EQ(b.train.size() + b.test.size(), 18u);
}

TEST(ImageList, CsvSplitsBadRowsAndMalformedLines) {
  test::TmpDir t;
  good(t.dir / "img" / "1.jpg");
  good(t.dir / "img" / "2.jpg");
  good(t.dir / "img" / "3.jpg");
  good(t.dir / "abs.jpg");
  write(t.dir / "img" / "bad.jpg", "text");
  const std::string abs = (t.dir / "abs.jpg").string();
  auto csv = [&](const std::string& text) { return t.write("list.csv", text); };
  const std::string list =
      csv("path,label,split\n"
          "img/1.jpg,b,train\n"
          "img/2.jpg,a,\n"
          "\n"
          "\"img/3.jpg\",b,VAL\n" +
          abs + ",a,test\n" +
          "img/gone.jpg,a,train\n"
          "img/bad.jpg,c,train\n");
  const ImageList l = list_image_csv(list, ImageListOptions{});
  EXPECT_EQ(l.class_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(l.empty_classes, (std::vector<std::string>{"c"}));
  EXPECT_EQ(l.root, t.dir.string());
  ASSERT_EQ(l.train.size(), 2u);
  EXPECT_EQ(l.train[0].path, (t.dir / "img" / "2.jpg").string());
  EXPECT_EQ(l.train[0].label, 0);
  EXPECT_EQ(l.train[1].label, 1);
  ASSERT_EQ(l.val.size(), 1u);
  EXPECT_EQ(l.val[0].label, 1);
  ASSERT_EQ(l.test.size(), 1u);  // a test row: no fraction split
  EXPECT_EQ(l.test[0].path, abs);
  const SkippedFile* gone = find_skipped(l, "img/gone.jpg");
  ASSERT_NE(gone, nullptr);
  EXPECT_EQ(gone->why, "line 7: unreadable (No such file or directory)");
  const SkippedFile* bad = find_skipped(l, "img/bad.jpg");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->why, "line 8: not an image");
  EXPECT_TRUE(bad->bad_image);

  ImageListOptions strict;
  strict.bad_images_are_errors = true;
  try {
    list_image_csv(list, strict);
    FAIL() << "a missing file did not stop the listing";
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find("gone.jpg"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("line 7"), std::string::npos) << e.what();
  }

  auto message = [&](const std::string& text) -> std::string {
    try {
      list_image_csv(csv(text), ImageListOptions{});
    } catch (const DataError& e) {
      return e.what();
    }
    return "listed";
  };
  // A quoted line break counts as a line: the bad row is line 4.
  EXPECT_NE(message("path,label\nimg/1.jpg,\"two\nlines\"\nimg/2.jpg,a,extra\n")
                .find("line 4: 3 fields where the header has 2"),
            std::string::npos);
  EXPECT_NE(message("path,label\nimg/1.jpg,a\n,a\n").find("line 3: the path is empty"),
            std::string::npos);
  EXPECT_NE(message("file,class\nimg/1.jpg,a\n").find("line 1: the header must name"),
            std::string::npos);
  EXPECT_NE(message("path,label\n\"img/1.jpg,a\n").find("not closed"), std::string::npos);
  EXPECT_NE(message("path,label,split\nimg/1.jpg,a,holdout\n").find("line 2: the split"),
            std::string::npos);
  EXPECT_NE(message("").find("empty"), std::string::npos);
}

TEST(ImageList, LooksLikeAnImageFolderIsCheapAndBounded) {
  test::TmpDir t;
  EXPECT_FALSE(looks_like_image_folder(t.path("missing")));
  write(t.dir / "text" / "a" / "notes.txt", "x");
  EXPECT_FALSE(looks_like_image_folder(t.path("text")));
  good(t.dir / "img" / "a" / "deep" / "1.jpg");
  EXPECT_TRUE(looks_like_image_folder(t.path("img")));
  good(t.dir / "split" / "train" / "a" / "1.png");
  EXPECT_TRUE(looks_like_image_folder(t.path("split")));
  EXPECT_FALSE(looks_like_image_folder(t.path("img/a/deep/1.jpg")));
  // A loop with no image in it ends.
  fs::create_directories(t.dir / "loop" / "a");
  fs::create_directory_symlink("..", t.dir / "loop" / "a" / "up");
  EXPECT_FALSE(looks_like_image_folder(t.path("loop")));
  good(t.dir / "hidden" / "a" / ".x.jpg");
  EXPECT_FALSE(looks_like_image_folder(t.path("hidden")));
}

// A folder opened for prediction (predict and the Inference tab share
// this): its own pictures only, hidden ones left out, links followed,
// sorted bytewise; an empty result rather than an error when there are none.
TEST(ImageList, PictureFilesInAFolderAreItsOwnSortedAndVisible) {
  test::TmpDir t;
  const fs::path d = t.path("photos");
  good(d / "b.jpg");
  good(d / "A.JPEG");  // upper case: bytewise before the lower-case names
  good(d / "a.png");
  good(d / ".hidden.jpg");
  good(d / "sub" / "deeper.jpg");  // a subfolder is not opened
  write(d / "notes.txt", "not a picture");
  fs::create_symlink(d / "b.jpg", d / "link.jpg");
  fs::create_symlink(d / "gone.jpg", d / "dangling.jpg");
  fs::create_directory(d / "folder.jpg");  // a folder with a picture's name
  std::vector<std::string> got;
  for (const std::string& f : image_files_in(d.string()))
    got.push_back(fs::path(f).lexically_relative(d).string());
  EXPECT_EQ(got, (std::vector<std::string>{"A.JPEG", "a.png", "b.jpg", "link.jpg"}));
  EXPECT_EQ(image_files_in((d / "sub").string()).size(), 1u);
  fs::create_directory(t.path("empty"));
  EXPECT_TRUE(image_files_in(t.path("empty")).empty());
  EXPECT_THROW(image_files_in(t.path("missing")), IoError);
}

// A whole dataset opened where pictures were expected (predict, the
// Inference tab): the class folders are named, so the message can say
// what to open instead.
TEST(ImageList, AFolderOfClassFoldersNamesThem) {
  test::TmpDir t;
  const fs::path d = t.path("photos");
  good(d / "dog" / "1.jpg");
  good(d / "cat" / "1.png");
  fs::create_directories(d / ".thumbs" / "x");
  EXPECT_EQ(class_folders_in(d.string()), (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(class_folders_note(d.string()),
            d.string() + " holds class folders (cat, dog), not pictures");
  for (const char* c : {"ant", "bee", "eel"}) good(d / c / "1.jpg");
  EXPECT_EQ(class_folders_note(d.string()),
            d.string() + " holds class folders (ant, bee, cat and 2 more), not pictures");
  // Pictures of its own: a folder of pictures, whatever else it holds.
  good(d / "stray.jpg");
  EXPECT_TRUE(class_folders_in(d.string()).empty());
  EXPECT_EQ(class_folders_note(d.string()), "");
  // Split into train/ and test/: the classes are train/'s.
  const fs::path split = t.path("split");
  good(split / "train" / "owl" / "1.jpg");
  good(split / "train" / "bat" / "1.jpg");
  good(split / "test" / "owl" / "1.jpg");
  EXPECT_EQ(class_folders_in(split.string()), (std::vector<std::string>{"bat", "owl"}));
  EXPECT_EQ(
      class_folders_note(split.string()),
      split.string() + " holds a dataset with class folders (bat, owl) in train/, not pictures");
  // No pictures anywhere, or no folder at all.
  fs::create_directories(t.path("empty") + "/sub");
  EXPECT_TRUE(class_folders_in(t.path("empty")).empty());
  EXPECT_TRUE(class_folders_in(t.path("missing")).empty());
}

}  // namespace
}  // namespace dc
