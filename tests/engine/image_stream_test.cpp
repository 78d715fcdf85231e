// Image folders streamed, cached or held in memory (issue 31): the same
// batches for the same seed whichever path runs, torchvision's transforms
// from the stored picture, the cache's reuse, invalidation and rebuild, and
// files that turn bad after listing. Pictures are written as PNG (zlib) and
// BMP by the test itself.
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/image_data.h>
#include <deepcanvas/project.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/trainer.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace dc {
namespace {

namespace fs = std::filesystem;

void be32(std::string& s, uint32_t v) {
  for (int k = 3; k >= 0; --k) s.push_back(char((v >> (8 * k)) & 0xff));
}
void le(std::string& s, uint32_t v, int bytes) {
  for (int k = 0; k < bytes; ++k) s.push_back(char((v >> (8 * k)) & 0xff));
}

// An 8-bit PNG of h×w pixels of c = 1 (grey) or 3 (RGB) bytes, HWC.
std::string png(int h, int w, int c, const std::vector<uint8_t>& px) {
  std::string raw;
  for (int y = 0; y < h; ++y) {
    raw.push_back(0);  // filter: none
    raw.append(reinterpret_cast<const char*>(px.data()) + size_t(y) * w * c, size_t(w) * c);
  }
  uLongf zn = compressBound(uLong(raw.size()));
  std::string z(zn, '\0');
  compress(reinterpret_cast<Bytef*>(z.data()), &zn, reinterpret_cast<const Bytef*>(raw.data()),
           uLong(raw.size()));
  z.resize(zn);
  std::string out("\x89PNG\r\n\x1a\n", 8);
  auto chunk = [&](const char* type, const std::string& data) {
    be32(out, uint32_t(data.size()));
    std::string td = std::string(type, 4) + data;
    out += td;
    be32(out, uint32_t(crc32(0, reinterpret_cast<const Bytef*>(td.data()), uInt(td.size()))));
  };
  std::string ihdr;
  be32(ihdr, uint32_t(w));
  be32(ihdr, uint32_t(h));
  ihdr += std::string{char(8), char(c == 1 ? 0 : 2), 0, 0, 0};
  chunk("IHDR", ihdr);
  chunk("IDAT", z);
  chunk("IEND", "");
  return out;
}

// A 24-bit BMP of an RGB picture.
std::string bmp(int h, int w, const std::vector<uint8_t>& rgb) {
  const int row = (w * 3 + 3) / 4 * 4;
  std::string s = "BM";
  le(s, uint32_t(54 + row * h), 4);
  le(s, 0, 4);
  le(s, 54, 4);
  le(s, 40, 4);
  le(s, uint32_t(w), 4);
  le(s, uint32_t(h), 4);
  le(s, 1, 2);
  le(s, 24, 2);
  for (int k = 0; k < 6; ++k) le(s, 0, 4);
  for (int y = h - 1; y >= 0; --y) {
    for (int x = 0; x < w; ++x)
      for (int c = 2; c >= 0; --c) s.push_back(char(rgb[size_t((y * w + x) * 3 + c)]));
    s.append(size_t(row - w * 3), '\0');
  }
  return s;
}

// A picture with structure at every scale, different for every seed.
std::vector<uint8_t> pattern(int h, int w, uint64_t seed) {
  std::vector<uint8_t> px(size_t(h) * w * 3);
  Rng r(seed);
  const int fx = 1 + int(r.below(5)), fy = 1 + int(r.below(5)), base = int(r.below(200));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        px[size_t((y * w + x) * 3 + c)] =
            uint8_t((base + x * fx * (c + 1) + y * fy * (3 - c) + int(r.below(24))) & 0xff);
  return px;
}

void write(const std::string& path, const std::string& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// 40 pictures of varied sizes and aspects in 4 classes, PNG and BMP.
struct Folder {
  test::TmpDir tmp;
  std::string root;
  Folder() {
    root = tmp.path("photos");
    for (int k = 0; k < 40; ++k) {
      const int h = 18 + (k * 37) % 70, w = 18 + (k * 53) % 110;
      const std::string cls = "class" + std::to_string(k % 4);
      const std::string name = root + "/" + cls + "/img" + std::to_string(k);
      const std::vector<uint8_t> px = pattern(h, w, uint64_t(k + 1));
      if (k % 5 == 0)
        write(name + ".bmp", bmp(h, w, px));
      else
        write(name + ".png", png(h, w, 3, px));
    }
  }
  ImageList list() const { return list_image_folder(root, {}); }
};

ImageTransform training_transform() {
  ImageTransform t;
  t.input = Shape{3, 16, 16};
  t.random_resized_crop = true;
  t.color_jitter = 0.4;
  return t;
}

ImageLoadOptions options(ImageLoadOptions::Mode mode, const std::string& cache, int workers) {
  ImageLoadOptions o;
  o.mode = mode;
  o.cache_dir = cache;
  o.workers = workers;
  return o;
}

struct Batches {
  std::vector<float> x;
  std::vector<int32_t> labels;
  int64_t samples = 0;
};

// Every batch of `epochs` training epochs, in order.
Batches run_epochs(const Dataset& d, int first, int epochs, uint64_t seed = 7) {
  std::vector<int64_t> idx(size_t(d.size()));
  for (int64_t i = 0; i < d.size(); ++i) idx[size_t(i)] = i;
  BatchLoader loader(d, idx, 8, /*shuffle=*/true, /*drop_last=*/false, seed, 2,
                     /*training_draws=*/true);
  Batches r;
  for (int e = first; e < first + epochs; ++e) {
    loader.start_epoch(e);
    Batch b;
    while (loader.next(b)) {
      r.x.insert(r.x.end(), b.x.f32(), b.x.f32() + b.x.numel());
      r.labels.insert(r.labels.end(), b.labels.begin(), b.labels.end());
      r.samples += b.n;
    }
  }
  return r;
}

bool same(const Batches& a, const Batches& b) {
  return a.samples == b.samples && a.labels == b.labels && a.x.size() == b.x.size() &&
         std::memcmp(a.x.data(), b.x.data(), a.x.size() * sizeof(float)) == 0;
}

std::vector<std::string> cache_files(const std::string& dir) {
  std::vector<std::string> v;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".dcache") v.push_back(it->path().string());
  return v;
}

TEST(ImageStream, StreamedMemoryAndCachedBatchesAreBitwiseEqual) {
  Folder f;
  const ImageList list = f.list();
  ASSERT_EQ(list.train.size() + list.test.size(), 40u);
  const ImageTransform t = training_transform();
  const std::string cache = f.tmp.path("cache");
  TrainTest mem = load_image_dataset(list, t, options(ImageLoadOptions::Mode::Memory, "", 3));
  TrainTest str = load_image_dataset(list, t, options(ImageLoadOptions::Mode::Stream, "none", 2));
  TrainTest cached = load_image_dataset(list, t, options(ImageLoadOptions::Mode::Stream, cache, 4));
  ASSERT_FALSE(mem.train.images->streaming());
  ASSERT_TRUE(str.train.images->streaming());
  const Batches a = run_epochs(mem.train, 1, 3);
  EXPECT_EQ(a.samples, 3 * mem.train.size());
  EXPECT_TRUE(same(a, run_epochs(str.train, 1, 3))) << "streamed without a cache";
  EXPECT_TRUE(same(a, run_epochs(cached.train, 1, 3))) << "streamed, building the cache";
  ASSERT_EQ(cache_files(cache).size(), 1u) << cached.train.images->mode_note();
  // A later run reads the published cache and decodes nothing.
  TrainTest again = load_image_dataset(list, t, options(ImageLoadOptions::Mode::Stream, cache, 1));
  EXPECT_TRUE(same(a, run_epochs(again.train, 1, 3))) << "streamed from the cache file";
  EXPECT_EQ(again.train.images->decodes(), 0);
  EXPECT_EQ(again.train.images->cache_hits(), 3 * again.train.size());
  // The augmentation is there: epochs differ, and the evaluation loader
  // gives the same bytes every epoch.
  const int64_t per = 3 * 16 * 16, n = mem.train.size();
  const Batches one = run_epochs(mem.train, 1, 1), two = run_epochs(mem.train, 2, 1);
  EXPECT_NE(one.x, two.x);
  std::vector<int64_t> idx{0};
  std::vector<float> e1(static_cast<size_t>(per)), e2(e1), t1(e1);
  mem.train.gather(idx.data(), 1, e1.data(), nullptr);
  str.train.gather(idx.data(), 1, e2.data(), nullptr);
  EXPECT_EQ(e1, e2);
  mem.train.gather(idx.data(), 1, t1.data(), nullptr, epoch_draw_seed(7, 1));
  EXPECT_NE(e1, t1);
  // In order, epoch by epoch: the loader's pictures are drawn from the
  // epoch's seed, a new draw every epoch.
  std::vector<int64_t> all(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) all[size_t(i)] = i;
  BatchLoader ordered(mem.train, all, n, /*shuffle=*/false, false, 7, 2, /*training_draws=*/true);
  std::vector<float> epochs[2];
  for (int e = 1; e <= 2; ++e) {
    ordered.start_epoch(e);
    Batch b;
    ASSERT_TRUE(ordered.next(b));
    epochs[e - 1].assign(b.x.f32(), b.x.f32() + b.x.numel());
    std::vector<float> want(static_cast<size_t>(n * per));
    EXPECT_EQ(str.train.gather(all.data(), n, want.data(), nullptr, epoch_draw_seed(7, e)), n);
    EXPECT_EQ(epochs[e - 1], want) << "epoch " << e;
  }
  EXPECT_NE(epochs[0], epochs[1]);
}

TEST(ImageStream, StoredPicturesAreCappedAtTheTrainingResolution) {
  ImageTransform t;
  t.input = Shape{3, 16, 16};
  t.crop_fraction = 0.875;
  EXPECT_EQ(stored_side(t), 19);  // ceil(16 / 0.875)
  Picture p;
  p.h = 100;
  p.w = 600;
  p.c = 3;
  p.px.assign(size_t(p.bytes()), 9);
  const Picture s = store_picture(p, t);
  // Shorter side 19 would make the longer 114 > 4 S = 76: the cap wins.
  EXPECT_EQ(s.w, 76);
  EXPECT_EQ(s.h, 13);
  Picture small = p;
  small.h = 10;
  small.w = 12;
  small.px.assign(size_t(small.bytes()), 9);
  EXPECT_EQ(store_picture(small, t).w, 12) << "never enlarged";
}

TEST(ImageStream, EvaluationIsResizeThenCentreCrop) {
  // 32×64 (1:2) of 2×2 blocks: resizing by 1/2 with area averaging gives
  // each block's value exactly.
  Picture p;
  p.h = 32;
  p.w = 64;
  p.c = 3;
  p.px.resize(size_t(p.bytes()));
  auto block = [](int by, int bx, int c) { return uint8_t((by * 7 + bx * 3 + c * 50) & 0xff); };
  for (int y = 0; y < p.h; ++y)
    for (int x = 0; x < p.w; ++x)
      for (int c = 0; c < 3; ++c) p.px[size_t((y * p.w + x) * 3 + c)] = block(y / 2, x / 2, c);
  ImageTransform t;
  t.input = Shape{3, 8, 8};
  t.crop_fraction = 0.5;  // cover 16×16: the picture becomes 16×32
  std::vector<uint8_t> chw(3 * 8 * 8);
  picture_to_chw(p, t, 0, 0, chw.data());
  const int y0 = (16 - 8) / 2, x0 = (32 - 8) / 2;
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 8; ++y)
      for (int x = 0; x < 8; ++x)
        ASSERT_EQ(chw[size_t(c * 64 + y * 8 + x)], block(y0 + y, x0 + x, c))
            << c << " " << y << " " << x;
  // Training without a random part is the evaluation transform.
  std::vector<uint8_t> plain(chw.size());
  picture_to_chw(p, t, 12345, 3, plain.data());
  EXPECT_EQ(plain, chw);
}

