// Decoding one image file (image_data.h). The header and trailer are read
// by hand before OpenCV sees a byte: a truncated file would otherwise be
// decoded with grey padding and a header that claims billions of pixels
// would ask for gigabytes; check_image_file runs on every file of a folder
// that is listed, so it reads only the few bytes it needs.
#include <deepcanvas/image_data.h>

#include "jpeg_decode.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef DC_HAVE_OPENCV
#include <opencv2/imgproc.hpp>
#endif
#ifdef DC_HAVE_OPENCV_IMGCODECS
#include <opencv2/imgcodecs.hpp>
#endif
#ifdef DC_HAVE_OPENCV_VIDEOIO
#include <opencv2/videoio.hpp>
#endif

namespace dc {

const char* fault_name(ImageFault f) {
  switch (f) {
    case ImageFault::Unreadable:
      return "unreadable";
    case ImageFault::Empty:
      return "empty file";
    case ImageFault::NotAnImage:
      return "not an image";
    case ImageFault::Truncated:
      return "truncated";
    case ImageFault::Corrupt:
      return "corrupt";
    case ImageFault::TooLarge:
      return "too large";
  }
  return "bad";
}

ImageError::ImageError(std::string path, ImageFault fault, const std::string& detail)
    : DataError(path + ": " + detail), path_(std::move(path)), fault_(fault), detail_(detail) {}

namespace {

[[noreturn]] void fail(const std::string& name, ImageFault f, const std::string& detail) {
  throw ImageError(name, f, detail);
}

std::string os_reason(int err) {
  // ELOOP's own words ("too many levels of symbolic links") hide the cause.
  if (err == ELOOP) return "a symlink loop";
  return std::strerror(err);
}

[[noreturn]] void unreadable(const std::string& name, int err) {
  fail(name, ImageFault::Unreadable, "cannot be read (" + os_reason(err) + ")");
}

// An image's bytes at offsets: all in memory, or an open file of which
// only the parts a check asks for are read.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  virtual uint64_t size() const = 0;
  // Up to n bytes at `off`; fewer only at the end of the data.
  virtual size_t read(uint64_t off, uint8_t* buf, size_t n) = 0;
};

class MemSource : public ByteSource {
 public:
  MemSource(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  uint64_t size() const override { return n_; }
  size_t read(uint64_t off, uint8_t* buf, size_t n) override {
    if (off >= n_) return 0;
    n = std::min<size_t>(n, size_t(n_ - off));
    std::memcpy(buf, d_ + off, n);
    return n;
  }

 private:
  const uint8_t* d_;
  size_t n_;
};

class FileSource : public ByteSource {
 public:
  FileSource(int fd, uint64_t size, const std::string& name) : fd_(fd), size_(size), name_(name) {}
  uint64_t size() const override { return size_; }
  size_t read(uint64_t off, uint8_t* buf, size_t n) override {
    if (off >= size_) return 0;
    n = std::min<size_t>(n, size_t(size_ - off));
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::pread(fd_, buf + got, n - got, off_t(off + got));
      if (r < 0) {
        if (errno == EINTR) continue;
        unreadable(name_, errno);
      }
      if (r == 0) break;  // the file shrank since it was opened
      got += size_t(r);
    }
    return got;
  }

 private:
  int fd_;
  uint64_t size_;
  const std::string& name_;
};

// Sequential access through a window, for the walks over segments and
// chunks: a header walk asks for a few kB, a full walk for larger reads.
class Cursor {
 public:
  Cursor(ByteSource& s, size_t window) : s_(s), buf_(window) {}
  // The byte at `p`, or -1 past the end.
  int at(uint64_t p) {
    if (p < off_ || p >= off_ + len_) {
      if (p >= s_.size()) return -1;
      off_ = p;
      len_ = s_.read(p, buf_.data(), buf_.size());
      if (len_ == 0) return -1;
    }
    return buf_[size_t(p - off_)];
  }
  // Big-endian 16 bits at p, or -1 past the end.
  int64_t be16(uint64_t p) {
    const int a = at(p), b = at(p + 1);
    return a < 0 || b < 0 ? -1 : (int64_t(a) << 8 | b);
  }
  uint64_t size() const { return s_.size(); }

