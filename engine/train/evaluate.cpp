// Evaluation of a plan over a dataset, on the host or on a device.
#include <deepcanvas/next_token.h>
#include <deepcanvas/trainer.h>

#include <algorithm>

namespace dc {

namespace {

// evaluate() and evaluate_device() differ only in how a batch's outputs are
// produced; this is the part they share.
EvalResult eval_result(const ClassificationMetrics& m) {
  EvalResult r;
  r.loss = m.mean_loss();
  r.top1 = m.top1();
  r.top5 = m.top5();
  r.samples = m.count();
  r.confusion = m.confusion();
  return r;
}

}  // namespace

EvalResult evaluate(Plan& plan, const Dataset& ds, const std::vector<int64_t>& indices,
                    int64_t batch, Loss& loss) {
  const std::vector<int64_t> idx = indices_or_all(indices, ds.size());
  batch = std::min(batch, plan.max_batch());
  ClassificationMetrics m;
  Tensor x(plan.input_shape().with_batch(batch));
  std::vector<int32_t> labels(batch);
  Tensor dout(plan.output_shape().with_batch(batch));
  RunContext ctx{false, nullptr};
  BatchScorer scorer(loss, scores_every_step(ds, plan.output_shape()));
  if (ds.images) {
    // Pictures decoded on the loader's worker threads while the plan runs;
    // a file that turned out bad is left out of the figures.
    BatchLoader loader(ds, idx, batch, /*shuffle=*/false, /*drop_last=*/false, 0);
    loader.start_epoch(0);
    Batch b;
    while (loader.next(b)) {
      const Tensor& out = plan.forward(b.x, ctx);
      Tensor db = dout.narrow_batch(b.n);
      scorer.eval(out, b.labels.data(), db, &m);
    }
    return eval_result(m);
  }
  for (size_t b = 0; b < idx.size(); b += batch) {
    int64_t n = std::min<int64_t>(batch, int64_t(idx.size() - b));
    Tensor xb = x.narrow_batch(n);
    ds.gather(idx.data() + b, n, xb.f32(), labels.data());
    const Tensor& out = plan.forward(xb, ctx);
    Tensor db = dout.narrow_batch(n);
    scorer.eval(out, labels.data(), db, &m);
  }
  return eval_result(m);
}

int add_device_dataset(DevicePlan& plan, const Dataset& ds, int64_t batch) {
  return ds.images ? plan.add_batch_dataset(ds, batch) : plan.add_dataset(ds);
}

EvalResult evaluate_device(DevicePlan& plan, int dataset, const Dataset& ds,
                           const Shape& output_shape, const std::vector<int64_t>& indices,
                           int64_t batch, Loss& loss) {
  const std::vector<int64_t> idx = indices_or_all(indices, ds.size());
  ClassificationMetrics m;
  Tensor out(output_shape.with_batch(batch)), dout(output_shape.with_batch(batch));
  BatchScorer scorer(loss, scores_every_step(ds, output_shape));
  if (ds.images) {
    // Image folders are not resident on the device: batches are decoded to
    // bytes on the host (the loader's worker threads) and sent to the
    // device's batch dataset, which normalises them as it gathers.
    BatchLoader loader(ds, idx, batch, /*shuffle=*/false, /*drop_last=*/false, 0, 3,
                       /*training_draws=*/false, /*bytes=*/true);
    const std::vector<int64_t> whole = all_indices(batch);
    loader.start_epoch(0);
    Batch b;
    while (loader.next(b)) {
      Tensor ob = out.narrow_batch(b.n), db = dout.narrow_batch(b.n);
      plan.set_batch(dataset, static_cast<const uint8_t*>(b.x.raw()), b.labels.data(), b.n);
      plan.predict(dataset, whole.data(), b.n, ob.f32());
      scorer.eval(ob, b.labels.data(), db, &m);
    }
    return eval_result(m);
  }
  for (size_t b = 0; b < idx.size(); b += batch) {
    int64_t n = std::min<int64_t>(batch, int64_t(idx.size() - b));
    Tensor ob = out.narrow_batch(n), db = dout.narrow_batch(n);
    plan.predict(dataset, idx.data() + b, n, ob.f32());
    const int32_t* labels = ds.labels.data();
    std::vector<int32_t> lab(n);
    for (int64_t i = 0; i < n; ++i) lab[i] = labels[idx[b + i]];
    scorer.eval(ob, lab.data(), db, &m);
  }
  return eval_result(m);
}

}  // namespace dc
