#pragma once
// Helpers for the end-to-end tests of deepcanvas-cli: run it, temporary
// folders, the bundled sample project.
#include <deepcanvas/io.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

namespace dc::e2e {

namespace fs = std::filesystem;

struct CliRun {
  int code = -1;
  std::string out;  // stdout and stderr together
};

// Any shell command, stdout and stderr together.
inline CliRun cli_command(const std::string& command) {
  std::string cmd = command + " 2>&1";
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return r;
}

inline CliRun cli(const std::string& args) {
  return cli_command(std::string(DC_CLI) + " " + args);
}

inline std::string src(const std::string& rel) {
  return std::string(DC_SOURCE_DIR) + "/" + rel;
}
inline const std::string kSample = src("sample_data/sample_project.dcproj");

class Tmp {
 public:
  Tmp() {
    dir_ = fs::temp_directory_path() /
           ("dc_e2e_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(dir_);
  }
  ~Tmp() { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name), std::ios::binary) << text;
    return path(name);
  }

 private:
  fs::path dir_;
  static inline int counter_ = 0;
};

inline std::string sample_text() {
  return dc::read_file(kSample);
}

inline std::string replaced(std::string s, const std::string& a, const std::string& b) {
  auto p = s.find(a);
  EXPECT_NE(p, std::string::npos) << a;
  if (p != std::string::npos) s.replace(p, a.size(), b);
  return s;
}

// A project file in tmp whose dataset points at the bundled subset (a
// truncated project may have lost its dataset section; it stays as it is).
inline std::string project_in(const Tmp& t, std::string text) {
  const std::string rel = "\"path\": \"fashion-mnist-subset\"";
  auto p = text.find(rel);
  if (p != std::string::npos)
    text.replace(p, rel.size(), "\"path\": \"" + src("sample_data/fashion-mnist-subset") + "\"");
  return t.write("p.dcproj", text);
}

// --json prints one JSON object as the last line of stdout; it nests objects
// (the per-epoch history), so the last '{' is not where it starts.
inline nlohmann::json last_json_line(const std::string& out) {
  size_t end = out.find_last_not_of("\n");
  size_t start = out.rfind('\n', end);
  return nlohmann::json::parse(out.substr(start == std::string::npos ? 0 : start + 1));
}

}  // namespace dc::e2e
