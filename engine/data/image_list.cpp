// Which files make an image dataset, their classes and splits
// (image_data.h). The walk and the split are what the PyTorch export's
// train.py repeats, so they follow the header's description to the letter;
// what a walk meets on the way (links, locked folders, hidden and stray
// files, bad images) is named in ImageList::skipped rather than stopping it.
#include <deepcanvas/image_data.h>
#include <deepcanvas/rng.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include <sys/stat.h>

namespace dc {

namespace fs = std::filesystem;

namespace {

// Folders below a class folder deeper than this are not walked (a guard
// against pathological trees; no real dataset nests this deep).
constexpr int kMaxDepth = 64;

std::string lower_ascii(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return s;
}

bool is_image_name(const fs::path& p) {
  const std::vector<std::string>& ok = image_extensions();
  return std::find(ok.begin(), ok.end(), lower_ascii(p.extension().string())) != ok.end();
}

bool hidden(const fs::path& p) {
  const std::string n = p.filename().string();
  return !n.empty() && n[0] == '.';
}

std::string not_an_image(const fs::path& p) {
  const std::string e = p.extension().string();
  return "not an image (" + (e.empty() ? std::string("no extension") : e) + ")";
}

// The folder as an absolute path without a trailing separator.
fs::path absolute_dir(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::absolute(fs::path(dir), ec);
  if (ec) p = fs::path(dir);
  p = p.lexically_normal();
  if (p.filename().empty() && p.has_relative_path()) p = p.parent_path();
  return p;
}

std::string os_reason(int err) {
  if (err == ELOOP) return "a symlink loop";
  return std::strerror(err);
}

// The few words of ImageList::skipped for a bad image ("truncated",
// "unreadable (Permission denied)").
std::string why_of(const ImageError& e) {
  if (e.fault() != ImageFault::Unreadable) return fault_name(e.fault());
  std::string d = e.detail();
  const std::string pre = "cannot be read (";
  if (d.rfind(pre, 0) == 0 && d.back() == ')')
    d = d.substr(pre.size(), d.size() - pre.size() - 1);
  else if (d.rfind("is ", 0) == 0)
    d = d.substr(3);
  return "unreadable (" + d + ")";
}

struct DirId {
  dev_t dev;
  ino_t ino;
  bool operator==(const DirId& o) const { return dev == o.dev && ino == o.ino; }
};

bool dir_id(const fs::path& p, DirId& id, int& err) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) {
    err = errno;
    return false;
  }
  id = {st.st_dev, st.st_ino};
  return true;
}

// Walks class folders, collecting image files and naming what it leaves out.
class Walker {
 public:
  Walker(const fs::path& root, ImageList& out, const ImageListOptions& o)
      : root_(root), out_(out), o_(o) {}

  // The folders from root down to (not including) the class folders: a
  // link back to one of them is a loop too.
  void add_ancestor(const fs::path& p) {
    DirId id{};
    int err = 0;
    if (dir_id(p, id, err)) ancestors_.push_back(id);
  }

  // The image files below `dir` (a class folder), sorted bytewise.
  std::vector<std::string> files_of(const fs::path& dir) {
    std::vector<std::string> files;
    DirId id{};
    int err = 0;
    if (!dir_id(dir, id, err)) {
      skip(dir, err == ELOOP ? "symlink loop" : "unreadable folder (" + os_reason(err) + ")",
           false);
      return files;
    }
    std::vector<DirId> stack = ancestors_;
    if (std::find(stack.begin(), stack.end(), id) != stack.end()) {
      skip(dir, "symlink loop", false);
      return files;
    }
    stack.push_back(id);
    walk(dir, files, stack, 0);
    std::sort(files.begin(), files.end());
    return files;
  }

  std::string rel(const fs::path& p) const { return p.lexically_relative(root_).generic_string(); }

 private:
  void skip(const fs::path& p, std::string why, bool bad) {
    out_.skipped.push_back({rel(p), std::move(why), bad});
  }

  void bad_image(const ImageError& e, const fs::path& p) {
    if (o_.bad_images_are_errors) throw e;
    skip(p, why_of(e), true);
  }

