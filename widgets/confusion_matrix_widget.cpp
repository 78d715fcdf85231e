#include "widgets/confusion_matrix_widget.h"

#include "widgets/key_grey.h"

#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <algorithm>
#include <cmath>

namespace dc::widgets {

ConfusionMatrixWidget::ConfusionMatrixWidget(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void ConfusionMatrixWidget::setMatrix(const std::vector<std::vector<int64_t>>& matrix,
                                      const QStringList& names) {
  m_ = matrix;
  scores_.clear();
  names_ = names;
  update();
}

void ConfusionMatrixWidget::setClassShares(std::vector<ClassShares> shares) {
  scores_ = std::move(shares);
  update();
}

void ConfusionMatrixWidget::setTitle(const QString& t) {
  title_ = t;
  update();
}

QString ConfusionMatrixWidget::name(int i) const {
  return i < names_.size() ? names_[i] : QString::number(i);
}

// Column names such as "T-shirt/top" or "Ankle boot" are wider than a
// column at 1280x720; drawn upright they stay whole (the row labels beside
// the grid have room).
ConfusionMatrixWidget::Header ConfusionMatrixWidget::header() const {
  const int n = int(m_.size());
  QFontMetrics fm(font());
  Header h{fm.height(), false};
  if (n == 0) return h;
  int widest = 0;
  for (int i = 0; i < n; ++i) widest = std::max(widest, fm.horizontalAdvance(name(i)));
  h.height = fm.height();
  if (widest + 4 <= gridSide(h.height) / n) return h;
  h.rotated = true;
  h.height = std::min(widest + 6, std::max(fm.height(), height() / 4));
  return h;
}

int ConfusionMatrixWidget::labelWidth() const {
  QFontMetrics fm(font());
  int w = 0;
  for (int i = 0; i < int(m_.size()); ++i) w = std::max(w, fm.horizontalAdvance(name(i)));
  // The "precision" key sits in this column too, beside the vertical
  // "true": short class names ("0" to "4") left it cut to "ision".
  w = std::max(w, fm.horizontalAdvance(tr("precision")) - fm.height());
  return std::min(w + 8, width() / 3);
}

namespace {
QString percent(double v) {
  return std::isnan(v) ? QStringLiteral("–") : QString("%1 %").arg(std::lround(100 * v));
}
}  // namespace

QString ConfusionMatrixWidget::recallText(int i) const {
  return i >= 0 && i < int(scores_.size()) ? percent(scores_[size_t(i)].recall) : QString();
}

QString ConfusionMatrixWidget::precisionText(int i) const {
  return i >= 0 && i < int(scores_.size()) ? percent(scores_[size_t(i)].precision) : QString();
}

int ConfusionMatrixWidget::scoreWidth() const {
  if (m_.empty() || scores_.size() != m_.size()) return 0;
  QFontMetrics fm(font());
  return std::max(fm.horizontalAdvance("100 %"), fm.horizontalAdvance(tr("recall"))) + 8;
}

int ConfusionMatrixWidget::scoreHeight() const {
  return m_.empty() || scores_.size() != m_.size() ? 0 : QFontMetrics(font()).height() + 6;
}

QRect ConfusionMatrixWidget::scoresRect() const {
  const QRect g = gridRect();
  if (g.isNull()) return {};
  return QRect(0, 0, g.right() + 1 + scoreWidth(), g.bottom() + 1 + scoreHeight());
}

int ConfusionMatrixWidget::recallAt(const QPoint& pos) const {
  const QRect g = gridRect();
  const int n = int(m_.size());
  if (n == 0 || pos.x() <= g.right() || pos.x() > g.right() + scoreWidth() || pos.y() < g.top() ||
      pos.y() > g.bottom())
    return -1;
  return std::min(n - 1, (pos.y() - g.top()) / (g.height() / n));
}

int ConfusionMatrixWidget::precisionAt(const QPoint& pos) const {
  const QRect g = gridRect();
  const int n = int(m_.size());
  if (n == 0 || pos.y() <= g.bottom() || pos.y() > g.bottom() + scoreHeight() ||
      pos.x() < g.left() || pos.x() > g.right())
    return -1;
  return std::min(n - 1, (pos.x() - g.left()) / (g.width() / n));
}

int ConfusionMatrixWidget::gridTop(int header_height) const {
  QFontMetrics fm(font());
  return fm.height() + 4 + header_height + (title_.isEmpty() ? 0 : fm.height() + 4);
}

int ConfusionMatrixWidget::gridSide(int header_height) const {
  QFontMetrics fm(font());
  const int left = labelWidth() + fm.height() + 4;
  const int side = std::min(width() - left - 6 - scoreWidth(),
                            height() - gridTop(header_height) - 6 - scoreHeight());
  return std::max(side, int(m_.size()) * 4);
}

QRect ConfusionMatrixWidget::gridRect() const {
  const int n = int(m_.size());
  if (n == 0) return {};
  QFontMetrics fm(font());
  const int h = header().height;
  const int cell = gridSide(h) / n;
  return QRect(labelWidth() + fm.height() + 4, gridTop(h), cell * n, cell * n);
}

QStringList ConfusionMatrixWidget::columnLabels() const {
  QStringList out;
  const int n = int(m_.size());
  if (n == 0) return out;
  QFontMetrics fm(font());
  const Header h = header();
  const int room = h.rotated ? h.height - 4 : gridRect().width() / n;
  for (int i = 0; i < n; ++i) out << fm.elidedText(name(i), Qt::ElideRight, room);
  return out;
}

QPoint ConfusionMatrixWidget::cellAt(const QPoint& pos) const {
  QRect g = gridRect();
  const int n = int(m_.size());
  if (n == 0 || !g.contains(pos)) return {-1, -1};
  const int cell = g.width() / n;
  int c = (pos.x() - g.left()) / cell, r = (pos.y() - g.top()) / cell;
  if (r < 0 || r >= n || c < 0 || c >= n) return {-1, -1};
  return {c, r};  // x = predicted, y = true
}

QRect ConfusionMatrixWidget::cellRect(int true_class, int predicted) const {
  QRect g = gridRect();
  const int n = int(m_.size());
  if (n == 0) return {};
  const int cell = g.width() / n;
  return QRect(g.left() + predicted * cell, g.top() + true_class * cell, cell, cell);
}

void ConfusionMatrixWidget::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing, false);
  p.fillRect(rect(), palette().base());
  QFontMetrics fm(font());
  const int n = int(m_.size());
  int y0 = 2;
  if (!title_.isEmpty()) {
    QFont bold = font();
    bold.setBold(true);
    p.setFont(bold);
    p.drawText(QRect(0, y0, width(), fm.height()), Qt::AlignHCenter, title_);
    p.setFont(font());
    y0 += fm.height() + 4;
  }
  if (n == 0) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
               tr("The confusion matrix appears after the first epoch"));
    return;
  }
  QRect g = gridRect();
  const int cell = g.width() / n;
  p.setPen(palette().color(QPalette::Text));
  p.drawText(QRect(g.left(), y0, g.width(), fm.height()), Qt::AlignHCenter, tr("predicted"));
  p.save();
  p.translate(2, g.center().y());
  p.rotate(-90);
  p.drawText(QRect(-g.height() / 2, 0, g.height(), fm.height()), Qt::AlignHCenter, tr("true"));
  p.restore();
  QFont small = font();
  small.setPointSizeF(std::max(6.0, std::min(font().pointSizeF(), cell * 0.32)));
  for (int r = 0; r < n; ++r) {
    int64_t row_sum = 0;
    for (int64_t v : m_[r]) row_sum += v;
    for (int c = 0; c < n; ++c) {
      int64_t v = c < int(m_[r].size()) ? m_[r][c] : 0;
      double frac = row_sum ? double(v) / double(row_sum) : 0.0;
      // Diagonal in blue, errors in red: mistakes stand out at a glance.
      QColor base = r == c ? QColor(33, 102, 172) : QColor(202, 0, 32);
      QColor fill = QColor::fromRgbF(1 - frac * (1 - base.redF()), 1 - frac * (1 - base.greenF()),
                                     1 - frac * (1 - base.blueF()));
      QRect cr(g.left() + c * cell, g.top() + r * cell, cell, cell);
      p.fillRect(cr, fill);
      p.setPen(QColor(220, 220, 220));
      p.drawRect(cr.adjusted(0, 0, -1, -1));
      if (cell >= 18) {
        p.setFont(small);
        p.setPen(frac > 0.5 ? Qt::white : Qt::black);
        p.drawText(cr, Qt::AlignCenter, QString::number(v));
      }
    }
  }
  // Recall beside each row, precision under each column, in the key's grey.
  if (scoreWidth() > 0) drawShares(p, g, cell, small);
  if (hover_.x() >= 0) {
    p.setPen(QPen(palette().color(QPalette::Highlight), 2));
    p.drawRect(cellRect(hover_.y(), hover_.x()).adjusted(1, 1, -1, -1));
  }
  p.setFont(font());
  p.setPen(palette().color(QPalette::Text));
  for (int i = 0; i < n; ++i) {
    QRect lr(fm.height() + 2, g.top() + i * cell, g.left() - fm.height() - 6, cell);
    p.drawText(lr, Qt::AlignRight | Qt::AlignVCenter,
               fm.elidedText(name(i), Qt::ElideRight, lr.width()));
  }
  const Header h = header();
  const QStringList labels = columnLabels();
  for (int i = 0; i < n; ++i) {
    if (!h.rotated) {
      p.drawText(QRect(g.left() + i * cell, g.top() - h.height - 2, cell, h.height),
                 Qt::AlignCenter, labels[i]);
      continue;
    }
    // Upright, reading bottom to top, ending just above its column.
    p.save();
    p.translate(g.left() + i * cell + cell / 2 - fm.height() / 2, g.top() - 2);
    p.rotate(-90);
    p.drawText(QRect(0, 0, h.height - 2, fm.height()), Qt::AlignLeft | Qt::AlignVCenter, labels[i]);
    p.restore();
  }
}

