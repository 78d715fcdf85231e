#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/npy.h>

#include <cctype>
#include <cstring>
#include <limits>

namespace dc {

namespace {

// The header is a Python dict literal written by numpy.lib.format:
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// Only those three keys and their value forms occur, so a small scanner
// reads it; anything else is not a file NumPy wrote.
class HeaderScanner {
 public:
  HeaderScanner(const std::string& text, const std::string& source) : s_(text), src_(source) {}

  void expect(char c) {
    skip();
    if (at_ >= s_.size() || s_[at_] != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  bool accept(char c) {
    skip();
    if (at_ < s_.size() && s_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  std::string quoted() {
    skip();
    if (at_ >= s_.size() || (s_[at_] != '\'' && s_[at_] != '"')) fail("expected a quoted string");
    const char q = s_[at_++];
    const size_t end = s_.find(q, at_);
    if (end == std::string::npos) fail("unterminated string");
    std::string v = s_.substr(at_, end - at_);
    at_ = end + 1;
    return v;
  }
  bool boolean() {
    skip();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}})
      if (s_.compare(at_, std::strlen(word), word) == 0) {
        at_ += std::strlen(word);
        return value;
      }
    fail("expected True or False");
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> dims;
    while (!accept(')')) {
      skip();
      size_t start = at_;
      while (at_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[at_]))) ++at_;
      if (start == at_ || at_ - start > 15) fail("expected a dimension (a whole number)");
      dims.push_back(std::stoll(s_.substr(start, at_ - start)));
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw IoError(src_ + ": not a NumPy .npy header (" + what + " at character " +
                  std::to_string(at_) + " of \"" + s_.substr(0, 120) + "\")");
  }

 private:
  void skip() {
    while (at_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[at_]))) ++at_;
  }
  const std::string& s_;
  const std::string& src_;
  size_t at_ = 0;
};

uint32_t little_u16(const std::string& b, size_t at) {
  return uint32_t(uint8_t(b[at])) | uint32_t(uint8_t(b[at + 1])) << 8;
}
uint32_t little_u32(const std::string& b, size_t at) {
  return little_u16(b, at) | little_u16(b, at + 2) << 16;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

}  // namespace

NpyArray parse_npy(const std::string& bytes, const std::string& source) {
  static const char kMagic[] = "\x93NUMPY";
  if (bytes.size() < 10 || bytes.compare(0, 6, kMagic, 6) != 0)
    throw IoError(source +
                  ": not a NumPy .npy file (it does not start with \\x93NUMPY); save "
                  "arrays with numpy.save");
  const int major = uint8_t(bytes[6]);
  if (major < 1 || major > 3)
    throw IoError(source + ": .npy format version " + std::to_string(major) +
                  " is not supported (1.0 to 3.0 are)");
  // Version 1 has a 2-byte header length, versions 2 and 3 a 4-byte one.
  const size_t len_size = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + len_size) throw IoError(source + ": truncated .npy header");
  const size_t header_len = major == 1 ? little_u16(bytes, 8) : little_u32(bytes, 8);
  const size_t data_at = 8 + len_size + header_len;
  if (bytes.size() < data_at)
    throw IoError(source + ": truncated .npy file (the header says it is " +
                  std::to_string(header_len) + " bytes; the file ends before)");
  const std::string header = bytes.substr(8 + len_size, header_len);

  NpyArray a;
  bool fortran = false, have_descr = false, have_shape = false, have_order = false;
  HeaderScanner h(header, source);
  h.expect('{');
  while (!h.accept('}')) {
    const std::string key = h.quoted();
    h.expect(':');
    if (key == "descr")
      a.descr = h.quoted(), have_descr = true;
    else if (key == "fortran_order")
      fortran = h.boolean(), have_order = true;
    else if (key == "shape")
      a.shape = h.tuple(), have_shape = true;
    else
      h.fail("unknown key '" + key + "'");
    if (!h.accept(',')) {
      h.expect('}');
      break;
    }
  }
  if (!have_descr || !have_shape || !have_order)
    h.fail("it lacks one of 'descr', 'fortran_order' and 'shape'");
  if (fortran)
    throw IoError(source +
                  ": the array is in Fortran (column-major) order; save "
                  "numpy.ascontiguousarray(x) instead");
  size_t item = 0;
  if (a.descr == "<f4")
    item = 4;
  else if (a.descr == "<i8")
    item = 8;
  else
    throw IoError(source + ": elements of type '" + a.descr +
                  "' are not supported; save float32 (x.astype(numpy.float32)) or, for token "
                  "ids, int64 (x.astype(numpy.int64)), little-endian");

  // Sizes come from the file: check the product against the bytes that are
  // really there before allocating anything.
  const size_t available = bytes.size() - data_at;
  uint64_t n = 1;
  for (int64_t d : a.shape) {
    if (d != 0 && n > available / uint64_t(d)) {
      n = std::numeric_limits<uint64_t>::max();
      break;
    }
    n *= uint64_t(d);
  }
  if (n == std::numeric_limits<uint64_t>::max() || n * item != available)
    throw IoError(source + ": " + (n * item > available ? "truncated" : "damaged") +
                  " .npy file: shape " + shape_text(a.shape) + " of '" + a.descr + "' needs " +
                  (n == std::numeric_limits<uint64_t>::max() ? "more than the file's"
                                                             : std::to_string(n * item)) +
                  " bytes of data, the file has " + std::to_string(available));

  a.data = Tensor(Shape(a.shape));
  float* out = a.data.f32();
  const char* in = bytes.data() + data_at;
  if (item == 4) {
    std::memcpy(out, in, n * 4);
  } else {
    constexpr int64_t kExact = int64_t(1) << 24;
    for (uint64_t i = 0; i < n; ++i) {
      int64_t v;
      std::memcpy(&v, in + i * 8, 8);
      if (v < -kExact || v > kExact)
        throw IoError(source + ": element " + std::to_string(i) + " is " + std::to_string(v) +
                      ", beyond ±2^24 where int64 token ids can be used as float32 exactly");
      out[i] = float(v);
    }
  }
  return a;
}

NpyArray load_npy(const std::string& path) {
  return parse_npy(read_file(path), path);
}

std::string npy_bytes(const Tensor& t, const std::vector<int64_t>& shape) {
  const std::vector<int64_t>& dims = shape.empty() ? t.shape().dims() : shape;
  if (t.dtype() != DType::F32 || Shape(dims).numel() != t.numel())
    throw Error("npy_bytes: a float32 tensor of " + std::to_string(t.numel()) +
                " elements cannot be written with shape " + shape_text(dims));
  std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_text(dims) + ", }";
  // Data starts at a multiple of 64 bytes and the header ends with '\n'.
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(t.f32()), size_t(t.numel()) * 4);
  return out;
}

void save_npy(const std::string& path, const Tensor& t, const std::vector<int64_t>& shape) {
  write_file_atomic(path, npy_bytes(t, shape));
}

}  // namespace dc