 private:
  ByteSource& s_;
  std::vector<uint8_t> buf_;
  uint64_t off_ = 0;
  size_t len_ = 0;
};

uint32_t be32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}
uint32_t le16(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8;
}
uint32_t le24(const uint8_t* p) {
  return le16(p) | uint32_t(p[2]) << 16;
}
uint32_t le32(const uint8_t* p) {
  return le24(p) | uint32_t(p[3]) << 24;
}

constexpr size_t kTail = 4096;        // where a trailer is looked for first
constexpr size_t kHeadWindow = 4096;  // a header walk's reads
constexpr size_t kWalkWindow = 1 << 16;

std::string dims(int64_t w, int64_t h) {
  return std::to_string(w) + "×" + std::to_string(h);
}

void check_size(const ImageHeader& h, const std::string& name) {
  if (h.w <= 0 || h.h <= 0)
    fail(name, ImageFault::Corrupt,
         "has a " + h.format + " header that gives a size of " + dims(h.w, h.h) + " pixels");
  // w·h > limit without computing w·h, which can overflow.
  if (h.w > kMaxImagePixels / h.h)
    fail(name, ImageFault::TooLarge,
         "is " + dims(h.w, h.h) + " pixels, over the limit of " + std::to_string(kMaxImagePixels) +
             " pixels (as Pillow's MAX_IMAGE_PIXELS)");
}

// ---- PNG: IHDR, then IEND at the end.
void sniff_png(ByteSource& s, ImageHeader& h, const std::string& name) {
  uint8_t b[33];
  if (s.read(0, b, 33) < 33) fail(name, ImageFault::Truncated, "is truncated (ends in its header)");
  if (be32(b + 8) != 13 || std::memcmp(b + 12, "IHDR", 4) != 0)
    fail(name, ImageFault::Corrupt, "is a corrupt PNG (no IHDR chunk first)");
  h.w = be32(b + 16);
  h.h = be32(b + 20);
  h.channels = b[25] == 0 || b[25] == 4 ? 1 : 3;  // colour type: grey (+ alpha), else colour
  check_size(h, name);
  // A whole IEND chunk (length 0, type, CRC) within the last bytes.
  const uint64_t size = s.size();
  const size_t tn = size_t(std::min<uint64_t>(size, kTail));
  std::vector<uint8_t> t(tn);
  s.read(size - tn, t.data(), tn);
  for (size_t i = 4; i + 8 <= tn; ++i)
    if (std::memcmp(t.data() + i, "IEND", 4) == 0 && be32(t.data() + i - 4) == 0) return;
  // Data after IEND (rare): walk the chunks by length.
  uint64_t off = 8;
  for (int64_t k = 0; k < 1'000'000; ++k) {
    uint8_t hd[8];
    if (s.read(off, hd, 8) < 8) break;
    const uint64_t len = be32(hd);
    if (len > 0x7fffffffu) fail(name, ImageFault::Corrupt, "is a corrupt PNG (bad chunk length)");
    if (std::memcmp(hd + 4, "IEND", 4) == 0) {
      if (off + 12 <= size) return;
      break;
    }
    off += 12 + len;
  }
  fail(name, ImageFault::Truncated, "is truncated (the PNG has no IEND chunk at its end)");
}

// ---- JPEG: the segments up to the frame header (SOFn), then EOI at the end.
bool is_sof(int m) {
  return m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC;
}
bool standalone(int m) {
  return m == 0x01 || (m >= 0xD0 && m <= 0xD7);
}

