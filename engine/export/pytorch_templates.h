#pragma once
// The export's static files (engine/export/templates/), compiled in so the
// export needs nothing beside the binary.
#include <map>
#include <string>

namespace dc {

// The template's text; throws Error for an unknown name.
const std::string& template_text(const std::string& name);

// text with every @KEY@ replaced by its value.
std::string fill_template(std::string text, const std::map<std::string, std::string>& values);

}  // namespace dc
