// Checkpoint files: safetensors round trips, the byte layout the spec asks
// for, validation of damaged files, interop with Python, and atomic writes.
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>
#include <deepcanvas/rng.h>
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include "test_util.h"

namespace dc {
namespace {

using test::error_of;
using test::TmpDir;

namespace fs = std::filesystem;
using json = nlohmann::json;

Tensor random_tensor(Shape s, DType t, uint64_t seed) {
  Tensor x(std::move(s), t);
  Rng rng(seed);
  auto* p = static_cast<uint8_t*>(x.raw());
  for (size_t i = 0; i < x.bytes(); ++i) p[i] = static_cast<uint8_t>(rng.below(256));
  return x;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

// A file with the given header text (unpadded) and data section.
std::string st_bytes(const std::string& header, const std::string& data) {
  std::string s;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return s + header + data;
}

std::vector<std::pair<std::string, Tensor>> sample_tensors() {
  return {{"dense.weight", random_tensor(Shape{3, 4}, DType::F32, 1)},
          {"conv.bias", random_tensor(Shape{5}, DType::F16, 2)},
          {"emb", random_tensor(Shape{2, 3}, DType::BF16, 3)},
          {"step_counts", random_tensor(Shape{4}, DType::I32, 4)},
          {"mask", random_tensor(Shape{7}, DType::U8, 5)},
          {"scalar", random_tensor(Shape{}, DType::F32, 6)},
          {"empty", Tensor(Shape{0, 3})}};
}

TEST(Safetensors, RoundTripDtypesShapesAndMetadata) {
  TmpDir t;
  auto tensors = sample_tensors();
  std::map<std::string, std::string> meta{
      {"format", "deepcanvas-checkpoint"}, {"note", "Größe 3×3 \"quoted\""}, {"empty", ""}};
  std::string p = t.path("model.safetensors");
  save_safetensors(p, tensors, meta);
  SafetensorsFile f = load_safetensors(p);
  EXPECT_EQ(f.metadata, meta);
  ASSERT_EQ(f.tensors.size(), tensors.size());
  for (auto& [name, want] : tensors) {
    ASSERT_TRUE(f.tensors.count(name)) << name;
    const Tensor& got = f.tensors.at(name);
    EXPECT_EQ(got.shape(), want.shape()) << name;
    EXPECT_EQ(got.dtype(), want.dtype()) << name;
    EXPECT_TRUE(same_bytes(got, want)) << name;
  }
  // Saving again over it gives the same bytes: the layout is deterministic.
  std::string first = read_file(p);
  save_safetensors(p, tensors, meta);
  EXPECT_EQ(read_file(p), first);
  EXPECT_EQ(t.listing(), std::vector<std::string>{"model.safetensors"});  // no temp files left

  save_safetensors(t.path("bare.safetensors"), {}, {});
  SafetensorsFile bare = load_safetensors(t.path("bare.safetensors"));
  EXPECT_TRUE(bare.tensors.empty());
  EXPECT_TRUE(bare.metadata.empty());
}

TEST(Safetensors, MetadataAloneIsReadFromTheHeader) {
  TmpDir t;
  std::map<std::string, std::string> meta{{"format", "deepcanvas-checkpoint"}, {"epoch", "4"}};
  const std::string p = t.path("model.safetensors");
  save_safetensors(p, sample_tensors(), meta);
  EXPECT_EQ(load_safetensors_metadata(p), meta);
  // The data section is not read: a file cut short after its header still
  // names its metadata, while loading its tensors says it is truncated.
  std::string bytes = read_file(p);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[size_t(i)]);
  write_file_atomic(p, bytes.substr(0, size_t(8 + n + 1)));
  EXPECT_EQ(load_safetensors_metadata(p), meta);
  EXPECT_THROW(load_safetensors(p), IoError);
  // A damaged header is refused as load_safetensors refuses it.
  write_file_atomic(p, "not a checkpoint");
  EXPECT_THROW(load_safetensors_metadata(p), IoError);
}

TEST(Safetensors, HeaderFollowsTheSpec) {
  TmpDir t;
  auto tensors = sample_tensors();
  std::string p = t.path("m.safetensors");
  save_safetensors(p, tensors, {{"k", "v"}});
  std::string b = read_file(p);
  ASSERT_GE(b.size(), 8u);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(b[i]);
  ASSERT_LE(8 + n, b.size());
  EXPECT_EQ(n % 8, 0u) << "header padded to a multiple of 8";
  std::string header = b.substr(8, n);
  EXPECT_EQ(header.front(), '{');
  size_t close = header.find_last_of('}');
  for (size_t i = close + 1; i < header.size(); ++i) EXPECT_EQ(header[i], ' ');
  json h = json::parse(header);  // throws (and fails the test) if not valid JSON
  ASSERT_TRUE(h.is_object());
  EXPECT_EQ(h.at("__metadata__"), json({{"k", "v"}}));

  std::vector<std::string> names;
  for (auto& [name, _] : tensors) names.push_back(name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(h.size(), names.size() + 1);
  uint64_t offset = 0;
  std::map<std::string, const Tensor*> by_name;
  for (auto& [name, x] : tensors) by_name[name] = &x;
  for (const std::string& name : names) {
    const json& e = h.at(name);
    const Tensor& x = *by_name[name];
    EXPECT_EQ(e.at("dtype"), dtype_name(x.dtype())) << name;
    EXPECT_EQ(e.at("shape"), json(x.shape().dims())) << name;
    // Contiguous, in the order of the sorted names.
    EXPECT_EQ(e.at("data_offsets"), json({offset, offset + x.bytes()})) << name;
    EXPECT_EQ(b.compare(8 + n + offset, x.bytes(),
                        std::string(static_cast<const char*>(x.raw()), x.bytes())),
              0)
        << name;
    offset += x.bytes();
  }
  EXPECT_EQ(8 + n + offset, b.size());
}

TEST(Safetensors, DamagedFilesNameTheFileAndTheProblem) {
  TmpDir t;
  const std::string f32x2 = R"("dtype":"F32","shape":[2])";
  struct Case {
    const char* what;
    std::string bytes;
    const char* expect;
  };
  std::vector<Case> cases = {
      {"short", "1234", "too short"},
      {"junk", "this is not a checkpoint", "goes beyond the end of the file"},
      {"nobrace", st_bytes("[1,2]", ""), "does not start with '{'"},
      {"badjson", st_bytes(R"({"a": {"dtype": )", ""), "not valid JSON"},
      {"dtype",
       st_bytes(R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", std::string(8, 0)),
       "\"F64\""},
      {"nodtype", st_bytes(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", std::string(4, 0)),
       "no \"dtype\""},
      {"beyond", st_bytes(R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,8]}})", std::string(4, 0)),
       "truncated"},
      {"overlap",
       st_bytes(R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,8]},"b":{)" + f32x2 +
                    R"(,"data_offsets":[4,12]}})",
                std::string(12, 0)),
       "'a' and 'b' overlap"},
      {"hole", st_bytes(R"({"a":{)" + f32x2 + R"(,"data_offsets":[4,12]}})", std::string(12, 0)),
       "belong to no tensor"},
      {"trailing", st_bytes(R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,8]}})", std::string(9, 0)),
       "after the last tensor"},
      {"span",
       st_bytes(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", std::string(8, 0)),
       "12 bytes"},
      {"reversed", st_bytes(R"({"a":{)" + f32x2 + R"(,"data_offsets":[8,0]}})", std::string(8, 0)),
       "end before they begin"},
      {"negshape", st_bytes(R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})", ""),
       "non-negative"},
      {"floatshape", st_bytes(R"({"a":{"dtype":"U8","shape":[1.5],"data_offsets":[0,0]}})", ""),
       "non-negative"},
      {"hugeshape",
       st_bytes(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,0]}})",
                ""),
       "too large"},
      {"meta", st_bytes(R"({"__metadata__":{"epoch":3}})", ""), "'epoch' is not a string"},
      {"offsets", st_bytes(R"({"a":{)" + f32x2 + R"(,"data_offsets":[0]}})", std::string(8, 0)),
       "data_offsets"},
  };
  for (const Case& c : cases) {
    std::string p = t.write(std::string(c.what) + ".safetensors", c.bytes);
    std::string msg = error_of([&] { load_safetensors(p); });
    EXPECT_NE(msg.find(p), std::string::npos) << c.what << ": " << msg;
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.what << ": " << msg;
    EXPECT_THROW(load_safetensors(p), IoError) << c.what;
  }
  std::string missing = t.path("missing.safetensors");
  std::string msg = error_of([&] { load_safetensors(missing); });
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file"), std::string::npos) << msg;

  // The well-formed variant of the cases above loads, so the failures are
  // about what each case breaks.
  std::string ok =
      t.write("ok.safetensors",
              st_bytes(R"({"a":{)" + f32x2 + R"(,"data_offsets":[0,8]}})", std::string(8, 0)));
  EXPECT_EQ(load_safetensors(ok).tensors.at("a").shape(), (Shape{2}));
}

