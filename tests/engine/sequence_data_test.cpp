// Sequence datasets: character text and CSV windows, and every kind of bad
// input the recurrent-layers issue names, each with one clear message.
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/sequence_data.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "test_util.h"

namespace dc {
namespace {

// Runs f, which must throw DataError whose message contains every needle.
template <class F>
void expect_data_error(F f, std::initializer_list<const char*> needles) {
  try {
    f();
    ADD_FAILURE() << "no DataError thrown";
  } catch (const DataError& e) {
    for (const char* n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what() << " / " << n;
  }
}

TEST(TextData, WindowsTargetsAndVocabulary) {
  test::TmpDir t;
  std::string p = t.write("c.txt", "abcab\xc3\xa9");  // "abcabé": 6 characters, 4 distinct
  TrainTest tt = load_text_dataset(p, {3, 1, 0.0});
  // Vocabulary: padding, then code point order (é after c).
  ASSERT_EQ(tt.train.class_names.size(), 5u);
  EXPECT_EQ(tt.train.class_names[0], "");
  EXPECT_EQ(tt.train.class_names[1], "a");
  EXPECT_EQ(tt.train.class_names[4], "\xc3\xa9");
  EXPECT_TRUE(tt.train.tokens);
  ASSERT_EQ(tt.train.size(), 5);  // targets at characters 1..5
  // Sample 0 predicts 'b' from [pad, pad, a]; the last predicts 'é' from "cab".
  std::vector<float> v(15);
  tt.train.copy_values(0, 5, v.data());
  EXPECT_EQ(tt.train.labels[0], 2);
  EXPECT_EQ(v[0], 0.f);
  EXPECT_EQ(v[2], 1.f);
  EXPECT_EQ(tt.train.labels[4], 4);
  EXPECT_EQ(v[4 * 3 + 0], 3.f);
  EXPECT_EQ(v[4 * 3 + 2], 2.f);
  // What training reads (gather) is the same windows, as they are: token
  // ids are never normalised.
  const int64_t idx[2] = {4, 0};
  float x[6];
  int32_t labels[2];
  tt.train.gather(idx, 2, x, labels);
  EXPECT_EQ(std::vector<float>(x, x + 6), (std::vector<float>{3, 1, 2, 0, 0, 1}));
  EXPECT_EQ(labels[0], 4);
  EXPECT_EQ(labels[1], 2);
  // The corpus is held once, not once per window.
  ASSERT_NE(tt.train.windows, nullptr);
  EXPECT_TRUE(tt.train.values.empty());
  EXPECT_EQ(tt.train.windows->ids->size(), 6u);
  EXPECT_THROW(tt.train.copy_values(4, 2, v.data()), DataError);
}

// At stride 2 the windows step two characters; the test set's windows
// continue the sequence after the split, reading training text before it.
TEST(TextData, StridedWindowsAndTheTestSetsWindowsReadTheCorpus) {
  test::TmpDir t;
  std::string p = t.write("s.txt", "abcdefghij");  // ids 1..10
  TrainTest tt = load_text_dataset(p, {3, 2, 0.3});
  // Targets 1, 3, 5, 7, 9; the split is at 10 - round(0.3 * 9) = 7.
  ASSERT_EQ(tt.train.size(), 3);
  ASSERT_EQ(tt.test.size(), 2);
  std::vector<float> v(6);
  tt.test.copy_values(0, 2, v.data());
  // Target 7 ('h') after "efg"; target 9 ('j') after "ghi".
  EXPECT_EQ(v, (std::vector<float>{5, 6, 7, 7, 8, 9}));
  EXPECT_EQ(tt.test.labels[0], 8);
  EXPECT_EQ(tt.test.labels[1], 10);
  tt.train.copy_values(1, 1, v.data());
  EXPECT_EQ(std::vector<float>(v.begin(), v.begin() + 3), (std::vector<float>{1, 2, 3}));
}

TEST(TextData, TestSetIsTheEndOfTheText) {
  test::TmpDir t;
  std::string text(1001, 'x');
  for (size_t i = 0; i < text.size(); i += 3) text[i] = 'y';
  TrainTest tt = load_text_dataset(t.write("c.txt", text), {8, 1, 0.1});
  EXPECT_EQ(tt.train.size() + tt.test.size(), 1000);
  EXPECT_EQ(tt.test.size(), 100);
}

TEST(TextData, EntropyOfUniformLabelsIsLogN) {
  Dataset d;
  d.labels = {0, 1, 2, 3, 0, 1, 2, 3};
  EXPECT_NEAR(label_entropy(d), std::log(4.0), 1e-12);
}

TEST(TextData, EmptyCorpusIsAClearError) {
  test::TmpDir t;
  std::string p = t.write("empty.txt", "");
  expect_data_error([&] { load_text_dataset(p); }, {"empty.txt", "empty"});
}

TEST(TextData, InvalidUtf8NamesTheByteAndLine) {
  test::TmpDir t;
  std::string p = t.write("latin1.txt", "line one\ncaf\xe9 au lait\n");
  expect_data_error([&] { load_text_dataset(p); },
                    {"latin1.txt", "invalid UTF-8", "byte 12", "line 2"});
  // Overlong encodings and lone continuation bytes are invalid too.
  expect_data_error([&] { utf8_chars("\xc0\xaf", "x"); }, {"invalid UTF-8"});
  expect_data_error([&] { utf8_chars("a\x80", "x"); }, {"byte 1"});
}

// Files over the limit are refused from their size, before any is read; a
// sparse file makes that cheap to test.
TEST(SequenceData, OversizedFilesAreRefusedBeforeReading) {
  test::TmpDir t;
  for (auto [name, limit] : {std::pair{"big.txt", kMaxTextBytes}, {"big.csv", kMaxCsvBytes}}) {
    std::string p = t.write(name, "a,y\n1,0\n");
    std::filesystem::resize_file(p, uintmax_t(limit) + 1);
    try {
      if (std::string(name) == "big.txt")
        load_text_dataset(p);
      else
        load_csv_sequences(p);
      ADD_FAILURE() << name << " was read";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("larger than"), std::string::npos) << e.what();
    }
  }
}

TEST(CsvData, WindowsOverRowsWithTargetColumn) {
  test::TmpDir t;
  std::string p = t.write("s.csv",
                          "a,label,b\n"
                          "1,0,10\n2,1,20\n3,0,30\n4,1,40\n5,2,50\n");
  TrainTest tt = load_csv_sequences(p, {2, "label", 0.0});
  ASSERT_EQ(tt.train.size(), 4);
  EXPECT_EQ(tt.train.sample_shape, (Shape{2, 2}));
  EXPECT_EQ(tt.train.num_classes, 3);
  // Window 1 covers rows 2-3: features (a, b) per row, label of row 3.
  std::vector<float> all(16);
  tt.train.copy_values(0, 4, all.data());
  const float* w1 = all.data() + 4;
  EXPECT_EQ(w1[0], 2.f);
  EXPECT_EQ(w1[1], 20.f);
  EXPECT_EQ(w1[2], 3.f);
  EXPECT_EQ(w1[3], 30.f);
  EXPECT_EQ(tt.train.labels[1], 0);
  EXPECT_EQ(tt.train.labels[3], 2);
  EXPECT_EQ(all[15], 50.f);
  // The rows are held once (5 rows of 2), not once per window.
  ASSERT_NE(tt.train.windows, nullptr);
  EXPECT_TRUE(tt.train.values.empty());
  EXPECT_EQ(tt.train.windows->rows->size(), 10u);
}

// Normalisation sees the windows as if each were stored: a row counts once
// for each window that reads it. The figures are those of the stored
// windows, computed here from a copy of them.
TEST(CsvData, NormalisationCountsARowOncePerWindowThatReadsIt) {
  test::TmpDir t;
  std::string csv = "x,y,label\n";
  for (int r = 0; r < 40; ++r)
    csv += std::to_string(r * r % 17) + "," + std::to_string(3 * r - 50) + "," +
           std::to_string(r % 3) + "\n";
  std::string p = t.write("n.csv", csv);
  TrainTest tt = load_csv_sequences(p, {7, "label", 0.25});
  ASSERT_GT(tt.test.size(), 0);
  for (Dataset* d : {&tt.train, &tt.test}) {
    const int64_t per = d->sample_shape.numel();
    std::vector<float> stored(size_t(d->size() * per));
    d->copy_values(0, d->size(), stored.data());
    double mean = 0, var = 0;
    for (float v : stored) mean += v;
    mean /= double(stored.size());
    for (float v : stored) var += (v - mean) * (v - mean);
    var /= double(stored.size());
    compute_normalization(*d);
    EXPECT_NEAR(d->mean, mean, 1e-5 * std::abs(mean));
    EXPECT_NEAR(d->stddev, std::sqrt(var), 1e-5 * std::sqrt(var));
    // Gathering reads the windows normalised.
    const int64_t idx[1] = {d->size() - 1};
    std::vector<float> x(static_cast<size_t>(per), 0.f);
    d->gather(idx, 1, x.data(), nullptr);
    for (int64_t k = 0; k < per; ++k)
      EXPECT_NEAR(x[size_t(k)], (stored[size_t((d->size() - 1) * per + k)] - d->mean) / d->stddev,
                  1e-5);
  }
}

// Windows that start before the sequence read zeros there (as text windows
// do), and the statistics count those zeros.
TEST(SequenceWindows, PaddingAndStridesCountInTheStatistics) {
  auto rows = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  Dataset d;
  d.sample_shape = Shape{3, 2};
  SequenceWindows w;
  w.rows = rows;
  w.width = 2;
  w.window = 3;
  w.first = 1;
  w.stride = 2;
  d.windows = std::make_shared<const SequenceWindows>(w);
  d.labels = {0, 1};  // windows ending before steps 1 and 3
  std::vector<float> stored(12);
  d.copy_values(0, 2, stored.data());
  EXPECT_EQ(stored, (std::vector<float>{0, 0, 0, 0, 1, 2, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(d.windows->readers(0, 2), 2);
  EXPECT_EQ(d.windows->readers(1, 2), 1);
  EXPECT_EQ(d.windows->readers(2, 2), 1);
  EXPECT_EQ(d.windows->readers(3, 2), 0);
  compute_normalization(d);
  double mean = 0, var = 0;
  for (float v : stored) mean += v;
  mean /= 12;
  for (float v : stored) var += (v - mean) * (v - mean);
  EXPECT_FLOAT_EQ(d.mean, float(mean));
  EXPECT_FLOAT_EQ(d.stddev, float(std::sqrt(var / 12)));
}

TEST(CsvData, MissingValueNamesRowAndColumn) {
  test::TmpDir t;
  std::string p = t.write("m.csv", "a,b,y\n1,2,0\n3,,1\n");
  expect_data_error(
      [&] {
        load_csv_sequences(p, {1, "", 0.2});
      },
      {"m.csv", "line 3", "column 'b'", "empty"});
}

TEST(CsvData, NonNumericCellNamesRowAndColumn) {
  test::TmpDir t;
  std::string p = t.write("n.csv", "a,b,y\n1,2,0\n3,four,1\n");
  expect_data_error(
      [&] {
        load_csv_sequences(p, {1, "", 0.2});
      },
      {"line 3", "column 'b'", "'four'", "not a number"});
}

TEST(CsvData, RaggedRowNamesTheLine) {
  test::TmpDir t;
  std::string p = t.write("r.csv", "a,b,y\n1,2,0\n3,4,5,1\n");
  expect_data_error(
      [&] {
        load_csv_sequences(p, {1, "", 0.2});
      },
      {"line 3", "4 cells", "header has 3"});
}

TEST(CsvData, WindowLongerThanSeriesSaysTheMaximum) {
  test::TmpDir t;
  std::string p = t.write("w.csv", "a,y\n1,0\n2,1\n3,0\n");
  expect_data_error(
      [&] {
        load_csv_sequences(p, {5, "", 0.2});
      },
      {"window of 5", "3 rows", "at most 3"});
}

TEST(CsvData, FractionalTargetIsNotAClass) {
  test::TmpDir t;
  std::string p = t.write("f.csv", "a,y\n1,0\n2,0.5\n");
  expect_data_error(
      [&] {
        load_csv_sequences(p, {1, "", 0.2});
      },
      {"column 'y'", "not a class number"});
}

TEST(CsvData, EmptyFileAndUnknownTarget) {
  test::TmpDir t;
  std::string e = t.write("e.csv", "\n\n");
  expect_data_error([&] { load_csv_sequences(e, {1, "", 0.2}); }, {"empty", "header"});
  std::string p = t.write("p.csv", "a,y\n1,0\n");
  expect_data_error([&] { load_csv_sequences(p, {1, "label", 0.2}); }, {"no column named 'label'"});
}

TEST(RowSequences, GreyImagesBecomeRowsOnlyForMatchingInputs) {
  Dataset d;
  d.sample_shape = Shape{1, 28, 28};
  EXPECT_FALSE(images_as_row_sequences(d, Shape{1, 28, 28}));
  EXPECT_FALSE(images_as_row_sequences(d, Shape{28, 27}));
  EXPECT_TRUE(images_as_row_sequences(d, Shape{28, 28}));
  EXPECT_EQ(d.sample_shape, (Shape{28, 28}));
}

}  // namespace
}  // namespace dc
