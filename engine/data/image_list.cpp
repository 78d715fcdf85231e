// Which files make an image dataset, their classes and splits
// (image_data.h). A first version; the documented walk and split are what
// train.py repeats.
#include <deepcanvas/image_data.h>
#include <deepcanvas/rng.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

namespace dc {

namespace fs = std::filesystem;

namespace {

bool is_image_name(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  static const std::set<std::string> ok{".png", ".jpg",  ".jpeg", ".bmp", ".webp",
                                        ".tif", ".tiff", ".pgm",  ".ppm"};
  return ok.count(e) != 0;
}

bool hidden(const fs::path& p) {
  const std::string n = p.filename().string();
  return !n.empty() && n[0] == '.';
}

std::vector<std::string> class_names_in(const fs::path& dir) {
  std::vector<std::string> v;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec))
    if (it->is_directory(ec) && !hidden(it->path())) v.push_back(it->path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}

// The class's image files below `dir`, sorted; others into `skipped`.
std::vector<std::string> files_of(const fs::path& dir, const fs::path& root, ImageList& out,
                                  const ImageListOptions& o) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (auto it =
           fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    if (hidden(p)) {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec)) continue;
    const std::string rel = p.lexically_relative(root).string();
    if (!is_image_name(p)) {
      out.skipped.push_back({rel, "not an image (" + p.extension().string() + ")", false});
      continue;
    }
    if (o.check_files) {
      try {
        check_image_file(p.string());
      } catch (const ImageError& e) {
        if (o.bad_images_are_errors) throw;
        out.skipped.push_back({rel, fault_name(e.fault()), true});
        continue;
      }
    }
    files.push_back(p.string());
  }
  std::sort(files.begin(), files.end());
  return files;
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

}  // namespace

ImageList list_image_folder(const std::string& dir, const ImageListOptions& o) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw IoError("'" + dir + "' is not a folder");
  ImageList l;
  const fs::path root(dir);
  l.root = dir;
  const bool has_train = fs::is_directory(root / "train", ec);
  const fs::path base = has_train ? root / "train" : root;
  std::vector<std::string> names = class_names_in(base);
  if (names.empty())
    throw DataError("'" + dir +
                    "' has no class folders: put the images of each class in a subfolder named "
                    "after the class (e.g. cats/, dogs/)");
  for (const std::string& n : names) {
    std::vector<std::string> files = files_of(base / n, root, l, o);
    if (files.empty()) {
      l.empty_classes.push_back(n);
      continue;
    }
    const int32_t label = int32_t(l.class_names.size());
    l.class_names.push_back(n);
    for (auto& f : files) l.train.push_back({f, label});
    if (has_train) {
      for (auto& f : files_of(root / "val" / n, root, l, o)) l.val.push_back({f, label});
      for (auto& f : files_of(root / "test" / n, root, l, o)) l.test.push_back({f, label});
    }
  }
  if (l.class_names.empty())
    throw DataError("'" + dir + "' has class folders but no readable images in any of them");
  if (!(has_train && fs::is_directory(root / "test", ec)) && o.test_fraction > 0) split_test(l, o);
  return l;
}

ImageList list_image_csv(const std::string& csv, const ImageListOptions&) {
  throw IoError(csv + ": CSV image lists are not read yet");
}

bool looks_like_image_folder(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  const fs::path base =
      fs::is_directory(fs::path(dir) / "train", ec) ? fs::path(dir) / "train" : fs::path(dir);
  for (const std::string& n : class_names_in(base))
    for (auto it = fs::recursive_directory_iterator(
             base / n, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file(ec) && is_image_name(it->path())) return true;
  return false;
}

}  // namespace dc
