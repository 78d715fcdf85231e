#pragma once
// What the CLI's and the app's sweeps share around a Sweep: TensorBoard's
// HParams view of its trials, and the batch its memory check holds against.
#include <deepcanvas/search_space.h>
#include <deepcanvas/sweep.h>
#include <deepcanvas/tensorboard_writer.h>

#include <map>
#include <memory>
#include <string>

namespace dc {

// The sweep for TensorBoard's HParams tab: the experiment (parameters and
// their domains, the metrics) in DIR, and each trial as a run of its own in
// DIR/trial-NNN: its values at its start, its measurements as scalars at
// hundredths of an epoch (ASHA's rungs fall inside epochs), and at its end
// its status (failed: FAILURE) and trial/pruned (1 for a pruned trial,
// which HParams' statuses cannot say). Nothing here throws: a problem is
// kept for take_problem(), said once, and the sweep goes on. update() is
// called one trial at a time (Sweep::run's on_update is).
class SweepBoard {
 public:
  SweepBoard(std::string dir, SearchSpace space);
  ~SweepBoard();
  SweepBoard(const SweepBoard&) = delete;
  SweepBoard& operator=(const SweepBoard&) = delete;

  void update(const Trial& t);
  // The first failure of any of its files, once; empty otherwise.
  std::string take_problem();
  const std::string& dir() const { return dir_; }

  // The scalar tags HParams shows as the sessions' metrics.
  static const std::vector<std::string>& metrics();

 private:
  struct Session {
    std::unique_ptr<TensorBoardWriter> w;
    size_t measured = 0;
    bool ended = false;
  };
  void note(const TensorBoardWriter& w);

  std::string dir_;
  SearchSpace space_;
  std::unique_ptr<TensorBoardWriter> experiment_;
  std::map<int, Session> sessions_;
  std::string problem_;
  bool said_ = false;
};

// The project's settings with the sweep's largest batch (the space's batch
// values: a choice's largest, a range's top; else the settings' own), which
// a sweep's memory check holds against its parallel trials. *from, when
// given, is the space's batch parameter that set it, or null.
TrainConfig largest_batch_config(const TrainConfig& c, const SearchSpace& space,
                                 const SearchParam** from = nullptr);

}  // namespace dc
