// The Inference tab for a character model: a prompt and the text the
// weights in use continue it with, sampled as `deepcanvas-cli generate`
// samples (dc::TextGenerator). A few hundred characters are a few hundred
// forward passes of one window, well under a second for the networks this
// app builds, so it runs on the UI thread, with its own Plan.
#include <deepcanvas/errors.h>
#include <deepcanvas/text_generator.h>

#include <QDoubleSpinBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

#include "gui/inference_panel.h"

namespace dc::gui {

QWidget* InferencePanel::buildTextUi() {
  auto* area = new QWidget(this);
  auto* v = new QVBoxLayout(area);
  v->setContentsMargins(0, 0, 0, 0);
  v->addWidget(new QLabel(tr("<b>Generate text</b>: the model continues the prompt one "
                             "character at a time, each drawn from its predicted "
                             "probabilities."),
                          area));
  auto* form = new QFormLayout;
  prompt_ = new QLineEdit(area);
  prompt_->setPlaceholderText(tr("text to start from (characters of the training text)"));
  form->addRow(tr("Prompt"), prompt_);
  auto* row = new QHBoxLayout;
  QSettings settings;
  length_ = new QSpinBox(area);
  length_->setRange(1, 5000);
  length_->setValue(settings.value("inference/textLength", 300).toInt());
  length_->setToolTip(tr("Characters to add to the prompt"));
  temperature_ = new QDoubleSpinBox(area);
  temperature_->setRange(0.05, 5.0);
  temperature_->setSingleStep(0.1);
  temperature_->setValue(settings.value("inference/textTemperature", 0.8).toDouble());
  temperature_->setToolTip(
      tr("Below 1 the likeliest characters win more often (safer, more repetitive text); "
         "above 1 the rarer ones get their chance"));
  seed_ = new QSpinBox(area);
  seed_->setRange(0, 1 << 30);
  seed_->setValue(1);
  seed_->setToolTip(tr("The same seed, prompt and weights give the same text"));
  row->addWidget(new QLabel(tr("Length"), area));
  row->addWidget(length_);
  row->addWidget(new QLabel(tr("Temperature"), area));
  row->addWidget(temperature_);
  row->addWidget(new QLabel(tr("Seed"), area));
  row->addWidget(seed_);
  generate_ = new QPushButton(tr("Generate"), area);
  generate_->setToolTip(tr("Continue the prompt with the weights in use (Enter in the prompt)"));
  row->addWidget(generate_);
  row->addStretch(1);
  form->addRow(row);
  v->addLayout(form);
  generated_ = new QPlainTextEdit(area);
  generated_->setReadOnly(true);
  generated_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  generated_->setPlaceholderText(tr("The generated text appears here."));
  v->addWidget(generated_, 1);

  connect(generate_, &QPushButton::clicked, this, [this] { generateText(); });
  connect(prompt_, &QLineEdit::returnPressed, this, [this] { generateText(); });
  connect(length_, &QSpinBox::valueChanged, this,
          [](int n) { QSettings().setValue("inference/textLength", n); });
  connect(temperature_, &QDoubleSpinBox::valueChanged, this,
          [](double t) { QSettings().setValue("inference/textTemperature", t); });
  return area;
}

bool InferencePanel::showsText() const {
  return !text_area_->isHidden();
}

void InferencePanel::showInputKind() {
  const bool text = reads_tokens(ctx_->project().graph);
  const bool series = !text && reads_series(ctx_->project().graph);
  text_area_->setVisible(text);
  series_area_->setVisible(series);
  image_area_->setVisible(!text && !series);
  for (QWidget* w : {static_cast<QWidget*>(open_), static_cast<QWidget*>(open_dir_),
                     static_cast<QWidget*>(camera_)})
    w->setVisible(!text && !series);
  setAcceptDrops(!text && !series);
}

bool InferencePanel::generateText() {
  const ModelWeights& w = use_checkpoint_ ? checkpoint_ : ctx_->weights();
  if (!w.valid()) {
    setMessage(tr("There are no weights to generate with yet: train the network (Training tab) "
                  "or choose a checkpoint above."),
               true);
    return false;
  }
  // The vocabulary travels with the weights; weights without one (from an
  // older checkpoint) use the loaded corpus's.
  const QStringList names = w.class_names.isEmpty() ? ctx_->classNames() : w.class_names;
  std::vector<std::string> vocab;
  for (const QString& n : names) vocab.push_back(n.toStdString());
  try {
    Plan plan(ctx_->project().graph, 1, Plan::Use::Inference);
    TextGenerator gen(plan, vocab);
    plan.load_state(w.state, w.source.toStdString());
    GenerateOptions o;
    o.length = length_->value();
    o.temperature = temperature_->value();
    o.seed = uint64_t(seed_->value());
    const std::string text = gen.generate(prompt_->text().toStdString(), o, {}, "The prompt");
    generated_->setPlainText(QString::fromStdString(text));
  } catch (const std::exception& e) {
    setMessage(QString::fromUtf8(e.what()), true);
    return false;
  }
  setMessage({}, false);
  return true;
}

}  // namespace dc::gui
