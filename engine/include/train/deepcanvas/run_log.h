#pragma once
// Reading a run's metrics.jsonl back (a PyTorch export's train.py writes one
// JSON object per line: start, step, epoch, end), as the TrainEvents a local
// run publishes, so the app plots an imported run like its own. The reader
// follows a file that is still growing: each poll() reads what was appended
// since the last one, complete lines only.
#include <deepcanvas/train_config.h>
#include <deepcanvas/training_events.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace dc {

struct RunLogRecord;  // one parsed line (run_log.cpp)

class RunLogReader {
 public:
  explicit RunLogReader(std::string path);

  // Events from the lines appended since the last call. A line that is not
  // a JSON object of a known kind is skipped and described in warnings(). A
  // last line without its newline is left for the next call (the writer may
  // be in the middle of it) unless `final`, when it counts as truncated.
  // Throws IoError when the file cannot be read.
  std::vector<TrainEvent> poll(bool final = false);

  const std::vector<std::string>& warnings() const { return warnings_; }
  bool finished() const { return finished_; }  // an "end" line was read
  int epochs() const { return epochs_; }       // from the "start" line (0: unknown)
  // The "start" line's words for the run (device, processes, precision, batch).
  const std::string& summary() const { return summary_; }
  const std::string& path() const { return path_; }

 private:
  bool parse_line(const std::string& line, int64_t lineno, TrainEvent& out);
  // Throws IoError naming the field when a number is out of range.
  bool parse_record(const RunLogRecord& r, const std::string& kind, TrainEvent& out);

  std::string path_, pending_, summary_;
  int64_t offset_ = 0, lineno_ = 0;
  int epochs_ = 0;
  int64_t steps_per_epoch_ = 0;
  bool finished_ = false;
  std::vector<std::string> warnings_;
};

class TensorBoardWriter;

// The app's runs folder: $XDG_DATA_HOME (else ~/.local/share)/DeepCanvas/runs,
// where `tensorboard --logdir` finds every run.
std::string default_runs_folder();
// A new run's folder there: <yyyymmdd-HHMMSS>-<name>, the name's characters
// other than letters and digits as '_'.
std::string new_run_folder(const std::string& name);

// The run's settings as TensorBoard's text tab shows them (Markdown: a JSON
// block of every setting), for RunRecordOptions::settings_text.
std::string run_settings_text(const TrainConfig& c);

// Where and what a run records (RunRecorder).
struct RunRecordOptions {
  std::string dir;            // the run folder: metrics.jsonl and the event file
  bool tensorboard = true;    // also an events.out.tfevents.* file
  std::string project;        // for the "start" record
  std::string settings_text;  // the run's settings, as TensorBoard's "settings" text
  // Add to an existing metrics.jsonl (a resumed run, as train.py --resume)
  // rather than start it afresh; the event file is always a new one.
  bool append = false;
};

// Writing a run's metrics.jsonl, in the records a PyTorch export's train.py
// writes (so RunLogReader and the app read either), and beside it a
// TensorBoard event file holding every figure of those records as a scalar
// "KIND/FIELD" (step/loss, epoch/val_accuracy, gpu/utilization_pct) at the
// record's step. Both are appended and flushed per event, so a killed run
// leaves readable files. Nothing here throws: a folder that cannot be
// written or a full disk is described once by take_problem(), and the
// other file, and training, go on.
class RunRecorder {
 public:
  explicit RunRecorder(RunRecordOptions o);
  ~RunRecorder();
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  void add(const TrainEvent& e);
  // A failure not yet taken, in words naming the file; empty otherwise.
  std::string take_problem();
  const std::string& dir() const { return opt_.dir; }
  std::string event_file() const;  // empty without one

 private:
  void write_line(const std::string& line);

  RunRecordOptions opt_;
  std::ofstream jsonl_;
  std::unique_ptr<TensorBoardWriter> tb_;
  std::string jsonl_problem_;
  bool jsonl_reported_ = false, tb_reported_ = false;
  int64_t last_step_ = 0, telemetry_step_ = -1;
};

}  // namespace dc
