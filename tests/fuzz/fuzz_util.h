#pragma once
// Shared by the fuzz targets: the readers take file paths, so each input is
// written to a per-process scratch file first. A dc::Error is the expected
// answer to bad input; anything else (a crash, a sanitizer report, another
// exception, a blown memory or time limit) is a finding.
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace dc::fuzz {

inline std::string scratch_path(const std::string& name) {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("dc_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return (dir / name).string();
}

inline std::string write_scratch(const std::string& name, const uint8_t* data, size_t size) {
  std::string path = scratch_path(name);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return path;
}

// Runs f; dc::Error (a clear refusal) is fine, everything else propagates.
template <class F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const Error&) {
  }
}

}  // namespace dc::fuzz
