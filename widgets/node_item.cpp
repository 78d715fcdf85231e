#include "widgets/node_item.h"

#include "widgets/edge_item.h"
#include "widgets/graph_model.h"
#include "widgets/layer_style.h"
#include "widgets/node_scene.h"

#include <deepcanvas/blocks.h>
#include <deepcanvas/errors.h>
#include <deepcanvas/layer.h>

#include <QFontMetricsF>
#include <QGraphicsScene>
#include <QPainter>
#include <QPalette>
#include <QStyleOptionGraphicsItem>
#include <cmath>

namespace dc::widgets {

namespace {
constexpr double kMinHeight = 58;
constexpr double kRadius = 8;
const QColor kErrorColor(0xe5, 0x39, 0x35);
const QColor kWarnColor(0xf0, 0x9a, 0x1c);
const QColor kOkColor(0x43, 0xa0, 0x47);
}  // namespace

NodeItem::NodeItem(const GraphModel* model, NodeId id) : model_(model), id_(id) {
  setFlags(ItemIsSelectable | ItemIsMovable | ItemSendsGeometryChanges);
  setAcceptHoverEvents(true);
  // Painting a node is text-heavy; caching it makes dragging one node among
  // hundreds cheap.
  setCacheMode(DeviceCoordinateCache);
  setZValue(1);
  refresh();
  const Node& n = model_->graph().node(id_);
  setPos(n.x, n.y);
}

bool NodeItem::refresh() {
  const Node& n = model_->graph().node(id_);
  QString name = QString::fromStdString(n.name);
  QString type = QString::fromStdString(n.type), block_line;
  block_ = n.type == kBlockType;
  if (block_) {
    // "Block encoder · 8 layers": which definition, and how much it holds.
    int layers = 0;
    try {
      layers = int(block_definition_of(n)->graph.nodes().size());
    } catch (const Error&) {
      // No definition: the card shows the shape error that says so.
    }
    const QString def = QString::fromStdString(n.attrs.has("block") ? n.attrs.s("block") : "");
    type = QObject::tr("Block %1 \u00b7 %n layer(s)", nullptr, layers).arg(def);
    // The card's second line is narrow: what it is and its size; the
    // definition's name is in the tooltip and the properties.
    block_line = QObject::tr("%n-layer block", nullptr, layers);
  }
  const LayerDescriptor* d = LayerRegistry::instance().find(n.type);
  int inputs = d ? d->num_inputs(n.attrs) : 0;
  // The shape itself is on the outgoing edges and in the tooltip; the card
  // stays narrow so the templates' 190-pixel spacing leaves room for it.
  QString detail = type, error, shape;
  if (const NodeShape* s = model_->shape(id_)) {
    if (s->ok())
      shape = QString::fromStdString(s->shape->str());
    else
      error = QString::fromStdString(s->error);
  }
  detail += "|" + shape;
  if (name == name_ && type == type_ && inputs == inputs_ && detail == detail_ && error == error_ &&
      n.trainable != frozen_)  // frozen_ is !trainable: unchanged
    return false;
  frozen_ = !n.trainable;
  if (inputs != inputs_) prepareGeometryChange();
  name_ = name;
  type_ = type;
  category_ = d ? QString::fromStdString(d->category) : QString();
  inputs_ = inputs;
  detail_ = detail;
  error_ = error;
  block_line_ = block_line;
  QString tip = QStringLiteral("<b>%1</b> (%2)").arg(name_.toHtmlEscaped(), type_);
  if (!shape.isEmpty()) tip += QObject::tr("<br>output %1").arg(shape);
  if (d && !d->help.empty()) tip += "<br>" + QString::fromStdString(d->help).toHtmlEscaped();
  if (frozen_)
    tip += QObject::tr("<br><b>Frozen</b>: its weights are not trained (Layer → Unfreeze)");
  if (!error_.isEmpty())
    tip += QStringLiteral("<br><span style='color:%1'>%2</span>")
               .arg(error_.contains("has no valid shape") ? "#c77700" : "#e53935",
                    error_.toHtmlEscaped());
  tip_ = tip;
  setToolTip(tip_ + cost_tip_);
  update();
  return true;
}

void NodeItem::setCost(const QColor& tint, const QString& label, const QString& tip) {
  if (tint == cost_tint_ && label == cost_label_ && tip == cost_tip_) return;
  cost_tint_ = tint;
  cost_label_ = label;
  cost_tip_ = tip;
  setToolTip(tip_ + cost_tip_);
  update();
}

void NodeItem::clearCost() {
  setCost(QColor(), QString(), QString());
}

double NodeItem::height() const {
  return std::max(kMinHeight, inputs_ * kPortPitch + 14);
}

QPointF NodeItem::localInput(int port) const {
  double top = height() / 2 - (inputs_ - 1) * kPortPitch / 2;
  return {0, top + port * kPortPitch};
}

QPointF NodeItem::localOutput() const {
  return {kWidth, height() / 2};
}
QPointF NodeItem::inputPortPos(int port) const {
  return mapToScene(localInput(port));
}
QPointF NodeItem::outputPortPos() const {
  return mapToScene(localOutput());
}

std::pair<int, bool> NodeItem::portAt(QPointF scene_pos) const {
  QPointF p = mapFromScene(scene_pos);
  const double r2 = (kPortRadius + 5) * (kPortRadius + 5);
  auto near = [&](QPointF q) {
    QPointF d = p - q;
    return d.x() * d.x() + d.y() * d.y() <= r2;
  };
  if (near(localOutput())) return {0, true};
  for (int i = 0; i < inputs_; ++i)
    if (near(localInput(i))) return {i, false};
  return {-1, false};
}

void NodeItem::setHoverPort(int port, bool output, bool ok) {
  hover_port_ = port;
  hover_output_ = output;
  hover_ok_ = ok;
  update();
}

void NodeItem::clearHoverPort() {
  if (hover_port_ < 0) return;
  hover_port_ = -1;
  update();
}

QRectF NodeItem::boundingRect() const {
  const double m = kPortRadius + 4;
  return QRectF(-m, -4, kWidth + 2 * m, height() + 8);
}

QPainterPath NodeItem::shape() const {
  QPainterPath path;
  // Winding fill: with the default odd-even rule the half of each port
  // circle that overlaps the card would count as outside it.
  path.setFillRule(Qt::WindingFill);
  path.addRoundedRect(QRectF(0, 0, kWidth, height()), kRadius, kRadius);
  for (int i = 0; i < inputs_; ++i)
    path.addEllipse(localInput(i), kPortRadius + 4, kPortRadius + 4);
  path.addEllipse(localOutput(), kPortRadius + 4, kPortRadius + 4);
  return path;
}

void NodeItem::paint(QPainter* p, const QStyleOptionGraphicsItem* /*opt*/, QWidget* /*w*/) {
  const QPalette pal = scene() ? scene()->palette() : QPalette();
  const bool dark = pal.color(QPalette::Window).lightnessF() < 0.5;
  // A frozen layer keeps its category hue but greyed, so a frozen base
  // reads as one locked block on the canvas.
  const QColor grey = mix(pal.color(QPalette::Text), pal.color(QPalette::Base), 0.55);
  const QColor accent =
      frozen_ ? mix(categoryColor(category_), grey, 0.75) : categoryColor(category_);
  const QRectF body(0, 0, kWidth, height());
  p->setRenderHint(QPainter::Antialiasing);

  // A block is a stack of cards: one more behind it, offset.
  if (block_) {
    p->setPen(QPen(mix(pal.color(QPalette::Text), pal.color(QPalette::Base), 0.6), 1));
    p->setBrush(mix(pal.color(QPalette::Base), accent, 0.25));
    p->drawRoundedRect(body.translated(4, 4), kRadius, kRadius);
  }
  // Soft shadow, then the card.
  p->setPen(Qt::NoPen);
  p->setBrush(QColor(0, 0, 0, dark ? 90 : 28));
  p->drawRoundedRect(body.translated(0, 2), kRadius, kRadius);
  // A node whose own rule fails is red; one that only lacks a valid input
  // because of a problem upstream is amber, so the cause stands out.
  const bool inherited = error_.contains(QStringLiteral("has no valid shape"));
  const QColor problem = inherited ? kWarnColor : kErrorColor;
  QColor fill = pal.color(QPalette::Base);
  if (frozen_) fill = mix(fill, pal.color(QPalette::Text), dark ? 0.10 : 0.07);
  if (!error_.isEmpty()) fill = mix(fill, problem, dark ? 0.22 : (inherited ? 0.08 : 0.12));
  // The cost overlay's tint: strong enough to read at a fitted zoom, light
  // enough to keep the text legible.
  if (cost_tint_.isValid()) fill = mix(fill, cost_tint_, dark ? 0.45 : 0.38);
  QColor border = mix(pal.color(QPalette::Text), fill, 0.75);
  double bw = 1;
  if (!error_.isEmpty()) {
    border = problem;
    bw = 1.6;
  }
  if (isSelected()) {
    border = pal.color(QPalette::Highlight);
    bw = 2.2;
  } else if (hovered_) {
    border = mix(border, pal.color(QPalette::Highlight), 0.5);
  }
  p->setBrush(fill);
  p->setPen(QPen(border, bw));
  p->drawRoundedRect(body, kRadius, kRadius);

  // Category stripe along the top edge; a frozen layer's header is a wider
  // grey band.
  QPainterPath stripe;
  stripe.addRoundedRect(body, kRadius, kRadius);
  QPainterPath top;
  top.addRect(QRectF(0, 0, kWidth, frozen_ ? 6 : 4));
  p->setPen(Qt::NoPen);
  p->setBrush(accent);
  p->drawPath(stripe.intersected(top));

  // Badge with the layer glyph.
  const QRectF badge(8, 14, 20, 20);
  p->setBrush(accent);
  p->drawRoundedRect(badge, 5, 5);
  QFont f;
  f.setPixelSize(10);
  f.setBold(true);
  p->setFont(f);
  p->setPen(Qt::white);
  p->drawText(badge, Qt::AlignCenter, layerGlyph(type_));

  // Name and type · shape. A long name (imported ones: "layer1.0.conv1")
  // is set a little smaller before it is elided, and then in the middle:
  // such names differ at both ends; the tooltip has the whole name.
  const double tx = 34, tw = kWidth - tx - (frozen_ ? 20 : 6);
  QFont nf;
  nf.setBold(true);
  for (int px = 13; px >= 10; --px) {
    nf.setPixelSize(px);
    if (QFontMetricsF(nf).horizontalAdvance(name_) <= tw) break;
  }
  p->setFont(nf);
  p->setPen(frozen_ ? mix(pal.color(QPalette::Text), fill, 0.35) : pal.color(QPalette::Text));
  if (frozen_)
    drawLock(p, QRectF(kWidth - 17, 10, 11, 15), mix(pal.color(QPalette::Text), fill, 0.25));
  QFontMetricsF nm(nf);
  p->drawText(QRectF(tx, 9, tw, 18), Qt::AlignLeft | Qt::AlignVCenter,
              nm.elidedText(name_, Qt::ElideMiddle, tw));
  QFont df;
  df.setPixelSize(11);
  p->setFont(df);
  p->setPen(error_.isEmpty() ? mix(pal.color(QPalette::Text), fill, 0.4) : problem);
  QFontMetricsF dm(df);
  QString second = error_.isEmpty() ? (block_ ? block_line_ : type_)
                   : inherited      ? QObject::tr("no input shape")
                                    : QObject::tr("invalid");
  p->drawText(QRectF(tx, 27, tw, 16), Qt::AlignLeft | Qt::AlignVCenter,
              dm.elidedText(second, Qt::ElideRight, error_.isEmpty() ? tw : tw - 16));

  if (!cost_label_.isEmpty()) {
    // The share, bottom left, on a chip of the full heat colour.
    QFont cf;
    cf.setPixelSize(10);
    cf.setBold(true);
    p->setFont(cf);
    const QRectF chip(8, height() - 17, QFontMetricsF(cf).horizontalAdvance(cost_label_) + 10, 13);
    p->setPen(Qt::NoPen);
    p->setBrush(cost_tint_);
    p->drawRoundedRect(chip, 4, 4);
    p->setPen(cost_tint_.lightnessF() > 0.6 ? Qt::black : Qt::white);
    p->drawText(chip, Qt::AlignCenter, cost_label_);
  }

  if (!error_.isEmpty()) {
    const QRectF mark(kWidth - 18, height() - 18, 13, 13);
    p->setPen(Qt::NoPen);
    p->setBrush(problem);
    p->drawEllipse(mark);
    p->setPen(Qt::white);
    p->setFont(f);
    p->drawText(mark, Qt::AlignCenter, QStringLiteral("!"));
  }

  // Ports: filled when connected, hollow when free, ringed while a
  // connection is dragged over them.
  auto port = [&](QPointF c, bool connected, bool hover) {
    p->setPen(QPen(connected ? accent.darker(120) : border, 1.5));
    p->setBrush(connected ? accent : pal.color(QPalette::Base));
    p->drawEllipse(c, kPortRadius, kPortRadius);
    if (hover) {
      p->setBrush(Qt::NoBrush);
      p->setPen(QPen(hover_ok_ ? kOkColor : kErrorColor, 2.5));
      p->drawEllipse(c, kPortRadius + 4, kPortRadius + 4);
    }
  };
  std::vector<bool> connected(size_t(inputs_), false);
  bool out_connected = false;
  for (EdgeItem* e : edges_) {
    if (e->edge().dst == id_ && e->edge().dst_port < inputs_) connected[e->edge().dst_port] = true;
    if (e->edge().src == id_) out_connected = true;
  }
  for (int i = 0; i < inputs_; ++i)
    port(localInput(i), connected[size_t(i)], hover_port_ == i && !hover_output_);
  port(localOutput(), out_connected, hover_port_ >= 0 && hover_output_);
}

QVariant NodeItem::itemChange(GraphicsItemChange change, const QVariant& value) {
  auto* s = dynamic_cast<NodeScene*>(scene());
  if (change == ItemPositionChange && s && s->snapToGrid()) {
    const double g = NodeScene::kGrid;
    QPointF q = value.toPointF();
    return QPointF(std::round(q.x() / g) * g, std::round(q.y() / g) * g);
  }
  if (change == ItemPositionHasChanged) {
    for (EdgeItem* e : edges_) e->updatePath();
    if (s) s->ensureRoom(sceneBoundingRect());
  }
  return QGraphicsItem::itemChange(change, value);
}

void NodeItem::hoverEnterEvent(QGraphicsSceneHoverEvent* e) {
  hovered_ = true;
  update();
  QGraphicsItem::hoverEnterEvent(e);
}

void NodeItem::hoverLeaveEvent(QGraphicsSceneHoverEvent* e) {
  hovered_ = false;
  update();
  QGraphicsItem::hoverLeaveEvent(e);
}

}  // namespace dc::widgets
