#pragma once
// Rows of a numeric series plotted as a user reads a CSV: each feature a
// line over the rows (named by its column), and optionally the class each
// window is labelled with as a dashed step line on the right axis. The
// Dataset tab shows the start of a training series with it, the Inference
// tab the window it predicts.
#include <qcustomplot.h>

#include <QVector>
#include <string>
#include <vector>

namespace dc::widgets {

class SeriesPlot : public QCustomPlot {
  Q_OBJECT
 public:
  // At most this many features get a line (more would not be legible).
  static constexpr int kMaxFeatures = 8;

  explicit SeriesPlot(QWidget* parent = nullptr);

  // values: steps of `features` values each, row-major (as a window is
  // stored), drawn at keys 0, 1, …; the first kMaxFeatures features get a
  // line, named by `names` (missing names read "feature N"), and the axis
  // says when there are more. classes > 0 draws `labels` (at keys label_at)
  // on the right axis, from 0 to classes - 1.
  void setRows(const std::vector<float>& values, int64_t features,
               const std::vector<std::string>& names, const QVector<double>& label_at = {},
               const QVector<double>& labels = {}, int classes = 0);

 protected:
  void changeEvent(QEvent* e) override;

 private:
  void applyPalette();
};

}  // namespace dc::widgets
