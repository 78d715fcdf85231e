// Device names and where the CUDA plugin is looked for. Loading it and
// asking it for GPUs is train/backend.cpp's: that needs the backend
// interface, which knows plans, graphs and datasets.
#include <deepcanvas/device_spec.h>
#include <deepcanvas/errors.h>

#include <cstdlib>
#include <filesystem>

namespace dc {

namespace fs = std::filesystem;

DeviceSpec parse_device(const std::string& s) {
  DeviceSpec d;
  if (s.empty() || s == "cpu") return d;
  if (s == "cuda" || s == "gpu") {
    d.cuda = true;
    return d;
  }
  if (s.rfind("cuda:", 0) == 0) {
    std::string n = s.substr(5);
    bool digits = !n.empty() && n.size() < 4 && n.find_first_not_of("0123456789") == n.npos;
    if (digits) {
      d.cuda = true;
      d.index = std::stoi(n);
      return d;
    }
  }
  throw Error("unknown device '" + s + "' (use cpu, cuda or cuda:N)");
}

static std::string exe_dir() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.parent_path().string();
}

std::vector<std::string> cuda_plugin_candidates() {
  std::vector<std::string> v;
  if (const char* env = std::getenv("DC_CUDA_PLUGIN"); env && *env) v.push_back(env);
  std::string dir = exe_dir();
  const char* name = "libdeepcanvas-cuda.so";
  if (!dir.empty()) {
    v.push_back(dir + "/" + name);
    v.push_back(dir + "/../lib/" + name);
    v.push_back(dir + "/../lib/deepcanvas/" + name);
  }
  return v;
}

}  // namespace dc
