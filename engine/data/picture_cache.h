#pragma once
// The cache of streamed pictures (image_data.h's ImageLoadOptions::
// cache_dir): one file per dataset holding every picture as stored (after
// the downscale to the training resolution), filled by the loader's
// workers during the first epoch and memory-mapped by later epochs and
// later runs. Internal to the data library.
#include <deepcanvas/image_data.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace dc {

class PictureCache {
 public:
  // `stored_side`: the stored resolution S (part of the key, as are the
  // channels and every file's path, size and modification time).
  // `estimate_bytes`: the expected size of all stored pictures, which caps
  // the file (with the free disk space). Never throws: a cache that cannot
  // be used says why in note().
  PictureCache(const std::string& dir_setting, const std::vector<ImageItem>& items, int channels,
               int stored_side, int64_t estimate_bytes);
  ~PictureCache();
  PictureCache(const PictureCache&) = delete;
  PictureCache& operator=(const PictureCache&) = delete;

  // Item i's picture when the cache holds it.
  bool get(int64_t i, Picture& out) const;
  // Adds item i's stored picture (while the cache is being built).
  void put(int64_t i, const Picture& p);
  // Item i is a bad file: it has no record, and the cache is complete without it.
  void mark_bad(int64_t i);
  // "cache at PATH", "cache being built at PATH", "no cache: ...".
  std::string note() const;
  std::string path() const { return path_; }
  bool complete() const { return complete_.load(); }

 private:
  struct Entry {
    int64_t offset = -1;
    int32_t h = 0, w = 0;
  };
  bool open_existing();
  void start_build(int64_t estimate_bytes);
  void finish();                         // mu_ held
  void abandon(const std::string& why);  // mu_ held
  bool read_record(int64_t i, Picture& out) const;

  int64_t n_;
  int channels_, stored_;
  uint64_t key_ = 0, path_hash_ = 0;
  std::string dir_, path_, part_;
  mutable std::mutex mu_;
  std::string note_;
  int fd_ = -1;  // the file being built (or the published one)
  // The published file, mapped (set once; read by the workers without a lock).
  std::atomic<const uint8_t*> map_{nullptr};
  size_t map_size_ = 0;
  std::atomic<bool> complete_{false}, building_{false};
  std::unique_ptr<Entry[]> entries_;
  std::unique_ptr<std::atomic<uint8_t>[]> state_;  // 0 unknown, 1 recorded, 2 bad
  int64_t end_ = 0, max_bytes_ = 0, settled_ = 0;
};

}  // namespace dc
