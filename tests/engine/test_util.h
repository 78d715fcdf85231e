#pragma once
// Helpers shared by the engine tests: attribute literals, registry lookup and
// a scratch directory that cleans up after itself.
#include <deepcanvas/attrs.h>
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/graph.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/rng.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace dc::test {

using Ints = std::vector<int64_t>;

#ifdef DC_SOURCE_DIR
// The networks shipped with the app, sorted: the templates, and with
// `with_sample` the sample project first.
inline std::vector<std::string> project_files(bool with_sample = true) {
  std::vector<std::string> v;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(DC_SOURCE_DIR) + "/resources/templates"))
    if (e.path().extension() == ".dcproj") v.push_back(e.path().string());
  std::sort(v.begin(), v.end());
  if (with_sample)
    v.insert(v.begin(), std::string(DC_SOURCE_DIR) + "/sample_data/sample_project.dcproj");
  return v;
}
#endif

inline Attrs attrs(std::initializer_list<std::pair<const char*, AttrValue>> kv) {
  Attrs a;
  for (auto& [k, v] : kv) a.set(k, v);
  return a;
}

// Embedding (dim 8) -> [Dropout] -> a Dense at every step over windows of
// T tokens and a vocabulary of V: a network that predicts every step.
inline Graph every_step_model(int64_t T, int64_t V, double dropout = 0) {
  register_builtin_layers();
  Graph g;
  NodeId x =
      g.add_node("SequenceInput", "input",
                 attrs({{"steps", T}, {"features", int64_t(1)}, {"kind", std::string("tokens")}}));
  NodeId e = g.add_node("Embedding", "embed", attrs({{"vocab_size", V}, {"dim", int64_t(8)}}));
  g.connect(x, e);
  if (dropout > 0) {
    NodeId d = g.add_node("Dropout", "drop", attrs({{"rate", dropout}}));
    g.connect(e, d);
    e = d;
  }
  g.connect(e, g.add_node("TimeDistributedDense", "fc", attrs({{"units", V}})));
  return g;
}

// A learnable toy problem: 8x8 grey images whose class is the quadrant with
// the brightest blob; a fraction `noise` of the labels is random instead.
inline Dataset quadrant_toy(int64_t n, uint64_t seed, double noise = 0) {
  Dataset d;
  d.sample_shape = Shape{1, 8, 8};
  d.num_classes = 4;
  d.source = "toy";
  Rng r(seed);
  d.pixels.resize(size_t(n * 64));
  d.labels.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    const int q = int(r.below(4));
    d.labels[size_t(i)] = noise > 0 && r.uniform() < noise ? int(r.below(4)) : q;
    for (int y = 0; y < 8; ++y)
      for (int x = 0; x < 8; ++x) {
        const bool in = (y / 4) * 2 + (x / 4) == q;
        d.pixels[size_t(i * 64 + y * 8 + x)] = uint8_t(r.below(100) + (in ? 120 : 0));
      }
  }
  return d;
}

// A small MLP for quadrant_toy: Input {1,8,8} -> Flatten -> Dense "hidden"
// (16) -> ReLU [-> Dropout "drop"] -> Dense "out" (4).
inline Graph quadrant_mlp(bool dropout = false) {
  register_builtin_layers();
  Graph g;
  Attrs in;
  in.set("shape", std::vector<int64_t>{1, 8, 8});
  NodeId a = g.add_node("Input", "input", in);
  NodeId f = g.add_node("Flatten");
  Attrs h;
  h.set("units", int64_t(16));
  NodeId d1 = g.add_node("Dense", "hidden", h);
  NodeId r = g.add_node("ReLU");
  Attrs o;
  o.set("units", int64_t(4));
  NodeId d2 = g.add_node("Dense", "out", o);
  g.connect(a, f);
  g.connect(f, d1);
  g.connect(d1, r);
  if (dropout) {
    NodeId dr = g.add_node("Dropout", "drop");
    g.connect(r, dr);
    g.connect(dr, d2);
  } else {
    g.connect(r, d2);
  }
  return g;
}

inline const LayerDescriptor& desc(const std::string& type) {
  register_builtin_layers();
  return LayerRegistry::instance().get(type);
}

// A fresh directory under the system temp dir, unique per process and
// instance, removed with everything in it when the object goes away.
struct TmpDir {
  std::filesystem::path dir;
  TmpDir() {
    static int counter = 0;
    dir = std::filesystem::temp_directory_path() /
          ("dc_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~TmpDir() { std::filesystem::remove_all(dir); }
  TmpDir(const TmpDir&) = delete;
  TmpDir& operator=(const TmpDir&) = delete;
  std::string path(const std::string& name) const { return (dir / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  std::vector<std::string> listing() const {
    std::vector<std::string> v;
    for (auto& e : std::filesystem::directory_iterator(dir))
      v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
  }
};

// The message of the dc::Error f throws; "(no error)" when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A scratch XDG_* folder for one test, the old value put back after.
class ScratchXdg {
 public:
  explicit ScratchXdg(const char* var) : var_(var) {
    if (const char* v = std::getenv(var)) old_ = v;
    had_ = std::getenv(var) != nullptr;
    dir_ = std::filesystem::temp_directory_path() /
           ("dc-xdg-" + std::to_string(::getpid()) + "-" + var);
    std::filesystem::create_directories(dir_);
    ::setenv(var, dir_.c_str(), 1);
  }
  ~ScratchXdg() {
    if (had_) {
      ::setenv(var_, old_.c_str(), 1);
    } else {
      ::unsetenv(var_);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  const std::filesystem::path& dir() const { return dir_; }

 private:
  const char* var_;
  std::string old_;
  bool had_ = false;
  std::filesystem::path dir_;
};

// Float samples of `shape` drawn uniformly in [-1, 1], labels cycling
// through `classes` (the quantization tests' calibration and test sets).
inline Dataset toy_data(const Shape& shape, int64_t n, int classes, uint64_t seed) {
  Rng rng(seed);
  Dataset d;
  d.sample_shape = shape;
  d.values.resize(size_t(n * shape.numel()));
  for (float& v : d.values) v = rng.uniform(-1.f, 1.f);
  for (int64_t i = 0; i < n; ++i) d.labels.push_back(int32_t(i % classes));
  d.num_classes = classes;
  d.source = "toy";
  return d;
}

}  // namespace dc::test
