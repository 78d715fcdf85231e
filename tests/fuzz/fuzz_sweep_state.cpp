// Sweep state files (PROJECT.sweep.json): reading and validating one, its
// points against the space its texts parse to, what a resume does with it
// (the Sweep constructor's ASHA replay) and the sampler's next point from
// its finished trials, and the round trip through the writer.
#include <deepcanvas/sweep.h>
#include <deepcanvas/tpe.h>

#include "fuzz_util.h"

#include <cmath>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dc::register_builtin_layers();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  dc::fuzz::expect_clean([&] {
    const dc::SweepState s = dc::sweep_from_json(
        std::string(reinterpret_cast<const char*>(data), size), "fuzz.sweep.json");
    (void)s.best();
    (void)s.epochs_used();
    // Settings only: a layer attribute in the space needs a network, and
    // parsing it against an empty graph is a refusal.
    const dc::SearchSpace space = dc::parse_search_space(s.space, dc::Graph());
    dc::check_sweep_points(s, space, "fuzz.sweep.json");
    dc::sweep_from_json(dc::sweep_to_json(s, space), "fuzz-resaved.sweep.json");
    // A resume of it: the file is read again from disk, as the CLI does.
    const std::string path = dc::fuzz::write_scratch("state.sweep.json", data, size);
    dc::Sweep resumed(dc::Project(), std::make_shared<dc::TrainTest>(), space, s.options, path);
    std::vector<dc::Observation> done;
    for (const dc::Trial& t : s.trials)
      if (std::isfinite(t.value())) done.push_back({t.x, t.value(), int64_t(t.epochs.size())});
    dc::TpeSampler(s.options.seed, s.options.n_startup)
        .sample(space.params, done, int(done.size()));
  });
  return 0;
}
