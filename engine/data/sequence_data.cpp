// Sequence datasets (see sequence_data.h). Text windows are token ids made
// into floats as they are gathered (SequenceWindows), flagged `tokens`, so
// normalisation leaves them alone and the Embedding receives exact integers.
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/sequence_data.h>
#include <deepcanvas/utf8.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>

namespace dc {

bool images_as_row_sequences(Dataset& d, const Shape& input) {
  const Shape& s = d.sample_shape;
  if (input.rank() != 2 || s.rank() != 3 || s[0] != 1 || s[1] != input[0] || s[2] != input[1])
    return false;
  d.sample_shape = input;
  return true;
}

namespace {

// Calls fn(code_point, byte_offset, byte_length) for each character of a
// strict UTF-8 text; the one place that words what is wrong with a text, so
// a prompt and a corpus get the same message.
template <typename Fn>
void for_each_code_point(const std::string& text, const std::string& what, Fn&& fn) {
  size_t line = 1;
  for (size_t i = 0; i < text.size();) {
    const size_t at = i;
    const int32_t cp = next_code_point(text, i);
    if (cp == kInvalidUtf8)
      throw DataError(what + ": invalid UTF-8 at byte " + std::to_string(at) + " (line " +
                      std::to_string(line) +
                      "); save the text as UTF-8 (e.g. iconv -f latin1 -t utf-8)");
    if (text[at] == '\n') ++line;
    fn(cp, at, i - at);
  }
}

}  // namespace

std::vector<std::string> utf8_chars(const std::string& text, const std::string& what) {
  std::vector<std::string> out;
  for_each_code_point(text, what,
                      [&](int32_t, size_t at, size_t len) { out.emplace_back(text, at, len); });
  return out;
}

TrainTest load_text_dataset(const std::string& path, const TextOptions& o) {
  if (o.window < 1) throw DataError("text window must be at least 1 character");
  if (o.stride < 1) throw DataError("text stride must be at least 1");
  if (!(o.test_fraction >= 0 && o.test_fraction < 1))
    throw DataError("text test fraction must be in [0, 1)");
  std::string text = read_file(path, kMaxTextBytes, "text corpus");
  // Code points, 4 bytes a character (a string per character was ~40: a
  // 20 MB corpus peaked at 1.1 GB while loading), checked as utf8_chars
  // checks them; each distinct one keeps its UTF-8 bytes for the vocabulary.
  auto ids = std::make_shared<std::vector<int32_t>>();
  ids->reserve(text.size());
  std::map<int32_t, std::string> distinct;  // code point order is UTF-8's byte order
  for_each_code_point(text, path, [&](int32_t cp, size_t at, size_t len) {
    if (distinct.find(cp) == distinct.end()) distinct.emplace(cp, text.substr(at, len));
    ids->push_back(cp);
  });
  text = std::string();
  if (ids->size() < 2)
    throw DataError(path + ": the corpus is empty (" + std::to_string(ids->size()) +
                    " characters); a text model needs at least a few thousand characters");
  std::vector<std::string> vocab{""};
  std::map<int32_t, int32_t> index;
  for (auto& [cp, utf8] : distinct) {
    index.emplace(cp, int32_t(vocab.size()));
    vocab.push_back(std::move(utf8));
  }
  for (int32_t& id : *ids) id = index.at(id);
  ids->shrink_to_fit();

  const int64_t n = int64_t(ids->size()), T = o.window;
  // Targets 1..n-1; the test set is the last part of the text, and its
  // windows may read training text (as any continuation would) but never
  // predict it.
  const int64_t split = n - std::llround(o.test_fraction * double(n - 1));
  TrainTest tt;
  for (Dataset* d : {&tt.train, &tt.test}) {
    d->sample_shape = Shape{T};
    d->tokens = true;
    d->num_classes = int(vocab.size());
    d->class_names = vocab;
    d->source = path;
  }
  // Targets at 1, 1 + stride, ...: those before `split` train, the rest
  // test; each set's windows are made from the one corpus as they are read.
  int64_t test_first = -1;
  for (int64_t p = 1; p < n; p += o.stride) {
    Dataset& d = p < split ? tt.train : tt.test;
    if (p >= split && test_first < 0) test_first = p;
    d.labels.push_back((*ids)[size_t(p)]);
  }
  SequenceWindows w;
  w.ids = ids;
  w.window = T;
  w.stride = o.stride;
  w.first = 1;
  tt.train.windows = std::make_shared<const SequenceWindows>(w);
  w.first = test_first;
  if (test_first >= 0) tt.test.windows = std::make_shared<const SequenceWindows>(w);
  if (tt.train.size() == 0)
    throw DataError(path + ": too little text for training after keeping " +
                    std::to_string(o.test_fraction) + " of it for testing");
  return tt;
}

double label_entropy(const Dataset& d) {
  std::map<int32_t, int64_t> count;
  for (int32_t l : d.labels) ++count[l];
  double h = 0, n = double(d.labels.size());
  for (auto& [l, c] : count) h -= double(c) / n * std::log(double(c) / n);
  return h;
}

namespace {

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> cells;
  std::string cur;
  bool quoted = false;
  for (char ch : line) {
    if (ch == '"') {
      quoted = !quoted;
    } else if (ch == ',' && !quoted) {
      cells.push_back(cur);
      cur.clear();
    } else if (ch != '\r') {
      cur += ch;
    }
  }
  cells.push_back(cur);
  for (auto& c : cells) {
    size_t b = c.find_first_not_of(" \t"), e = c.find_last_not_of(" \t");
    c = b == std::string::npos ? "" : c.substr(b, e - b + 1);
  }
  return cells;
}

}  // namespace

