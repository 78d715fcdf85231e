#pragma once
// Reading a run's metrics.jsonl back (a PyTorch export's train.py writes one
// JSON object per line: start, step, epoch, end), as the TrainEvents a local
// run publishes, so the app plots an imported run like its own. The reader
// follows a file that is still growing: each poll() reads what was appended
// since the last one, complete lines only.
#include <deepcanvas/training_events.h>

#include <cstdint>
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

}  // namespace dc