void ConfusionMatrixWidget::drawShares(QPainter& p, const QRect& g, int cell,
                                       const QFont& small) const {
  QFontMetrics fm(font());
  p.setPen(keyGrey(palette()));
  p.setFont(small);
  for (int i = 0; i < int(m_.size()); ++i) {
    p.drawText(QRect(g.right() + 5, g.top() + i * cell, scoreWidth() - 5, cell),
               Qt::AlignLeft | Qt::AlignVCenter, recallText(i));
    p.drawText(QRect(g.left() + i * cell, g.bottom() + 3, cell, scoreHeight() - 3),
               Qt::AlignHCenter | Qt::AlignTop, precisionText(i));
  }
  p.setFont(font());
  p.drawText(QRect(g.right() + 5, g.top() - fm.height() - 2, scoreWidth() - 5, fm.height()),
             Qt::AlignLeft | Qt::AlignBottom, tr("recall"));
  p.drawText(QRect(0, g.bottom() + 3, g.left() - 6, scoreHeight() - 3),
             Qt::AlignRight | Qt::AlignTop, tr("precision"));
}

void ConfusionMatrixWidget::mousePressEvent(QMouseEvent* e) {
  QPoint c = cellAt(e->position().toPoint());
  if (c.x() >= 0 && e->button() == Qt::LeftButton) Q_EMIT cellClicked(c.y(), c.x());
}

