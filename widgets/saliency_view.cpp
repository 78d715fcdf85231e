#include "widgets/saliency_view.h"

#include <QPainter>
#include <algorithm>
#include <cmath>

namespace dc::widgets {

QRgb heat_color(double t) {
  t = std::clamp(t, 0.0, 1.0);
  // Piecewise-linear "inferno"-like ramp: black-purple, red, orange, pale yellow.
  static const double stops[][3] = {
      {0, 0, 4}, {87, 16, 110}, {188, 55, 84}, {249, 142, 9}, {252, 255, 164}};
  double x = t * 4;
  int i = std::min(3, int(x));
  double f = x - i;
  auto mix = [&](int c) { return int(stops[i][c] + (stops[i + 1][c] - stops[i][c]) * f + 0.5); };
  return qRgb(mix(0), mix(1), mix(2));
}

QImage heat_image(const std::vector<float>& v, int w, int h, bool alpha_from_value) {
  QImage img(w, h, QImage::Format_ARGB32);
  if (v.size() < size_t(w) * size_t(h) || w <= 0 || h <= 0) return {};
  auto [mn, mx] = std::minmax_element(v.begin(), v.begin() + w * h);
  double lo = *mn, range = std::max(1e-12, double(*mx) - lo);
  for (int y = 0; y < h; ++y) {
    auto* line = reinterpret_cast<QRgb*>(img.scanLine(y));
    for (int x = 0; x < w; ++x) {
      double t = (v[size_t(y) * w + x] - lo) / range;
      QRgb c = heat_color(t);
      // Low saliency fades out so the image shows through where nothing
      // matters; from half the range up the colour is opaque.
      int a = alpha_from_value ? int(255 * std::min(1.0, 1.45 * std::sqrt(t))) : 255;
      line[x] = qRgba(qRed(c), qGreen(c), qBlue(c), a);
    }
  }
  return img;
}

SaliencyView::SaliencyView(QWidget* parent) : QWidget(parent) {
  setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
}

void SaliencyView::setImage(const QImage& img) {
  img_ = img;
  heat_ = {};
  update();
}

void SaliencyView::setHeatmap(const std::vector<float>& values, int w, int h) {
  if (values.size() < size_t(w) * size_t(h) || w <= 0 || h <= 0) {
    heat_ = {};
    update();
    return;
  }
  // Gradient saliency is sparse with a few extreme pixels: scaled to its
  // maximum, nearly everything would be transparent. The 98th percentile is
  // "hot" instead, so the overlay is clearly visible at full opacity.
  std::vector<float> v(values.begin(), values.begin() + ptrdiff_t(w) * h);
  std::vector<float> sorted = v;
  auto hot = sorted.begin() + ptrdiff_t(double(sorted.size() - 1) * 0.98);
  std::nth_element(sorted.begin(), hot, sorted.end());
  const float lo = *std::min_element(v.begin(), v.end());
  const float cap = *hot > lo ? *hot : *std::max_element(v.begin(), v.end());
  for (float& x : v) x = std::min(x, cap);
  heat_ = heat_image(v, w, h, true);
  update();
}

void SaliencyView::setOpacity(double a) {
  opacity_ = std::clamp(a, 0.0, 1.0);
  update();
}

void SaliencyView::setCaption(const QString& c) {
  caption_ = c;
  update();
}

void SaliencyView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), palette().color(QPalette::Window));
  QFontMetrics fm(font());
  // The colour scale takes a strip on the right while there is a heat map.
  const int scale_w = heat_.isNull() ? 0 : 14 + 6 + fm.horizontalAdvance(tr("high")) + 4;
  QRect area = rect().adjusted(4, 4, -4 - scale_w, caption_.isEmpty() ? -4 : -fm.height() - 8);
  if (img_.isNull()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
               tr("Open or drop an image to see what the network predicts, or double-click a "
                  "test sample under the confusion matrix (Training → Evaluation)"));
    return;
  }
  QSize s = img_.size().scaled(area.size(), Qt::KeepAspectRatio);
  QRect target(area.left() + (area.width() - s.width()) / 2,
               area.top() + (area.height() - s.height()) / 2, s.width(), s.height());
  // Nearest-neighbour for tiny inputs: the network sees pixels, so show them.
  p.setRenderHint(QPainter::SmoothPixmapTransform, img_.width() * 3 > target.width());
  p.drawImage(target, img_);
  if (!heat_.isNull()) {
    p.setRenderHint(QPainter::SmoothPixmapTransform, true);
    p.setOpacity(opacity_);
    p.drawImage(target, heat_);
    p.setOpacity(1.0);
    paintColorScale(p, QRect(target.right() + 8, target.top(), 14, target.height()));
  }
  p.setPen(QColor(160, 160, 160));
  p.drawRect(target.adjusted(0, 0, -1, -1));
  if (!caption_.isEmpty()) {
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(0, height() - fm.height() - 4, width(), fm.height()), Qt::AlignCenter,
               fm.elidedText(caption_, Qt::ElideMiddle, width() - 8));
  }
}

void SaliencyView::paintColorScale(QPainter& p, const QRect& bar) const {
  // The ramp at the overlay's opacity over the window colour: what a
  // colour on the image means, low at the bottom.
  for (int y = 0; y < bar.height(); ++y) {
    const double t = 1.0 - double(y) / std::max(1, bar.height() - 1);
    QColor c = QColor::fromRgb(heat_color(t));
    c.setAlphaF(float(opacity_ * std::min(1.0, 1.45 * std::sqrt(t))));
    p.fillRect(QRect(bar.left(), bar.top() + y, bar.width(), 1), c);
  }
  p.setPen(QColor(160, 160, 160));
  p.setBrush(Qt::NoBrush);
  p.drawRect(bar.adjusted(0, 0, -1, -1));
  p.setPen(palette().color(QPalette::Text));
  const QFontMetrics fm(font());
  p.drawText(QPoint(bar.right() + 4, bar.top() + fm.ascent()), tr("high"));
  p.drawText(QPoint(bar.right() + 4, bar.bottom()), tr("low"));
}

}  // namespace dc::widgets
