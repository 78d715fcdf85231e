// Project files: JSON parsing, validation against the layer registry and the
// settings schema, the graph checks and shape inference, as opening a .dcproj
// does.
#include <deepcanvas/graph.h>
#include <deepcanvas/project.h>
#include <deepcanvas/settings.h>

#include "fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dc::register_builtin_layers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  dc::fuzz::expect_clean([&] {
    dc::Project p = dc::parse_project(text, "fuzz.dcproj");
    auto shapes = p.graph.infer_shapes();
    (void)shapes;
    auto problems = dc::validate(p.training);
    (void)problems;
    p.graph.validate();
    // What saving and reopening does must hold for anything that loaded.
    dc::parse_project(dc::project_to_json(p), "fuzz-resaved.dcproj");
  });
  return 0;
}