TEST(Safetensors, SaveRejectsBadInput) {
  TmpDir t;
  std::string p = t.path("x.safetensors");
  Tensor a(Shape{2});
  EXPECT_THROW(save_safetensors(p, {{"a", a}, {"a", a}}, {}), IoError);
  EXPECT_THROW(save_safetensors(p, {{"__metadata__", a}}, {}), IoError);
  EXPECT_THROW(save_safetensors(p, {{"u", Tensor()}}, {}), IoError);
  std::string bad_utf8 = error_of([&] { save_safetensors(p, {{"\xff", a}}, {}); });
  EXPECT_NE(bad_utf8.find("UTF-8"), std::string::npos) << bad_utf8;
  std::string nodir = t.path("no/such/folder/x.safetensors");
  std::string msg = error_of([&] { save_safetensors(nodir, {{"a", a}}, {}); });
  EXPECT_NE(msg.find(nodir), std::string::npos) << msg;
  EXPECT_TRUE(t.listing().empty());
}

bool have_python() {
  return ::access("/usr/bin/python3", X_OK) == 0;
}

std::string run(const std::string& cmd, int& status) {
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) {
    status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  status = ::pclose(f);
  return out;
}

// Reads a safetensors file with nothing but the json and struct modules and
// prints every tensor's values as Python sees them.
const char* kPyReader = R"PY(
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
n, = struct.unpack('<Q', b[:8])
h = json.loads(b[8:8 + n].decode('utf-8'))
meta = h.pop('__metadata__', {})
data = b[8 + n:]
fmt = {'F32': ('f', 4), 'I32': ('i', 4), 'U8': ('B', 1), 'F16': ('e', 2), 'BF16': ('H', 2)}
out = ['meta %s=%s' % (k, meta[k]) for k in sorted(meta)]
for name in sorted(h):
    t = h[name]
    c, size = fmt[t['dtype']]
    begin, end = t['data_offsets']
    count = 1
    for d in t['shape']:
        count *= d
    assert end - begin == count * size, name
    vals = struct.unpack('<%d%s' % (count, c), data[begin:end])
    if t['dtype'] == 'BF16':
        vals = [struct.unpack('<f', struct.pack('<I', v << 16))[0] for v in vals]
    if t['dtype'] in ('F32', 'F16', 'BF16'):
        vals = [repr(float(v)) for v in vals]
    out.append('%s %s %s %s' % (name, t['dtype'], 'x'.join(map(str, t['shape'])),
                                ','.join(map(str, vals))))