  void walk(const fs::path& dir, std::vector<std::string>& files, std::vector<DirId>& stack,
            int depth) {
    std::vector<fs::path> entries;
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    if (ec) {
      skip(dir, "unreadable folder (" + ec.message() + ")", false);
      return;
    }
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      entries.push_back(it->path());
    }
    if (ec) skip(dir, "unreadable folder (" + ec.message() + ")", false);
    // Sorted, so the skipped list reads the same on every machine.
    std::sort(entries.begin(), entries.end());
    for (const fs::path& p : entries) {
      if (hidden(p)) {
        skip(p, "hidden", false);
        continue;
      }
      struct stat st {};
      if (::stat(p.c_str(), &st) != 0) {  // follows links: a loop or a dangling link fails here
        const int err = errno;
        const bool image = is_image_name(p);
        if (image && o_.bad_images_are_errors)
          throw ImageError(p.string(), ImageFault::Unreadable,
                           "cannot be read (" + os_reason(err) + ")");
        skip(p, err == ELOOP ? "symlink loop" : "unreadable (" + os_reason(err) + ")", image);
        continue;
      }
      if (S_ISDIR(st.st_mode)) {
        const DirId id{st.st_dev, st.st_ino};
        if (std::find(stack.begin(), stack.end(), id) != stack.end()) {
          skip(p, "symlink loop", false);
        } else if (depth + 1 >= kMaxDepth) {
          skip(p, "folders nested too deep", false);
        } else {
          stack.push_back(id);
          walk(p, files, stack, depth + 1);
          stack.pop_back();
        }
        continue;
      }
      if (!is_image_name(p)) {
        skip(p, not_an_image(p), false);
        continue;
      }
      if (!S_ISREG(st.st_mode)) {
        bad_image(ImageError(p.string(), ImageFault::Unreadable, "is not a regular file"), p);
        continue;
      }
      if (o_.check_files) {
        try {
          check_image_file(p.string());
        } catch (const ImageError& e) {
          bad_image(e, p);
          continue;
        }
      }
      files.push_back(p.string());
    }
  }

  fs::path root_;
  ImageList& out_;
  const ImageListOptions& o_;
  std::vector<DirId> ancestors_;
};

// The non-hidden subfolders of `dir` (links followed), sorted bytewise.
std::vector<std::string> class_names_in(const fs::path& dir, const std::string& shown) {
  std::vector<std::string> v;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code ec2;
    if (!hidden(it->path()) && fs::is_directory(it->path(), ec2))
      v.push_back(it->path().filename().string());
  }
  if (ec) throw IoError("cannot read the folder '" + shown + "' (" + ec.message() + ")");
  std::sort(v.begin(), v.end());
  return v;
}

void split_test(ImageList& l, const ImageListOptions& o) {
  std::vector<ImageItem> train;
  Rng rng(o.split_seed);
  size_t at = 0;
  while (at < l.train.size()) {
    size_t end = at;
    while (end < l.train.size() && l.train[end].label == l.train[at].label) ++end;
    std::vector<ImageItem> v(l.train.begin() + long(at), l.train.begin() + long(end));
    const size_t n = v.size();
    for (size_t i = n; i > 1; --i) std::swap(v[i - 1], v[rng.below(i)]);
    // round half up (note: not Python's round(), which rounds half to even).
    size_t n_test = size_t(std::floor(double(n) * o.test_fraction + 0.5));
    if (n_test >= n) n_test = n - 1;
    std::vector<ImageItem> t(v.begin(), v.begin() + long(n_test)),
        r(v.begin() + long(n_test), v.end());
    auto by_path = [](const ImageItem& a, const ImageItem& b) { return a.path < b.path; };
    std::sort(t.begin(), t.end(), by_path);
    std::sort(r.begin(), r.end(), by_path);
    l.test.insert(l.test.end(), t.begin(), t.end());
    train.insert(train.end(), r.begin(), r.end());
    at = end;
  }
  l.train = std::move(train);
}

// A first few skipped files, for a message that says why nothing was found.
std::string first_skipped(const ImageList& l) {
  if (l.skipped.empty()) return "";
  std::string s = " (" + std::to_string(l.skipped.size()) + " files left out; ";
  for (size_t i = 0; i < l.skipped.size() && i < 3; ++i)
    s += (i ? ", " : "") + l.skipped[i].path + ": " + l.skipped[i].why;
  return s + (l.skipped.size() > 3 ? ", ...)" : ")");
}

}  // namespace

