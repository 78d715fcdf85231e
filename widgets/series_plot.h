#pragma once
// Rows of a numeric series plotted as a user reads a CSV: each feature a
// line over the rows (named by its column), and optionally the class each
// window is labelled with as a dashed step line on the right axis. The
// Dataset tab shows the start of a training series with it, the Inference
// tab the window it predicts.
#include <qcustomplot.h>

#include <QStringList>
#include <QVector>
#include <vector>

namespace dc::widgets {

class SeriesPlot : public QCustomPlot {
  Q_OBJECT
 public:
  // At most this many features get a line (more would not be legible).
  static constexpr int kMaxFeatures = 8;

  explicit SeriesPlot(QWidget* parent = nullptr);

  // rows[f] holds feature f's value at each key in `at`; names[f] its name
  // (missing names read "feature N"). classes > 0 draws the labels on the
  // right axis from 0 to classes - 1. `features` is how many the data has,
  // for the axis to say when only the first kMaxFeatures are drawn.
  void setSeries(const QVector<double>& at, const std::vector<QVector<double>>& rows,
                 const QStringList& names, int features, const QVector<double>& label_at = {},
                 const QVector<double>& labels = {}, int classes = 0);

 protected:
  void changeEvent(QEvent* e) override;

 private:
  void applyPalette();
};

}  // namespace dc::widgets
