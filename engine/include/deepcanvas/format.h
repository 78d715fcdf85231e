#pragma once
// Numbers as the CLI, the summary and the status bar show them: "421.6k",
// "1.6 MiB".
#include <string>

namespace dc {

std::string human_count(double n);
std::string human_bytes(double bytes);

}  // namespace dc
