#pragma once
// The export's static files (engine/export/templates/), compiled in so the
// export needs nothing beside the binary.
#include <map>
#include <string>

namespace dc {

// The template's text; throws Error for an unknown name.
const std::string& template_text(const std::string& name);

// text with every @KEY:context@ replaced by values[KEY] escaped for context
// (escape::apply); throws Error for a mark without a value or a context.
std::string fill_template(const std::string& text,
                          const std::map<std::string, std::string>& values);

}  // namespace dc
