// IDX reading (raw and gzip), folder layout, normalisation, splits and the
// bundled Fashion-MNIST subset.
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include <unistd.h>
#include <zlib.h>
#include "test_util.h"

namespace dc {
namespace {

using test::error_of;
using test::TmpDir;

namespace fs = std::filesystem;

std::string idx_file(const std::vector<uint32_t>& dims, const std::vector<uint8_t>& data,
                     uint8_t type = 0x08) {
  std::string s = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int k = 3; k >= 0; --k) s.push_back(static_cast<char>((d >> (8 * k)) & 0xff));
  s.append(data.begin(), data.end());
  return s;
}

uint32_t crc32(const std::string& s) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// A valid gzip file built by hand from stored (uncompressed) deflate blocks,
// so the test needs no compressor; real compressed data is covered by the
// bundled subset below.
std::string gzip_stored(const std::string& data) {
  std::string g = {'\x1f', '\x8b', 8, 0, 0, 0, 0, 0, 0, '\x03'};
  size_t pos = 0;
  do {
    size_t n = std::min<size_t>(data.size() - pos, 65535);
    bool last = pos + n == data.size();
    g.push_back(last ? 1 : 0);
    g.push_back(static_cast<char>(n & 0xff));
    g.push_back(static_cast<char>(n >> 8));
    g.push_back(static_cast<char>(~n & 0xff));
    g.push_back(static_cast<char>((~n >> 8) & 0xff));
    g.append(data, pos, n);
    pos += n;
  } while (pos < data.size());
  auto le32 = [&](uint32_t v) {
    for (int k = 0; k < 4; ++k) g.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
  };
  le32(crc32(data));
  le32(static_cast<uint32_t>(data.size()));
  return g;
}

// Really compressed gzip data (zlib at its best ratio): long runs of zeros
// shrink ~1000:1, which is what a gzip bomb is made of.
std::string gzip_deflate(const std::string& data) {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&zs, data.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

struct Synthetic {
  std::vector<uint8_t> pixels, labels;
};

Synthetic synthetic(int n, int h, int w, int classes, uint64_t seed) {
  Synthetic s;
  Rng rng(seed);
  for (int i = 0; i < n * h * w; ++i) s.pixels.push_back(static_cast<uint8_t>(rng.below(256)));
  for (int i = 0; i < n; ++i) s.labels.push_back(static_cast<uint8_t>(rng.below(classes)));
  return s;
}

void expect_has(const std::string& msg, const std::string& part) {
  EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected: " << part;
}

std::string subset_dir() {
  return std::string(DC_SOURCE_DIR) + "/sample_data/fashion-mnist-subset";
}

TEST(Idx, RoundTripRawAndGzip) {
  TmpDir t;
  Synthetic s = synthetic(300, 5, 4, 7, 11);  // > 64 KiB as gzip: several stored blocks
  s.labels[17] = 6;                           // make sure the largest label occurs
  std::string img = idx_file({300, 5, 4}, s.pixels), lab = idx_file({300}, s.labels);
  int max_label = *std::max_element(s.labels.begin(), s.labels.end());
  for (bool gz : {false, true}) {
    std::string ip = t.write(gz ? "i.gz" : "i", gz ? gzip_stored(img) : img);
    std::string lp = t.write(gz ? "l.gz" : "l", gz ? gzip_stored(lab) : lab);
    Dataset d = load_idx(ip, lp);
    EXPECT_EQ(d.size(), 300);
    EXPECT_EQ(d.sample_shape, (Shape{1, 5, 4}));
    EXPECT_EQ(d.pixels, s.pixels);
    ASSERT_EQ(d.labels.size(), s.labels.size());
    for (size_t i = 0; i < s.labels.size(); ++i) EXPECT_EQ(d.labels[i], s.labels[i]);
    EXPECT_EQ(d.num_classes, max_label + 1);
    EXPECT_TRUE(d.values.empty());
    EXPECT_EQ(d.source, ip);
  }
}

TEST(Idx, RankTwoAndFourImages) {
  TmpDir t;
  Synthetic s = synthetic(3, 2, 6, 2, 5);
  std::string lp = t.write("l", idx_file({3}, s.labels));
  Dataset flat = load_idx(t.write("flat", idx_file({3, 12}, s.pixels)), lp);
  EXPECT_EQ(flat.sample_shape, (Shape{12}));
  Dataset chw = load_idx(t.write("chw", idx_file({3, 3, 2, 2}, s.pixels)), lp);
  EXPECT_EQ(chw.sample_shape, (Shape{3, 2, 2}));
  EXPECT_EQ(chw.pixels, s.pixels);
}

TEST(Idx, MissingFileNamesIt) {
  TmpDir t;
  std::string lp = t.write("l", idx_file({1}, {0}));
  std::string missing = (t.dir / "nope-images").string();
  EXPECT_THROW(load_idx(missing, lp), IoError);
  std::string msg = error_of([&] { load_idx(missing, lp); });
  expect_has(msg, missing);
  expect_has(msg, "No such file");
}

TEST(Idx, WrongMagicAndElementType) {
  TmpDir t;
  std::string lp = t.write("l", idx_file({2}, {0, 1}));
  std::string zip = t.write("images.zip", std::string("PK\x03\x04") + std::string(40, 'x'));
  EXPECT_THROW(load_idx(zip, lp), IoError);
  std::string msg = error_of([&] { load_idx(zip, lp); });
  expect_has(msg, zip);
  expect_has(msg, "magic");
  expect_has(msg, "50 4b 03 04");

  std::string floats = t.write("f", idx_file({2, 1, 1}, std::vector<uint8_t>(8, 0), 0x0D));
  msg = error_of([&] { load_idx(floats, lp); });
  expect_has(msg, floats);
  expect_has(msg, "32-bit float");

  std::string tiny = t.write("tiny", std::string("\0\0", 2));
  expect_has(error_of([&] { load_idx(tiny, lp); }), "too short");
}

TEST(Idx, TruncatedRawAndGzip) {
  TmpDir t;
  Synthetic s = synthetic(10, 4, 4, 3, 2);
  std::string lp = t.write("l", idx_file({10}, s.labels));
  std::string full = idx_file({10, 4, 4}, s.pixels);

  std::string cut = t.write("cut", full.substr(0, full.size() - 5));
  EXPECT_THROW(load_idx(cut, lp), IoError);
  std::string msg = error_of([&] { load_idx(cut, lp); });
  expect_has(msg, cut);
  expect_has(msg, "10 images");
  expect_has(msg, "155 bytes");
  expect_has(msg, "truncated");

  std::string header = t.write("header", full.substr(0, 9));
  msg = error_of([&] { load_idx(header, lp); });
  expect_has(msg, header);
  expect_has(msg, "truncated");

  std::string gz = gzip_stored(full);
  std::string gzcut = t.write("cut.gz", gz.substr(0, gz.size() / 2));
  msg = error_of([&] { load_idx(gzcut, lp); });
  expect_has(msg, gzcut);
  expect_has(msg, "truncated");

  std::string longer = t.write("long", full + "xyz");
  msg = error_of([&] { load_idx(longer, lp); });
  expect_has(msg, longer);
  expect_has(msg, "does not match");
}

TEST(Idx, CorruptGzip) {
  TmpDir t;
  // Real deflate data from the bundled subset, damaged in the middle.
  std::string gz = read_file(subset_dir() + "/t10k-images-idx3-ubyte.gz");
  for (size_t k = 0; k < 64; ++k)
    gz[gz.size() / 2 + k] = static_cast<char>(gz[gz.size() / 2 + k] ^ 0x5a);
  std::string bad = t.write("bad.gz", gz);
  std::string lp = t.write("l", idx_file({2000}, std::vector<uint8_t>(2000, 0)));
  EXPECT_THROW(load_idx(bad, lp), IoError);
  std::string msg = error_of([&] { load_idx(bad, lp); });
  expect_has(msg, bad);
  expect_has(msg, "corrupt");

  // A stored-block file whose checksum no longer matches its data.
  std::string good = gzip_stored(idx_file({1, 2, 2}, {1, 2, 3, 4}));
  good[good.size() - 9] ^= 1;
  std::string crc = t.write("crc.gz", good);
  msg = error_of([&] { load_idx(crc, t.write("l1", idx_file({1}, {0}))); });
  expect_has(msg, crc);
  expect_has(msg, "corrupt");
}

TEST(Idx, CountMismatchIsDataError) {
  TmpDir t;
  Synthetic s = synthetic(5, 2, 2, 2, 3);
  std::string ip = t.write("imgs", idx_file({5, 2, 2}, s.pixels));
  std::string lp = t.write("labs", idx_file({4}, {0, 1, 0, 1}));
  EXPECT_THROW(load_idx(ip, lp), DataError);
  std::string msg = error_of([&] { load_idx(ip, lp); });
  expect_has(msg, ip);
  expect_has(msg, lp);
  expect_has(msg, "5 images");
  expect_has(msg, "4 labels");
}

TEST(Idx, RankAndDimensionNonsense) {
  TmpDir t;
  std::string lp = t.write("l", idx_file({2}, {0, 1}));
  std::string ip = t.write("i", idx_file({2, 1, 1}, {0, 1}));
  // Labels given as images and the other way round.
  std::string msg = error_of([&] { load_idx(lp, lp); });
  expect_has(msg, lp);
  expect_has(msg, "labels file");
  msg = error_of([&] { load_idx(ip, ip); });
  expect_has(msg, "images file");
  std::string r5 = t.write("r5", idx_file({1, 1, 1, 1, 2}, {0, 1}));
  expect_has(error_of([&] { load_idx(r5, lp); }), "5 dimensions");
  std::string zero = t.write("zero", idx_file({2, 0, 3}, {}));
  msg = error_of([&] { load_idx(zero, lp); });
  expect_has(msg, zero);
  expect_has(msg, "size 0");
  std::string empty = t.write("empty", idx_file({0, 3, 3}, {}));
  expect_has(error_of([&] { load_idx(empty, lp); }), "holds no images");
  // Dimensions whose product overflows 64 bits must not wrap around.
  std::string huge = t.write("huge", idx_file({0xffffffffu, 0xffffffffu, 0xffffffffu}, {0}));
  EXPECT_THROW(load_idx(huge, lp), IoError);
}

TEST(Idx, GzipInflatesOnlyWhatTheHeaderDeclares) {
  TmpDir t;
  std::string lp = t.write("l", idx_file({2}, {0, 1}));
  // A bomb: 8 bytes of images declared, 64 MiB of zeros behind them, and the
  // deflate stream damaged near its end. Reading stops one byte past the
  // declared size, so the damage is never reached and nothing large is held.
  std::string body = idx_file({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}) + std::string(64 << 20, '\0');
  std::string gz = gzip_deflate(body);
  ASSERT_LT(gz.size(), size_t(1) << 20);
  for (size_t k = 0; k < 32; ++k) gz[gz.size() - 40 + k] = static_cast<char>(0xff);
  std::string bomb = t.write("bomb.gz", gz);
  std::string msg = error_of([&] { load_idx(bomb, lp); });
  expect_has(msg, bomb);
  expect_has(msg, "does not match");
  EXPECT_EQ(msg.find("not valid gzip"), std::string::npos) << msg;

  // A damaged trailer size is not trusted: the data itself still reads and
  // the length check then reports the file as corrupt.
  std::string good = gzip_deflate(idx_file({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}));
  for (size_t k = 0; k < 4; ++k) good[good.size() - 4 + k] = static_cast<char>(0xff);
  std::string trailer = t.write("trailer.gz", good);
  msg = error_of([&] { load_idx(trailer, lp); });
  expect_has(msg, trailer);
  expect_has(msg, "corrupt");
}

TEST(Idx, HeaderSizesAreCheckedBeforeReading) {
  TmpDir t;
  std::string lp = t.write("l", idx_file({2}, {0, 1}));
  // 2^16 images of 256x256 is 4 GiB: more than any IDX file DeepCanvas takes.
  std::string big = t.write("big", idx_file({1u << 16, 256, 257}, {0, 1}));
  std::string msg = error_of([&] { load_idx(big, lp); });
  expect_has(msg, big);
  expect_has(msg, "at most 4 GiB");
  // A small gzip file cannot hold a gigabyte, whatever its header says.
  std::string claim = t.write("claim.gz", gzip_deflate(idx_file({1u << 14, 256, 256}, {0, 1})));
  msg = error_of([&] { load_idx(claim, lp); });
  expect_has(msg, claim);
  expect_has(msg, "cannot hold that much");
}

TEST(IdxFolder, ListsWhatIsMissing) {
  TmpDir t;
  t.write("train-images-idx3-ubyte.gz", gzip_stored(idx_file({1, 1, 1}, {0})));
  t.write("t10k-labels-idx1-ubyte", idx_file({1}, {0}));
  std::string msg = error_of([&] { load_idx_folder(t.dir.string()); });
  expect_has(msg, t.dir.string());
  expect_has(msg, "train-labels-idx1-ubyte[.gz]");
  expect_has(msg, "t10k-images-idx3-ubyte[.gz]");
  EXPECT_EQ(msg.find("lacks train-images"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("t10k-labels-idx1-ubyte[.gz]"), std::string::npos) << msg;

  std::string gone = (t.dir / "absent").string();
  EXPECT_THROW(load_idx_folder(gone), IoError);
  expect_has(error_of([&] { load_idx_folder(gone); }), "does not exist");
}

TEST(IdxFolder, MixedSpellingsAndSharedClassCount) {
  TmpDir t;
  t.write("train-images.idx3-ubyte", idx_file({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}));
  t.write("train-labels-idx1-ubyte.gz", gzip_stored(idx_file({2}, {0, 2})));
  t.write("t10k-images-idx3-ubyte", idx_file({1, 2, 2}, {9, 9, 9, 9}));
  t.write("t10k-labels.idx1-ubyte", idx_file({1}, {4}));
  TrainTest tt = load_idx_folder(t.dir.string());
  EXPECT_EQ(tt.train.size(), 2);
  EXPECT_EQ(tt.test.size(), 1);
  EXPECT_EQ(tt.train.num_classes, 5);  // the largest label of either split
  EXPECT_EQ(tt.test.num_classes, 5);

  t.write("t10k-images-idx3-ubyte", idx_file({1, 1, 4}, {9, 9, 9, 9}));
  EXPECT_THROW(load_idx_folder(t.dir.string()), DataError);
}

TEST(Dataset, GatherNormalisesAndChecksIndices) {
  Dataset d;
  d.sample_shape = Shape{1, 1, 3};
  d.pixels = {0, 51, 255, 102, 204, 153};
  d.labels = {4, 7};
  d.mean = 0.25f;
  d.stddev = 0.5f;
  d.source = "mem";
  int64_t idx[3] = {1, 0, 1};
  std::vector<float> x(9);
  std::vector<int32_t> y(3);
  d.gather(idx, 3, x.data(), y.data());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(y[i], d.labels[idx[i]]);
    for (int k = 0; k < 3; ++k)
      EXPECT_NEAR(x[i * 3 + k], (d.pixels[idx[i] * 3 + k] / 255.0 - 0.25) / 0.5, 1e-6);
  }
  int64_t bad = 2;
  EXPECT_THROW(d.gather(&bad, 1, x.data(), y.data()), DataError);

  Dataset v;
  v.sample_shape = Shape{2};
  v.values = {1.f, 2.f, 3.f, 5.f};
  v.labels = {0, 1};
  v.mean = 1.f;
  v.stddev = 2.f;
  int64_t one = 1;
  v.gather(&one, 1, x.data(), nullptr);
  EXPECT_FLOAT_EQ(x[0], 1.0f);
  EXPECT_FLOAT_EQ(x[1], 2.0f);
}

TEST(Dataset, NormalizationMatchesDirectComputation) {
  Synthetic s = synthetic(50, 3, 3, 2, 9);
  Dataset d;
  d.sample_shape = Shape{1, 3, 3};
  d.pixels = s.pixels;
  d.labels.assign(s.labels.begin(), s.labels.end());
  compute_normalization(d);
  double sum = 0, sq = 0;
  for (uint8_t p : s.pixels) sum += p / 255.0;
  double mean = sum / s.pixels.size();
  for (uint8_t p : s.pixels) sq += (p / 255.0 - mean) * (p / 255.0 - mean);
  EXPECT_NEAR(d.mean, mean, 1e-6);
  EXPECT_NEAR(d.stddev, std::sqrt(sq / s.pixels.size()), 1e-6);

  // After normalising, the gathered data has mean 0 and deviation 1.
  std::vector<int64_t> all(50);
  for (int i = 0; i < 50; ++i) all[i] = i;
  std::vector<float> x(450);
  d.gather(all.data(), 50, x.data(), nullptr);
  double m = 0, v = 0;
  for (float f : x) m += f;
  m /= x.size();
  for (float f : x) v += (f - m) * (f - m);
  EXPECT_NEAR(m, 0.0, 1e-5);
  EXPECT_NEAR(v / x.size(), 1.0, 1e-4);

  Dataset flat;
  flat.sample_shape = Shape{1};
  flat.pixels = {7, 7, 7};
  flat.labels = {0, 0, 0};
  compute_normalization(flat);
  EXPECT_EQ(flat.stddev, 1.0f);  // constant data is not divided by zero
}

TEST(Dataset, SplitIndicesIsAPartitionAndRepeatable) {
  auto [train, val] = split_indices(1000, 0.1, 42);
  EXPECT_EQ(val.size(), 100u);
  EXPECT_EQ(train.size(), 900u);
  std::set<int64_t> all(train.begin(), train.end());
  all.insert(val.begin(), val.end());
  EXPECT_EQ(all.size(), 1000u);
  EXPECT_EQ(*all.begin(), 0);
  EXPECT_EQ(*all.rbegin(), 999);
  // Chosen at random, not just the tail.
  EXPECT_LT(val.front(), 500);

  EXPECT_EQ(split_indices(1000, 0.1, 42).second, val);
  EXPECT_NE(split_indices(1000, 0.1, 43).second, val);
  EXPECT_EQ(split_indices(7, 0.25, 1).second.size(), 2u);  // round(1.75)
  EXPECT_TRUE(split_indices(10, 0.0, 1).second.empty());
  EXPECT_EQ(split_indices(10, 0.0, 1).first.size(), 10u);
  EXPECT_THROW(split_indices(10, 1.0, 1), DataError);
  EXPECT_THROW(split_indices(10, -0.1, 1), DataError);
  EXPECT_THROW(split_indices(1, 0.6, 1), DataError);
}

TEST(SampleData, BundledSubsetIsBalanced) {
  TrainTest tt = load_fashion_mnist(subset_dir());
  EXPECT_EQ(tt.train.size(), 10000);
  EXPECT_EQ(tt.test.size(), 2000);
  EXPECT_EQ(tt.train.sample_shape, (Shape{1, 28, 28}));
  EXPECT_EQ(tt.train.pixels.size(), 10000u * 784u);
  EXPECT_EQ(tt.train.num_classes, 10);
  EXPECT_EQ(tt.test.num_classes, 10);
  ASSERT_EQ(tt.train.class_names.size(), 10u);
  EXPECT_EQ(tt.train.class_names[0], "T-shirt/top");
  EXPECT_EQ(tt.train.class_names[9], "Ankle boot");
  std::array<int, 10> train_count{}, test_count{};
  for (int32_t l : tt.train.labels) ++train_count.at(l);
  for (int32_t l : tt.test.labels) ++test_count.at(l);
  for (int c = 0; c < 10; ++c) {
    EXPECT_EQ(train_count[c], 1000) << "class " << c;
    EXPECT_EQ(test_count[c], 200) << "class " << c;
  }
  compute_normalization(tt.train);
  // Fashion-MNIST's pixel statistics are about 0.286 / 0.353.
  EXPECT_NEAR(tt.train.mean, 0.286, 0.02);
  EXPECT_NEAR(tt.train.stddev, 0.353, 0.02);
}

TEST(SampleData, SubsetImagesComeFromTheFullSet) {
  const std::string full = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(full + "/t10k-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "the full Fashion-MNIST (dataset-fashion-mnist) is not installed";
  Dataset src = load_idx(full + "/t10k-images-idx3-ubyte.gz", full + "/t10k-labels-idx1-ubyte.gz");
  Dataset sub = load_idx(subset_dir() + "/t10k-images-idx3-ubyte.gz",
                         subset_dir() + "/t10k-labels-idx1-ubyte.gz");
  std::unordered_map<std::string, std::vector<int32_t>> label_of;
  auto image = [](const Dataset& d, int64_t i) {
    return std::string(reinterpret_cast<const char*>(d.pixels.data()) + i * 784, 784);
  };
  for (int64_t i = 0; i < src.size(); ++i) label_of[image(src, i)].push_back(src.labels[i]);
  for (int64_t i = 0; i < sub.size(); ++i) {
    auto it = label_of.find(image(sub, i));
    ASSERT_NE(it, label_of.end()) << "subset test image " << i << " is not in the full set";
    EXPECT_NE(std::find(it->second.begin(), it->second.end(), sub.labels[i]), it->second.end());
  }
}

}  // namespace
}  // namespace dc