TEST(ImageStream, RandomResizedCropDrawsStayInRangeAndChangeWithTheEpoch) {
  const int H = 300, W = 400;
  double lo = 1, hi = 0;
  int differ = 0;
  for (int64_t i = 0; i < 500; ++i) {
    const CropBox b = random_resized_crop_box(H, W, epoch_draw_seed(3, 1), i);
    ASSERT_GE(b.x, 0);
    ASSERT_GE(b.y, 0);
    ASSERT_LE(b.x + b.w, W);
    ASSERT_LE(b.y + b.h, H);
    // The sides are rounded: the drawn area and ratio lie within half a
    // pixel of them.
    const double area = double(H) * W;
    EXPECT_GE((b.w + 0.5) * (b.h + 0.5), 0.08 * area);
    EXPECT_LE((b.w - 0.5) * (b.h - 0.5), area);
    EXPECT_LE((b.w - 0.5) / (b.h + 0.5), 4.0 / 3.0);
    EXPECT_GE((b.w + 0.5) / (b.h - 0.5), 3.0 / 4.0);
    lo = std::min(lo, b.w * double(b.h) / area);
    hi = std::max(hi, b.w * double(b.h) / area);
    const CropBox c = random_resized_crop_box(H, W, epoch_draw_seed(3, 2), i);
    differ += c.x != b.x || c.y != b.y || c.w != b.w || c.h != b.h;
    const CropBox d = random_resized_crop_box(H, W, epoch_draw_seed(3, 1), i);
    EXPECT_TRUE(d.x == b.x && d.y == b.y && d.w == b.w && d.h == b.h) << "not repeatable";
  }
  EXPECT_LT(lo, 0.15);
  EXPECT_GT(hi, 0.8);
  EXPECT_GT(differ, 490);
  // A strip too thin for any draw falls back to its centre, ratio clamped.
  const CropBox f = random_resized_crop_box(10, 1000, 5, 0);
  EXPECT_EQ(f.h, 10);
  EXPECT_EQ(f.w, 13);
  EXPECT_EQ(f.x, (1000 - 13) / 2);
}

