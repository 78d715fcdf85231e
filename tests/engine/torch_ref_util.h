#pragma once
// Shared by the tests that compare layers with PyTorch: a Python subprocess
// (python3-torch, the reference the issues name), the reason it is missing
// when it is, and attributes as JSON for the reference scripts.
#include <deepcanvas/attrs.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

namespace dc::test {

inline const std::string kPython = "/usr/bin/python3";

// Runs a shell command; stdout and stderr together, the exit status in *code.
inline std::string run_command(const std::string& cmd, int* code) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return "popen failed";
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *code = ::pclose(p);
  return out;
}

// Why torch is unusable here, or "" when it works (asked once per process).
inline std::string torch_missing() {
  static const std::string why = [] {
    int code = 0;
    std::string out = run_command(kPython + " -c 'import torch, numpy'", &code);
    return code == 0 ? std::string() : "PyTorch is not importable by " + kPython + ": " + out;
  }();
  return why;
}

inline nlohmann::json attrs_json(const Attrs& a) {
  nlohmann::json j = nlohmann::json::object();
  for (auto& [k, v] : a.values()) std::visit([&, &k = k](auto&& x) { j[k] = x; }, v);
  return j;
}

}  // namespace dc::test
