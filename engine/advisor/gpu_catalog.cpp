// Loading and validating the GPU catalog. Validation is strict because a
// typo in a user's row (bandwidth in TB/s, a missing field) would otherwise
// turn into a confident but wrong prediction.
#include <deepcanvas/advisor/gpu_catalog.h>
#include <deepcanvas/advisor/paths.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/json_number.h>
#include <deepcanvas/project.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace dc::advisor {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct RowError {
  const std::string& file;
  size_t index;
  std::string name;
  std::string where(const std::string& field) const {
    return file + ": GPU row " + std::to_string(index + 1) +
           (name.empty() ? "" : " ('" + name + "')") + ": field '" + field + "'";
  }
  [[noreturn]] void fail(const std::string& field, const std::string& why) const {
    throw IoError(where(field) + " " + why);
  }
};

// What a row's figures may be: wide enough for any part sold or planned,
// narrow enough that the predictions made from them (seconds, bytes) stay
// finite and fit their integers: a TFLOP/s figure of 1e-300 would predict
// an epoch of 1e290 seconds.
struct Limits {
  double lo, hi;
};
constexpr Limits kMemoryGib{1.0 / 1024, 1 << 20};  // 1 MiB to 1 PiB
constexpr Limits kBandwidthGbs{1e-3, 1e6};
constexpr Limits kTflops{1e-3, 1e6};
constexpr Limits kTdpW{0.1, 1e5};

double number(const json& row, const char* field, const RowError& e, bool optional, Limits l) {
  if (!row.contains(field)) {
    if (optional) return 0;
    e.fail(field, "is missing");
  }
  const json& v = row.at(field);
  if (v.is_null() && optional) return 0;
  if (!v.is_number()) e.fail(field, "must be a number (got " + v.dump() + ")");
  return json_double(v, e.where(field), l.lo, l.hi);
}

std::string text(const json& row, const char* field, const RowError& e) {
  if (!row.contains(field)) e.fail(field, "is missing");
  const json& v = row.at(field);
  if (!v.is_string() || v.get<std::string>().empty())
    e.fail(field, "must be a non-empty string (got " + v.dump() + ")");
  return v.get<std::string>();
}

// A catalog is a few kilobytes; the limit keeps a link to /dev/zero or a
// huge file from being read without bound.
constexpr int64_t kMaxCatalogBytes = 16 << 20;

std::string read_text(const std::string& path) {
  return read_file(path, kMaxCatalogBytes, "GPU catalog");
}

}  // namespace

double GpuSpec::matmul_tflops(Precision p) const {
  switch (p) {
    case Precision::Bf16:
      return bf16_tflops > 0 ? bf16_tflops : fp16_tflops > 0 ? fp16_tflops : fp32_tflops;
    case Precision::Fp16:
      return fp16_tflops > 0 ? fp16_tflops : fp32_tflops;
    case Precision::Fp32:
      break;
  }
  return fp32_tflops;
}

std::vector<GpuSpec> parse_gpu_catalog(const std::string& body, const std::string& file) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw IoError(file + ": not valid JSON");
  if (!j.is_object() || !j.contains("gpus") || !j.at("gpus").is_array())
    throw IoError(file + ": expected an object with a \"gpus\" array");
  std::vector<GpuSpec> out;
  const json& rows = j.at("gpus");
  for (size_t i = 0; i < rows.size(); ++i) {
    const json& r = rows[i];
    RowError e{file, i, ""};
    if (!r.is_object()) e.fail("(row)", "must be an object");
    GpuSpec g;
    g.name = text(r, "name", e);
    e.name = g.name;
    for (const GpuSpec& seen : out)
      if (seen.name == g.name) e.fail("name", "repeats an earlier row's name");
    g.vendor = r.contains("vendor") ? text(r, "vendor", e) : "";
    g.source = text(r, "source", e);
    g.memory_bytes =
        int64_t(number(r, "memory_gib", e, false, kMemoryGib) * double(int64_t(1) << 30));
    g.bandwidth_gbs = number(r, "bandwidth_gbs", e, false, kBandwidthGbs);
    g.fp32_tflops = number(r, "fp32_tflops", e, false, kTflops);
    g.tf32_tflops = number(r, "tf32_tflops", e, true, kTflops);
    g.bf16_tflops = number(r, "bf16_tflops", e, true, kTflops);
    g.fp16_tflops = number(r, "fp16_tflops", e, true, kTflops);
    g.tdp_w = number(r, "tdp_w", e, false, kTdpW);
    // Catches the likeliest unit slip: bandwidth given in TB/s.
    if (g.bandwidth_gbs < 10)
      e.fail("bandwidth_gbs",
             "is in GB/s; " + std::to_string(g.bandwidth_gbs) + " looks like TB/s");
    out.push_back(std::move(g));
  }
  return out;
}

std::string bundled_gpu_catalog_path() {
  const std::string dir = resource_dir();
  return (fs::path(dir.empty() ? std::string(DC_SOURCE_DIR) : dir) / "resources" / "gpus.json")
      .string();
}

std::string user_gpu_catalog_path() {
  return (fs::path(user_dir("XDG_CONFIG_HOME", ".config")) / "gpus.json").string();
}

std::vector<GpuSpec> load_gpu_catalog() {
  const std::string bundled = bundled_gpu_catalog_path();
  std::vector<GpuSpec> all = parse_gpu_catalog(read_text(bundled), bundled);
  const std::string user = user_gpu_catalog_path();
  std::error_code ec;
  if (!user.empty() && fs::exists(user, ec)) {
    for (GpuSpec& g : parse_gpu_catalog(read_text(user), user)) {
      auto it =
          std::find_if(all.begin(), all.end(), [&](const GpuSpec& a) { return a.name == g.name; });
      if (it != all.end()) {
        *it = std::move(g);
      } else {
        all.push_back(std::move(g));
      }
    }
  }
  return all;
}

}  // namespace dc::advisor
