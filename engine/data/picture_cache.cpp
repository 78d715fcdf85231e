// The streamed pictures' cache file. Layout (little-endian, as written by
// this machine; another machine's file fails the checks and is rebuilt):
//   "DCPICS01"
//   records: {u32 magic, u32 channels, i64 item, i32 h, i32 w} + h*w*c bytes
//   index: n × {i64 offset (-1: no record, a bad file), i32 h, i32 w}
//   footer: {u64 magic, u64 key, i64 n, i64 index offset, i32 channels, i32 S}
// The file is written under a private name and renamed when complete, so a
// reader sees a whole file or none; a file that fails any bounds check is
// deleted and built again, never read.
#include "picture_cache.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>

#if defined(__unix__) || defined(__APPLE__)
#define DC_PICTURE_CACHE 1
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace dc {

namespace fs = std::filesystem;

namespace {

// 02: JPEGs are decoded at a DCT-reduced scale when the stored side allows
// it, so pictures stored by 01 differ from what a decode gives now.
constexpr char kHead[8] = {'D', 'C', 'P', 'I', 'C', 'S', '0', '2'};
constexpr uint32_t kRecordMagic = 0x52435044;  // "DPCR"
constexpr uint64_t kFooterMagic = 0x31534349504344ull;

struct RecordHeader {
  uint32_t magic, c;
  int64_t item;
  int32_t h, w;
};
struct IndexEntry {
  int64_t offset;
  int32_t h, w;
};
struct Footer {
  uint64_t magic, key;
  int64_t n, index_offset;
  int32_t channels, stored;
};
static_assert(sizeof(RecordHeader) == 24 && sizeof(IndexEntry) == 16 && sizeof(Footer) == 40);

uint64_t fnv(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t k = 0; k < n; ++k) h = (h ^ p[k]) * 0x100000001B3ull;
  return h;
}
template <class T>
uint64_t fnv_of(uint64_t h, const T& v) {
  return fnv(h, &v, sizeof v);
}

std::string hex(uint64_t v) {
  static const char* d = "0123456789abcdef";
  std::string s(16, '0');
  for (int k = 15; k >= 0; --k, v >>= 4) s[size_t(k)] = d[v & 15];
  return s;
}

std::string gb(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", double(bytes) / 1e9);
  return buf;
}

std::string default_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return (fs::path(xdg) / "DeepCanvas").string();
  const char* home = std::getenv("HOME");
  if (home && home[0]) return (fs::path(home) / ".cache" / "DeepCanvas").string();
  return {};
}

#ifdef DC_PICTURE_CACHE
bool write_all(int fd, const void* data, size_t n, int64_t at) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t k = ::pwrite(fd, p, n, off_t(at));
    if (k <= 0) return false;
    p += k;
    n -= size_t(k);
    at += k;
  }
  return true;
}
bool read_all(int fd, void* data, size_t n, int64_t at) {
  auto* p = static_cast<uint8_t*>(data);
  while (n > 0) {
    const ssize_t k = ::pread(fd, p, n, off_t(at));
    if (k <= 0) return false;
    p += k;
    n -= size_t(k);
    at += k;
  }
  return true;
}
#endif

}  // namespace

PictureCache::PictureCache(const std::string& dir_setting, const std::vector<ImageItem>& items,
                           int channels, int stored_side, int64_t estimate_bytes)
    : n_(int64_t(items.size())), channels_(channels), stored_(stored_side) {
  entries_ = std::make_unique<Entry[]>(size_t(n_));
  state_ = std::make_unique<std::atomic<uint8_t>[]>(size_t(n_));
  for (int64_t i = 0; i < n_; ++i) state_[size_t(i)].store(0);
  if (dir_setting == "none") {
    note_ = "no cache (cache_dir none)";
    return;
  }
#ifndef DC_PICTURE_CACHE
  note_ = "no cache on this platform";
  return;
#else
  dir_ = dir_setting.empty() ? default_dir() : dir_setting;
  if (dir_.empty()) {
    note_ = "no cache: neither XDG_CACHE_HOME nor HOME is set";
    return;
  }
  // The file list names the dataset; sizes, times and the resolution say
  // whether a cache of it still holds what decoding would give.
  uint64_t ph = 0xCBF29CE484222325ull, key;
  for (const ImageItem& it : items) {
    ph = fnv(ph, it.path.data(), it.path.size() + 1);
    ph = fnv_of(ph, it.label);
  }
  key = fnv_of(ph, channels);
  key = fnv_of(key, stored_side);
  for (const ImageItem& it : items) {
    std::error_code ec;
    const int64_t size = int64_t(fs::file_size(it.path, ec));
    const int64_t t =
        ec ? -1 : int64_t(fs::last_write_time(it.path, ec).time_since_epoch().count());
    key = fnv_of(key, ec ? int64_t(-1) : size);
    key = fnv_of(key, t);
  }
  path_hash_ = ph;
  key_ = key;
  path_ = (fs::path(dir_) / ("pictures-" + hex(ph) + "-" + hex(key) + ".dcache")).string();
  if (open_existing()) return;
  start_build(estimate_bytes);
#endif
}

