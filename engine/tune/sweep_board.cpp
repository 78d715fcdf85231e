#include <deepcanvas/sweep_board.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace dc {

SweepBoard::SweepBoard(std::string dir, SearchSpace space)
    : dir_(std::move(dir)), space_(std::move(space)) {
  std::vector<tb::HParamInfo> infos;
  for (const SearchParam& p : space_.params) {
    tb::HParamInfo h;
    h.name = p.name;
    h.numeric = p.kind != SearchParam::Kind::Choice;
    h.lo = p.lo;
    h.hi = p.hi;
    h.choices = p.choices;
    infos.push_back(h);
  }
  experiment_ = std::make_unique<TensorBoardWriter>(dir_);
  experiment_->add_values({tb::hparams_experiment(infos, metrics(), TensorBoardWriter::now())}, 0);
  note(*experiment_);
}

SweepBoard::~SweepBoard() = default;

const std::vector<std::string>& SweepBoard::metrics() {
  static const std::vector<std::string> m = {"epoch/val_accuracy", "epoch/val_loss",
                                             "epoch/test_accuracy", "trial/pruned"};
  return m;
}

void SweepBoard::update(const Trial& t) {
  if (t.status == Trial::Status::Pending) return;
  Session& s = sessions_[t.id];
  if (!s.w) {
    char name[32];
    std::snprintf(name, sizeof name, "/trial-%03d", t.id);
    s.w = std::make_unique<TensorBoardWriter>(dir_ + name);
    std::vector<tb::HParamValue> values;
    for (size_t i = 0; i < space_.params.size() && i < t.x.size(); ++i) {
      const SearchParam& p = space_.params[i];
      const AttrValue v = search_value(p, t.x[i]);
      tb::HParamValue h;
      h.name = p.name;
      h.numeric = p.kind != SearchParam::Kind::Choice;
      if (const auto* d = std::get_if<double>(&v)) h.number = *d;
      if (const auto* n = std::get_if<int64_t>(&v)) h.number = double(*n);
      h.text = p.kind == SearchParam::Kind::Choice ? p.choices.at(size_t(t.x[i])) : "";
      values.push_back(h);
    }
    s.w->add_values({tb::hparams_session_start(values, TensorBoardWriter::now())}, 0);
  }
  for (; s.measured < t.epochs.size(); ++s.measured) {
    const TrialEpoch& e = t.epochs[s.measured];
    std::vector<std::pair<std::string, double>> v;
    for (auto [tag, x] : {std::pair{"epoch/train_loss", e.train_loss},
                          {"epoch/val_loss", e.val_loss},
                          {"epoch/val_accuracy", e.val_accuracy},
                          {"epoch/test_loss", e.test_loss},
                          {"epoch/test_accuracy", e.test_accuracy}})
      if (std::isfinite(x)) v.emplace_back(tag, x);
    s.w->add_scalars(v, std::llround(e.trained * 100));
  }
  if (t.status != Trial::Status::Running && !s.ended) {
    s.ended = true;
    const int64_t step = t.epochs.empty() ? 0 : std::llround(t.epochs.back().trained * 100);
    s.w->add_scalars({{"trial/pruned", t.status == Trial::Status::Pruned ? 1.0 : 0.0}}, step);
    s.w->add_values(
        {tb::hparams_session_end(t.status == Trial::Status::Failed ? tb::SessionStatus::Failure
                                                                   : tb::SessionStatus::Success,
                                 TensorBoardWriter::now())},
        step);
  }
  note(*s.w);
}

void SweepBoard::note(const TensorBoardWriter& w) {
  if (problem_.empty() && !said_) problem_ = w.problem();
}

std::string SweepBoard::take_problem() {
  if (said_ || problem_.empty()) return {};
  said_ = true;
  return problem_;
}

TrainConfig largest_batch_config(const TrainConfig& config, const SearchSpace& space,
                                 const SearchParam** from) {
  TrainConfig c = config;
  if (from) *from = nullptr;
  for (const SearchParam& sp : space.params) {
    if (!sp.setting || sp.setting->attr.name != "batch") continue;
    if (from) *from = &sp;
    if (sp.kind != SearchParam::Kind::Choice) {
      c.batch = std::get<int64_t>(search_value(sp, sp.hi));
      continue;
    }
    c.batch = 0;
    for (size_t i = 0; i < sp.choices.size(); ++i)
      c.batch = std::max(c.batch, std::get<int64_t>(search_value(sp, double(i))));
  }
  return c;
}

}  // namespace dc
