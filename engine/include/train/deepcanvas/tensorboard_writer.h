#pragma once
// TensorBoard's event files (events.out.tfevents.<seconds>.<host>): TFRecord
// frames around `Event` protobuf messages, written without the protobuf
// library (see tensorboard_writer.cpp for why). Each call appends whole
// frames and hands them to the kernel, so a run killed at any moment leaves
// a file TensorBoard reads up to its last complete record.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dc {

// CRC-32C (Castagnoli), as TFRecord frames carry it, continuing from `crc`.
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);
// The masked form a TFRecord frame stores (masking keeps a CRC of data that
// itself holds CRCs from being trivially self-consistent).
uint32_t tfrecord_masked_crc(const void* data, size_t n);
// One TFRecord frame around `data`.
std::string tfrecord_frame(const std::string& data);

// Hand-encoded protobuf pieces of tensorflow's Event and Summary messages
// and of the plugins TensorBoard reads them with.
namespace tb {

// Summary.Value{tag, simple_value} (a scalar).
std::string scalar_value(const std::string& tag, float value);
// Summary.Value{tag, metadata{plugin "text"}, tensor<DT_STRING>{text}}.
std::string text_value(const std::string& tag, const std::string& text);
// Summary.Value{tag, metadata{plugin `plugin`, content}} with an empty
// tensor: how the HParams plugin's summaries are stored.
std::string plugin_value(const std::string& tag, const std::string& plugin,
                         const std::string& content);
// Event{wall_time, step, summary{values}}; values are serialized Summary.Values.
std::string summary_event(double wall_time, int64_t step, const std::vector<std::string>& values);
// Event{wall_time, file_version "brain.Event:2"}: every file's first record.
std::string file_version_event(double wall_time);

// The HParams plugin's summaries (plugin "hparams", content a serialized
// HParamsPluginData): a sweep's parameters and metrics once, and each
// trial's values at its start and its status at its end.
struct HParamInfo {
  std::string name;
  bool numeric = true;  // FLOAT64 over [lo, hi], else STRING
  double lo = 0, hi = 0;
  std::vector<std::string> choices;  // STRING's discrete domain
};
struct HParamValue {
  std::string name;
  bool numeric = true;
  double number = 0;
  std::string text;
};
enum class SessionStatus { Unknown = 0, Success = 1, Failure = 2, Running = 3 };
// `_hparams_/experiment`; metric_tags are scalar tags of the sessions' runs.
std::string hparams_experiment(const std::vector<HParamInfo>& params,
                               const std::vector<std::string>& metric_tags, double time_created);
// `_hparams_/session_start_info`.
std::string hparams_session_start(const std::vector<HParamValue>& values, double start_time);
// `_hparams_/session_end_info`.
std::string hparams_session_end(SessionStatus status, double end_time);

}  // namespace tb

class TensorBoardWriter {
 public:
  // Opens a new event file in `dir` (made with its parents) and writes its
  // first record. Never throws: a folder that cannot be written is recorded
  // in problem() and every later write is skipped.
  explicit TensorBoardWriter(const std::string& dir);
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  // One Event with these scalars at `step`; a no-op for an empty list.
  void add_scalars(const std::vector<std::pair<std::string, double>>& scalars, int64_t step);
  void add_text(const std::string& tag, const std::string& text, int64_t step);
  // One Event holding serialized Summary.Values (tb::plugin_value and the like).
  void add_values(const std::vector<std::string>& values, int64_t step);

  bool ok() const { return fd_ >= 0 && problem_.empty(); }
  const std::string& path() const { return path_; }
  // The first failure (unwritable folder, full disk), in words naming the
  // file; empty while every write succeeded.
  const std::string& problem() const { return problem_; }

  static double now();  // seconds since the epoch, as Event.wall_time

 private:
  void append(const std::string& event);
  void fail(const std::string& why);

  std::string path_, problem_;
  int fd_ = -1;
};

}  // namespace dc