PictureCache::~PictureCache() {
#ifdef DC_PICTURE_CACHE
  if (const uint8_t* m = map_.load()) ::munmap(const_cast<uint8_t*>(m), map_size_);
  if (fd_ >= 0) ::close(fd_);
  if (building_ && !part_.empty()) ::unlink(part_.c_str());
#endif
}

bool PictureCache::open_existing() {
#ifdef DC_PICTURE_CACHE
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  const bool sized = ::fstat(fd, &st) == 0 && st.st_size >= off_t(sizeof kHead + sizeof(Footer));
  void* m = sized ? ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
  ::close(fd);
  auto reject = [&] {
    if (m != MAP_FAILED) ::munmap(m, size_t(st.st_size));
    std::error_code ec;
    fs::remove(path_, ec);
    return false;
  };
  if (m == MAP_FAILED) return reject();
  const auto* base = static_cast<const uint8_t*>(m);
  const int64_t size = int64_t(st.st_size);
  Footer f;
  std::memcpy(&f, base + size - int64_t(sizeof f), sizeof f);
  const int64_t index_end = size - int64_t(sizeof f);
  if (std::memcmp(base, kHead, sizeof kHead) != 0 || f.magic != kFooterMagic || f.key != key_ ||
      f.n != n_ || f.channels != channels_ || f.stored != stored_ ||
      f.index_offset < int64_t(sizeof kHead) || f.index_offset > index_end ||
      (index_end - f.index_offset) != n_ * int64_t(sizeof(IndexEntry)))
    return reject();
  const int64_t max_side = int64_t(stored_) * 4;
  for (int64_t i = 0; i < n_; ++i) {
    IndexEntry e;
    std::memcpy(&e, base + f.index_offset + i * int64_t(sizeof e), sizeof e);
    if (e.offset == -1) {
      state_[size_t(i)].store(2);
      continue;
    }
    if (e.offset < int64_t(sizeof kHead) || e.h < 1 || e.w < 1 || e.h > max_side || e.w > max_side)
      return reject();
    const int64_t bytes = int64_t(e.h) * e.w * channels_;
    if (e.offset > f.index_offset - int64_t(sizeof(RecordHeader)) - bytes) return reject();
    RecordHeader r;
    std::memcpy(&r, base + e.offset, sizeof r);
    if (r.magic != kRecordMagic || int(r.c) != channels_ || r.item != i || r.h != e.h || r.w != e.w)
      return reject();
    entries_[size_t(i)] = {e.offset, e.h, e.w};
    state_[size_t(i)].store(1);
  }
  map_size_ = size_t(size);
  map_.store(base);
  complete_ = true;
  note_ = "cache at " + path_;
  return true;
#else
  return false;
#endif
}

void PictureCache::start_build(int64_t estimate_bytes) {
#ifdef DC_PICTURE_CACHE
  for (int64_t i = 0; i < n_; ++i) state_[size_t(i)].store(0);
  std::error_code ec;
  fs::create_directories(dir_, ec);
  const fs::space_info sp = fs::space(dir_, ec);
  if (ec) {
    note_ = "no cache: cannot use " + dir_ + " (" + ec.message() + ")";
    return;
  }
  // Room for the estimate twice over (it comes from a sample of headers),
  // and never the last gigabyte of the disk.
  const int64_t free_bytes = int64_t(sp.available) - (int64_t(1) << 30);
  max_bytes_ =
      std::min<int64_t>(2 * std::max<int64_t>(estimate_bytes, 0) + (int64_t(64) << 20), free_bytes);
  if (max_bytes_ <= 0) {
    note_ = "no cache: only " + gb(int64_t(sp.available)) + " free at " + dir_;
    return;
  }
  part_ = path_ + ".part" + std::to_string(::getpid()) + "-" +
          hex(reinterpret_cast<uintptr_t>(this)).substr(8);
  fd_ = ::open(part_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0 || !write_all(fd_, kHead, sizeof kHead, 0)) {
    note_ = "no cache: cannot write to " + dir_ + " (" + std::strerror(errno) + ")";
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
      ::unlink(part_.c_str());
    }
    return;
  }
  end_ = int64_t(sizeof kHead);
  building_ = true;
  note_ = "cache being built at " + path_;
#else
  (void)estimate_bytes;
#endif
}

