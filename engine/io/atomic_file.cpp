#include <deepcanvas/errors.h>
#include <deepcanvas/io.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dc {

namespace {

std::string os_error(int err) {
  return std::generic_category().message(err);
}

// Owns a descriptor so that every early throw closes it.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

// Removes the temp file unless the rename went through.
struct TempGuard {
  std::string path;
  bool armed = true;
  ~TempGuard() {
    if (armed) ::unlink(path.c_str());
  }
};

std::atomic<uint64_t> g_temp_counter{0};

}  // namespace

void write_file_atomic(const std::string& path, const std::string& bytes) {
  namespace fs = std::filesystem;
  if (path.empty()) throw IoError("cannot write a file with an empty name");
  fs::path target(path);
  std::string dir = target.has_parent_path() ? target.parent_path().string() : std::string(".");

  struct stat old {};
  bool had_old = ::stat(path.c_str(), &old) == 0;
  if (had_old && S_ISDIR(old.st_mode))
    throw IoError("cannot write '" + path + "': it is a folder; choose a file name");

  // Open with O_EXCL under a name unique to this process and call, so two
  // writers never share a temp file. Mode 0666 lets the umask apply as it
  // would to an ordinary new file.
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; ++attempt) {
    tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" +
          std::to_string(g_temp_counter.fetch_add(1));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0)
    throw IoError("cannot write '" + path + "': cannot create a temporary file in '" + dir +
                  "': " + os_error(errno));
  Fd file(fd);
  TempGuard guard{tmp};

  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t w = ::write(file.fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw IoError("cannot write '" + path + "': " + os_error(errno));
    }
    p += w;
    left -= static_cast<size_t>(w);
  }
  if (had_old) ::fchmod(file.fd, old.st_mode & 07777);
  // Data must be on disk before the rename makes it visible, or a crash could
  // leave an empty file where the old one was.
  if (::fsync(file.fd) != 0) throw IoError("cannot write '" + path + "': " + os_error(errno));
  if (::close(file.release()) != 0)
    throw IoError("cannot write '" + path + "': " + os_error(errno));
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    throw IoError("cannot write '" + path + "': " + os_error(errno));
  guard.armed = false;

  // Persist the rename itself; failing here loses nothing already written.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::string read_file(const std::string& path, int64_t max_bytes, const std::string& what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError("cannot open '" + path + "': " + os_error(errno));
  Fd file(fd);
  struct stat st {};
  if (::fstat(file.fd, &st) != 0) throw IoError("cannot read '" + path + "': " + os_error(errno));
  if (S_ISDIR(st.st_mode)) throw IoError("cannot read '" + path + "': it is a folder, not a file");

  // Read straight into the result, then to EOF rather than trusting st_size:
  // pipes and /proc files report 0, and a file may grow while we read.
  auto too_big = [&] {
    std::string limit = max_bytes % (1 << 20) == 0 ? std::to_string(max_bytes >> 20) + " MiB"
                                                   : std::to_string(max_bytes) + " bytes";
    return IoError("cannot read '" + path + "': it is larger than " + limit + ", the most a " +
                   what + " may have");
  };
  if (st.st_size > max_bytes) throw too_big();
  std::string out(st.st_size > 0 ? static_cast<size_t>(st.st_size) : 0, '\0');
  size_t len = 0;
  char extra[1 << 16];
  for (;;) {
    bool into_out = len < out.size();
    char* dst = into_out ? out.data() + len : extra;
    size_t room = into_out ? out.size() - len : sizeof extra;
    ssize_t r = ::read(file.fd, dst, room);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw IoError("cannot read '" + path + "': " + os_error(errno));
    }
    if (r == 0) break;
    if (into_out) {
      len += static_cast<size_t>(r);
    } else {
      if (int64_t(len) + r > max_bytes) throw too_big();
      out.resize(len);
      out.append(extra, static_cast<size_t>(r));
      len = out.size();
    }
  }
  out.resize(len);
  return out;
}

}  // namespace dc