TEST(ImageStream, TheCachedSecondEpochDecodesNothing) {
  Folder f;
  const std::string cache = f.tmp.path("cache");
  TrainTest tt = load_image_dataset(f.list(), training_transform(),
                                    options(ImageLoadOptions::Mode::Stream, cache, 2));
  const ImageSamples& s = *tt.train.images;
  const int64_t n = tt.train.size();
  EXPECT_NE(s.mode_note().find("cache being built at " + cache), std::string::npos)
      << s.mode_note();
  run_epochs(tt.train, 1, 1);
  EXPECT_EQ(s.decodes(), n);
  EXPECT_EQ(s.cache_hits(), 0);
  EXPECT_NE(s.mode_note().find("cache at " + cache), std::string::npos) << s.mode_note();
  run_epochs(tt.train, 2, 1);
  EXPECT_EQ(s.decodes(), n);
  EXPECT_EQ(s.cache_hits(), n);
}

TEST(ImageStream, AChangedFileInvalidatesTheCache) {
  Folder f;
  const std::string cache = f.tmp.path("cache");
  const ImageList list = f.list();
  const ImageTransform t = training_transform();
  const auto o = options(ImageLoadOptions::Mode::Stream, cache, 2);
  TrainTest first = load_image_dataset(list, t, o);
  const Batches before = run_epochs(first.train, 1, 1);
  const std::vector<std::string> old_files = cache_files(cache);
  ASSERT_EQ(old_files.size(), 1u);
  // New contents, and a later time in case the size happens to match.
  const std::string changed = list.train[0].path;
  write(changed, png(40, 40, 3, pattern(40, 40, 999)));
  fs::last_write_time(changed, fs::last_write_time(changed) + std::chrono::seconds(10));
  TrainTest second = load_image_dataset(list, t, o);
  const Batches after = run_epochs(second.train, 1, 1);
  EXPECT_EQ(second.train.images->decodes(), second.train.size()) << "the old cache was used";
  EXPECT_EQ(second.train.images->cache_hits(), 0);
  EXPECT_FALSE(same(before, after));
  const std::vector<std::string> now = cache_files(cache);
  ASSERT_EQ(now.size(), 1u) << "the stale cache stays beside the new one";
  EXPECT_NE(now[0], old_files[0]);
}

