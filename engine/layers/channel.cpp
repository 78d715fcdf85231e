// Channel layers of today's mobile CNNs: ChannelScale (squeeze-and-excitation's
// per-channel gate, a broadcast multiply of two tensors), ChannelShuffle
// (ShuffleNet's interleaving of channel groups) and ChannelSlice (a range of
// channels, ShuffleNetV2's chunk(2, dim=1)). Each sample is [C, rest...]:
// channels first, whatever follows them.
#include <deepcanvas/errors.h>
#include <deepcanvas/parallel.h>

#include <algorithm>
#include <string>
#include <vector>

#include "builtin.h"

namespace dc {
namespace {

constexpr int64_t kGrain = 1 << 14;

Attrs defaults(const std::string& type, const Attrs& a) {
  return LayerRegistry::instance().get(type).with_defaults(a);
}

int64_t spatial(const Shape& s) {
  return s.rank() == 0 ? 1 : s.numel() / s[0];
}

// y[n, c, s] = x[n, c, s] · g[n, c]. The gate has one value per channel
// and sample: [C], or [C, 1, ..., 1] as a 1×1 convolution leaves it.
class ChannelScale : public Layer {
 public:
  explicit ChannelScale(int64_t S) : S_(S) {}

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const float* x = in[0]->f32();
    const float* g = in[1]->f32();
    float* y = out.f32();
    const int64_t S = S_;
    parallel_for(out.numel() / S, std::max<int64_t>(1, kGrain / S), [=](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const float gr = g[r];
        for (int64_t i = 0; i < S; ++i) y[r * S + i] = x[r * S + i] * gr;
      }
    });
  }

  // dx = dy · g; dg[n, c] = sum over the channel's values of dy · x (in
  // double, in order: the same result whatever the threads).
  void backward(const std::vector<const Tensor*>& in, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    const float* x = in[0]->f32();
    const float* g = in[1]->f32();
    const float* dy = dout.f32();
    float* dx = din[0] ? din[0]->f32() : nullptr;
    float* dg = din[1] ? din[1]->f32() : nullptr;
    const int64_t S = S_;
    parallel_for(dout.numel() / S, std::max<int64_t>(1, kGrain / S), [=](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const float* dyr = dy + r * S;
        if (dx) {
          const float gr = g[r];
          for (int64_t i = 0; i < S; ++i) dx[r * S + i] += dyr[i] * gr;
        }
        if (dg) {
          double s = 0;
          for (int64_t i = 0; i < S; ++i) s += double(dyr[i]) * x[r * S + i];
          dg[r] += float(s);
        }
      }
    });
  }

 private:
  int64_t S_;  // values per channel
};

Shape channel_scale_rule(const std::vector<Shape>& in, const Attrs&) {
  if (in.size() != 2) throw ShapeError("expects two inputs: the values and the per-channel gate");
  const Shape& x = in[0];
  const Shape& g = in[1];
  if (x.rank() == 0) throw ShapeError("expects values with at least one dimension");
  bool ok = g.rank() >= 1 && g.rank() <= x.rank() && g[0] == x[0];
  for (size_t i = 1; ok && i < g.rank(); ++i) ok = g[i] == 1;
  if (!ok)
    throw ShapeError("the gate (input 1) has shape " + g.str() + " but needs one value per " +
                     "channel of input 0 (" + x.str() + "): " + std::to_string(x[0]) + " or " +
                     std::to_string(x[0]) + "×1×1");
  return x;
}

// ShuffleNet's channel shuffle: channels viewed as groups × (C/groups),
// transposed: output channel j·groups + i is input channel i·(C/groups) + j.
class ChannelShuffle : public Layer {
 public:
  ChannelShuffle(int64_t C, int64_t S, int64_t groups) : C_(C), S_(S), G_(groups) {}

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    move(in[0]->f32(), out.f32(), out.numel() / (C_ * S_), false);
  }

  void backward(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    if (din[0]) move(dout.f32(), din[0]->f32(), dout.numel() / (C_ * S_), true);
  }

 private:
  // forward: y[out channel] = x[in channel]; backward: dx[in] += dy[out].
  void move(const float* src, float* dst, int64_t N, bool back) const {
    const int64_t C = C_, S = S_, G = G_, per = C / G;
    parallel_for(N * C, std::max<int64_t>(1, kGrain / S), [=](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t n = r / C, o = r % C;  // o: output channel
        const int64_t c = (o % G) * per + o / G;
        const float* from = back ? src + r * S : src + (n * C + c) * S;
        float* to = back ? dst + (n * C + c) * S : dst + r * S;
        if (back)
          for (int64_t i = 0; i < S; ++i) to[i] += from[i];
        else
          std::copy(from, from + S, to);
      }
    });
  }
  int64_t C_, S_, G_;
};

Shape channel_shuffle_rule(const std::vector<Shape>& in, const Attrs& attrs) {
  if (in.size() != 1) throw ShapeError("expects exactly one input");
  if (in[0].rank() == 0) throw ShapeError("expects an input with channels");
  const int64_t g = defaults("ChannelShuffle", attrs).i("groups");
  if (in[0][0] % g != 0)
    throw ShapeError("groups " + std::to_string(g) + " does not divide the " +
                     std::to_string(in[0][0]) + " channels of " + in[0].str());
  return in[0];
}

