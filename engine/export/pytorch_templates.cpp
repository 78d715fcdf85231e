#include "pytorch_templates.h"

#include <deepcanvas/errors.h>
#include <deepcanvas/escape.h>

#include <map>
#include <regex>

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

std::string fill_template(const std::string& text,
                          const std::map<std::string, std::string>& values) {
  // A mark names its value and the language it lands in (@KEY:context@), and
  // the value goes in only through that language's escape: a template
  // cannot paste a project's string as it is, by mistake or otherwise.
  // Anything between the colon and the closing @ is taken as the context's
  // name, so a misspelt one stops the export instead of staying unfilled.
  static const std::regex mark("@([A-Z][A-Z0-9_]*)(?::([^@\\s]*))?@");
  std::string out;
  size_t last = 0;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), mark); it != std::sregex_iterator();
       ++it) {
    const std::smatch& m = *it;
    const std::string key = m[1].str();
    auto v = values.find(key);
    if (v == values.end() || !m[2].matched)
      throw Error("internal: export template mark " + m[0].str() +
                  (v == values.end() ? " has no value" : " names no escape"));
    out.append(text, last, size_t(m.position(0)) - last);
    out += escape::apply(m[2].str(), v->second, key);
    last = size_t(m.position(0) + m.length(0));
  }
  return out + text.substr(last);
}

}  // namespace dc
