// IDX files (the MNIST format): a 4-byte magic 00 00 TYPE RANK, RANK
// big-endian u32 dimensions, then the elements; often gzip-compressed.
#include <deepcanvas/data.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

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

// Inflates a gzip file on demand, including several concatenated members
// (what `cat a.gz b.gz` gives), so that a reader takes only as many bytes as
// it expects: a damaged size in the trailer or a gzip bomb then costs no more
// than the IDX header declares.
class Gunzip {
 public:
  Gunzip(const std::string& path, const std::string& gz) : path_(path), gz_(gz) {
    if (inflateInit2(&zs_, 16 + MAX_WBITS) != Z_OK) bad(path, "cannot start gzip decompression");
  }
  ~Gunzip() { inflateEnd(&zs_); }
  Gunzip(const Gunzip&) = delete;
  Gunzip& operator=(const Gunzip&) = delete;

  // Fills up to n bytes; fewer only at the end of the data.
  size_t read(char* dst, size_t n) {
    size_t got = 0;
    while (got < n && !done_) {
      // avail_in/out are 32-bit, so feed at most 1 GiB at a time.
      size_t in_chunk = std::min<size_t>(gz_.size() - in_pos_, size_t(1) << 30);
      size_t out_chunk = std::min<size_t>(n - got, size_t(1) << 30);
      zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz_.data() + in_pos_));
      zs_.avail_in = static_cast<uInt>(in_chunk);
      zs_.next_out = reinterpret_cast<Bytef*>(dst + got);
      zs_.avail_out = static_cast<uInt>(out_chunk);
      int rc = inflate(&zs_, Z_NO_FLUSH);
      in_pos_ += in_chunk - zs_.avail_in;
      got += out_chunk - zs_.avail_out;
      if (rc == Z_STREAM_END) {
        if (in_pos_ == gz_.size()) {
          done_ = true;
        } else if (!is_gzip(gz_.substr(in_pos_, 2))) {
          bad(path_, "has " + std::to_string(gz_.size() - in_pos_) +
                         " bytes of unexpected data after its gzip stream; the file is corrupt");
        } else {
          inflateReset(&zs_);
        }
        continue;
      }
      if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT)
        bad(path_, std::string("is not valid gzip data (") +
                       (zs_.msg ? zs_.msg : "corrupt stream") +
                       "); the file is corrupt, download or copy it again");
      if (rc == Z_MEM_ERROR) throw std::bad_alloc();
      if (rc != Z_OK && rc != Z_BUF_ERROR)
        bad(path_, "gzip decompression failed (zlib error " + std::to_string(rc) + ")");
      if (in_pos_ == gz_.size() && zs_.avail_out > 0)
        bad(path_, "its gzip data ends early; the file is truncated, download or copy it again");
    }
    return got;
  }

 private:
  std::string path_;
  const std::string& gz_;
  z_stream zs_{};
  size_t in_pos_ = 0;
  bool done_ = false;
};

// The IDX bytes, from memory or inflated on demand.
class IdxSource {
 public:
  IdxSource(const std::string& path, std::string bytes) : bytes_(std::move(bytes)) {
    if (is_gzip(bytes_)) gz_ = std::make_unique<Gunzip>(path, bytes_);
  }
  bool compressed() const { return gz_ != nullptr; }
  size_t stored() const { return bytes_.size(); }
  // Appends up to n bytes to out; returns how many.
  size_t read(std::string& out, size_t n) {
    if (!gz_) {
      size_t k = std::min(n, bytes_.size() - pos_);
      out.append(bytes_, pos_, k);
      pos_ += k;
      return k;
    }
    size_t old = out.size();
    out.resize(old + n);
    size_t k = gz_->read(out.data() + old, n);
    out.resize(old + k);
    return k;
  }
  // The file's whole content when it is not compressed (no copy needed).
  std::string take_raw() { return std::move(bytes_); }

 private:
  std::string bytes_;
  size_t pos_ = 0;
  std::unique_ptr<Gunzip> gz_;
};

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
// The header is checked before the data is read; a gzip file is inflated
// only up to the size the header declares.
Idx read_idx(const std::string& path, const char* what, size_t min_rank, size_t max_rank) {
  Idx idx;
  IdxSource src(path, read_file(path, kMaxIdxBytes + 64, "IDX file"));
  std::string& b = idx.bytes;
  src.read(b, 4);
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
  src.read(b, 4 * rank);
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
  std::string dims = Shape(std::vector<int64_t>(idx.dims.begin() + 1, idx.dims.end())).str();
  std::string says = "its header says " + std::to_string(idx.dims[0]) + " " + what +
                     (rank > 1 ? " of " + dims : "") + " (" + std::to_string(numel) +
                     " bytes) but ";
  if (numel > uint64_t(kMaxIdxBytes))
    bad(path, says + "DeepCanvas reads IDX files of at most " + std::to_string(kMaxIdxBytes >> 30) +
                  " GiB; the file is corrupt or too large");
  // Deflate shrinks data at most ~1032:1, so a smaller file cannot hold it.
  if (src.compressed() && numel > uint64_t(src.stored()) * 1032 + 4096)
    bad(path, says + "its gzip data of " + std::to_string(src.stored()) +
                  " bytes cannot hold that much; the file is truncated or corrupt");
  uint64_t have = 0;
  if (!src.compressed()) {
    have = src.stored() - idx.data_offset;
    if (have == numel) {
      idx.bytes = src.take_raw();
      return idx;
    }
  } else {
    // Grown as data arrives rather than reserved: a header that lies about
    // the size must not allocate more than the data really holds.
    while (have < numel) {
      size_t want = size_t(std::min<uint64_t>(numel - have, std::max<uint64_t>(have, 1 << 20)));
      size_t got = src.read(b, want);
      have += got;
      if (got < want) break;
    }
    if (have == numel) {
      std::string probe;
      if (src.read(probe, 1) == 0) return idx;
      have += 1;  // at least one byte more than declared
    }
  }
  if (have < numel)
    bad(path, says + "only " + std::to_string(have) +
                  " bytes follow; the file is truncated, download or copy it again");
  bad(path, says + (src.compressed() ? "more" : std::to_string(have)) +
                " bytes follow; the header does not match the data, the file is corrupt");
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
