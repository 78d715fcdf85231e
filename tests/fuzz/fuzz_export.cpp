// The PyTorch export with arbitrary strings (issue 29): a project name, layer
// names, a dataset kind, path and target column, a project file name and a
// weights source from the input. Every generated file must keep the
// template's lines: as many line breaks as an export of plain names (plus
// model.py's RENAMED entries) and no control character, NUL, DEL or YAML 1.1
// line break (U+0085, U+2028, U+2029) anywhere. A string that adds a line
// could add a statement; injection_check.py checks the parsed structure of
// chosen payloads with Python, PyYAML and bash.
#include <deepcanvas/graph.h>
#include <deepcanvas/project.h>
#include <deepcanvas/pytorch_export.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <map>

#include "fuzz_util.h"

namespace {

dc::Project small_project() {
  dc::Project p;
  p.name = "plain";
  dc::Attrs in, dense;
  in.set("shape", std::vector<int64_t>{4});
  dense.set("units", int64_t(3));
  const dc::NodeId i = p.graph.add_node("Input", "input", in);
  const dc::NodeId d = p.graph.add_node("Dense", "dense", dense);
  const dc::NodeId r = p.graph.add_node("ReLU", "relu", {});
  p.graph.connect(i, d);
  p.graph.connect(d, r);
  p.dataset.path = "/data";
  return p;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

[[noreturn]] void finding(const std::string& file, const std::string& why) {
  std::fprintf(stderr, "export finding in %s: %s\n", file.c_str(), why.c_str());
  std::abort();
}

void check_file(const std::string& name, const std::string& text, size_t lines) {
  if (count(text, "\n") != lines)
    finding(name, std::to_string(count(text, "\n")) + " lines instead of " + std::to_string(lines));
  for (unsigned char c : text)
    if ((c < 0x20 && c != '\n') || c == 0x7f) finding(name, "control byte " + std::to_string(c));
  for (const char* brk : {"\xc2\x85", "\xe2\x80\xa8", "\xe2\x80\xa9"})
    if (text.find(brk) != std::string::npos) finding(name, "a YAML 1.1 line break");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dc::register_builtin_layers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::map<std::string, std::string> plain =
      dc::pytorch_project_files(small_project(), {});
  FuzzedDataProvider in(data, size);
  dc::Project p = small_project();
  dc::PyTorchExportOptions o;
  p.name = in.ConsumeRandomLengthString(200);
  p.dataset.kind = in.ConsumeRandomLengthString(50);
  p.dataset.path = in.ConsumeRandomLengthString(200);
  p.dataset.target = in.ConsumeRandomLengthString(50);
  p.file = in.ConsumeRandomLengthString(100);
  o.weights_source = in.ConsumeRandomLengthString(100);
  dc::fuzz::expect_clean([&] {
    std::vector<dc::NodeId> ids;
    for (const auto& [id, node] : p.graph.nodes()) ids.push_back(id);
    for (dc::NodeId id : ids) p.graph.rename(id, in.ConsumeRandomLengthString(100));
    const auto files = dc::pytorch_project_files(p, o);
    size_t renamed = 0;
    for (const auto& [id, attr] : dc::pytorch_attribute_names(p.graph))
      renamed += attr != p.graph.node(id).name;
    for (const auto& [name, text] : files)
      check_file(name, text, count(plain.at(name), "\n") + (name == "model.py" ? renamed : 0));
  });
  return 0;
}
