#include <deepcanvas/errors.h>
#include <deepcanvas/optim.h>
#include <deepcanvas/parallel.h>

#include <algorithm>
#include <cmath>

namespace dc {

namespace {

// The loops' lambdas capture their pointers by value: captured by reference,
// GCC reloads each pointer through the reference and does not vectorise
// (Adam was 6 % of the two-conv CNN's step before).
// Elementwise update loops are split by dc::parallel_for in fixed chunks, so
// updates are deterministic for a given thread count.
constexpr int64_t kGrain = 1 << 14;

// The tensors of a saved state, by kind (a name prefix such as "exp_avg")
// and parameter index, checked against the parameters they will update.
using StateTable = std::vector<std::vector<const Tensor*>>;

StateTable check_state(const std::vector<std::pair<std::string, Tensor>>& s,
                       const std::vector<std::string>& kinds, bool paired,
                       const std::vector<Param*>& ps, const std::string& optimizer,
                       const std::string& source) {
  auto fail = [&](const std::string& name, const std::string& why) {
    throw IoError(source + ": optimizer state '" + name + "' " + why);
  };
  StateTable table(kinds.size(), std::vector<const Tensor*>(ps.size(), nullptr));
  for (const auto& [name, t] : s) {
    size_t dot = name.rfind('.');
    size_t kind = std::find(kinds.begin(), kinds.end(), name.substr(0, dot)) - kinds.begin();
    if (dot == std::string::npos || kind == kinds.size()) {
      std::string valid;
      for (auto& k : kinds) valid += (valid.empty() ? "" : ", ") + k + ".N";
      fail(name, "is not " + optimizer + "'s (" + valid +
                     "); resume with the optimizer that wrote the checkpoint, or start "
                     "without resuming (training.resume)");
    }
    std::string digits = name.substr(dot + 1);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
      fail(name, "has no parameter index after the '.'");
    size_t k = digits.size() > 9 ? ps.size() : std::stoul(digits);
    if (k >= ps.size())
      fail(name, "is for parameter " + digits + " but the network has " +
                     std::to_string(ps.size()) + " trainable parameters");
    if (table[kind][k]) fail(name, "appears twice");
    if (t.dtype() != DType::F32)
      fail(name, std::string("is ") + dtype_name(t.dtype()) + "; optimizer state is F32");
    if (t.shape() != ps[k]->value.shape())
      fail(name, "is " + t.shape().str(true) + " but parameter " + digits + " is " +
                     ps[k]->value.shape().str(true) +
                     "; the checkpoint was made for a different network");
    const float* v = t.f32();
    for (int64_t i = 0; i < t.numel(); ++i)
      if (!std::isfinite(v[i]) || (kinds[kind] == "exp_avg_sq" && v[i] < 0))
        fail(name, "holds " + std::string(std::isfinite(v[i]) ? "negative" : "NaN or infinite") +
                       " values; the checkpoint is damaged");
    table[kind][k] = &t;
  }
  if (paired)
    for (size_t k = 0; k < ps.size(); ++k)
      for (size_t a = 0; a < kinds.size(); ++a)
        for (size_t b = 0; b < kinds.size(); ++b)
          if (table[a][k] && !table[b][k])
            fail(kinds[a] + "." + std::to_string(k),
                 "has no " + kinds[b] + "." + std::to_string(k) + " beside it");
  return table;
}

std::vector<Tensor> clones(const std::vector<const Tensor*>& ts) {
  std::vector<Tensor> out(ts.size());
  for (size_t k = 0; k < ts.size(); ++k)
    if (ts[k]) out[k] = ts[k]->clone();
  return out;
}

class Sgd : public Optimizer {
 public:
  explicit Sgd(const OptimizerConfig& c) : c_(c) {}
  void step(const std::vector<Param*>& ps, double lr) override {
    ++t_;
    if (buf_.size() != ps.size()) buf_.assign(ps.size(), Tensor());
    const float mu = float(c_.momentum), wd = float(c_.weight_decay), flr = float(lr);
    for (size_t k = 0; k < ps.size(); ++k) {
      Param& p = *ps[k];
      float* w = p.value.f32();
      const float* g = p.grad.f32();
      const float pwd = p.decay ? wd : 0.0f;
      if (mu == 0.0f) {
        parallel_for(p.value.numel(), kGrain, [=](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) w[i] -= flr * (g[i] + pwd * w[i]);
        });
        continue;
      }
      // PyTorch initialises the momentum buffer with the first gradient.
      bool first = !buf_[k].defined();
      if (first) buf_[k] = Tensor(p.value.shape());
      float* v = buf_[k].f32();
      const bool nest = c_.nesterov;
      parallel_for(p.value.numel(), kGrain, [=](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          float d = g[i] + pwd * w[i];
          v[i] = first ? d : mu * v[i] + d;
          w[i] -= flr * (nest ? d + mu * v[i] : v[i]);
        }
      });
    }
  }
  std::vector<std::pair<std::string, Tensor>> state() override {
    std::vector<std::pair<std::string, Tensor>> s;
    for (size_t k = 0; k < buf_.size(); ++k)
      if (buf_[k].defined()) s.emplace_back("momentum." + std::to_string(k), buf_[k]);
    return s;
  }
  void load_state(const std::vector<std::pair<std::string, Tensor>>& s,
                  const std::vector<Param*>& ps, const std::string& source) override {
    buf_ = clones(check_state(s, {"momentum"}, false, ps, "SGD", source)[0]);
  }