// From the marker at `off` on: the segments by length, entropy-coded data
// after each SOS up to the next marker (a 0xFF there is always followed by
// 0x00 or a restart marker), until EOI. False when the data ends first.
bool jpeg_reaches_eoi(ByteSource& s, uint64_t off, const std::string& name) {
  Cursor c(s, kWalkWindow);
  const uint64_t size = s.size();
  while (off < size) {
    const int b0 = c.at(off);
    if (b0 == 0x00) return false;  // zeros where data was never written: cut short
    if (b0 != 0xFF) fail(name, ImageFault::Corrupt, "is a corrupt JPEG (no marker)");
    int m = c.at(off + 1);
    while (m == 0xFF) m = c.at(++off + 1);  // fill bytes
    if (m < 0) return false;
    if (m == 0xD9) return true;
    if (standalone(m)) {
      off += 2;
      continue;
    }
    const int64_t len = c.be16(off + 2);
    if (len < 0) return false;
    if (len < 2) fail(name, ImageFault::Corrupt, "is a corrupt JPEG (bad segment length)");
    off += 2 + uint64_t(len);
    if (m != 0xDA) continue;
    for (;; ++off) {
      const int b = c.at(off);
      if (b < 0) return false;
      if (b != 0xFF) continue;
      const int n = c.at(off + 1);
      if (n < 0) return false;
      if (n != 0x00 && !(n >= 0xD0 && n <= 0xD7)) break;
      ++off;
    }
  }
  return false;
}

