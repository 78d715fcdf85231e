// TensorBoard event files, encoded by hand.
//
// Why not the protobuf library the ONNX exporter links: it is optional
// (deepcanvas-onnx is built only when protobuf and onnx are found) while
// every run writes an event file, and it would need tensorflow's .proto
// files compiled into the engine for the handful of fields used here:
// Event{wall_time, step, file_version, summary} and Summary.Value{tag,
// simple_value, metadata, tensor}. Those fields' numbers are fixed by
// TensorBoard's compatibility promise; the tests decode the files with an
// independent reader and with TensorBoard's own EventAccumulator.
#include <deepcanvas/tensorboard_writer.h>

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>

namespace dc {

namespace {

// The table of the reflected Castagnoli polynomial 0x82F63B78.
const std::array<uint32_t, 256>& crc32c_table() {
  static const std::array<uint32_t, 256> t = [] {
    std::array<uint32_t, 256> r{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
      r[i] = c;
    }
    return r;
  }();
  return t;
}

// Protobuf wire format: varints, and fields tagged (number << 3 | wire type).
void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(char(uint8_t(v) | 0x80));
    v >>= 7;
  }
  out.push_back(char(uint8_t(v)));
}
void key(std::string& out, int field, int wire) {
  varint(out, uint64_t(field) << 3 | uint64_t(wire));
}
void field_varint(std::string& out, int field, uint64_t v) {
  key(out, field, 0);
  varint(out, v);
}
void field_bytes(std::string& out, int field, const std::string& bytes) {
  key(out, field, 2);
  varint(out, bytes.size());
  out += bytes;
}
template <typename T>
void fixed(std::string& out, T v) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // little-endian hosts only (x86-64, aarch64)
  out.append(reinterpret_cast<const char*>(b), sizeof(T));
}
void field_double(std::string& out, int field, double v) {
  key(out, field, 1);
  fixed(out, v);
}
void field_float(std::string& out, int field, float v) {
  key(out, field, 5);
  fixed(out, v);
}

// SummaryMetadata{plugin_data{plugin_name, content}}.
std::string plugin_metadata(const std::string& plugin, const std::string& content) {
  std::string data;
  field_bytes(data, 1, plugin);
  if (!content.empty()) field_bytes(data, 2, content);
  std::string meta;
  field_bytes(meta, 1, data);
  return meta;
}

// A scalar TensorProto: DT_STRING (7) holding `s`, or without one DT_FLOAT
// (1) 0, the placeholder that lets TensorBoard's loader list a plugin's
// summary whose data is all in its metadata.
std::string scalar_tensor(const std::string* s) {
  std::string t;
  field_varint(t, 1, s ? 7 : 1);
  field_bytes(t, 2, "");  // TensorShapeProto without dims: a scalar
  if (s)
    field_bytes(t, 8, *s);
  else
    field_float(t, 5, 0.0f);
  return t;
}

