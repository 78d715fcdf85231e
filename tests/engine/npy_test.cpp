// NumPy .npy reading and writing: round trips, files written by NumPy
// itself (every header version), and a clear message for each kind of file
// that cannot be used.
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/npy.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "torch_ref_util.h"

namespace dc {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::string& bytes) {
  try {
    parse_npy(bytes, "x.npy");
  } catch (const IoError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

// A version-1.0 file with the given header dict and raw data.
std::string npy_with(const std::string& dict, const std::string& data) {
  std::string h = dict + "\n";
  std::string out("\x93NUMPY\x01\x00", 8);
  out += char(h.size() & 0xff);
  out += char(h.size() >> 8);
  return out + h + data;
}

TEST(Npy, Float32RoundTripKeepsShapeAndBitsAndAlignsTheData) {
  Tensor t(Shape{3, 2, 5});
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = float(i) * 0.37f - 4.f;
  t.f32()[7] = -0.0f;
  const std::string b = npy_bytes(t);
  EXPECT_EQ((b.size() - size_t(t.numel()) * 4) % 64, 0u);  // data starts 64-byte aligned
  NpyArray a = parse_npy(b, "t.npy");
  EXPECT_EQ(a.descr, "<f4");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3, 2, 5}));
  EXPECT_EQ(std::memcmp(a.data.f32(), t.f32(), t.bytes()), 0);
  // A one-dimensional shape is written as Python writes a 1-tuple: (30,).
  EXPECT_NE(npy_bytes(t, {30}).find("(30,)"), std::string::npos);
  EXPECT_THROW(npy_bytes(t, {29}), Error);
}

TEST(Npy, Int64TokenIdsBecomeExactFloats) {
  std::string data(3 * 8, '\0');
  const int64_t ids[] = {0, 16777216, 42};
  std::memcpy(data.data(), ids, sizeof ids);
  NpyArray a = parse_npy(
      npy_with("{'descr': '<i8', 'fortran_order': False, 'shape': (1, 3), }", data), "ids.npy");
  EXPECT_EQ(a.data.f32()[1], 16777216.f);
  EXPECT_EQ(a.data.f32()[2], 42.f);
  const int64_t big = (int64_t(1) << 24) + 1;
  std::memcpy(data.data(), &big, 8);
  EXPECT_NE(error_of(npy_with("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", data))
                .find("2^24"),
            std::string::npos);
}

TEST(Npy, UnusableFilesAreExplained) {
  const std::string f4 = std::string(8, '\0');
  struct Case {
    std::string bytes, expect;
  };
  const Case cases[] = {
      {"PK\x03\x04 a zip file", "not a NumPy .npy file"},
      {npy_with("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", f4),
       "x.astype(numpy.float32)"},
      {npy_with("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", f4), "'>f4'"},
      {npy_with("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", f4),
       "numpy.ascontiguousarray"},
      {npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", f4),
       "truncated .npy file: shape (3,) of '<f4' needs 12 bytes of data, the file has 8"},
      {npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", f4), "damaged"},
      {npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000, 100000000000), }",
                f4),
       "more than the file's"},
      {npy_with("{'descr': '<f4', 'shape': (2,), }", f4), "lacks one of"},
      {npy_with("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", f4),
       "expected a dimension"},
      {npy_with("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }", f4),
       "expected True or False"},
      {std::string("\x93NUMPY\x01\x00\xff\x00{'descr'", 18), "truncated .npy file"},
      {std::string("\x93NUMPY\x07\x00\x00\x00", 10), "version 7"},
  };
  for (const auto& c : cases) {
    std::string e = error_of(c.bytes);
    EXPECT_NE(e.find(c.expect), std::string::npos) << e;
    EXPECT_NE(e.find("x.npy"), std::string::npos) << e;
  }
}

// The files must be NumPy's own: read what numpy.save writes (it picks
// header version 1.0, 2.0 for a long header, 3.0 for a non-Latin-1 one) and
// let NumPy read what save_npy writes.
TEST(Npy, InteroperatesWithNumPy) {
  if (!test::torch_missing().empty()) GTEST_SKIP() << test::torch_missing();
  const fs::path dir = fs::temp_directory_path() / ("dc_npy_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string py = (dir / "check.py").string();
  std::ofstream(py) << R"(import numpy as np, sys
d = sys.argv[1]
a = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
np.save(d + '/v1.npy', a)
np.lib.format.write_array(open(d + '/v2.npy', 'wb'), a, version=(2, 0))
np.lib.format.write_array(open(d + '/v3.npy', 'wb'), a, version=(3, 0))
np.save(d + '/ids.npy', np.array([[3, 1, 4]], dtype=np.int64))
b = np.load(d + '/ours.npy')
assert b.dtype == np.float32 and b.shape == (2, 5), (b.dtype, b.shape)
assert (b == np.arange(10, dtype=np.float32).reshape(2, 5) * 1.5).all(), b
print('ok')
)";
  Tensor ours(Shape{2, 5});
  for (int i = 0; i < 10; ++i) ours.f32()[i] = float(i) * 1.5f;
  save_npy((dir / "ours.npy").string(), ours);
  int code = 0;
  std::string out = test::run_command(test::kPython + " " + py + " " + dir.string(), &code);
  ASSERT_EQ(code, 0) << out;
  for (const char* v : {"v1.npy", "v2.npy", "v3.npy"}) {
    NpyArray a = load_npy((dir / v).string());
    ASSERT_EQ(a.shape, (std::vector<int64_t>{2, 3, 4})) << v;
    for (int i = 0; i < 24; ++i) EXPECT_EQ(a.data.f32()[i], float(i) / 7.f) << v << " " << i;
  }
  NpyArray ids = load_npy((dir / "ids.npy").string());
  EXPECT_EQ(ids.descr, "<i8");
  EXPECT_EQ(ids.data.f32()[2], 4.f);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dc
