// Every layer the editor offers must run on the GPU or say why it cannot:
// the plugin's op registry (cuda/op_registry.h) against the engine's
// LayerRegistry and its CPU-only list (cpu_only_layers() in backend.h).
// Needs the plugin to load but no driver or GPU, so it runs wherever the
// plugin is built and skips, saying so, where it is not.
#include <deepcanvas/backend.h>
#include <deepcanvas/device.h>
#include <deepcanvas/layer.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace dc {
namespace {

// The plugin's layer types, or why they could not be read.
bool plugin_op_types(std::set<std::string>& types, std::string& why) {
  for (const std::string& path : cuda_plugin_candidates()) {
    if (!std::filesystem::exists(path)) continue;
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      why = path + " does not load: " + (e ? e : "unknown error");
      return false;
    }
    auto fn = reinterpret_cast<dc_cuda_op_types_fn>(dlsym(h, "dc_cuda_op_types"));
    if (!fn) {
      why = path + " has no dc_cuda_op_types (a stale build?)";
      return false;
    }
    std::istringstream in(fn());
    for (std::string t; std::getline(in, t);) types.insert(t);
    return true;
  }
  why = "the CUDA plugin was not built (no CUDA toolkit?)";
  return false;
}

TEST(CudaOpCoverage, EveryLayerHasACudaOpOrIsListedAsCpuOnly) {
  std::set<std::string> ops;
  std::string why;
  if (!plugin_op_types(ops, why)) {
    const char* required = std::getenv("DC_REQUIRE_CUDA");
    if (required && std::string(required) == "1") FAIL() << "DC_REQUIRE_CUDA=1 but " << why;
    GTEST_SKIP() << why;
  }
  ASSERT_FALSE(ops.empty());
  register_builtin_layers();
  std::map<std::string, std::string> cpu_only;
  for (const CpuOnlyLayer& l : cpu_only_layers()) {
    EXPECT_FALSE(l.reason.empty()) << l.type << " is CPU-only without a reason";
    EXPECT_NE(LayerRegistry::instance().find(l.type), nullptr)
        << "cpu_only_layers() lists " << l.type << ", which is not a layer";
    cpu_only[l.type] = l.reason;
  }
  for (const LayerDescriptor* d : LayerRegistry::instance().all()) {
    const bool has_op = ops.count(d->type) != 0, listed = cpu_only.count(d->type) != 0;
    if (is_input_type(d->type)) {
      EXPECT_FALSE(has_op || listed) << d->type << " is fed by the plan; it is not an op";
      continue;
    }
    // A block is flattened into its layers before any plan is made.
    if (d->type == "Block") {
      EXPECT_FALSE(has_op || listed) << "Block is flattened; it is not an op";
      continue;
    }
    EXPECT_TRUE(has_op || listed)
        << d->type << " has no CUDA op: register one in cuda/ (op_registry.h) or list it in "
        << "cpu_only_layers() with the reason";
    EXPECT_FALSE(has_op && listed) << d->type << " has a CUDA op but is listed as CPU-only";
  }
  for (const std::string& t : ops)
    EXPECT_NE(LayerRegistry::instance().find(t), nullptr)
        << "the plugin has an op for " << t << ", which is not a layer";
}

}  // namespace
}  // namespace dc
