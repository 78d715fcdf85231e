#pragma once
// Sequence datasets: images read row by row, character-level text and
// sliding windows over CSV columns. All of them produce ordinary Datasets
// whose samples are [steps, features] (or [steps] token ids), so the
// loader, trainer and evaluation need nothing new.
#include <deepcanvas/data.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dc {

// When the network reads sequences (input {H, W}) and the dataset holds
// single-channel images {1, H, W}, reinterprets every image as H steps of W
// features (rows as a sequence; the bytes do not move). Returns whether it
// did; leaves any other combination alone.
bool images_as_row_sequences(Dataset& d, const Shape& input);

struct TextOptions {
  int64_t window = 64;         // steps the model reads before each prediction
  int64_t stride = 1;          // distance between consecutive windows' targets
  double test_fraction = 0.1;  // the end of the corpus, kept apart (no overlap)
};

// A UTF-8 text file as next-character prediction: the vocabulary is token 0
// (padding, for windows that start before the text) plus every distinct
// character in code point order; sample i is the `window` tokens before
// character i and its label is that character. class_names hold the
// vocabulary (class_names[0] is "" for padding). Throws DataError for an
// empty file, invalid UTF-8 (naming the line and byte offset) or a bad option.
TrainTest load_text_dataset(const std::string& path, const TextOptions& o = {});
// Larger corpora are refused before reading. Loading takes about 12 bytes
// a character (the text, its code point, its id); the datasets then keep 8
// (its id, and a label per window at stride 1).
constexpr int64_t kMaxTextBytes = int64_t(128) << 20;

// The characters of a UTF-8 string, one string each; throws DataError naming
// `what` and the byte offset at the first invalid sequence.
std::vector<std::string> utf8_chars(const std::string& text, const std::string& what);

// Entropy in nats of the label distribution (for text: the corpus's
// unigram entropy, what a model that ignores context can reach).
double label_entropy(const Dataset& d);

struct CsvSequenceOptions {
  int64_t window = 16;         // rows per sample
  std::string target;          // column holding the class label (name); "" = last column
  double test_fraction = 0.2;  // windows ending in the last rows form the test set
};

// A CSV file with a header row and numeric cells, read as a time series:
// each sample is `window` consecutive rows of every column but the target
// ([window, columns-1]) and its label is the target (a whole number >= 0) at
// the window's last row. Throws DataError naming the row and column for an
// empty cell, a cell that is not a number or a row with the wrong number of
// cells, and for a window longer than the series.
TrainTest load_csv_sequences(const std::string& path, const CsvSequenceOptions& o = {});
// Larger CSV files are refused before reading (the cells as floats and the
// text of the file are held at once while loading).
constexpr int64_t kMaxCsvBytes = int64_t(1) << 30;

}  // namespace dc