TEST(ImageStream, ACorruptCacheFileIsRebuilt) {
  Folder f;
  const std::string cache = f.tmp.path("cache");
  const ImageList list = f.list();
  const ImageTransform t = training_transform();
  const auto o = options(ImageLoadOptions::Mode::Stream, cache, 2);
  TrainTest mem = load_image_dataset(list, t, options(ImageLoadOptions::Mode::Memory, "", 2));
  const Batches want = run_epochs(mem.train, 1, 2);
  {
    TrainTest build = load_image_dataset(list, t, o);
    run_epochs(build.train, 1, 1);
  }
  std::vector<std::string> files = cache_files(cache);
  ASSERT_EQ(files.size(), 1u);
  const std::string path = files[0];
  const auto size = fs::file_size(path);
  for (int damage = 0; damage < 3; ++damage) {
    if (damage == 0) {
      fs::resize_file(path, size / 2);  // truncated
    } else {
      // A record header (damage 1) or an index entry (damage 2) overwritten.
      std::fstream io(path, std::ios::in | std::ios::out | std::ios::binary);
      io.seekp(damage == 1 ? 8 + 4 : std::streamoff(size) - 40 - 16 * 3);
      io.write("\x7f\x7f\x7f\x7f\x7f\x7f\x7f\x7f", 8);
    }
    TrainTest again = load_image_dataset(list, t, o);
    EXPECT_TRUE(same(want, run_epochs(again.train, 1, 2))) << "damage " << damage;
    EXPECT_EQ(again.train.images->decodes(), again.train.size()) << "damage " << damage;
    ASSERT_EQ(cache_files(cache).size(), 1u);
    EXPECT_EQ(fs::file_size(cache_files(cache)[0]), size) << "rebuilt whole, damage " << damage;
  }
}

