// safetensors (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header length, a JSON header, then one byte buffer that the
// tensors index without gaps or overlaps.
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

namespace dc {

// Tensor bytes are copied as they lie in memory; the format is little-endian.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes little-endian");

namespace {

using json = nlohmann::json;

// The reference implementation's limit; a larger header means a corrupt or
// hostile file, and refusing it avoids a huge allocation.
constexpr uint64_t kMaxHeader = 100'000'000;

bool dtype_from_name(const std::string& s, DType& out) {
  static const std::pair<const char*, DType> kTypes[] = {{"F32", DType::F32},
                                                         {"F16", DType::F16},
                                                         {"BF16", DType::BF16},
                                                         {"I32", DType::I32},
                                                         {"U8", DType::U8}};
  for (auto& [name, t] : kTypes)
    if (s == name) {
      out = t;
      return true;
    }
  return false;
}

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw IoError(path + ": " + what);
}

std::string os_error(int err) {
  return std::generic_category().message(err);
}

class File {
 public:
  explicit File(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw IoError("cannot open '" + path + "': " + os_error(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) fail_os();
    if (S_ISDIR(st.st_mode)) bad(path, "is a folder, not a checkpoint file");
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~File() { ::close(fd_); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  uint64_t size() const { return size_; }

  void read_at(uint64_t off, void* dst, size_t n) {
    char* p = static_cast<char*>(dst);
    while (n > 0) {
      ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(off));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) fail_os();
      if (r == 0) bad(path_, "ended early while reading (was it changed while loading?)");
      p += r;
      off += static_cast<uint64_t>(r);
      n -= static_cast<size_t>(r);
    }
  }

 private:
  [[noreturn]] void fail_os() { throw IoError("cannot read '" + path_ + "': " + os_error(errno)); }
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

Entry parse_entry(const std::string& path, const std::string& name, const json& v) {
  const std::string where = "tensor '" + name + "'";
  if (!v.is_object()) bad(path, where + " is not a JSON object in the header");
  Entry e{name, DType::F32, {}, 0, 0};

  auto dt = v.find("dtype");
  if (dt == v.end() || !dt->is_string()) bad(path, where + " has no \"dtype\" string");
  if (!dtype_from_name(dt->get<std::string>(), e.dtype))
    bad(path, where + " has dtype \"" + dt->get<std::string>() +
                  "\", which DeepCanvas does not read (it reads F32, F16, BF16, I32 and U8)");

  auto sh = v.find("shape");
  if (sh == v.end() || !sh->is_array()) bad(path, where + " has no \"shape\" array");
  uint64_t numel = 1;
  for (const json& d : *sh) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0)
      bad(path, where + " has a shape entry that is not a non-negative integer: " + d.dump());
    uint64_t u = d.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max()) ||
        (u != 0 && numel > std::numeric_limits<uint64_t>::max() / u))
      bad(path, where + " has a shape too large to exist: " + sh->dump());
    numel *= u;
    e.shape.push_back(static_cast<int64_t>(u));
  }
  uint64_t elem = dtype_size(e.dtype);
  if (numel > std::numeric_limits<uint64_t>::max() / elem)
    bad(path, where + " has a shape too large to exist: " + sh->dump());
  uint64_t nbytes = numel * elem;

  auto off = v.find("data_offsets");
  if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned())
    bad(path, where + " needs \"data_offsets\" as two non-negative integers [begin, end]");
  e.begin = (*off)[0].get<uint64_t>();
  e.end = (*off)[1].get<uint64_t>();
  if (e.end < e.begin)
    bad(path, where + " has data_offsets " + off->dump() + " that end before they begin");
  if (e.end - e.begin != nbytes)
    bad(path, where + " is " + dt->get<std::string>() + " of shape " + sh->dump() + " (" +
                  std::to_string(nbytes) + " bytes) but its data_offsets " + off->dump() +
                  " span " + std::to_string(e.end - e.begin) + " bytes");
  return e;
}

}  // namespace