void sniff_jpeg(ByteSource& s, ImageHeader& h, const std::string& name) {
  Cursor c(s, kHeadWindow);
  uint64_t off = 2;
  for (int seg = 0;; ++seg) {
    if (seg > 10'000) fail(name, ImageFault::Corrupt, "is a corrupt JPEG (no frame header)");
    const int ff = c.at(off);
    if (ff < 0) fail(name, ImageFault::Truncated, "is truncated (ends before its frame header)");
    if (ff != 0xFF)
      fail(name, ImageFault::Corrupt, "is a corrupt JPEG (no marker where one belongs)");
    int m = c.at(off + 1);
    for (int k = 0; m == 0xFF && k < 65536; ++k) m = c.at(++off + 1);
    if (m < 0) fail(name, ImageFault::Truncated, "is truncated (ends before its frame header)");
    if (standalone(m)) {
      off += 2;
      continue;
    }
    if (m == 0xD8 || m == 0xD9 || m == 0xDA || m == 0xFF)
      fail(name, ImageFault::Corrupt, "is a corrupt JPEG (no frame header before its data)");
    const int64_t len = c.be16(off + 2);
    if (len < 0) fail(name, ImageFault::Truncated, "is truncated (ends before its frame header)");
    if (len < 2) fail(name, ImageFault::Corrupt, "is a corrupt JPEG (bad segment length)");
    if (is_sof(m)) {
      const int64_t hh = c.be16(off + 5), ww = c.be16(off + 7);
      const int components = c.at(off + 9);
      if (hh < 0 || ww < 0 || components < 0)
        fail(name, ImageFault::Truncated, "is truncated (in its frame header)");
      h.w = ww;
      h.h = hh;
      h.channels = components == 1 ? 1 : 3;  // 3 YCbCr or RGB, 4 CMYK
      check_size(h, name);
      off += 2 + uint64_t(len);
      break;
    }
    off += 2 + uint64_t(len);  // APPn (EXIF, ICC), DQT, DHT, COM...: skipped by length
  }
  // EOI within the last bytes (a little padding after it is common).
  const uint64_t size = s.size();
  const size_t tn = size_t(std::min<uint64_t>(size, kTail));
  std::vector<uint8_t> t(tn);
  s.read(size - tn, t.data(), tn);
  // Only after the frame header: tables before it may hold the bytes FF D9.
  const size_t from = size - tn < off ? size_t(std::min<uint64_t>(off - (size - tn), tn)) : 0;
  for (size_t i = tn; i >= from + 2; --i)
    if (t[i - 2] == 0xFF && t[i - 1] == 0xD9) return;
  // Data appended after the picture (a phone's "motion photo"): walk it.
  if (!jpeg_reaches_eoi(s, off, name))
    fail(name, ImageFault::Truncated, "is truncated (the JPEG has no end marker)");
}

// ---- BMP: the DIB header; uncompressed pixel data must fit the file.
void sniff_bmp(ByteSource& s, ImageHeader& h, const std::string& name) {
  uint8_t b[34] = {};
  const size_t n = s.read(0, b, 34);
  if (n < 18) fail(name, ImageFault::Truncated, "is truncated (ends in its header)");
  const uint32_t dib = le32(b + 14);
  int64_t bpp = 0, comp = 0;
  if (dib == 12) {
    if (n < 26) fail(name, ImageFault::Truncated, "is truncated (ends in its header)");
    h.w = le16(b + 18);
    h.h = le16(b + 20);
    bpp = le16(b + 24);
  } else if (dib >= 40 && dib <= 124) {
    if (n < 34) fail(name, ImageFault::Truncated, "is truncated (ends in its header)");
    h.w = int32_t(le32(b + 18));
    h.h = int32_t(le32(b + 22));
    if (h.h < 0) h.h = -h.h;  // top-down rows
    bpp = le16(b + 28);
    comp = le32(b + 30);
  } else {
    fail(name, ImageFault::Corrupt,
         "is a corrupt BMP (unknown header size " + std::to_string(dib) + ")");
  }
  check_size(h, name);
  if (bpp >= 16) h.channels = 3;  // 8 bits or fewer: a palette, grey or not
  const bool plain = comp == 0 || comp == 3 || comp == 6;
  if (plain && (bpp == 1 || bpp == 4 || bpp == 8 || bpp == 16 || bpp == 24 || bpp == 32)) {
    const int64_t stride = (h.w * bpp + 31) / 32 * 4;
    if (int64_t(s.size()) < int64_t(le32(b + 10)) + stride * h.h)
      fail(name, ImageFault::Truncated, "is truncated (the BMP's pixel data ends early)");
  }
}

// ---- WebP: the first chunk of the RIFF container; the RIFF size must fit.
void sniff_webp(ByteSource& s, ImageHeader& h, const std::string& name) {
  uint8_t b[30] = {};
  const size_t n = s.read(0, b, 30);
  if (n < 20) fail(name, ImageFault::Truncated, "is truncated (ends in its header)");
  const char* ck = reinterpret_cast<const char*>(b + 12);
  if (std::memcmp(ck, "VP8 ", 4) == 0) {
    if (n < 30) fail(name, ImageFault::Truncated, "is truncated (ends in its header)");
    if (b[23] != 0x9D || b[24] != 0x01 || b[25] != 0x2A)
      fail(name, ImageFault::Corrupt, "is a corrupt WebP (bad VP8 frame header)");
    h.w = le16(b + 26) & 0x3FFF;
    h.h = le16(b + 28) & 0x3FFF;
  } else if (std::memcmp(ck, "VP8L", 4) == 0) {
    if (n < 25) fail(name, ImageFault::Truncated, "is truncated (ends in its header)");
    if (b[20] != 0x2F) fail(name, ImageFault::Corrupt, "is a corrupt WebP (bad VP8L signature)");
    const uint32_t bits = le32(b + 21);
    h.w = (bits & 0x3FFF) + 1;
    h.h = ((bits >> 14) & 0x3FFF) + 1;
  } else if (std::memcmp(ck, "VP8X", 4) == 0) {
    if (n < 30) fail(name, ImageFault::Truncated, "is truncated (ends in its header)");
    h.w = int64_t(le24(b + 24)) + 1;
    h.h = int64_t(le24(b + 27)) + 1;
  } else {
    fail(name, ImageFault::Corrupt, "is a corrupt WebP (unknown first chunk)");
  }
  h.channels = 3;  // WebP has no grey mode
  check_size(h, name);
  if (s.size() < uint64_t(le32(b + 4)) + 8)
    fail(name, ImageFault::Truncated, "is truncated (the WebP ends before its RIFF size)");
}

// ---- TIFF (and BigTIFF): ImageWidth and ImageLength in the first IFD.
void sniff_tiff(ByteSource& s, ImageHeader& h, const std::string& name) {
  uint8_t b[16] = {};
  const size_t n = s.read(0, b, 16);
  const bool le = b[0] == 'I';
  auto u = [le](const uint8_t* p, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(p[le ? i : bytes - 1 - i]) << (8 * i);
    return v;
  };
  if (n < 8) fail(name, ImageFault::Truncated, "is truncated (ends in its header)");
  const bool big = u(b + 2, 2) == 43;
  if (big && n < 16) fail(name, ImageFault::Truncated, "is truncated (ends in its header)");
  const uint64_t ifd = big ? u(b + 8, 8) : u(b + 4, 4);
  const uint64_t size = s.size();
  if (ifd < 8) fail(name, ImageFault::Corrupt, "is a corrupt TIFF (bad directory offset)");
  const int cn = big ? 8 : 2, esz = big ? 20 : 12;
  uint8_t cb[8];
  if (ifd >= size || s.read(ifd, cb, size_t(cn)) < size_t(cn))
    fail(name, ImageFault::Truncated, "is truncated (ends before its image directory)");
  const uint64_t count = u(cb, cn);
  if (count == 0 || count > 4096)
    fail(name, ImageFault::Corrupt, "is a corrupt TIFF (bad directory)");
  std::vector<uint8_t> e(size_t(count) * size_t(esz));
  if (s.read(ifd + uint64_t(cn), e.data(), e.size()) < e.size())
    fail(name, ImageFault::Truncated, "is truncated (in its image directory)");
  int64_t strip_off = -1, strip_len = -1, photometric = -1, samples = 1;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* p = e.data() + i * uint64_t(esz);
    const uint64_t tag = u(p, 2), type = u(p + 2, 2), cnt = big ? u(p + 4, 8) : u(p + 4, 4);
    const uint8_t* val = p + (big ? 12 : 8);
    int64_t v = -1;
    if (cnt == 1) {
      if (type == 3)
        v = int64_t(u(val, 2));
      else if (type == 4)
        v = int64_t(u(val, 4));
      else if (type == 16 && big)
        v = int64_t(u(val, 8) & 0x7fffffffffffffffull);
    }
    if (tag == 256)
      h.w = v;
    else if (tag == 257)
      h.h = v;
    else if (tag == 273)
      strip_off = v;
    else if (tag == 279)
      strip_len = v;
    else if (tag == 262)
      photometric = v;
    else if (tag == 277)
      samples = v;
  }
  // Photometric 0 and 1 are grey (white or black is zero); the rest (RGB,
  // palette, CMYK, YCbCr, Lab) colour.
  h.channels = photometric == 0 || photometric == 1 ? 1 : photometric >= 2 || samples >= 3 ? 3 : 0;
  check_size(h, name);
  // One strip (small pictures): its data must be in the file.
  if (strip_off >= 0 && strip_len >= 0 && uint64_t(strip_off) + uint64_t(strip_len) > size)
    fail(name, ImageFault::Truncated, "is truncated (the TIFF's pixel data ends early)");
}

