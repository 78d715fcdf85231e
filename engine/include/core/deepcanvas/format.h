#pragma once
// Numbers as the CLI, the summary and the status bar show them: "421.6k",
// "1.6 MiB"; and the distance behind every "did you mean" (CLI options,
// sweep parameters).
#include <cstddef>
#include <string>

namespace dc {

std::string human_count(double n);
std::string human_bytes(double bytes);
// Levenshtein distance.
size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace dc