void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  std::map<std::string, const Tensor*> sorted;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__")
      throw IoError("cannot save '" + path +
                    "': \"__metadata__\" is reserved and cannot name a "
                    "tensor");
    if (!t.defined())
      throw IoError("cannot save '" + path + "': tensor '" + name + "' has no data");
    if (!sorted.emplace(name, &t).second)
      throw IoError("cannot save '" + path + "': two tensors are named '" + name + "'");
  }

  json header = json::object();
  uint64_t offset = 0;
  for (const auto& [name, t] : sorted) {
    json shape = json::array();
    for (int64_t d : t->shape().dims()) shape.push_back(d);
    uint64_t n = t->bytes();
    header[name] = {{"dtype", dtype_name(t->dtype())},
                    {"shape", shape},
                    {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;

  std::string text;
  try {
    text = header.dump();
  } catch (const json::exception&) {
    throw IoError("cannot save '" + path + "': a tensor name or metadata value is not valid UTF-8");
  }
  // Padding keeps the byte buffer 8-byte aligned in the file, so readers can
  // map tensors without copying.
  text.append((8 - text.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(8 + text.size() + offset);
  uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  out += text;
  for (const auto& [name, t] : sorted) out.append(static_cast<const char*>(t->raw()), t->bytes());
  write_file_atomic(path, out);
}

namespace {

struct Header {
  uint64_t size = 0, length = 0;  // the file's bytes; the header's
  std::map<std::string, std::string> metadata;
  std::vector<Entry> entries;
};

// The header alone: its length, metadata and tensor entries checked, the
// data section not read.
Header read_header(File& f, const std::string& path) {
  Header h;
  const uint64_t size = h.size = f.size();
  if (size < 8)
    bad(path, "is too short to be a safetensors file (" + std::to_string(size) + " bytes)");
  unsigned char lenbuf[8];
  f.read_at(0, lenbuf, 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | lenbuf[i];
  if (n > size - 8)
    bad(path, "its header length (" + std::to_string(n) +
                  " bytes) goes beyond the end of the file (" + std::to_string(size) +
                  " bytes); the file is truncated or not a safetensors checkpoint");
  if (n > kMaxHeader)
    bad(path, "its header is " + std::to_string(n) + " bytes, more than the " +
                  std::to_string(kMaxHeader) + " a safetensors file may have");
  h.length = n;

  std::string text(n, '\0');
  f.read_at(8, text.data(), n);
  if (text.empty() || text[0] != '{')
    bad(path, "its header does not start with '{', so this is not a safetensors checkpoint");
  json header = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded())
    bad(path, "its header is not valid JSON; the file is corrupt or not a safetensors checkpoint");
  if (!header.is_object()) bad(path, "its header is not a JSON object");

  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) bad(path, "its \"__metadata__\" is not a JSON object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string())
          bad(path, "metadata entry '" + m.key() +
                        "' is not a string (safetensors metadata maps "
                        "strings to strings)");
        h.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    h.entries.push_back(parse_entry(path, it.key(), *it));
  }
  return h;
}

}  // namespace

std::map<std::string, std::string> load_safetensors_metadata(const std::string& path) {
  File f(path);
  return read_header(f, path).metadata;
}

SafetensorsFile load_safetensors(const std::string& path) {
  File f(path);
  Header h = read_header(f, path);
  const uint64_t size = h.size, n = h.length;
  SafetensorsFile out;
  out.metadata = std::move(h.metadata);
  std::vector<Entry>& entries = h.entries;

  // The spec requires the tensors to cover the byte buffer exactly: no
  // overlaps (aliasing) and no holes (room for hidden data).
  const uint64_t buffer = size - 8 - n;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expect = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.end > buffer)
      bad(path, "tensor '" + e.name + "' has data up to byte " + std::to_string(e.end) +
                    " but the data section is only " + std::to_string(buffer) +
                    " bytes; the file is truncated");
    if (e.begin < expect)
      bad(path, "tensors '" + prev->name + "' and '" + e.name + "' overlap in the data section");
    if (e.begin > expect)
      bad(path, "bytes " + std::to_string(expect) + " to " + std::to_string(e.begin) +
                    " of the data section belong to no tensor");
    expect = e.end;
    prev = &e;
  }
  if (expect != buffer)
    bad(path, "the data section has " + std::to_string(buffer - expect) +
                  " bytes after the last tensor that belong to no tensor");

  for (const Entry& e : entries) {
    Tensor t{Shape(e.shape), e.dtype};
    if (t.bytes()) f.read_at(8 + n + e.begin, t.raw(), t.bytes());
    out.tensors.emplace(e.name, std::move(t));
  }
  return out;
}

}  // namespace dc