// ---- PNM: the text header; binary pixel data must fit the file.
void sniff_pnm(ByteSource& s, ImageHeader& h, const std::string& name) {
  uint8_t b[1024];
  const size_t n = s.read(0, b, sizeof b);
  const int kind = b[1] - '0';
  size_t p = 2;
  int64_t v[3] = {0, 0, 1};
  const int need = kind == 1 || kind == 4 ? 2 : 3;
  for (int k = 0; k < need; ++k) {
    for (;;) {  // whitespace and # comments
      while (p < n && std::strchr(" \t\r\n\v\f", b[p]) && b[p]) ++p;
      if (p < n && b[p] == '#') {
        while (p < n && b[p] != '\n') ++p;
        continue;
      }
      break;
    }
    if (p >= n)
      fail(name, n < sizeof b ? ImageFault::Truncated : ImageFault::Corrupt,
           n < sizeof b ? "is truncated (ends in its header)"
                        : "is a corrupt PNM (header too long)");
    if (b[p] < '0' || b[p] > '9')
      fail(name, ImageFault::Corrupt, "is a corrupt PNM (not a number in its header)");
    v[k] = 0;
    while (p < n && b[p] >= '0' && b[p] <= '9') {
      v[k] = v[k] * 10 + (b[p++] - '0');
      if (v[k] > 1'000'000'000) fail(name, ImageFault::Corrupt, "is a corrupt PNM (bad header)");
    }
    if (p >= n && n < sizeof b && kind >= 4)
      fail(name, ImageFault::Truncated, "is truncated (ends in its header)");
  }
  h.w = v[0];
  h.h = v[1];
  h.channels = kind == 3 || kind == 6 ? 3 : 1;  // P3/P6 colour; P1/P4 bitmaps, P2/P5 grey
  check_size(h, name);
  if (v[2] < 1 || v[2] > 65535)
    fail(name, ImageFault::Corrupt, "is a corrupt PNM (bad maximum value)");
  if (kind < 4) return;  // text pixels: no size to check
  const int64_t bps = v[2] > 255 ? 2 : 1;
  const int64_t bytes = kind == 4 ? (h.w + 7) / 8 * h.h : h.w * h.h * bps * (kind == 6 ? 3 : 1);
  if (int64_t(s.size()) < int64_t(p) + 1 + bytes)
    fail(name, ImageFault::Truncated, "is truncated (the PNM's pixel data ends early)");
}

ImageHeader sniff(ByteSource& s, const std::string& name) {
  if (s.size() == 0) fail(name, ImageFault::Empty, "is empty (0 bytes)");
  uint8_t m[12] = {};
  const size_t n = s.read(0, m, sizeof m);
  auto starts = [&](const char* magic, size_t k) {
    return n >= k && std::memcmp(m, magic, k) == 0;
  };
  ImageHeader h;
  if (starts("\x89PNG\r\n\x1a\n", 8)) {
    h.format = "png";
    sniff_png(s, h, name);
  } else if (starts("\xff\xd8\xff", 3)) {
    h.format = "jpeg";
    sniff_jpeg(s, h, name);
  } else if (starts("BM", 2)) {
    h.format = "bmp";
    sniff_bmp(s, h, name);
  } else if (starts("RIFF", 4) && n >= 12 && std::memcmp(m + 8, "WEBP", 4) == 0) {
    h.format = "webp";
    sniff_webp(s, h, name);
  } else if (starts("II*\0", 4) || starts("MM\0*", 4) || starts("II+\0", 4) || starts("MM\0+", 4)) {
    h.format = "tiff";
    sniff_tiff(s, h, name);
  } else if (n >= 3 && m[0] == 'P' && m[1] >= '1' && m[1] <= '6' && std::strchr(" \t\r\n#", m[2]) &&
             m[2]) {
    h.format = "pnm";
    sniff_pnm(s, h, name);
  } else {
    fail(name, ImageFault::NotAnImage,
         "is not an image (not PNG, JPEG, BMP, WebP, TIFF or PNM data)");
  }
  return h;
}

// An open file, closed on scope exit.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Opens `path` for a check or a read: a regular file of an allowed size.
// O_NONBLOCK so that a FIFO named .jpg cannot block the open.
uint64_t open_image(const std::string& path, Fd& f) {
  f.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f.fd < 0) unreadable(path, errno);
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) unreadable(path, errno);
  if (S_ISDIR(st.st_mode)) fail(path, ImageFault::Unreadable, "is a folder, not an image file");
  if (!S_ISREG(st.st_mode)) fail(path, ImageFault::Unreadable, "is not a regular file");
  if (st.st_size == 0) fail(path, ImageFault::Empty, "is empty (0 bytes)");
  if (int64_t(st.st_size) > kMaxImageFileBytes)
    fail(path, ImageFault::TooLarge,
         "is larger than " + std::to_string(kMaxImageFileBytes >> 20) +
             " MB; DeepCanvas does not read image files that large");
  return uint64_t(st.st_size);
}

