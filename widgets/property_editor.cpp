#include "widgets/property_editor.h"

#include "widgets/graph_editor.h"
#include "widgets/graph_model.h"
#include "widgets/layer_style.h"
#include "widgets/node_scene.h"

#include <deepcanvas/blocks.h>
#include <deepcanvas/layer.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <climits>

namespace dc::widgets {

namespace {

int clampInt(double v) {
  return int(std::clamp(v, double(INT_MIN + 1), double(INT_MAX)));
}

QString rangeText(const AttrSpec& s) {
  bool lo = s.min > -1e17, hi = s.max < 1e17;
  if (lo && hi) return QObject::tr("range %1 … %2").arg(s.min).arg(s.max);
  if (lo) return QObject::tr("at least %1").arg(s.min);
  if (hi) return QObject::tr("at most %1").arg(s.max);
  return {};
}

QString listText(const std::vector<int64_t>& v) {
  QStringList parts;
  for (int64_t x : v) parts << QString::number(x);
  return parts.join(", ");
}

QSpinBox* intBox(const AttrSpec& s, QWidget* parent) {
  auto* b = new QSpinBox(parent);
  b->setRange(clampInt(s.min), clampInt(s.max));
  b->setKeyboardTracking(false);  // commit on Enter / focus-out, not per digit
  b->setAccelerated(true);
  return b;
}

}  // namespace

PropertyEditor::PropertyEditor(GraphEditor* editor, QWidget* parent)
    : QWidget(parent), editor_(editor) {
  scroll_ = new QScrollArea(this);
  scroll_->setWidgetResizable(true);
  scroll_->setFrameShape(QFrame::NoFrame);
  auto* lay = new QVBoxLayout(this);
  lay->setContentsMargins(0, 0, 0, 0);
  lay->addWidget(scroll_);

  GraphModel* m = editor_->model();
  connect(editor_->scene(), &QGraphicsScene::selectionChanged, this,
          &PropertyEditor::onSelectionChanged);
  connect(m, &GraphModel::nodeChanged, this, [this](NodeId id) {
    if (id == node_) syncValues();
  });
  connect(m, &GraphModel::nodeRemoved, this, [this](NodeId id) {
    if (id == node_) showNode(-1);
  });
  connect(m, &GraphModel::modelReset, this, [this] { showNode(-1); });
  connect(m, &GraphModel::shapesChanged, this, &PropertyEditor::syncShape);
  rebuild();
}

void PropertyEditor::onSelectionChanged() {
  std::vector<NodeId> sel = editor_->scene()->selectedNodes();
  showNode(sel.size() == 1 ? sel[0] : -1);
}

void PropertyEditor::showNode(NodeId id) {
  if (id == node_ && body_) return;
  node_ = editor_->graph().find(id) ? id : -1;
  rebuild();
}

void PropertyEditor::rebuild() {
  setters_.clear();
  title_ = shape_ = nullptr;
  name_ = nullptr;
  trainable_ = nullptr;
  body_ = new QWidget;
  auto* outer = new QVBoxLayout(body_);
  outer->setContentsMargins(12, 12, 12, 12);
  outer->setSpacing(10);
  const Node* n = editor_->graph().find(node_);
  if (!n) {
    auto* hint = new QLabel(tr("Select a layer to edit its properties.\n\n"
                               "Add layers from the palette (double-click or drag), "
                               "then drag from an output port (right) to an input port "
                               "(left) to connect them."),
                            body_);
    hint->setWordWrap(true);
    hint->setEnabled(false);
    outer->addWidget(hint);
    outer->addStretch();
    scroll_->setWidget(body_);
    return;
  }
  const LayerDescriptor& d = LayerRegistry::instance().get(n->type);
  QString type = QString::fromStdString(n->type);

  auto* head = new QHBoxLayout;
  auto* icon = new QLabel(body_);
  icon->setPixmap(layerIcon(type).pixmap(32, 32));
  head->addWidget(icon);
  auto* titles = new QVBoxLayout;
  title_ = new QLabel(QStringLiteral("<b>%1</b>").arg(type), body_);
  QFont tf = title_->font();
  tf.setPointSizeF(tf.pointSizeF() * 1.2);
  title_->setFont(tf);
  auto* cat = new QLabel(QString::fromStdString(d.category), body_);
  cat->setEnabled(false);
  titles->addWidget(title_);
  titles->addWidget(cat);
  head->addLayout(titles, 1);
  outer->addLayout(head);
  if (!d.help.empty()) {
    auto* help = new QLabel(QString::fromStdString(d.help), body_);
    help->setWordWrap(true);
    help->setEnabled(false);
    outer->addWidget(help);
  }

  auto* form = new QFormLayout;
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  form->setLabelAlignment(Qt::AlignRight | Qt::AlignVCenter);
  form->setHorizontalSpacing(10);
  form->setVerticalSpacing(8);
  name_ = new QLineEdit(QString::fromStdString(n->name), body_);
  name_->setObjectName("name");
  name_->setToolTip(tr("The layer's name: unique, used for weights in checkpoints"));
  connect(name_, &QLineEdit::editingFinished, this, [this] {
    const Node* cur = editor_->graph().find(node_);
    if (!cur || name_->text() == QString::fromStdString(cur->name)) return;
    QString why;
    if (!editor_->rename(node_, name_->text(), &why))
      name_->setText(QString::fromStdString(cur->name));
  });
  form->addRow(tr("Name"), name_);
  trainable_ = new QCheckBox(body_);
  trainable_->setObjectName("trainable");
  trainable_->setToolTip(
      tr("Unchecked freezes the layer: its weights stay as loaded, BatchNorm "
         "keeps its running statistics, and layers frozen from the input on "
         "get no backward pass (Layer → Freeze / Unfreeze for a selection)"));
  connect(trainable_, &QCheckBox::toggled, this, [this](bool on) {
    if (!editor_->setTrainable({node_}, on)) syncValues();
  });
  form->addRow(tr("Trainable"), trainable_);
  if (d.type == kBlockType) {
    // A block's attributes are its definition's, shared by every instance:
    // it is edited by opening it, not field by field here.
    const Node& n = editor_->graph().node(node_);
    const std::string def = n.attrs.has("block") ? n.attrs.s("block") : "";
    auto* name = new QLabel(QString::fromStdString(def), body_);
    name->setObjectName("blockDefinition");
    form->addRow(tr("Block"), name);
    const auto counts = block_instance_counts(editor_->graph());
    auto* count = new QLabel(QString::number(counts.count(def) ? counts.at(def) : 0), body_);
    count->setObjectName("blockInstances");
    count->setToolTip(tr("Instances of this block in the network; they share its layers"));
    form->addRow(tr("Instances"), count);
  }
  for (const AttrSpec& s : d.attrs) {
    if (d.type == kBlockType) break;
    QWidget* w = makeEditor(s);
    QString tip = QString::fromStdString(s.help);
    QString range = rangeText(s);
    if (!range.isEmpty() && s.type != AttrType::Bool && s.type != AttrType::Enum)
      tip += (tip.isEmpty() ? "" : "\n") + range;
    w->setToolTip(tip);
    auto* label = new QLabel(QString::fromStdString(s.name).replace('_', ' '), body_);
    label->setToolTip(tip);
    form->addRow(label, w);
  }
  outer->addLayout(form);

  shape_ = new QLabel(body_);
  shape_->setWordWrap(true);
  shape_->setObjectName("outputShape");
  shape_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  outer->addWidget(shape_);
  outer->addStretch();
  scroll_->setWidget(body_);
  syncValues();
  syncShape();
}

QWidget* PropertyEditor::makeEditor(const AttrSpec& s) {
  const std::string name = s.name;
  const QString obj = QStringLiteral("attr:") + QString::fromStdString(name);
  switch (s.type) {
    case AttrType::Int: {
      auto* b = intBox(s, body_);
      b->setObjectName(obj);
      connect(b, &QSpinBox::valueChanged, this, [this, name](int v) { commit(name, int64_t(v)); });
      setters_[name] = [b](const AttrValue& v) {
        QSignalBlocker block(b);
        b->setValue(int(std::get<int64_t>(v)));
      };
      return b;
    }
    case AttrType::Float: {
      auto* b = new QDoubleSpinBox(body_);
      b->setObjectName(obj);
      b->setDecimals(6);
      b->setRange(std::max(s.min, -1e12), std::min(s.max, 1e12));
      b->setSingleStep(s.max <= 1.0 ? 0.01 : 0.1);
      b->setKeyboardTracking(false);
      connect(b, &QDoubleSpinBox::valueChanged, this, [this, name](double v) { commit(name, v); });
      setters_[name] = [b](const AttrValue& v) {
        QSignalBlocker block(b);
        b->setValue(std::holds_alternative<double>(v) ? std::get<double>(v)
                                                      : double(std::get<int64_t>(v)));
      };
      return b;
    }
    case AttrType::Bool: {
      auto* b = new QCheckBox(body_);
      b->setObjectName(obj);
      connect(b, &QCheckBox::toggled, this, [this, name](bool v) { commit(name, v); });
      setters_[name] = [b](const AttrValue& v) {
        QSignalBlocker block(b);
        b->setChecked(std::get<bool>(v));
      };
      return b;
    }
    case AttrType::Enum: {
      auto* b = new QComboBox(body_);
      b->setObjectName(obj);
      for (const std::string& c : s.choices) b->addItem(QString::fromStdString(c));
      connect(b, &QComboBox::currentTextChanged, this,
              [this, name](const QString& t) { commit(name, t.toStdString()); });
      setters_[name] = [b](const AttrValue& v) {
        QSignalBlocker block(b);
        b->setCurrentText(QString::fromStdString(std::get<std::string>(v)));
      };
      return b;
    }
    case AttrType::IntPair: {
      auto* w = new QWidget(body_);
      w->setObjectName(obj);
      auto* h = new QHBoxLayout(w);
      h->setContentsMargins(0, 0, 0, 0);
      h->setSpacing(4);
      auto* a = intBox(s, w);
      auto* b = intBox(s, w);
      a->setObjectName(obj + ":0");
      b->setObjectName(obj + ":1");
      h->addWidget(a, 1);
      h->addWidget(new QLabel(QStringLiteral("×"), w));
      h->addWidget(b, 1);
      auto send = [this, name, a, b] {
        commit(name, std::vector<int64_t>{a->value(), b->value()});
      };
      connect(a, &QSpinBox::valueChanged, this, send);
      connect(b, &QSpinBox::valueChanged, this, send);
      setters_[name] = [a, b](const AttrValue& v) {
        const auto& p = std::get<std::vector<int64_t>>(v);
        QSignalBlocker ba(a), bb(b);
        if (p.size() == 2) {
          a->setValue(int(p[0]));
          b->setValue(int(p[1]));
        }
      };
      return w;
    }
    case AttrType::IntList:
    case AttrType::String: {
      auto* e = new QLineEdit(body_);
      e->setObjectName(obj);
      bool list = s.type == AttrType::IntList;
      if (list) e->setPlaceholderText(tr("e.g. 1, 28, 28"));
      connect(e, &QLineEdit::editingFinished, this, [this, name, e, list] {
        if (!list) {
          commit(name, e->text().toStdString());
          return;
        }
        std::vector<int64_t> v;
        bool ok = true;
        for (const QString& part :
             e->text().split(QRegularExpression("[,x×\\s]+"), Qt::SkipEmptyParts)) {
          v.push_back(part.toLongLong(&ok));
          if (!ok) break;
        }
        if (ok)
          commit(name, v);
        else
          syncValues();
      });
      setters_[name] = [e, list](const AttrValue& v) {
        QSignalBlocker block(e);
        e->setText(list ? listText(std::get<std::vector<int64_t>>(v))
                        : QString::fromStdString(std::get<std::string>(v)));
      };
      return e;
    }
  }
  return new QWidget(body_);
}

void PropertyEditor::commit(const std::string& name, const AttrValue& v) {
  if (!editor_->setAttr(node_, name, v)) syncValues();  // refused: show the real value
}

void PropertyEditor::syncValues() {
  const Node* n = editor_->graph().find(node_);
  if (!n) return;
  if (name_ && !name_->hasFocus()) {
    QSignalBlocker b(name_);
    name_->setText(QString::fromStdString(n->name));
  }
  if (trainable_) {
    QSignalBlocker b(trainable_);
    trainable_->setChecked(n->trainable);
  }
  for (auto& [name, set] : setters_)
    if (n->attrs.has(name)) set(n->attrs.get(name));
}

void PropertyEditor::syncShape() {
  if (!shape_) return;
  const NodeShape* s = editor_->model()->shape(node_);
  if (!s) return;
  if (s->ok())
    shape_->setText(tr("Output: <b>%1</b>").arg(QString::fromStdString(s->shape->str())));
  else
    shape_->setText(QStringLiteral("<span style='color:#e53935'>%1</span>")
                        .arg(QString::fromStdString(s->error).toHtmlEscaped()));
}

}  // namespace dc::widgets
