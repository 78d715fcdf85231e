#include "widgets/image_grid.h"

#include <QPixmap>
#include <algorithm>

namespace dc::widgets {

ImageGrid::ImageGrid(QWidget* parent, int thumb) : QListWidget(parent), thumb_(thumb) {
  setViewMode(QListView::IconMode);
  setResizeMode(QListView::Adjust);
  setMovement(QListView::Static);
  // Not uniform: Qt would size every item like the first, so a caption
  // that wraps ("Ankle boot" after "Sneaker") would be cut to "An…".
  setUniformItemSizes(false);
  setWordWrap(true);
  setSpacing(4);
  setSelectionMode(QAbstractItemView::SingleSelection);
  setThumbSize(thumb);
  connect(this, &QListWidget::itemClicked, this,
          [this](QListWidgetItem* it) { Q_EMIT imageActivated(row(it), it->data(Qt::UserRole)); });
}

void ImageGrid::setThumbSize(int px) {
  thumb_ = px;
  setIconSize(QSize(px, px));
  // Wide enough for a class name like "Ankle boot" under a small thumbnail.
  setGridSize(QSize(std::max(px + 24, 88), px + 2 * fontMetrics().height() + 8));
}

void ImageGrid::addImage(const QImage& img, const QString& caption, const QString& tooltip,
                         const QVariant& data) {
  // Upscaling tiny images with smoothing blurs them into mush; keep pixels.
  Qt::TransformationMode mode =
      img.width() < thumb_ / 2 ? Qt::FastTransformation : Qt::SmoothTransformation;
  QPixmap pm = QPixmap::fromImage(img.scaled(thumb_, thumb_, Qt::KeepAspectRatio, mode));
  auto* it = new QListWidgetItem(QIcon(pm), caption);
  it->setToolTip(tooltip.isEmpty() ? caption : tooltip);
  it->setData(Qt::UserRole, data);
  it->setTextAlignment(Qt::AlignHCenter | Qt::AlignTop);
  addItem(it);
}

QVariant ImageGrid::itemData(int r) const {
  auto* it = item(r);
  return it ? it->data(Qt::UserRole) : QVariant();
}

}  // namespace dc::widgets