[[maybe_unused]] std::vector<uint8_t> read_bytes(const std::string& path) {
  Fd f;
  const uint64_t size = open_image(path, f);
  FileSource src(f.fd, size, path);
  std::vector<uint8_t> v(static_cast<size_t>(size));
  if (src.read(0, v.data(), v.size()) < v.size())
    fail(path, ImageFault::Truncated, "is truncated (it shrank while being read)");
  return v;
}

}  // namespace

ImageHeader sniff_image(const uint8_t* data, size_t size, const std::string& name) {
  MemSource s(data, size);
  return sniff(s, name);
}

ImageHeader check_image_file(const std::string& path) {
  Fd f;
  const uint64_t size = open_image(path, f);
  FileSource src(f.fd, size, path);
  return sniff(src, path);
}

#ifdef DC_HAVE_OPENCV
bool image_decoding_supported() {
  return true;
}
bool image_decoding_jpeg_only() {
#ifdef DC_HAVE_OPENCV_IMGCODECS
  return false;
#else
  return true;
#endif
}

namespace {
[[maybe_unused]] Picture to_picture(cv::Mat img, int channels, const std::string& name) {
  if (img.empty()) fail(name, ImageFault::Corrupt, "cannot be decoded (corrupt data)");
  switch (img.depth()) {
    case CV_8U:
      break;
    case CV_16U:  // 65535 -> 255
      img.convertTo(img, CV_8U, 1.0 / 257.0);
      break;
    case CV_32F:
    case CV_64F:  // floating-point TIFFs hold 0..1
      img.convertTo(img, CV_8U, 255.0);
      break;
    default:
      img.convertTo(img, CV_8U);
  }
  const int have = img.channels();
  if (have == 2) {  // grey + alpha
    cv::Mat grey;
    cv::extractChannel(img, grey, 0);
    img = grey;
  } else if (have != 1 && have != 3 && have != 4) {
    fail(name, ImageFault::Corrupt, "has " + std::to_string(have) + " channels");
  }
  // Alpha is dropped, not composited, as Pillow's convert("RGB") does; grey
  // is 0.299 R + 0.587 G + 0.114 B as Pillow's convert("L").
  // Converted straight into the picture's bytes: no copy of the image.
  Picture p;
  p.h = img.rows;
  p.w = img.cols;
  p.c = channels;
  p.px.resize(size_t(p.bytes()));
  cv::Mat out(p.h, p.w, channels == 1 ? CV_8UC1 : CV_8UC3, p.px.data());
  if (channels == 1) {
    if (img.channels() == 1)
      img.copyTo(out);
    else
      cv::cvtColor(img, out, img.channels() == 4 ? cv::COLOR_BGRA2GRAY : cv::COLOR_BGR2GRAY);
  } else {
    cv::cvtColor(img, out,
                 img.channels() == 1   ? cv::COLOR_GRAY2RGB
                 : img.channels() == 4 ? cv::COLOR_BGRA2RGB
                                       : cv::COLOR_BGR2RGB);
  }
  // cvtColor reallocates instead of failing if it ever disagrees on the
  // destination; the picture must hold what it wrote.
  if (out.data != p.px.data()) fail(name, ImageFault::Corrupt, "could not be converted");
  return p;
}
}  // namespace