// Channels [start, start + count) of each sample.
class ChannelSlice : public Layer {
 public:
  ChannelSlice(int64_t C, int64_t S, int64_t start, int64_t count)
      : C_(C), S_(S), start_(start), count_(count) {}

  void forward(const std::vector<const Tensor*>& in, Tensor& out, RunContext&) override {
    const float* x = in[0]->f32();
    float* y = out.f32();
    const int64_t block = count_ * S_, stride = C_ * S_, off = start_ * S_;
    parallel_for(out.numel() / block, std::max<int64_t>(1, kGrain / block),
                 [=](int64_t b, int64_t e) {
                   for (int64_t n = b; n < e; ++n)
                     std::copy(x + n * stride + off, x + n * stride + off + block, y + n * block);
                 });
  }

  void backward(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dout,
                const std::vector<Tensor*>& din, RunContext&) override {
    if (!din[0]) return;
    const float* dy = dout.f32();
    float* dx = din[0]->f32();
    const int64_t block = count_ * S_, stride = C_ * S_, off = start_ * S_;
    parallel_for(dout.numel() / block, std::max<int64_t>(1, kGrain / block),
                 [=](int64_t b, int64_t e) {
                   for (int64_t n = b; n < e; ++n)
                     for (int64_t i = 0; i < block; ++i)
                       dx[n * stride + off + i] += dy[n * block + i];
                 });
  }

 private:
  int64_t C_, S_, start_, count_;
};

Shape channel_slice_rule(const std::vector<Shape>& in, const Attrs& attrs) {
  if (in.size() != 1) throw ShapeError("expects exactly one input");
  if (in[0].rank() == 0) throw ShapeError("expects an input with channels");
  const Attrs a = defaults("ChannelSlice", attrs);
  const int64_t start = a.i("start"), count = a.i("count"), C = in[0][0];
  if (start >= C || count > C - start)
    throw ShapeError("channels " + std::to_string(start) + " to " +
                     std::to_string(start + count - 1) + " do not exist in " + in[0].str() +
                     " (channels 0 to " + std::to_string(C - 1) + ")");
  std::vector<int64_t> d = in[0].dims();
  d[0] = count;
  return Shape(d);
}

LayerDescriptor channel_desc(const std::string& type, const std::string& category,
                             const std::string& help, int inputs) {
  LayerDescriptor d;
  d.type = type;
  d.category = category;
  d.help = help;
  d.num_inputs = [inputs](const Attrs&) { return inputs; };
  d.cost = [](const std::vector<Shape>&, const Shape&, const Attrs&) { return Cost{}; };
  return d;
}

}  // namespace

void register_channel_layers(LayerRegistry& r) {
  LayerDescriptor scale = channel_desc(
      "ChannelScale", "Merge",
      "Multiplies each channel of input 0 by the matching value of input 1, a per-channel gate "
      "(squeeze-and-excitation: the gate comes from GlobalAvgPool2D → Dense/1×1 Conv → Sigmoid)",
      2);
  scale.infer = channel_scale_rule;
  // One multiply per value.
  scale.cost = [](const std::vector<Shape>&, const Shape& out, const Attrs&) {
    return Cost{0, out.numel()};
  };
  scale.create = [](const Attrs&, const std::vector<Shape>& in, const Shape&) {
    return std::unique_ptr<Layer>(new ChannelScale(spatial(in[0])));
  };
  r.add(std::move(scale));

  LayerDescriptor shuffle = channel_desc(
      "ChannelShuffle", "Shape",
      "Interleaves channel groups (groups × C/groups, transposed) so that grouped convolutions "
      "see each other's channels, as in ShuffleNet",
      1);
  shuffle.attrs = {
      {"groups",
       AttrType::Int,
       int64_t{2},
       1,
       1 << 20,
       {},
       "Number of channel groups to interleave"},
  };
  shuffle.infer = channel_shuffle_rule;
  shuffle.create = [](const Attrs& attrs, const std::vector<Shape>& in, const Shape&) {
    return std::unique_ptr<Layer>(new ChannelShuffle(
        in[0][0], spatial(in[0]), defaults("ChannelShuffle", attrs).i("groups")));
  };
  r.add(std::move(shuffle));

  LayerDescriptor slice = channel_desc(
      "ChannelSlice", "Shape",
      "Keeps a range of channels (start, count), e.g. one half as ShuffleNetV2 splits its input",
      1);
  slice.attrs = {
      {"start", AttrType::Int, int64_t{0}, 0, 1 << 30, {}, "First channel kept (0-based)"},
      {"count", AttrType::Int, int64_t{1}, 1, 1 << 30, {}, "Number of channels kept"},
  };
  slice.infer = channel_slice_rule;
  slice.create = [](const Attrs& attrs, const std::vector<Shape>& in, const Shape&) {
    const Attrs a = defaults("ChannelSlice", attrs);
    return std::unique_ptr<Layer>(
        new ChannelSlice(in[0][0], spatial(in[0]), a.i("start"), a.i("count")));
  };
  r.add(std::move(slice));
}

}  // namespace dc