void ConfusionMatrixWidget::mouseMoveEvent(QMouseEvent* e) {
  const QPoint pos = e->position().toPoint();
  const QPoint c = cellAt(pos);
  if (c != hover_) {
    hover_ = c;
    update();
  }
  if (const QString tip = toolTipAt(pos); !tip.isEmpty())
    QToolTip::showText(e->globalPosition().toPoint(), tip, this);
}

QString ConfusionMatrixWidget::toolTipAt(const QPoint& pos) const {
  const QPoint c = cellAt(pos);
  if (c.x() >= 0)
    return tr("true %1, predicted %2: %3 samples\nclick to list them")
        .arg(name(c.y()), name(c.x()))
        .arg(m_[c.y()][c.x()]);
  if (const int r = recallAt(pos); r >= 0) {
    const ClassShares& s = scores_[size_t(r)];
    return tr("recall of %1: %2 of its %3 samples are predicted as %1 (F1 %4)")
        .arg(name(r), recallText(r))
        .arg(s.support)
        .arg(std::isnan(s.f1) ? QStringLiteral("–") : QString::number(s.f1, 'f', 3));
  }
  if (const int p = precisionAt(pos); p >= 0)
    return tr("precision of %1: %2 of the samples predicted as %1 are %1")
        .arg(name(p), precisionText(p));
  return {};
}

void ConfusionMatrixWidget::leaveEvent(QEvent*) {
  hover_ = {-1, -1};
  update();
}

}  // namespace dc::widgets
