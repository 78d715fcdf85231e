// IDX files (the MNIST format): a 4-byte magic 00 00 TYPE RANK, RANK
// big-endian u32 dimensions, then the elements; often gzip-compressed.
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>

#include <zlib.h>

namespace dc {

namespace {

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw IoError(path + ": " + what);
}

bool is_gzip(const std::string& s) {
  return s.size() >= 2 && static_cast<unsigned char>(s[0]) == 0x1f &&
         static_cast<unsigned char>(s[1]) == 0x8b;
}

// Inflates a whole gzip file, including several concatenated members (what
// `cat a.gz b.gz` gives).
std::string gunzip(const std::string& path, const std::string& gz) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) bad(path, "cannot start gzip decompression");
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end{&zs};

  // The trailer holds the size modulo 2^32: a good first guess, so the full
  // data set inflates without regrowing. One spare byte lets the stream end
  // be seen without a resize.
  size_t guess = 1 << 16;
  if (gz.size() >= 18) {
    uint32_t isize = 0;
    for (int i = 0; i < 4; ++i)
      isize |= uint32_t(static_cast<unsigned char>(gz[gz.size() - 4 + i])) << (8 * i);
    // Deflate expands at most ~1032:1, which bounds a damaged trailer's guess.
    size_t bound = gz.size() * 1032;
    if (isize < bound) guess = std::max<size_t>(guess, size_t(isize) + 1);
  }
  std::string out(guess, '\0');
  size_t in_pos = 0, out_len = 0;
  for (;;) {
    if (out_len == out.size()) out.resize(std::max<size_t>(out.size() * 2, 1 << 16));
    // avail_in/out are 32-bit, so feed at most 1 GiB at a time.
    size_t in_chunk = std::min<size_t>(gz.size() - in_pos, size_t(1) << 30);
    size_t out_chunk = std::min<size_t>(out.size() - out_len, size_t(1) << 30);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data() + in_pos));
    zs.avail_in = static_cast<uInt>(in_chunk);
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + out_len);
    zs.avail_out = static_cast<uInt>(out_chunk);
    int rc = inflate(&zs, Z_NO_FLUSH);
    in_pos += in_chunk - zs.avail_in;
    out_len += out_chunk - zs.avail_out;
    if (rc == Z_STREAM_END) {
      if (in_pos == gz.size()) break;
      if (!is_gzip(gz.substr(in_pos, 2)))
        bad(path, "has " + std::to_string(gz.size() - in_pos) +
                      " bytes of unexpected data after its gzip stream; the file is corrupt");
      inflateReset(&zs);
      continue;
    }
    if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT)
      bad(path, std::string("is not valid gzip data (") + (zs.msg ? zs.msg : "corrupt stream") +
                    "); the file is corrupt, download or copy it again");
    if (rc == Z_MEM_ERROR) throw std::bad_alloc();
    if (rc == Z_BUF_ERROR && in_pos == gz.size() && zs.avail_out > 0)
      bad(path, "its gzip data ends early; the file is truncated, download or copy it again");
    if (rc != Z_OK && rc != Z_BUF_ERROR)
      bad(path, "gzip decompression failed (zlib error " + std::to_string(rc) + ")");
    if (in_pos == gz.size() && zs.avail_out > 0)
      bad(path, "its gzip data ends early; the file is truncated, download or copy it again");
  }
  out.resize(out_len);
  return out;
}

const char* idx_type_name(unsigned t) {
  switch (t) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "16-bit integer";
    case 0x0C:
      return "32-bit integer";
    case 0x0D:
      return "32-bit float";
    case 0x0E:
      return "64-bit float";
  }
  return nullptr;
}

struct Idx {
  std::vector<int64_t> dims;
  std::string bytes;  // the whole decompressed file
  size_t data_offset = 0;
};

