#include "gui/training_diagnosis.h"

#include <deepcanvas/format.h>

#include <QLabel>
#include <QTimer>
#include <QVBoxLayout>

namespace dc::gui {

namespace {

// The engine's byte format (gui/format.h is the app's, not the dashboard's).
QString bytes(double b) {
  return QString::fromStdString(human_bytes(b));
}

// "1,234 predicted · 1,100 measured (−11 %)"; the measured part once known.
QString versus(const QString& predicted, const QString& measured, double p, double m) {
  QString s = QObject::tr("%1 predicted").arg(predicted);
  if (m <= 0) return s + QObject::tr(" · measuring…");
  s += QObject::tr(" · %1 measured").arg(measured);
  if (p > 0)
    s += QString(" (%1%2 %)").arg(m >= p ? "+" : "−").arg(std::abs(100 * (m / p - 1)), 0, 'f', 0);
  return s;
}

}  // namespace

RunDiagnosisView::RunDiagnosisView(QWidget* parent) : QFrame(parent) {
  setObjectName("runDiagnosis");
  setFrameShape(QFrame::StyledPanel);
  setToolTip(
      tr("The advisor's prediction for this run beside what it measures, and where the "
         "steps' time goes (refreshed every few seconds)"));
  auto* l = new QVBoxLayout(this);
  l->setContentsMargins(6, 4, 6, 4);
  l->setSpacing(2);
  device_ = new QLabel(this);
  samples_ = new QLabel(this);
  memory_ = new QLabel(this);
  verdict_ = new QLabel(this);
  for (QLabel* w : {device_, samples_, memory_, verdict_}) {
    w->setWordWrap(true);
    w->setTextInteractionFlags(Qt::TextSelectableByMouse);
    l->addWidget(w);
  }
  device_->setStyleSheet("color: palette(mid);");
  verdict_->setTextFormat(Qt::RichText);
  samples_->setToolTip(
      tr("Samples per second: the advisor's roofline for this device and batch, "
         "and the current epoch's measured throughput"));
  memory_->setToolTip(
      tr("Peak training memory: the advisor's memory model, and the highest the "
         "run's tensors (CPU) or the GPU's memory (CUDA) have reached so far"));
  refresh_ = new QTimer(this);
  refresh_->setInterval(2000);
  connect(refresh_, &QTimer::timeout, this, &RunDiagnosisView::refreshVerdict);
  reset();
}

void RunDiagnosisView::setRefreshMs(int ms) {
  refresh_->setInterval(ms);
}

void RunDiagnosisView::reset() {
  refresh_->stop();
  prediction_ = {};
  timeline_ = advisor::Timeline{};
  measured_sps_ = 0;
  measured_peak_ = -1;
  device_->setText(tr("Predicted vs measured: start a run"));
  samples_->clear();
  memory_->clear();
  verdict_->clear();
  samples_->setVisible(false);
  memory_->setVisible(false);
  verdict_->setVisible(false);
}

void RunDiagnosisView::startRun(const Graph& g, const TrainConfig& c, int64_t resident_bytes) {
  reset();
  try {
    prediction_ = advisor::predict_run_here(g, c, resident_bytes);
  } catch (const std::exception& e) {  // a bad user GPU catalog, say
    prediction_ = {};
    prediction_.why = e.what();
    prediction_.gpu = c.device.cuda;
    prediction_.precision = c.precision;
    prediction_.batch = c.batch;
  }
  // Without a prediction the run is still diagnosed: the loader wait,
  // memory and GPU utilisation need none.
  timeline_ = advisor::Timeline(prediction_.diagnosis_input());
  device_->setText(prediction_.available
                       ? tr("Predicted for %1, batch %2")
                             .arg(QString::fromStdString(prediction_.device))
                             .arg(c.batch)
                       : tr("No prediction: %1").arg(QString::fromStdString(prediction_.why)));
  samples_->setVisible(true);
  memory_->setVisible(true);
  verdict_->setVisible(true);
  verdict_->setText(tr("<i>Diagnosis: collecting the run's timeline…</i>"));
  showMeasured();
  refresh_->start();
}

void RunDiagnosisView::addSteps(const QVector<TrainEvent>& batch) {
  for (const TrainEvent& e : batch) {
    timeline_.add(e);
    measured_sps_ = e.samples_per_s;
    if (!prediction_.gpu) measured_peak_ = std::max<qint64>(measured_peak_, e.peak_tensor_bytes);
  }
  showMeasured();
}

void RunDiagnosisView::addTelemetry(const DeviceReading& r) {
  TrainEvent e;
  e.kind = TrainEvent::Kind::Telemetry;
  e.gpu.utilization_pct = r.utilization_pct;
  e.gpu.memory_used = r.memory_used;
  e.gpu.memory_total = r.memory_total;
  e.device_reserved = r.reserved;
  timeline_.add(e);
  measured_peak_ =
      std::max<qint64>(measured_peak_, r.memory_used >= 0 ? r.memory_used : r.reserved);
}

void RunDiagnosisView::endRun() {
  refresh_->stop();
  refreshVerdict();
}

void RunDiagnosisView::showMeasured() {
  const bool p = prediction_.available;
  const double ps = p ? prediction_.step.samples_per_s : 0;
  samples_->setText(tr("Samples/s: %1")
                        .arg(versus(p ? QString::number(ps, 'f', 0) : "—",
                                    QString::number(measured_sps_, 'f', 0), ps, measured_sps_)));
  const double pm = p ? double(prediction_.memory_bytes) : 0;
  memory_->setText(tr("Peak memory: %1")
                       .arg(versus(p ? bytes(pm) : "—", bytes(double(measured_peak_)), pm,
                                   double(measured_peak_))));
}

void RunDiagnosisView::refreshVerdict() {
  const advisor::Diagnosis d = timeline_.diagnose();
  if (!d.enough_data) return;
  QString html = tr("<b>Diagnosis</b> (%1 ms per step, %2 ms of it waiting for data):")
                     .arg(d.step_s * 1e3, 0, 'f', 1)
                     .arg(d.loader_wait_s * 1e3, 0, 'f', 1);
  for (const advisor::Finding& f : d.findings) {
    const QString colour = f.warning ? "#b3261e" : "#2e6b30";
    html += QString("<br><span style='color:%1'><b>%2</b></span><br>&nbsp;&nbsp;→ %3")
                .arg(colour, QString::fromStdString(f.verdict).toHtmlEscaped(),
                     QString::fromStdString(f.advice).toHtmlEscaped());
  }
  if (d.findings.empty())
    html += tr("<br>Nothing stands out: the loader keeps up and memory is not near its limit.");
  if (!d.prediction_note.empty())
    html += QString("<br><i>%1</i>")
                .arg(tr("Note: %1").arg(QString::fromStdString(d.prediction_note).toHtmlEscaped()));
  verdict_->setText(html);
}

}  // namespace dc::gui
