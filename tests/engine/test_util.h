#pragma once
// Helpers shared by the engine tests: attribute literals, registry lookup and
// a scratch directory that cleans up after itself.
#include <deepcanvas/attrs.h>
#include <deepcanvas/layer.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace dc::test {

using Ints = std::vector<int64_t>;

inline Attrs attrs(std::initializer_list<std::pair<const char*, AttrValue>> kv) {
  Attrs a;
  for (auto& [k, v] : kv) a.set(k, v);
  return a;
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

}  // namespace dc::test