// Reads and checks one IDX file of unsigned bytes with a rank in
// [min_rank, max_rank]; `what` names the items in messages ("images").
Idx read_idx(const std::string& path, const char* what, size_t min_rank, size_t max_rank) {
  Idx idx;
  idx.bytes = read_file(path);
  if (is_gzip(idx.bytes)) idx.bytes = gunzip(path, idx.bytes);
  const std::string& b = idx.bytes;
  auto u8 = [&](size_t i) { return static_cast<unsigned>(static_cast<unsigned char>(b[i])); };

  if (b.size() < 4)
    bad(path, "is too short to be an IDX file (" + std::to_string(b.size()) + " bytes)");
  if (u8(0) != 0 || u8(1) != 0 || !idx_type_name(u8(2))) {
    char magic[16];
    std::snprintf(magic, sizeof magic, "%02x %02x %02x %02x", u8(0), u8(1), u8(2), u8(3));
    bad(path, std::string("does not start with an IDX magic number (00 00 08 ") +
                  (max_rank == 1 ? "01" : "03") + " expected, found " + magic +
                  "); it is not an IDX " + what + " file");
  }
  if (u8(2) != 0x08)
    bad(path, std::string("holds ") + idx_type_name(u8(2)) +
                  " values; DeepCanvas reads IDX files of unsigned bytes (type 0x08)");
  size_t rank = u8(3);
  if (rank < min_rank || rank > max_rank) {
    std::string want = min_rank == max_rank
                           ? std::to_string(min_rank)
                           : std::to_string(min_rank) + " to " + std::to_string(max_rank);
    bad(path, "has " + std::to_string(rank) + (rank == 1 ? " dimension" : " dimensions") +
                  " but an IDX " + what + " file has " + want +
                  (rank == 1                    ? "; is this a labels file given as images?"
                   : rank == 3 && max_rank == 1 ? "; is this an images file given as labels?"
                                                : ""));
  }
  idx.data_offset = 4 + 4 * rank;
  if (b.size() < idx.data_offset) bad(path, "ends inside its header; the file is truncated");

  uint64_t numel = 1;
  for (size_t d = 0; d < rank; ++d) {
    uint32_t v = 0;
    for (size_t k = 0; k < 4; ++k) v = (v << 8) | u8(4 + 4 * d + k);
    if (v == 0)
      bad(path,
          d == 0 ? std::string("holds no ") + what : "has a dimension of size 0 in its header");
    idx.dims.push_back(v);
    // Each factor is below 2^32, so checking before multiplying keeps this exact.
    if (numel > std::numeric_limits<uint64_t>::max() / v)
      bad(path, "has header dimensions too large to be real; the file is corrupt");
    numel *= v;
  }
  uint64_t have = b.size() - idx.data_offset;
  if (have != numel) {
    std::string dims = Shape(std::vector<int64_t>(idx.dims.begin() + 1, idx.dims.end())).str();
    std::string says = "its header says " + std::to_string(idx.dims[0]) + " " + what +
                       (rank > 1 ? " of " + dims : "") + " (" + std::to_string(numel) +
                       " bytes) but ";
    if (have < numel)
      bad(path, says + "only " + std::to_string(have) +
                    " bytes follow; the file is truncated, download or copy it again");
    bad(path, says + std::to_string(have) +
                  " bytes follow; the header does not match the data, the file is corrupt");
  }
  return idx;
}

}  // namespace

Dataset load_idx(const std::string& images_path, const std::string& labels_path) {
  Idx img = read_idx(images_path, "images", 2, 4);
  Idx lab = read_idx(labels_path, "labels", 1, 1);
  if (img.dims[0] != lab.dims[0])
    throw DataError(images_path + " holds " + std::to_string(img.dims[0]) + " images but " +
                    labels_path + " holds " + std::to_string(lab.dims[0]) +
                    " labels; the two files must come from the same set");

  Dataset d;
  d.source = images_path;
  std::vector<int64_t> sample(img.dims.begin() + 1, img.dims.end());
  // Greyscale N×H×W becomes one channel so that it feeds NCHW layers directly.
  if (sample.size() == 2) sample.insert(sample.begin(), 1);
  d.sample_shape = Shape(std::move(sample));
  const auto* p = reinterpret_cast<const uint8_t*>(img.bytes.data() + img.data_offset);
  d.pixels.assign(p, p + (img.bytes.size() - img.data_offset));
  img.bytes = std::string();

  const auto* l = reinterpret_cast<const uint8_t*>(lab.bytes.data() + lab.data_offset);
  d.labels.assign(l, l + lab.dims[0]);
  int max_label = 0;
  for (int32_t v : d.labels) max_label = std::max(max_label, v);
  d.num_classes = max_label + 1;
  return d;
}

}  // namespace dc
