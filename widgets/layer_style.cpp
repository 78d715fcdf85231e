#include "widgets/layer_style.h"

#include <deepcanvas/layer.h>

#include <algorithm>

#include <QHash>
#include <QPainter>
#include <QPen>
#include <QPixmap>

namespace dc::widgets {

QColor categoryColor(const QString& category) {
  // Mid-saturation hues that read on both light and dark backgrounds.
  static const QHash<QString, QColor> colors = {
      {"Input", QColor(0x26, 0xa6, 0x9a)},          {"Convolution", QColor(0x42, 0x85, 0xf4)},
      {"Pooling", QColor(0x7e, 0x57, 0xc2)},        {"Core", QColor(0xf2, 0x8c, 0x28)},
      {"Activation", QColor(0x43, 0xa0, 0x47)},     {"Normalization", QColor(0xec, 0x40, 0x7a)},
      {"Regularization", QColor(0x78, 0x90, 0x9c)}, {"Merge", QColor(0xd4, 0xa0, 0x17)},
      {"Shape", QColor(0x8d, 0x6e, 0x63)},          {"Recurrent", QColor(0xab, 0x47, 0xbc)},
      {"Attention", QColor(0x00, 0x97, 0xa7)},
  };
  return colors.value(category, QColor(0x90, 0x90, 0x90));
}

QString layerCategory(const QString& type) {
  register_builtin_layers();
  const LayerDescriptor* d = LayerRegistry::instance().find(type.toStdString());
  return d ? QString::fromStdString(d->category) : QString();
}

QString layerGlyph(const QString& type) {
  static const QHash<QString, QString> glyphs = {{"Input", "In"},
                                                 {"SequenceInput", "Sq"},
                                                 {"Conv2D", "Cv"},
                                                 {"MaxPool2D", "Mx"},
                                                 {"AvgPool2D", "Av"},
                                                 {"GlobalAvgPool2D", "Gp"},
                                                 {"Dense", "De"},
                                                 {"ReLU", "Re"},
                                                 {"LeakyReLU", "Lr"},
                                                 {"Sigmoid", "Sg"},
                                                 {"Tanh", "Th"},
                                                 {"Softmax", "Sm"},
                                                 {"GELU", "Ge"},
                                                 {"SiLU", "Si"},
                                                 {"HardSwish", "Hw"},
                                                 {"HardSigmoid", "Hs"},
                                                 {"ChannelScale", "×"},
                                                 {"ChannelShuffle", "Sh"},
                                                 {"ChannelSlice", "Sl"},
                                                 {"BatchNorm2D", "Bn"},
                                                 {"BatchNorm1D", "Bn"},
                                                 {"LayerNorm", "Ln"},
                                                 {"Dropout", "Do"},
                                                 {"Add", "+"},
                                                 {"Concat", "Cc"},
                                                 {"Flatten", "Fl"},
                                                 {"Reshape", "Rs"},
                                                 {"LSTM", "Ls"},
                                                 {"GRU", "Gr"},
                                                 {"SimpleRNN", "Rn"},
                                                 {"Embedding", "Em"},
                                                 {"LastStep", "Lt"},
                                                 {"TimeDistributedDense", "Td"},
                                                 {"MultiHeadAttention", "At"},
                                                 {"ImageToTokens", "Tk"},
                                                 {"PositionalEmbedding", "Po"},
                                                 {"ClassToken", "Ct"},
                                                 {"TokenPooling", "Tp"}};
  auto it = glyphs.find(type);
  if (it != glyphs.end()) return *it;
  QString g = type.left(2);
  return g.isEmpty() ? "?" : g;
}

QColor mix(const QColor& a, const QColor& b, double t) {
  return QColor::fromRgbF(
      float(a.redF() * (1 - t) + b.redF() * t), float(a.greenF() * (1 - t) + b.greenF() * t),
      float(a.blueF() * (1 - t) + b.blueF() * t), float(a.alphaF() * (1 - t) + b.alphaF() * t));
}

QIcon layerIcon(const QString& type) {
  static QHash<QString, QIcon> cache;
  auto it = cache.find(type);
  if (it != cache.end()) return *it;
  QIcon icon;
  QColor c = categoryColor(layerCategory(type));
  // Drawn per size rather than scaled, so 200% displays get sharp glyphs.
  for (int size : {16, 24, 32, 48, 64}) {
    QPixmap pm(size, size);
    pm.fill(Qt::transparent);
    QPainter p(&pm);
    p.setRenderHint(QPainter::Antialiasing);
    QRectF r(0.5, 0.5, size - 1, size - 1);
    p.setPen(Qt::NoPen);
    p.setBrush(c);
    p.drawRoundedRect(r, size * 0.22, size * 0.22);
    QFont f;
    f.setBold(true);
    f.setPixelSize(std::max(7, int(size * 0.46)));
    p.setFont(f);
    p.setPen(Qt::white);
    p.drawText(r, Qt::AlignCenter, layerGlyph(type));
    icon.addPixmap(pm);
  }
  cache.insert(type, icon);
  return icon;
}

void drawLock(QPainter* p, const QRectF& box, const QColor& color) {
  p->save();
  p->setRenderHint(QPainter::Antialiasing);
  const double w = box.width(), h = box.height();
  const QRectF body(box.left(), box.top() + h * 0.45, w, h * 0.55);
  const double pen = std::max(1.2, w * 0.14);
  p->setPen(QPen(color, pen));
  p->setBrush(Qt::NoBrush);
  const QRectF arc(box.left() + w * 0.2, box.top() + pen / 2, w * 0.6, h * 0.8);
  p->drawArc(arc, 0, 180 * 16);
  p->drawLine(QPointF(arc.left(), arc.center().y()), QPointF(arc.left(), body.top()));
  p->drawLine(QPointF(arc.right(), arc.center().y()), QPointF(arc.right(), body.top()));
  p->setPen(Qt::NoPen);
  p->setBrush(color);
  p->drawRoundedRect(body, w * 0.12, w * 0.12);
  p->restore();
}

QIcon lockIcon(const QColor& color) {
  QPixmap pm(32, 32);
  pm.fill(Qt::transparent);
  QPainter p(&pm);
  drawLock(&p, QRectF(8, 4, 16, 22), color);
  return QIcon(pm);
}

}  // namespace dc::widgets