TrainTest load_csv_sequences(const std::string& path, const CsvSequenceOptions& o) {
  if (o.window < 1) throw DataError("CSV window must be at least 1 row");
  std::istringstream in(read_file(path, kMaxCsvBytes, "CSV file"));
  std::string line;
  std::vector<std::string> header;
  int64_t lineno = 0;
  while (header.empty() && std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") != std::string::npos) header = split_csv_line(line);
  }
  if (header.empty()) throw DataError(path + ": the CSV file is empty; it needs a header row");
  const int64_t C = int64_t(header.size());
  if (C < 2)
    throw DataError(path + ": needs at least two columns (features and a target), found " +
                    std::to_string(C));
  int64_t target = C - 1;
  if (!o.target.empty()) {
    auto it = std::find(header.begin(), header.end(), o.target);
    if (it == header.end())
      throw DataError(path + ": no column named '" + o.target + "' in the header");
    target = it - header.begin();
  }
  auto series = std::make_shared<std::vector<float>>();
  std::vector<float>& feats = *series;
  std::vector<int32_t> labels;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto cells = split_csv_line(line);
    if (int64_t(cells.size()) != C)
      throw DataError(path + ": line " + std::to_string(lineno) + " has " +
                      std::to_string(cells.size()) + " cells but the header has " +
                      std::to_string(C) + "; every row needs one value per column");
    for (int64_t c = 0; c < C; ++c) {
      const std::string& s = cells[size_t(c)];
      std::string where =
          path + ": line " + std::to_string(lineno) + ", column '" + header[size_t(c)] + "'";
      if (s.empty())
        throw DataError(where + " is empty; fill in or remove rows with missing values");
      char* end = nullptr;
      errno = 0;
      double v = std::strtod(s.c_str(), &end);
      if (end != s.c_str() + s.size() || errno == ERANGE || !std::isfinite(v))
        throw DataError(where + ": '" + s + "' is not a number");
      if (c == target) {
        if (v < 0 || v != std::floor(v) || v > 1e6)
          throw DataError(where + ": the target " + s +
                          " is not a class number (a whole number from 0)");
        labels.push_back(int32_t(v));
      } else {
        feats.push_back(float(v));
      }
    }
  }
  const int64_t rows = int64_t(labels.size()), F = C - 1, T = o.window;
  if (T > rows)
    throw DataError(path + ": the window of " + std::to_string(T) +
                    " rows is longer than the series (" + std::to_string(rows) +
                    " rows); use a window of at most " + std::to_string(rows));
  TrainTest tt;
  int classes = 0;
  for (int32_t l : labels) classes = std::max(classes, l + 1);
  std::vector<std::string> features = header;
  features.erase(features.begin() + target);
  for (Dataset* d : {&tt.train, &tt.test}) {
    d->sample_shape = Shape{T, F};
    d->num_classes = classes;
    d->source = path;
    d->feature_names = features;
  }
  const int64_t windows = rows - T + 1;
  const int64_t test_start = windows - std::llround(o.test_fraction * double(windows));
  // Window w is rows [w, w + T), labelled by its last row; the rows are
  // held once and each window is made as it is read (SequenceWindows).
  for (int64_t w = 0; w < windows; ++w)
    (w < test_start ? tt.train : tt.test).labels.push_back(labels[size_t(w + T - 1)]);
  feats.shrink_to_fit();
  auto over = [&](int64_t first_window) {
    SequenceWindows w;
    w.rows = series;
    w.width = F;
    w.window = T;
    w.first = first_window + T;
    return std::make_shared<const SequenceWindows>(w);
  };
  if (tt.train.size() > 0) tt.train.windows = over(0);
  if (tt.test.size() > 0) tt.test.windows = over(test_start);
  // Too few windows to hold any out: train on them all.
  if (tt.train.size() == 0) std::swap(tt.train, tt.test);
  return tt;
}

}  // namespace dc