const std::vector<std::string>& image_extensions() {
  static const std::vector<std::string> ext{".png", ".jpg",  ".jpeg", ".bmp", ".webp",
                                            ".tif", ".tiff", ".pgm",  ".ppm"};
  return ext;
}

bool has_image_extension(const std::string& name) {
  return is_image_name(fs::path(name));
}

std::vector<std::string> image_files_in(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code ec2;
    if (!hidden(it->path()) && is_image_name(it->path()) && fs::is_regular_file(it->path(), ec2))
      found.push_back(it->path().string());
  }
  if (ec) throw IoError(dir + ": cannot list the folder (" + ec.message() + ")");
  std::sort(found.begin(), found.end());
  return found;
}

ImageList list_image_folder(const std::string& dir, const ImageListOptions& o) {
  std::error_code ec;
  const auto st = fs::status(dir, ec);
  if (ec || !fs::exists(st)) {
    if (ec && ec != std::errc::no_such_file_or_directory)
      throw IoError("cannot open the image folder '" + dir + "' (" + ec.message() + ")");
    throw IoError("the image folder '" + dir +
                  "' does not exist: give the folder that holds one subfolder of images per class");
  }
  if (!fs::is_directory(st))
    throw IoError("'" + dir +
                  "' is a file, not a folder: give the folder that holds one subfolder of images "
                  "per class");
  ImageList l;
  const fs::path root = absolute_dir(dir);
  l.root = root.string();
  const bool has_train = fs::is_directory(root / "train", ec);
  const fs::path base = has_train ? root / "train" : root;
  std::vector<std::string> names = class_names_in(base, has_train ? dir + "/train" : dir);
  if (names.empty())
    throw DataError("'" + dir +
                    "' has no class folders: put the images of each class in a subfolder named "
                    "after the class (e.g. cats/, dogs/)");
  Walker w(root, l, o);
  w.add_ancestor(root);
  if (has_train) w.add_ancestor(base);
  const bool val_dir = has_train && fs::is_directory(root / "val", ec);
  const bool test_dir = has_train && fs::is_directory(root / "test", ec);
  for (const std::string& n : names) {
    std::vector<std::string> files = w.files_of(base / n);
    if (files.empty()) {
      l.empty_classes.push_back(n);
      continue;
    }
    const int32_t label = int32_t(l.class_names.size());
    l.class_names.push_back(n);
    for (auto& f : files) l.train.push_back({f, label});
    for (int k = 0; k < 2; ++k) {
      if (!(k == 0 ? val_dir : test_dir)) continue;
      const fs::path d = root / (k == 0 ? "val" : "test") / n;
      if (!fs::is_directory(d, ec)) continue;
      for (auto& f : w.files_of(d)) (k == 0 ? l.val : l.test).push_back({f, label});
    }
  }
  if (l.class_names.empty())
    throw DataError("'" + dir + "' has class folders but no usable image in any of them" +
                    first_skipped(l));
  if (!test_dir && o.test_fraction > 0) split_test(l, o);
  return l;
}

