#include "diagnosis.h"

#include <deepcanvas/format.h>

#include <cstdio>

namespace dc::cli {

using nlohmann::json;

namespace {

// The measured peak that the prediction's memory figure models.
int64_t measured_peak(const TrainResult& r, bool cuda) {
  return cuda ? r.peak_device_bytes : r.peak_tensor_bytes;
}

}  // namespace

json diagnosis_json(const advisor::RunPrediction& p, const advisor::Diagnosis& d,
                    const TrainResult& r, bool cuda) {
  json verdicts = json::array();
  for (const advisor::Finding& f : d.findings)
    verdicts.push_back({{"kind", advisor::bottleneck_name(f.kind)},
                        {"warning", f.warning},
                        {"verdict", f.verdict},
                        {"advice", f.advice}});
  json j = {{"enough_data", d.enough_data},
            {"steps", d.steps},
            {"step_seconds", d.step_s},
            {"loader_wait_seconds", d.loader_wait_s},
            {"compute_seconds", d.compute_s},
            {"loader_wait_share", d.wait_share},
            {"verdicts", verdicts},
            {"measured_samples_per_s", r.train_samples_per_s},
            {"measured_peak_bytes", measured_peak(r, cuda)}};
  if (d.gpu_util_pct >= 0) j["gpu_utilization_pct"] = d.gpu_util_pct;
  if (!d.prediction_note.empty()) j["prediction_note"] = d.prediction_note;
  if (p.available) {
    j["predicted"] = {{"device", p.device},
                      {"samples_per_s", p.step.samples_per_s},
                      {"step_seconds", p.step.step_s},
                      {"training_bytes", p.memory_bytes}};
  } else {
    j["predicted"] = nullptr;
    j["note"] = p.why;
  }
  return j;
}

void print_diagnosis(const advisor::RunPrediction& p, const advisor::Diagnosis& d,
                     const TrainResult& r, bool cuda) {
  if (p.available)
    std::printf("predicted on %s: %.0f samples/s, peak %s; measured: %.0f samples/s, peak %s\n",
                p.device.c_str(), p.step.samples_per_s, human_bytes(double(p.memory_bytes)).c_str(),
                r.train_samples_per_s, human_bytes(double(measured_peak(r, cuda))).c_str());
  else
    std::printf("no prediction: %s\n", p.why.c_str());
  if (!d.enough_data) {
    std::printf("diagnosis: too few steps to tell\n");
    return;
  }
  std::printf("diagnosis (%lld steps: %.2f ms each, %.2f ms of it waiting for the loader):\n",
              (long long)d.steps, d.step_s * 1e3, d.loader_wait_s * 1e3);
  for (const advisor::Finding& f : d.findings)
    std::printf("  %s\n    -> %s\n", f.verdict.c_str(), f.advice.c_str());
  if (!d.prediction_note.empty()) std::printf("  note: %s\n", d.prediction_note.c_str());
}

}  // namespace dc::cli