Picture decode_image_bytes(const uint8_t* data, size_t size, int channels, const std::string& name,
                           int at_least) {
  if (channels != 1 && channels != 3)
    throw DataError("images are decoded to 1 or 3 channels, not " + std::to_string(channels));
  if (int64_t(size) > kMaxImageFileBytes)
    fail(name, ImageFault::TooLarge,
         "is larger than " + std::to_string(kMaxImageFileBytes >> 20) +
             " MB; DeepCanvas does not read image files that large");
  const ImageHeader header = sniff_image(data, size, name);
  if (header.format == "jpeg") {
    Picture p;
    std::string error;
    switch (decode_jpeg(data, size, channels, at_least, p, error)) {
      case JpegResult::Decoded:
        return p;
      case JpegResult::Corrupt:
        fail(name, ImageFault::Corrupt, "cannot be decoded (" + error + ")");
      case JpegResult::Unsupported:
        break;  // OpenCV's
    }
  }
#ifdef DC_HAVE_OPENCV_IMGCODECS
  // ANYCOLOR keeps grey files grey and alpha for to_picture to drop (the
  // conversions are then the same for every format); ANYDEPTH keeps 16 bits
  // for an exact scaling. Without IMREAD_IGNORE_ORIENTATION (and not
  // IMREAD_UNCHANGED) OpenCV applies the EXIF orientation.
  constexpr int kFlags = cv::IMREAD_ANYCOLOR | cv::IMREAD_ANYDEPTH;
  static_assert((kFlags & cv::IMREAD_IGNORE_ORIENTATION) == 0 && kFlags != cv::IMREAD_UNCHANGED);
  cv::Mat img;
  try {
    const cv::Mat buf(1, int(size), CV_8U, const_cast<uint8_t*>(data));
    img = cv::imdecode(buf, kFlags);
    return to_picture(img, channels, name);
  } catch (const cv::Exception& e) {
    fail(name, ImageFault::Corrupt, "cannot be decoded (" + e.err + ")");
  } catch (const std::bad_alloc&) {
    fail(name, ImageFault::TooLarge, "cannot be decoded (not enough memory)");
  }
#else
  fail(name, ImageFault::Unreadable,
       "is " + (header.format == "jpeg" ? std::string("a CMYK JPEG") : "a " + header.format) +
           " file, and this build of DeepCanvas decodes colour and grey JPEG files only "
           "(it was built without OpenCV's imgcodecs)");
#endif
}

