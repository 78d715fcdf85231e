#pragma once
// An image with an optional heat map laid over it (saliency: where a small
// change of the input moves the predicted score most). The heat map is any
// w×h float grid, normalised to its maximum and drawn with a colour ramp at
// an adjustable opacity, with a colour scale beside the image.
#include <QImage>
#include <QWidget>
#include <vector>

class QPainter;

namespace dc::widgets {

// Maps t in [0, 1] to a perceptually ordered ramp (dark blue - red - yellow).
QRgb heat_color(double t);
// A float grid (row-major, w×h) as a colour image normalised to [min, max].
QImage heat_image(const std::vector<float>& v, int w, int h, bool alpha_from_value = false);

class SaliencyView : public QWidget {
  Q_OBJECT
 public:
  explicit SaliencyView(QWidget* parent = nullptr);
  void setImage(const QImage& img);
  // Non-negative values; an empty vector removes the overlay.
  void setHeatmap(const std::vector<float>& values, int w, int h);
  void setOpacity(double a);  // [0, 1]
  double opacity() const { return opacity_; }
  void setCaption(const QString& c);
  const QString& caption() const { return caption_; }
  bool hasHeatmap() const { return !heat_.isNull(); }
  const QImage& image() const { return img_; }
  QSize sizeHint() const override { return {280, 280}; }
  QSize minimumSizeHint() const override { return {120, 120}; }

 protected:
  void paintEvent(QPaintEvent*) override;

 private:
  void paintColorScale(QPainter& p, const QRect& bar) const;
  QImage img_, heat_;
  double opacity_ = 0.7;
  QString caption_;
};

}  // namespace dc::widgets
