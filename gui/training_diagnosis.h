#pragma once
// The Training tab's "predicted vs measured" box and diagnosis: the
// advisor's samples/s and peak memory for the run's device, batch and
// precision beside what the run measures (Step events' throughput and host
// tensor peak, or the GPU's memory from telemetry), and the verdict on where
// the steps' time goes (advisor/diagnose.h), refreshed every few seconds
// rather than every step.
#include "gui/training_session.h"

#include <deepcanvas/advisor/diagnose.h>
#include <deepcanvas/advisor/run_prediction.h>

#include <QFrame>

class QLabel;
class QTimer;

namespace dc::gui {

class RunDiagnosisView : public QFrame {
  Q_OBJECT
 public:
  explicit RunDiagnosisView(QWidget* parent = nullptr);

  // A run starts: its prediction (the cached benchmark; never measured
  // here) and an empty timeline.
  // resident_bytes: what a GPU run keeps of its datasets on the device.
  void startRun(const Graph& g, const TrainConfig& c, int64_t resident_bytes = 0);
  void addSteps(const QVector<dc::TrainEvent>& batch);
  void addTelemetry(const DeviceReading& r);
  void endRun();  // a last verdict, then no more refreshes
  void reset();   // nothing shown (another project)

  // Milliseconds between verdicts (2000 by default).
  void setRefreshMs(int ms);
  QLabel* deviceLabel() const { return device_; }
  QLabel* samplesLabel() const { return samples_; }
  QLabel* memoryLabel() const { return memory_; }
  QLabel* verdictLabel() const { return verdict_; }
  const advisor::RunPrediction& prediction() const { return prediction_; }
  advisor::Diagnosis diagnosis() const { return timeline_.diagnose(); }

 private:
  void refreshVerdict();
  void showMeasured();

  QLabel *device_, *samples_, *memory_, *verdict_;
  QTimer* refresh_;
  advisor::RunPrediction prediction_;
  advisor::Timeline timeline_;
  double measured_sps_ = 0;
  qint64 measured_peak_ = -1;
};

}  // namespace dc::gui