bool PictureCache::get(int64_t i, Picture& out) const {
  if (i < 0 || i >= n_ || state_[size_t(i)].load(std::memory_order_acquire) != 1) return false;
  return read_record(i, out);
}

bool PictureCache::read_record(int64_t i, Picture& out) const {
  const Entry& e = entries_[size_t(i)];
  out.h = e.h;
  out.w = e.w;
  out.c = channels_;
  out.px.resize(size_t(out.bytes()));
  const int64_t at = e.offset + int64_t(sizeof(RecordHeader));
  if (const uint8_t* m = map_.load(std::memory_order_acquire)) {
    std::memcpy(out.px.data(), m + at, out.px.size());
    return true;
  }
#ifdef DC_PICTURE_CACHE
  return fd_ >= 0 && read_all(fd_, out.px.data(), out.px.size(), at);
#else
  return false;
#endif
}

void PictureCache::put(int64_t i, const Picture& p) {
#ifdef DC_PICTURE_CACHE
  if (!building_ || i < 0 || i >= n_ || p.c != channels_) return;
  std::lock_guard<std::mutex> l(mu_);
  if (!building_ || state_[size_t(i)].load() != 0) return;
  const int64_t bytes = int64_t(sizeof(RecordHeader)) + p.bytes();
  if (end_ + bytes + n_ * int64_t(sizeof(IndexEntry)) + int64_t(sizeof(Footer)) > max_bytes_) {
    abandon("no cache: it would pass its limit of " + gb(max_bytes_));
    return;
  }
  RecordHeader r{kRecordMagic, uint32_t(channels_), i, p.h, p.w};
  if (!write_all(fd_, &r, sizeof r, end_) ||
      !write_all(fd_, p.px.data(), p.px.size(), end_ + int64_t(sizeof r))) {
    abandon(std::string("no cache: writing ") + part_ + " failed (" + std::strerror(errno) + ")");
    return;
  }
  entries_[size_t(i)] = {end_, p.h, p.w};
  end_ += bytes;
  state_[size_t(i)].store(1, std::memory_order_release);
  if (++settled_ == n_) finish();
#else
  (void)i;
  (void)p;
#endif
}

void PictureCache::mark_bad(int64_t i) {
  if (!building_ || i < 0 || i >= n_) return;
  std::lock_guard<std::mutex> l(mu_);
  if (!building_ || state_[size_t(i)].load() != 0) return;
  state_[size_t(i)].store(2);
  if (++settled_ == n_) finish();
}

void PictureCache::finish() {
#ifdef DC_PICTURE_CACHE
  std::vector<IndexEntry> index(static_cast<size_t>(n_));
  for (int64_t i = 0; i < n_; ++i) {
    const bool has = state_[size_t(i)].load() == 1;
    const Entry& e = entries_[size_t(i)];
    index[size_t(i)] = {has ? e.offset : -1, has ? e.h : 0, has ? e.w : 0};
  }
  Footer f{kFooterMagic, key_, n_, end_, int32_t(channels_), int32_t(stored_)};
  const int64_t index_bytes = n_ * int64_t(sizeof(IndexEntry));
  if (!write_all(fd_, index.data(), size_t(index_bytes), end_) ||
      !write_all(fd_, &f, sizeof f, end_ + index_bytes) || ::fsync(fd_) != 0 ||
      ::rename(part_.c_str(), path_.c_str()) != 0) {
    abandon(std::string("no cache: finishing ") + path_ + " failed (" + std::strerror(errno) + ")");
    return;
  }
  building_ = false;
  part_.clear();
  complete_ = true;
  note_ = "cache at " + path_;
  // Later epochs read the mapped file; until the map exists they read fd_.
  const size_t size = size_t(end_ + index_bytes) + sizeof f;
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd_, 0);
  if (m != MAP_FAILED) {
    map_size_ = size;
    map_.store(static_cast<const uint8_t*>(m), std::memory_order_release);
  }
  // Caches of the same files made before they changed are of no further use.
  std::error_code ec;
  const std::string prefix = "pictures-" + hex(path_hash_) + "-";
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) == 0 && it->path().string() != path_ &&
        name.find(".part") == std::string::npos) {
      std::error_code ec2;
      fs::remove(it->path(), ec2);
    }
  }
#endif
}

void PictureCache::abandon(const std::string& why) {
#ifdef DC_PICTURE_CACHE
  // Records already written stay readable through fd_; only the name goes.
  building_ = false;
  if (!part_.empty()) ::unlink(part_.c_str());
  part_.clear();
  note_ = why;
#else
  (void)why;
#endif
}

std::string PictureCache::note() const {
  std::lock_guard<std::mutex> l(mu_);
  return note_;
}

}  // namespace dc