std::string host_name() {
  char h[256] = {};
  if (::gethostname(h, sizeof h - 1) != 0 || !h[0]) return "localhost";
  return h;
}

}  // namespace

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  const auto& t = crc32c_table();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = t[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

uint32_t tfrecord_masked_crc(const void* data, size_t n) {
  const uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tfrecord_frame(const std::string& data) {
  std::string out;
  fixed(out, uint64_t(data.size()));
  fixed(out, tfrecord_masked_crc(out.data(), 8));
  out += data;
  fixed(out, tfrecord_masked_crc(data.data(), data.size()));
  return out;
}

namespace tb {

std::string scalar_value(const std::string& tag, float value) {
  std::string v;
  field_bytes(v, 1, tag);
  field_float(v, 2, value);
  return v;
}

std::string text_value(const std::string& tag, const std::string& text) {
  std::string v;
  field_bytes(v, 1, tag);
  field_bytes(v, 9, plugin_metadata("text", ""));
  field_bytes(v, 8, scalar_tensor(&text));
  return v;
}

std::string plugin_value(const std::string& tag, const std::string& plugin,
                         const std::string& content) {
  std::string v;
  field_bytes(v, 1, tag);
  field_bytes(v, 9, plugin_metadata(plugin, content));
  field_bytes(v, 8, scalar_tensor(nullptr));
  return v;
}

std::string summary_event(double wall_time, int64_t step, const std::vector<std::string>& values) {
  std::string summary;
  for (const std::string& v : values) field_bytes(summary, 1, v);
  std::string e;
  field_double(e, 1, wall_time);
  field_varint(e, 2, uint64_t(step));
  field_bytes(e, 5, summary);
  return e;
}

namespace {

// google.protobuf.Value of a number (2) or a string (3).
std::string proto_value(bool numeric, double number, const std::string& text) {
  std::string v;
  if (numeric)
    field_double(v, 2, number);
  else
    field_bytes(v, 3, text);
  return v;
}

// HParamsPluginData{version 0, `field`: message} as the plugin's summary.
std::string hparams_value(const char* tag, int field, const std::string& message) {
  std::string data;
  field_bytes(data, field, message);
  return plugin_value(tag, "hparams", data);
}

}  // namespace

std::string hparams_experiment(const std::vector<HParamInfo>& params,
                               const std::vector<std::string>& metric_tags, double time_created) {
  std::string e;
  field_double(e, 3, time_created);
  for (const HParamInfo& p : params) {
    std::string info;
    field_bytes(info, 1, p.name);
    field_varint(info, 4, p.numeric ? 3 : 1);  // DATA_TYPE_FLOAT64, DATA_TYPE_STRING
    if (p.numeric) {
      std::string interval;
      field_double(interval, 1, p.lo);
      field_double(interval, 2, p.hi);
      field_bytes(info, 6, interval);
    } else {
      std::string list;  // google.protobuf.ListValue
      for (const std::string& c : p.choices) field_bytes(list, 1, proto_value(false, 0, c));
      field_bytes(info, 5, list);
    }
    field_bytes(e, 4, info);
  }
  for (const std::string& tag : metric_tags) {
    std::string name, info;
    field_bytes(name, 2, tag);  // MetricName{group "" (the session's own run), tag}
    field_bytes(info, 1, name);
    field_bytes(e, 5, info);
  }
  return hparams_value("_hparams_/experiment", 2, e);
}

std::string hparams_session_start(const std::vector<HParamValue>& values, double start_time) {
  std::string s;
  for (const HParamValue& v : values) {
    std::string entry;  // map<string, google.protobuf.Value> entry
    field_bytes(entry, 1, v.name);
    field_bytes(entry, 2, proto_value(v.numeric, v.number, v.text));
    field_bytes(s, 1, entry);
  }
  field_double(s, 5, start_time);
  return hparams_value("_hparams_/session_start_info", 3, s);
}

std::string hparams_session_end(SessionStatus status, double end_time) {
  std::string s;
  field_varint(s, 1, uint64_t(status));
  field_double(s, 2, end_time);
  return hparams_value("_hparams_/session_end_info", 4, s);
}

std::string file_version_event(double wall_time) {
  std::string e;
  field_double(e, 1, wall_time);
  field_bytes(e, 3, "brain.Event:2");
  return e;
}

}  // namespace tb

double TensorBoardWriter::now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    fail(dir + ": cannot be created (" + ec.message() + ")");
    return;
  }
  const double t = now();
  const std::string base =
      dir + "/events.out.tfevents." + std::to_string(int64_t(t)) + "." + host_name();
  // Two runs started in the same second into one folder get files of their own.
  for (int n = 0; n < 100 && fd_ < 0; ++n) {
    path_ = n ? base + "." + std::to_string(::getpid()) + "." + std::to_string(n) : base;
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    fail(path_ + ": cannot be written (" + std::strerror(errno) + ")");
    return;
  }
  append(tb::file_version_event(t));
}

TensorBoardWriter::~TensorBoardWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void TensorBoardWriter::fail(const std::string& why) {
  if (problem_.empty()) problem_ = "TensorBoard log " + why + "; training goes on without it";
}

// One write(2) per call: the records reach the kernel at once, so a killed
// process loses nothing already added, and a frame cut short by a full disk
// is the file's last (readers stop at it).
void TensorBoardWriter::append(const std::string& event) {
  if (!ok()) return;
  const std::string frame = tfrecord_frame(event);
  size_t done = 0;
  while (done < frame.size()) {
    const ssize_t n = ::write(fd_, frame.data() + done, frame.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      fail(path_ + ": cannot be written (" + std::strerror(n < 0 ? errno : ENOSPC) + ")");
      return;
    }
    done += size_t(n);
  }
}

void TensorBoardWriter::add_values(const std::vector<std::string>& values, int64_t step) {
  if (!values.empty()) append(tb::summary_event(now(), step, values));
}

void TensorBoardWriter::add_scalars(const std::vector<std::pair<std::string, double>>& scalars,
                                    int64_t step) {
  std::vector<std::string> values;
  for (const auto& [tag, v] : scalars) values.push_back(tb::scalar_value(tag, float(v)));
  add_values(values, step);
}

void TensorBoardWriter::add_text(const std::string& tag, const std::string& text, int64_t step) {
  add_values({tb::text_value(tag, text)}, step);
}

}  // namespace dc
