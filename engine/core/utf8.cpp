#include <deepcanvas/utf8.h>

namespace dc {

int32_t next_code_point(const std::string& s, size_t& i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) {
    ++i;
    return b;
  }
  const int len = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 0;
  if (len == 0 || b > 0xf4 || i + size_t(len) > s.size()) {
    ++i;
    return kInvalidUtf8;
  }
  int32_t cp = b & (0x7f >> len);
  for (int k = 1; k < len; ++k) {
    const unsigned char c = byte(i + size_t(k));
    if ((c & 0xc0) != 0x80) {
      ++i;
      return kInvalidUtf8;
    }
    cp = (cp << 6) | (c & 0x3f);
  }
  static constexpr int32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
    ++i;
    return kInvalidUtf8;
  }
  i += size_t(len);
  return cp;
}

}  // namespace dc