sys.stdout.buffer.write(('\n'.join(out) + '\n').encode('utf-8'))
)PY";

template <class T>
Tensor typed(Shape s, DType t, std::vector<T> v) {
  Tensor x(std::move(s), t);
  std::memcpy(x.raw(), v.data(), x.bytes());
  return x;
}

TEST(Safetensors, PythonReadsOurFiles) {
  if (!have_python()) GTEST_SKIP() << "/usr/bin/python3 is not installed";
  TmpDir t;
  // Values whose Python repr is exact, with the bit patterns of the 16-bit
  // floats written out (1, -2.5, 0.5, 65504 in F16; 1.5, -3, 0.15625 in BF16).
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"w",
       typed<float>(Shape{2, 3}, DType::F32, {0.5f, -1.25f, 3.0f, 1024.0f, -0.0078125f, 7.75f})},
      {"h", typed<uint16_t>(Shape{4}, DType::F16, {0x3C00, 0xC100, 0x3800, 0x7BFF})},
      {"bf", typed<uint16_t>(Shape{3}, DType::BF16, {0x3FC0, 0xC040, 0x3E20})},
      {"i", typed<int32_t>(Shape{3}, DType::I32, {-7, 0, 2147483647})},
      {"u", typed<uint8_t>(Shape{1, 3}, DType::U8, {0, 200, 255})},
      {"s", typed<float>(Shape{}, DType::F32, {42.0f})},
  };
  std::string p = t.path("m.safetensors");
  save_safetensors(p, tensors, {{"name", "Größe"}, {"epoch", "3"}});
  std::string script = t.write("read.py", kPyReader);
  int status = 0;
  std::string out = run("/usr/bin/python3 " + script + " " + p + " 2>&1", status);
  ASSERT_EQ(status, 0) << out;
  EXPECT_EQ(out,
            "meta epoch=3\n"
            "meta name=Größe\n"
            "bf BF16 3 1.5,-3.0,0.15625\n"
            "h F16 4 1.0,-2.5,0.5,65504.0\n"
            "i I32 3 -7,0,2147483647\n"
            "s F32  42.0\n"
            "u U8 1x3 0,200,255\n"
            "w F32 2x3 0.5,-1.25,3.0,1024.0,-0.0078125,7.75\n");
}

