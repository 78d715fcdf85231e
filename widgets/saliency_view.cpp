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
      // Low saliency fades out so the image shows through where nothing matters.
      int a = alpha_from_value ? int(255 * std::sqrt(t)) : 255;
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
  heat_ = values.empty() ? QImage() : heat_image(values, w, h, true);
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
  QRect area = rect().adjusted(4, 4, -4, caption_.isEmpty() ? -4 : -fm.height() - 8);
  if (img_.isNull()) {
    p.setPen(palette().color(QPalette::PlaceholderText));
    p.drawText(rect(), Qt::AlignCenter | Qt::TextWordWrap,
               tr("Open or drop an image to see what the network predicts"));
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
  }
  p.setPen(QColor(160, 160, 160));
  p.drawRect(target.adjusted(0, 0, -1, -1));
  if (!caption_.isEmpty()) {
    p.setPen(palette().color(QPalette::Text));
    p.drawText(QRect(0, height() - fm.height() - 4, width(), fm.height()), Qt::AlignCenter,
               fm.elidedText(caption_, Qt::ElideMiddle, width() - 8));
  }
}

}  // namespace dc::widgets
