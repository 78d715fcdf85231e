#pragma once
// A confusion matrix (rows: true class, columns: predicted class) drawn as a
// heat map, each cell coloured by its share of the row so classes with few
// samples read as clearly as big ones, with each class's recall beside its
// row and precision under its column. Clicking a cell emits (true,
// predicted) so a view can list the samples behind it.
#include <QStringList>
#include <QWidget>
#include <cstdint>
#include <vector>

class QPainter;

namespace dc::widgets {

class ConfusionMatrixWidget : public QWidget {
  Q_OBJECT
 public:
  explicit ConfusionMatrixWidget(QWidget* parent = nullptr);

  // matrix[true][predicted]; names may be shorter than the matrix (numbers
  // are shown instead). Forgets the shares below.
  void setMatrix(const std::vector<std::vector<int64_t>>& matrix, const QStringList& names = {});
  // Each class's recall, precision and F1 (NaN where undefined; the
  // engine's class_scores, computed by the caller: these widgets stay
  // engine-free), drawn beside the rows and under the columns.
  struct ClassShares {
    double recall = 0, precision = 0, f1 = 0;
    int64_t support = 0;
  };
  void setClassShares(std::vector<ClassShares> shares);
  const std::vector<std::vector<int64_t>>& matrix() const { return m_; }
  void setTitle(const QString& t);
  // The cell under a widget position, or (-1, -1).
  QPoint cellAt(const QPoint& pos) const;
  QRect cellRect(int true_class, int predicted) const;

  // The column labels as drawn (elided only when even an upright label
  // cannot fit; the full name is always in the tooltip).
  QStringList columnLabels() const;
  // Whether the column labels are drawn upright because they are wider
  // than a column.
  bool columnLabelsRotated() const { return header().rotated; }

  // Class i's recall (beside row i) and precision (under column i) as
  // drawn: "82 %", or "–" where the share has no samples.
  QString recallText(int i) const;
  QString precisionText(int i) const;
  // The whole drawing (labels, grid, scores) lies inside the widget.
  QRect scoresRect() const;
  // What the tooltip says at a widget position: a cell's count, a class's
  // recall (with its F1 and samples) beside its row, its precision under
  // its column; empty elsewhere.
  QString toolTipAt(const QPoint& pos) const;

  QSize sizeHint() const override { return {420, 380}; }
  QSize minimumSizeHint() const override { return {200, 180}; }

 signals:
  void cellClicked(int true_class, int predicted);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent* e) override;
  void mouseMoveEvent(QMouseEvent* e) override;
  void leaveEvent(QEvent*) override;

 private:
  struct Header {
    int height = 0;  // of the column-label band
    bool rotated = false;
  };
  Header header() const;
  QRect gridRect() const;
  int labelWidth() const;
  int gridTop(int header_height) const;
  int gridSide(int header_height) const;
  QString name(int i) const;
  // The recall column's width and the precision row's height.
  int scoreWidth() const;
  int scoreHeight() const;
  void drawShares(QPainter& p, const QRect& grid, int cell, const QFont& small) const;
  // What the pointer is over outside the cells: a recall (row) or a
  // precision (column), for the tooltip; -1 when neither.
  int recallAt(const QPoint& pos) const;
  int precisionAt(const QPoint& pos) const;

  std::vector<std::vector<int64_t>> m_;
  std::vector<ClassShares> scores_;
  QStringList names_;
  QString title_;
  QPoint hover_{-1, -1};
};

}  // namespace dc::widgets