// Pictures decoded from files are bytes, as IDX images are: brightening
// stops at white for them too (it did not, while the levels took a folder
// for float data), in memory or streamed, on the CPU as on the GPU.
TEST(ImageStream, BrightnessIsCappedAtWhiteForPicturesFromFiles) {
  Folder f;
  for (auto mode : {ImageLoadOptions::Mode::Stream, ImageLoadOptions::Mode::Memory}) {
    TrainTest tt = load_image_dataset(f.list(), training_transform(), options(mode, "none", 2));
    compute_normalization(tt.train);
    ASSERT_TRUE(tt.train.is_bytes());
    const AugmentLevels lv = augment_levels(tt.train);
    ASSERT_EQ(lv.white.size(), 1u);
    EXPECT_FLOAT_EQ(lv.white[0], (1.0f - tt.train.mean) / tt.train.stddev);
    EXPECT_FLOAT_EQ(lv.black[0], (0.0f - tt.train.mean) / tt.train.stddev);
  }
}

TEST(ImageStream, AFileCorruptAfterListingIsDroppedAndCounted) {
  Folder f;
  const ImageList list = f.list();
  const ImageTransform t = training_transform();
  const std::string bad = list.train[5].path;
  write(bad, "not a picture at all");
  for (auto mode : {ImageLoadOptions::Mode::Stream, ImageLoadOptions::Mode::Memory}) {
    TrainTest tt = load_image_dataset(list, t, options(mode, "none", 2));
    const Batches r = run_epochs(tt.train, 1, 2);
    EXPECT_EQ(r.samples, 2 * (tt.train.size() - 1));
    const BadImageLog log = tt.train.images->bad();
    EXPECT_EQ(log.count, 1) << "counted once however many epochs meet it";
    ASSERT_EQ(log.files.size(), 1u);
    EXPECT_EQ(log.files[0].path, bad);
    EXPECT_TRUE(log.files[0].bad_image);
    // The list names the file; its reason does not repeat it.
    EXPECT_EQ(log.files[0].why.find(bad), std::string::npos) << log.files[0].why;
  }
  ImageLoadOptions strict = options(ImageLoadOptions::Mode::Stream, "none", 2);
  strict.bad_images_are_errors = true;
  TrainTest tt = load_image_dataset(list, t, strict);
  std::vector<int64_t> idx(size_t(tt.train.size()));
  for (int64_t i = 0; i < tt.train.size(); ++i) idx[size_t(i)] = i;
  BatchLoader loader(tt.train, idx, 8, true, false, 7, 2, true);
  loader.start_epoch(1);
  Batch b;
  try {
    while (loader.next(b)) {
    }
    ADD_FAILURE() << "a bad file with bad images as errors was accepted";
  } catch (const ImageError& e) {
    EXPECT_EQ(e.path(), bad);
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
  strict.mode = ImageLoadOptions::Mode::Memory;
  EXPECT_THROW(load_image_dataset(list, t, strict), ImageError);
}

TEST(ImageStream, AutoChoosesWithinTheBudgetAndSaysWhy) {
  Folder f;
  const ImageList list = f.list();
  ImageLoadOptions o = options(ImageLoadOptions::Mode::Auto, "none", 2);
  o.memory_budget = 1000;
  TrainTest small = load_image_dataset(list, training_transform(), o);
  EXPECT_TRUE(small.train.images->streaming());
  const std::string note = small.train.images->mode_note();
  EXPECT_EQ(note.rfind("streamed from disk: about ", 0), 0u) << note;
  EXPECT_NE(note.find("exceeds"), std::string::npos) << note;
  EXPECT_NE(note.find("no cache"), std::string::npos) << note;
  o.memory_budget = int64_t(1) << 30;
  ImageDataReport report;
  TrainTest big = load_image_dataset(list, training_transform(), o, &report);
  // The folder's PNGs and BMPs are in colour, 18 to 87 by 18 to 127 px.
  EXPECT_NE(report.picture_note.find(", in colour (the median of 36 files' headers)"),
            std::string::npos)
      << report.picture_note;
  EXPECT_FALSE(big.train.images->streaming());
  EXPECT_NE(big.train.images->mode_note().find("fits"), std::string::npos)
      << big.train.images->mode_note();
  // Loading into memory reports progress and can be cancelled.
  o.mode = ImageLoadOptions::Mode::Memory;
  int64_t last = 0;
  auto progress = [&](int64_t done, int64_t total) {
    EXPECT_GT(done, last);
    last = done;
    EXPECT_LE(done, total);
    return true;
  };
  make_image_samples(list.train, training_transform(), o, progress);
  EXPECT_EQ(last, int64_t(list.train.size()));
  EXPECT_THROW(make_image_samples(list.train, training_transform(), o,
                                  [](int64_t, int64_t) { return false; }),
               Error);
}

TEST(ImageStream, AnUnwritableCacheFolderMeansNoCache) {
  Folder f;
  const std::string file = f.tmp.write("a_file", "x");
  TrainTest tt = load_image_dataset(f.list(), training_transform(),
                                    options(ImageLoadOptions::Mode::Stream, file + "/sub", 2));
  EXPECT_NE(tt.train.images->mode_note().find("no cache"), std::string::npos)
      << tt.train.images->mode_note();
  const Batches r = run_epochs(tt.train, 1, 2);
  EXPECT_EQ(r.samples, 2 * tt.train.size());
  EXPECT_EQ(tt.train.images->decodes(), 2 * tt.train.size());
}

TEST(ImageStream, TheCacheDefaultsToXdgCacheHome) {
  test::ScratchXdg xdg("XDG_CACHE_HOME");
  Folder f;
  TrainTest tt = load_image_dataset(f.list(), training_transform(),
                                    options(ImageLoadOptions::Mode::Stream, "", 2));
  run_epochs(tt.train, 1, 1);
  EXPECT_EQ(cache_files((fs::path(std::getenv("XDG_CACHE_HOME")) / "DeepCanvas").string()).size(),
            1u)
      << tt.train.images->mode_note();
}

TEST(ImageAugmentSettings, ResizedCropAndColorJitterRoundTripThroughTheProjectFile) {
  register_builtin_layers();
  Project p = load_project(std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  const std::string plain = project_to_json(p);
  EXPECT_EQ(plain.find("resized_crop"), std::string::npos);
  EXPECT_EQ(plain.find("color_jitter"), std::string::npos);
  p.training.augment.resized_crop = true;
  p.training.augment.color_jitter = 0.375;
  const std::string text = project_to_json(p);
  Project q = parse_project(text, "round trip");
  EXPECT_TRUE(q.training.augment.resized_crop);
  EXPECT_EQ(q.training.augment.color_jitter, 0.375);
  std::string bad = text;
  const std::string k = "\"color_jitter\": ";
  const size_t at = bad.find(k) + k.size();
  bad.replace(at, bad.find_first_of(",\n}", at) - at, "1.5");
  EXPECT_NE(test::error_of([&] {
              parse_project(bad, "bad.dcproj");
            }).find("training.augment.color_jitter"),
            std::string::npos);
}

TEST(ImageStream, TrainingValidatesOnTheFolderValSplit) {
  test::TmpDir tmp;
  const std::string root = tmp.path("photos");
  for (const char* split : {"train", "val"})
    for (int k = 0; k < (split[0] == 't' ? 12 : 4); ++k)
      write(root + "/" + split + "/c" + std::to_string(k % 2) + "/p" + std::to_string(k) + ".png",
            png(10, 10, 3, pattern(10, 10, uint64_t(k + (split[0] == 't' ? 0 : 50)))));
  const ImageList list = list_image_folder(root, {});
  ASSERT_EQ(list.val.size(), 4u);
  ImageTransform t;
  t.input = Shape{1, 8, 8};
  TrainTest tt = load_image_dataset(list, t, options(ImageLoadOptions::Mode::Memory, "", 1));
  ASSERT_EQ(tt.train.validation.size(), 4u);
  Graph g = test::quadrant_mlp();
  TrainConfig c;
  c.epochs = 1;
  c.batch = 4;
  c.val_split = 0.5;  // ignored: the data has its own validation split
  Trainer tr(g, c, std::make_shared<Dataset>(std::move(tt.train)), nullptr);
  tr.start();
  tr.wait();
  ASSERT_TRUE(tr.result().ok) << tr.result().error;
  std::string started;
  while (auto e = tr.events().try_pop())
    if (e->kind == TrainEvent::Kind::Started) started = e->message;
  EXPECT_NE(started.find(std::to_string(list.train.size()) + " training samples, 4 validation"),
            std::string::npos)
      << started;
}

}  // namespace
}  // namespace dc
