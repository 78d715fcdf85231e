#include "pytorch_templates.h"

#include <deepcanvas/errors.h>

#include <map>

namespace dc {

const std::string& template_text(const std::string& name) {
  // Generated from engine/export/templates/ by cmake/embed_templates.cmake.
  static const std::map<std::string, std::string> files = {
#include "pytorch_templates.inc"
  };
  auto it = files.find(name);
  if (it == files.end()) throw Error("internal: no export template named " + name);
  return it->second;
}

std::string fill_template(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    const std::string mark = "@" + key + "@";
    for (size_t at = text.find(mark); at != std::string::npos;
         at = text.find(mark, at + value.size()))
      text.replace(at, mark.size(), value);
  }
  return text;
}

}  // namespace dc
