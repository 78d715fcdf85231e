#pragma once
// Per-user folders of the XDG base-directory spec, shared by the benchmark
// cache and the user's GPU catalog.
#include <string>

namespace dc::advisor {

// $<xdg_var>/DeepCanvas, else ~/<home_sub>/DeepCanvas, else a folder in the
// system temp directory (no HOME: a service account).
std::string user_dir(const char* xdg_var, const char* home_sub);

}  // namespace dc::advisor
