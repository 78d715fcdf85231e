#include "widgets/top_k_bars.h"

#include <QPainter>
#include <algorithm>

namespace dc::widgets {

TopKBars::TopKBars(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Minimum);
}

void TopKBars::setEntries(const QVector<Entry>& entries) {
  entries_ = entries;
  updateGeometry();
  update();
}

void TopKBars::clear() {
  setEntries({});
}

QSize TopKBars::sizeHint() const {
  QFontMetrics fm(font());
  return {320, std::max(5, int(entries_.size())) * (fm.height() + 10) + 4};
}

void TopKBars::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  QFontMetrics fm(font());
  if (entries_.isEmpty()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter, tr("No prediction yet"));
    return;
  }
  // The top class is drawn bold: measured bold, else its name is cut
  // ("-shirt/top" for "T-shirt/top").
  QFont bold = font();
  bold.setBold(true);
  const QFontMetrics bold_fm(bold);
  int name_w = 0;
  for (int i = 0; i < entries_.size(); ++i) {
    const bool b = i == 0 && entries_[i].text.isEmpty();
    name_w = std::max(name_w, (b ? bold_fm : fm).horizontalAdvance(entries_[i].name));
  }
  name_w = std::min(name_w + 10, width() / 3);
  int pct_w = fm.horizontalAdvance("100.0 %") + 8;
  for (auto& e : entries_) pct_w = std::max(pct_w, fm.horizontalAdvance(e.text) + 8);
  const int row_h = fm.height() + 10;
  const int bar_w = std::max(10, width() - name_w - pct_w - 4);
  for (int i = 0; i < entries_.size(); ++i) {
    const auto& e = entries_[i];
    int y = 2 + i * row_h;
    QRect name_r(0, y, name_w - 6, row_h);
    const bool b = i == 0 && e.text.isEmpty();
    p.setFont(b ? bold : font());
    p.setPen(palette().color(QPalette::Text));
    p.drawText(name_r, Qt::AlignRight | Qt::AlignVCenter,
               (b ? bold_fm : fm).elidedText(e.name, Qt::ElideRight, name_r.width()));
    QRectF track(name_w, y + 4, bar_w, row_h - 8);
    p.setPen(Qt::NoPen);
    p.setBrush(palette().color(QPalette::AlternateBase));
    p.drawRoundedRect(track, 3, 3);
    QRectF bar = track;
    bar.setWidth(std::max(2.0, track.width() * std::clamp(e.probability, 0.0, 1.0)));
    const bool values = !e.text.isEmpty();
    p.setBrush(e.negative         ? QColor(202, 75, 60)
               : values || i == 0 ? QColor(33, 102, 172)
                                  : QColor(120, 160, 200));
    p.drawRoundedRect(bar, 3, 3);
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(name_w + bar_w + 4, y, pct_w, row_h), Qt::AlignLeft | Qt::AlignVCenter,
               e.text.isEmpty() ? QString::number(100.0 * e.probability, 'f', 1) + " %" : e.text);
  }
}

}  // namespace dc::widgets
