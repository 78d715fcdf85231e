#include <deepcanvas/advisor/paths.h>

#include <cstdlib>
#include <filesystem>

namespace dc::advisor {

std::string user_dir(const char* xdg_var, const char* home_sub) {
  namespace fs = std::filesystem;
  fs::path base;
  if (const char* x = std::getenv(xdg_var); x && *x) {
    base = x;
  } else if (const char* h = std::getenv("HOME"); h && *h) {
    base = fs::path(h) / home_sub;
  } else {
    base = fs::temp_directory_path();
  }
  return (base / "DeepCanvas").string();
}

}  // namespace dc::advisor
