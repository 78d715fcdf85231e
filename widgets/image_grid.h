#pragma once
// A grid of thumbnails with a caption under each (dataset samples,
// misclassified samples, activation maps). Small images (28×28) are scaled
// up without smoothing so pixels stay visible.
#include <QImage>
#include <QListWidget>
#include <QVariant>

namespace dc::widgets {

class ImageGrid : public QListWidget {
  Q_OBJECT
 public:
  explicit ImageGrid(QWidget* parent = nullptr, int thumb = 64);
  // Appends one image; data is returned by itemData().
  void addImage(const QImage& img, const QString& caption, const QString& tooltip = {},
                const QVariant& data = {});
  void setThumbSize(int px);
  int thumbSize() const { return thumb_; }
  QVariant itemData(int row) const;

 signals:
  void imageActivated(int row, const QVariant& data);

 private:
  int thumb_;
};

}  // namespace dc::widgets
