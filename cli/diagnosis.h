#pragma once
// `train`'s closing diagnosis: the advisor's prediction for the run beside
// what was measured, and the verdict on where the steps' time went
// (advisor/diagnose.h), as text and as the --json `diagnosis` object.
#include <deepcanvas/advisor/diagnose.h>
#include <deepcanvas/advisor/run_prediction.h>
#include <deepcanvas/trainer.h>

#include <nlohmann/json.hpp>

namespace dc::cli {

nlohmann::json diagnosis_json(const advisor::RunPrediction& p, const advisor::Diagnosis& d,
                              const TrainResult& r, bool cuda);
void print_diagnosis(const advisor::RunPrediction& p, const advisor::Diagnosis& d,
                     const TrainResult& r, bool cuda);

}  // namespace dc::cli