namespace {

struct CsvRow {
  int64_t line = 0;  // where the row starts, 1 = the header
  std::vector<std::string> fields;
};

// RFC 4180: fields separated by commas, rows by CRLF or LF; a quoted field
// may hold commas, line breaks and doubled quotes. Blank lines are skipped.
std::vector<CsvRow> parse_csv(const std::string& s, const std::string& csv) {
  std::vector<CsvRow> rows;
  size_t i = s.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;  // a UTF-8 BOM (Excel writes one)
  int64_t line = 1;
  auto eol = [&](size_t k) { return k >= s.size() || s[k] == '\n' || s[k] == '\r'; };
  while (i < s.size()) {
    CsvRow r;
    r.line = line;
    bool quoted = false;
    for (;;) {
      std::string f;
      if (i < s.size() && s[i] == '"') {
        quoted = true;
        ++i;
        for (;;) {
          if (i >= s.size())
            throw DataError(csv + " line " + std::to_string(r.line) +
                            ": a quoted field is not closed");
          const char ch = s[i++];
          if (ch == '"') {
            if (i < s.size() && s[i] == '"') {
              f += '"';
              ++i;
              continue;
            }
            break;
          }
          if (ch == '\n') ++line;
          f += ch;
        }
        if (!eol(i) && s[i] != ',')
          throw DataError(csv + " line " + std::to_string(line) +
                          ": text after a closing quote (a quote inside a field is written \"\")");
      } else {
        while (!eol(i) && s[i] != ',') f += s[i++];
      }
      r.fields.push_back(std::move(f));
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      if (i < s.size() && s[i] == '\r') ++i;
      if (i < s.size() && s[i] == '\n') ++i;
      ++line;
      break;
    }
    if (!(r.fields.size() == 1 && r.fields[0].empty() && !quoted)) rows.push_back(std::move(r));
  }
  return rows;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

}  // namespace

ImageList list_image_csv(const std::string& csv, const ImageListOptions& o) {
  std::string text;
  {
    std::error_code ec;
    const auto st = fs::status(csv, ec);
    if (ec || !fs::exists(st))
      throw IoError("the image list '" + csv + "' cannot be opened (" +
                    (ec ? ec.message() : std::string("it does not exist")) + ")");
    if (fs::is_directory(st)) throw IoError("'" + csv + "' is a folder, not a CSV image list");
    FILE* f = std::fopen(csv.c_str(), "rb");
    if (!f)
      throw IoError("the image list '" + csv + "' cannot be opened (" + os_reason(errno) + ")");
    char buf[1 << 16];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
      text.append(buf, n);
      if (text.size() > (size_t(1) << 30)) {
        std::fclose(f);
        throw IoError("the image list '" + csv + "' is over 1 GB; is it a CSV file?");
      }
    }
    const bool err = std::ferror(f) != 0;
    std::fclose(f);
    if (err) throw IoError("the image list '" + csv + "' cannot be read");
  }
  std::vector<CsvRow> rows = parse_csv(text, csv);
  if (rows.empty())
    throw DataError(csv + " is empty: its first line must name the columns path and label");
  int pc = -1, lc = -1, sc = -1;
  const std::vector<std::string>& head = rows[0].fields;
  for (size_t k = 0; k < head.size(); ++k) {
    const std::string n = lower_ascii(trim(head[k]));
    int* col = n == "path" ? &pc : n == "label" ? &lc : n == "split" ? &sc : nullptr;
    if (col && *col < 0) *col = int(k);
  }
  if (pc < 0 || lc < 0) {
    std::string has;
    for (size_t k = 0; k < head.size(); ++k) has += (k ? ", " : "") + head[k];
    throw DataError(csv +
                    " line 1: the header must name the columns path and label (and "
                    "optionally split); it has: " +
                    has);
  }
  const fs::path file = absolute_dir(csv);
  const fs::path root = file.parent_path();
  ImageList l;
  l.root = root.string();
  struct Kept {
    std::string path, label;
    int split;
  };
  std::vector<Kept> kept;
  std::set<std::string> all_labels;
  bool any_test = false;
  for (size_t r = 1; r < rows.size(); ++r) {
    const CsvRow& row = rows[r];
    const std::string at = csv + " line " + std::to_string(row.line) + ": ";
    if (row.fields.size() != head.size())
      throw DataError(at + std::to_string(row.fields.size()) + " fields where the header has " +
                      std::to_string(head.size()));
    const std::string& path = row.fields[size_t(pc)];
    const std::string& label = row.fields[size_t(lc)];
    if (path.empty()) throw DataError(at + "the path is empty");
    if (label.empty()) throw DataError(at + "the label is empty");
    int split = 0;
    if (sc >= 0) {
      const std::string s = lower_ascii(trim(row.fields[size_t(sc)]));
      if (s == "val")
        split = 1;
      else if (s == "test")
        split = 2;
      else if (!s.empty() && s != "train")
        throw DataError(at + "the split is '" + row.fields[size_t(sc)] +
                        "'; it must be train, val, test or empty");
    }
    all_labels.insert(label);
    const fs::path given(path);
    const fs::path full = (given.is_absolute() ? given : root / given).lexically_normal();
    if (o.check_files) {
      try {
        check_image_file(full.string());
      } catch (const ImageError& e) {
        std::string d = e.what();
        d = d.substr(std::min(d.size(), e.path().size() + 2));
        if (o.bad_images_are_errors)
          throw ImageError(e.path(), e.fault(),
                           d + " (line " + std::to_string(row.line) + " of " + csv + ")");
        std::string rel = full.lexically_relative(root).generic_string();
        if (rel.empty() || rel.rfind("..", 0) == 0) rel = full.string();
        l.skipped.push_back({rel, "line " + std::to_string(row.line) + ": " + why_of(e), true});
        continue;
      }
    }
    any_test = any_test || split == 2;
    kept.push_back({full.string(), label, split});
  }
  std::set<std::string> used;
  for (const Kept& k : kept) used.insert(k.label);
  l.class_names.assign(used.begin(), used.end());  // std::set: bytewise order
  for (const std::string& s : all_labels)
    if (!used.count(s)) l.empty_classes.push_back(s);
  if (l.class_names.empty())
    throw DataError(
        csv + " lists no usable image" +
        (rows.size() == 1 ? std::string(" (it has a header and no rows)") : first_skipped(l)));
  std::map<std::string, int32_t> index;
  for (size_t k = 0; k < l.class_names.size(); ++k) index[l.class_names[k]] = int32_t(k);
  for (const Kept& k : kept)
    (k.split == 0 ? l.train : k.split == 1 ? l.val : l.test).push_back({k.path, index[k.label]});
  auto order = [](const ImageItem& a, const ImageItem& b) {
    return a.label != b.label ? a.label < b.label : a.path < b.path;
  };
  for (auto* v : {&l.train, &l.val, &l.test}) std::stable_sort(v->begin(), v->end(), order);
  if (!any_test && o.test_fraction > 0) split_test(l, o);
  return l;
}