TEST(Safetensors, ReadsFilesWrittenByPython) {
  if (!have_python()) GTEST_SKIP() << "/usr/bin/python3 is not installed";
  TmpDir t;
  // Laid out against name order and with an unpadded header: both allowed.
  std::string script = t.write("write.py", R"PY(
import json, struct, sys
tensors = [('zeta', 'F32', [2], struct.pack('<2f', 1.5, -2.0)),
           ('mid', 'U8', [2, 2], bytes([1, 2, 3, 4])),
           ('alpha', 'I32', [3], struct.pack('<3i', 1, -2, 3))]
header, data = {}, b''
for name, dt, shape, raw in tensors:
    header[name] = {'dtype': dt, 'shape': shape, 'data_offsets': [len(data), len(data) + len(raw)]}
    data += raw
header['__metadata__'] = {'who': 'python'}
h = json.dumps(header).encode()
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(h)) + h + data)
)PY");
  std::string p = t.path("py.safetensors");
  int status = 0;
  std::string out = run("/usr/bin/python3 " + script + " " + p + " 2>&1", status);
  ASSERT_EQ(status, 0) << out;
  SafetensorsFile f = load_safetensors(p);
  EXPECT_EQ(f.metadata.at("who"), "python");
  const Tensor& z = f.tensors.at("zeta");
  EXPECT_EQ(z.shape(), (Shape{2}));
  EXPECT_EQ(z.f32()[0], 1.5f);
  EXPECT_EQ(z.f32()[1], -2.0f);
  const Tensor& a = f.tensors.at("alpha");
  EXPECT_EQ(a.dtype(), DType::I32);
  const auto* ai = static_cast<const int32_t*>(a.raw());
  EXPECT_EQ(ai[0], 1);
  EXPECT_EQ(ai[1], -2);
  EXPECT_EQ(ai[2], 3);
  const Tensor& m = f.tensors.at("mid");
  EXPECT_EQ(m.shape(), (Shape{2, 2}));
  EXPECT_EQ(static_cast<const uint8_t*>(m.raw())[3], 4);
}

TEST(AtomicFile, ReplacesContentAndKeepsMode) {
  TmpDir t;
  std::string p = t.path("project.dcproj");
  write_file_atomic(p, "first");
  EXPECT_EQ(read_file(p), "first");
  ASSERT_EQ(::chmod(p.c_str(), 0640), 0);
  write_file_atomic(p, std::string("second\0with nul", 15));
  EXPECT_EQ(read_file(p), std::string("second\0with nul", 15));
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  write_file_atomic(p, "");
  EXPECT_EQ(read_file(p), "");
  EXPECT_EQ(t.listing(), std::vector<std::string>{"project.dcproj"});
}

TEST(AtomicFile, FailedWriteLeavesOldFileAndNoTemp) {
  TmpDir t;
  std::string p = t.path("keep.txt");
  write_file_atomic(p, "old contents");

  // Make the write itself fail part way: a file-size limit gives EFBIG.
  struct rlimit old {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
  std::string msg = error_of([&] { write_file_atomic(p, std::string(100000, 'x')); });
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg;  // the OS error, EFBIG
  EXPECT_EQ(read_file(p), "old contents");
  EXPECT_EQ(t.listing(), std::vector<std::string>{"keep.txt"});

  fs::create_directories(t.dir / "folder");
  msg = error_of([&] { write_file_atomic(t.path("folder"), "x"); });
  EXPECT_NE(msg.find("folder"), std::string::npos) << msg;
  EXPECT_TRUE(fs::is_directory(t.dir / "folder"));
  EXPECT_EQ(t.listing(), (std::vector<std::string>{"folder", "keep.txt"}));
}

TEST(AtomicFile, ReadFileErrorsNameThePath) {
  TmpDir t;
  std::string missing = t.path("nope.txt");
  EXPECT_THROW(read_file(missing), IoError);
  std::string msg = error_of([&] { read_file(missing); });
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
  msg = error_of([&] { read_file(t.dir.string()); });
  EXPECT_NE(msg.find("folder"), std::string::npos) << msg;
  // Files that report no size still read in full.
  EXPECT_NE(read_file("/proc/self/status").find("Pid:"), std::string::npos);
}

}  // namespace
}  // namespace dc