Picture decode_image(const std::string& path, int channels, int at_least) {
  if (channels != 1 && channels != 3)
    throw DataError("images are decoded to 1 or 3 channels, not " + std::to_string(channels));
  std::vector<uint8_t> b = read_bytes(path);
  return decode_image_bytes(b.data(), b.size(), channels, path, at_least);
}

std::vector<uint8_t> capture_camera_chw(int index, const Shape& in) {
  if (!picture_shape(in)) throw DataError("the network's input is " + in.str() + ", not an image");
#ifdef DC_HAVE_OPENCV_VIDEOIO
  cv::VideoCapture cam(index);
  if (!cam.isOpened()) throw IoError("no camera found (camera " + std::to_string(index) + ")");
  cv::Mat frame;
  // The first frames of many webcams are dark while exposure settles.
  for (int i = 0; i < 5; ++i) cam.read(frame);
  if (frame.empty())
    throw IoError("the camera gave no picture (camera " + std::to_string(index) + ")");
  ImageTransform t;
  t.input = in;
  t.crop_fraction = 1.0;
  std::vector<uint8_t> out(size_t(in.numel()));
  picture_to_chw(to_picture(frame, int(in[0]), "camera"), t, 0, 0, out.data());
  return out;
#else
  (void)index;
  throw IoError("no camera support: this build's OpenCV has no videoio module");
#endif
}
#else
bool image_decoding_supported() {
  return false;
}
bool image_decoding_jpeg_only() {
  return false;
}
Picture decode_image_bytes(const uint8_t*, size_t, int, const std::string& name, int) {
  throw IoError("cannot read " + name + ": this build of DeepCanvas has no OpenCV");
}
Picture decode_image(const std::string& path, int, int) {
  throw IoError("cannot read " + path + ": this build of DeepCanvas has no OpenCV");
}
std::vector<uint8_t> capture_camera_chw(int, const Shape&) {
  throw IoError("no camera support: this build of DeepCanvas has no OpenCV");
}
#endif

}  // namespace dc