bool looks_like_image_folder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  const fs::path base =
      fs::is_directory(fs::path(dir) / "train", ec) ? fs::path(dir) / "train" : fs::path(dir);
  // Bounded: a few thousand entries, a few levels, links not followed (a
  // loop cannot hold it); a real image folder shows an image long before.
  int budget = 4000;
  std::vector<std::pair<fs::path, int>> todo;
  for (fs::directory_iterator it(base, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (std::error_code e1; !hidden(it->path()) && it->is_directory(e1))
      todo.push_back({it->path(), 0});
  std::sort(todo.begin(), todo.end());
  while (!todo.empty() && budget > 0) {
    const auto [d, depth] = todo.back();
    todo.pop_back();
    std::error_code e2;
    for (fs::directory_iterator it(d, e2); !e2 && it != fs::directory_iterator() && budget-- > 0;
         it.increment(e2)) {
      if (hidden(it->path())) continue;
      std::error_code e3;
      const auto s = it->symlink_status(e3);
      if (e3) continue;
      if (fs::is_directory(s)) {
        if (depth < 4) todo.push_back({it->path(), depth + 1});
      } else if (is_image_name(it->path())) {
        std::error_code e4;
        if (fs::is_regular_file(it->path(), e4)) return true;
      }
    }
  }
  return false;
}

namespace {

// class_folders_in, and whether the classes are those of dir/train (a
// dataset split into train/, val/ and test/ folders, as the folder
// listing reads it).
std::vector<std::string> folder_classes(const std::string& dir, bool* in_train) {
  if (!looks_like_image_folder(dir) || !image_files_in(dir).empty()) return {};
  std::error_code ec;
  *in_train = fs::is_directory(fs::path(dir) / "train", ec);
  try {
    return class_names_in(*in_train ? fs::path(dir) / "train" : fs::path(dir), dir);
  } catch (const IoError&) {
    return {};  // unreadable: the caller's own message stands
  }
}

}  // namespace

std::vector<std::string> class_folders_in(const std::string& dir) {
  bool in_train = false;
  return folder_classes(dir, &in_train);
}

std::string class_folders_note(const std::string& dir) {
  bool in_train = false;
  const std::vector<std::string> names = folder_classes(dir, &in_train);
  if (names.empty()) return {};
  constexpr size_t kNamed = 3;
  std::string listed;
  for (size_t i = 0; i < names.size() && i < kNamed; ++i) listed += (i ? ", " : "") + names[i];
  if (names.size() > kNamed) listed += " and " + std::to_string(names.size() - kNamed) + " more";
  return dir + " holds " +
         (in_train ? "a dataset with class folders (" + listed + ") in train/"
                   : "class folders (" + listed + ")") +
         ", not pictures";
}

}  // namespace dc
