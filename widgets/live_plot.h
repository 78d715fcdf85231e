#pragma once
// A live training plot on QCustomPlot. Each series can show per-step values
// (raw, faint) with an exponential moving average on top, or per-epoch
// points; earlier runs are kept as overlays for comparison. The legend sits
// above the axes, never over the data; with colours by run, each run is one
// legend entry in its colour and the series are told apart by line style and
// marker (one grey key entry per series), so runs add one entry each. Appending
// is cheap and replots are queued, so a caller may append thousands of points
// per second; QCPGraph's adaptive sampling keeps 100k-point series smooth.
#include <QColor>
#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

class QCustomPlot;
class QCPGraph;
class QLabel;

namespace dc::widgets {

class LivePlot : public QWidget {
  Q_OBJECT
 public:
  enum class Style { Steps, Epochs, Line };
  enum class Marker { None, Circle, Square, Triangle };

  LivePlot(const QString& title, const QString& y_label, QWidget* parent = nullptr);

  // Returns the series' index. Steps: raw values drawn faint plus their
  // smoothed curve; Epochs: markers joined by a line; Line: the values as
  // they are (learning rate, device readings).
  int addSeries(const QString& name, const QColor& color, Style style = Style::Steps);
  // How a series is told apart from the others when all of a run's series
  // share the run's colour.
  void setSeriesLook(int series, Qt::PenStyle line, Marker marker);
  // Runs in colours (tab10, run by run), series by look; off: each series
  // in its own colour (device plots).
  void setColorsByRun(bool on);
  // The current run's name in the legend ("run 3").
  void setRunName(const QString& name);
  // The colour of the n-th run (0-based) when colours are by run.
  static QColor runColor(int run);
  void addPoint(int series, double x, double y);
  void addPoints(int series, const QVector<double>& x, const QVector<double>& y);
  // Smoothing weight of the moving average in [0, 1) (TensorBoard's slider).
  void setSmoothing(double weight);
  double smoothing() const { return smoothing_; }
  void setXLabel(const QString& label);
  // A line under the title, e.g. "CPU: no GPU found".
  void setNote(const QString& note);
  QString note() const;
  void setYRange(double lo, double hi);  // fixed range (0..100 for %), else automatic
  // The key (x) range shown at the least, e.g. a run's planned epochs 0..N:
  // the curves then grow across the plot as the run goes, and the empty
  // plot's axis is the run's, not QCustomPlot's 0..5. lo >= hi: none, the
  // data alone decide.
  void setKeySpan(double lo, double hi);
  void setYLabel(const QString& label);
  // Hides a series and its legend entry (e.g. GPU-only series on a CPU run).
  void setSeriesVisible(int series, bool on);

  // Moves the current points into a faded overlay named `run` and clears.
  void archiveRun(const QString& run);
  void setOverlaysVisible(bool on);
  // One earlier run's overlay (in archive order).
  void setOverlayVisible(int overlay, bool on);
  bool overlayVisible(int overlay) const;
  int overlayCount() const { return int(overlays_.size()); }
  // The legend's entries as shown, for tests and accessibility.
  QStringList legendEntries() const;
  int legendRows() const;
  // True when the legend is drawn inside the axes (over the data).
  bool legendOverData() const;
  void clear();  // current points only
  void clearOverlays();

  int seriesCount() const { return int(series_.size()); }
  int pointCount(int series) const;
  int totalPoints() const;
  QString seriesName(int series) const;
  // Last value of a series (raw), NaN when empty.
  double lastValue(int series) const;

  bool exportPng(const QString& path, int width = 0, int height = 0);
  // Long format: run,series,x,y (current run first, then overlays).
  bool exportCsv(const QString& path) const;
  QString csv() const;

  QCustomPlot* customPlot() const { return plot_; }
  // Values under the mouse at plot x (what the hover tooltip shows).
  QString valuesAt(double x) const;

 public slots:
  void resetView();  // follow the data again after a zoom or pan
  void replot();

 protected:
  bool eventFilter(QObject* o, QEvent* e) override;
  void resizeEvent(QResizeEvent* e) override;
  void changeEvent(QEvent* e) override;

 private:
  struct Series {
    QString name;
    QColor color;
    Style style;
    Qt::PenStyle line = Qt::SolidLine;
    Marker marker = Marker::None;
    QCPGraph* key = nullptr;     // grey legend sample when colours are by run
    QCPGraph* raw = nullptr;     // per-step values (faint) or epoch markers
    QCPGraph* smooth = nullptr;  // Steps only
    double ema = 0, ema_weight = 0;
    bool archived = false;  // an earlier run's overlay has points of it
  };
  struct Overlay {
    QString run;
    QColor color;
    QVector<QCPGraph*> graphs;
    QCPGraph* key = nullptr;  // the run's legend entry when colours are by run
    bool visible = true;
  };
  void rescale();
  void elideNote();   // the note in the width left beside the title
  void applyLooks();  // pens and legend after a change of mode, run or look
  // As many legend entries per row as the plot's width holds: a fixed four
  // put a run's entry on a second row, which took the curves' height.
  void fitLegend();
  // The plot's background, axes, grid and legend text in the palette's
  // colours: QCustomPlot draws white with black axes, which stayed a white
  // card in the dark theme.
  void applyPalette();
  void showContextMenu(const QPoint& pos);

  QCustomPlot* plot_;
  QLabel* title_;
  QString title_text_;  // the title as given (title_ shows it bold)
  QLabel* note_;
  QVector<Series> series_;
  QVector<Overlay> overlays_;
  bool by_run_ = false;
  bool overlays_shown_ = true;
  QString run_name_;
  QCPGraph* run_key_ = nullptr;  // the current run's legend entry
  double smoothing_ = 0.6;
  bool follow_ = true;  // auto-rescale until the user zooms or pans
  bool fixed_y_ = false;
  double y_lo_ = 0, y_hi_ = 1;
  double span_lo_ = 0, span_hi_ = 0;  // setKeySpan; empty when lo >= hi
};

}  // namespace dc::widgets