 private:
  OptimizerConfig c_;
  std::vector<Tensor> buf_;
};

class Adam : public Optimizer {
 public:
  Adam(const OptimizerConfig& c, bool decoupled) : c_(c), decoupled_(decoupled) {}
  void step(const std::vector<Param*>& ps, double lr) override {
    ++t_;
    if (m_.size() != ps.size()) {
      m_.assign(ps.size(), Tensor());
      v_.assign(ps.size(), Tensor());
    }
    const double bc1 = 1.0 - std::pow(c_.beta1, double(t_));
    const double bc2 = 1.0 - std::pow(c_.beta2, double(t_));
    const float b1 = float(c_.beta1), b2 = float(c_.beta2), eps = float(c_.eps);
    const float step_size = float(lr / bc1);
    const float inv_sqrt_bc2 = float(1.0 / std::sqrt(bc2));
    for (size_t k = 0; k < ps.size(); ++k) {
      Param& p = *ps[k];
      if (!m_[k].defined()) {
        m_[k] = Tensor(p.value.shape());
        v_[k] = Tensor(p.value.shape());
      }
      float* w = p.value.f32();
      const float* g = p.grad.f32();
      float* m = m_[k].f32();
      float* v = v_[k].f32();
      const float wd = p.decay ? float(c_.weight_decay) : 0.0f;
      const float l2 = decoupled_ ? 0.0f : wd;
      const float shrink = decoupled_ ? float(1.0 - lr * wd) : 1.0f;
      parallel_for(p.value.numel(), kGrain, [=](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          float gi = g[i] + l2 * w[i];
          m[i] = b1 * m[i] + (1.0f - b1) * gi;
          v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
          float denom = std::sqrt(v[i]) * inv_sqrt_bc2 + eps;
          w[i] = w[i] * shrink - step_size * m[i] / denom;
        }
      });
    }
  }
  std::vector<std::pair<std::string, Tensor>> state() override {
    std::vector<std::pair<std::string, Tensor>> s;
    for (size_t k = 0; k < m_.size(); ++k) {
      if (!m_[k].defined()) continue;
      s.emplace_back("exp_avg." + std::to_string(k), m_[k]);
      s.emplace_back("exp_avg_sq." + std::to_string(k), v_[k]);
    }
    return s;
  }
  void load_state(const std::vector<std::pair<std::string, Tensor>>& s,
                  const std::vector<Param*>& ps, const std::string& source) override {
    StateTable t =
        check_state(s, {"exp_avg", "exp_avg_sq"}, true, ps, decoupled_ ? "AdamW" : "Adam", source);
    m_ = clones(t[0]);
    v_ = clones(t[1]);
  }

 private:
  OptimizerConfig c_;
  bool decoupled_;
  std::vector<Tensor> m_, v_;
};

}  // namespace

void Optimizer::set_steps(int64_t t, const std::string& source) {
  if (t < 0 || t > kMaxOptimizerSteps)
    throw IoError(source + ": step " + std::to_string(t) + " is outside 0.." +
                  std::to_string(kMaxOptimizerSteps) + "; the checkpoint is damaged");
  t_ = t;
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& c) {
  switch (c.type) {
    case OptimizerType::Sgd:
      return std::make_unique<Sgd>(c);
    case OptimizerType::Adam:
      return std::make_unique<Adam>(c, false);
    case OptimizerType::AdamW:
      return std::make_unique<Adam>(c, true);
  }
  throw Error("unknown optimizer");
}

double schedule_lr(const ScheduleConfig& s, double base, int64_t step, int64_t total,
                   int64_t steps_per_epoch) {
  const double pi = 3.14159265358979323846;
  if (s.type == ScheduleType::OneCycle) {
    // torch.optim.lr_scheduler.OneCycleLR with cosine annealing.
    double initial = base / s.div_factor, final_lr = initial / s.final_div_factor;
    double up = std::max(1.0, s.pct_start * double(total) - 1.0);
    double down_end = std::max(up + 1.0, double(total) - 1.0);
    auto cosine = [&](double a, double b, double pct) {
      return b + (a - b) / 2.0 * (std::cos(pi * pct) + 1.0);
    };
    double t = double(step);
    if (t <= up) return cosine(initial, base, t / up);
    return cosine(base, final_lr, std::min(1.0, (t - up) / (down_end - up)));
  }
  double lr = base;
  if (s.type == ScheduleType::Step) {
    double per = std::max<double>(1.0, s.step_epochs * double(steps_per_epoch));
    lr = base * std::pow(s.gamma, std::floor(double(step) / per));
  } else if (s.type == ScheduleType::Cosine) {
    double span = std::max<double>(1.0, double(total - s.warmup_steps));
    double pct = std::clamp(double(step - s.warmup_steps) / span, 0.0, 1.0);
    lr = s.min_lr + (base - s.min_lr) * 0.5 * (1.0 + std::cos(pi * pct));
  }
  if (s.warmup_steps > 0 && step < s.warmup_steps) lr *= double(step + 1) / double(s.warmup_steps);
  return lr;
}

}  // namespace dc
