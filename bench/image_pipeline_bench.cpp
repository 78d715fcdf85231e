// The DeepCanvas side of the input-pipeline benchmark (issue 31): a photo
// folder listed, decoded, RandomResizedCrop'd to SIZE, flipped and
// normalised by the same BatchLoader training uses, batches consumed and
// thrown away (no model). One JSON line per epoch, then the peak resident
// set. bench/image_pipeline_vs_torch.py runs it against PyTorch.
//
//   image_pipeline_bench FOLDER [--size 224] [--workers 2] [--batch 64]
//                        [--epochs 1] [--cache none|DIR] [--mode stream|memory]
#include <deepcanvas/data.h>
#include <deepcanvas/image_data.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

long vm_hwm_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: %s FOLDER [--size N] [--workers N] [--batch N] [--epochs N] "
                 "[--cache none|DIR] [--mode stream|memory]\n",
                 argv[0]);
    return 2;
  }
  std::string folder = argv[1], cache = "none", mode = "stream";
  int64_t size = 224, batch = 64;
  int workers = 2, epochs = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--size")
      size = std::stoll(v);
    else if (k == "--workers")
      workers = std::stoi(v);
    else if (k == "--batch")
      batch = std::stoll(v);
    else if (k == "--epochs")
      epochs = std::stoi(v);
    else if (k == "--cache")
      cache = v;
    else if (k == "--mode")
      mode = v;
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  try {
    double t0 = now();
    dc::ImageListOptions lo;
    lo.test_fraction = 0;  // every image in one split, as ImageFolder reads them
    const dc::ImageList list = dc::list_image_folder(folder, lo);
    const double list_s = now() - t0;
    dc::ImageTransform t;
    t.input = dc::Shape{3, size, size};
    t.random_resized_crop = true;
    dc::ImageLoadOptions o;
    o.mode =
        mode == "memory" ? dc::ImageLoadOptions::Mode::Memory : dc::ImageLoadOptions::Mode::Stream;
    o.cache_dir = cache;
    o.workers = workers;
    t0 = now();
    dc::TrainTest tt = dc::load_image_dataset(list, t, o);
    const double load_s = now() - t0;
    dc::Dataset& d = tt.train;
    d.channel_mean = {0.485f, 0.456f, 0.406f};  // torchvision's Normalize, as the peer
    d.channel_std = {0.229f, 0.224f, 0.225f};
    dc::AugmentConfig flip;
    flip.flip = true;
    const dc::AugmentLevels levels = dc::augment_levels(d);
    std::vector<int64_t> all(static_cast<size_t>(d.size()));
    std::iota(all.begin(), all.end(), 0);
    dc::BatchLoader loader(d, all, batch, /*shuffle=*/true, /*drop_last=*/false, /*seed=*/1,
                           /*prefetch=*/3, /*training_draws=*/true);
    int64_t step = 0;
    for (int e = 0; e < epochs; ++e) {
      const int64_t decodes = d.images->decodes(), hits = d.images->cache_hits();
      t0 = now();
      loader.start_epoch(e);
      dc::Batch b;
      int64_t n = 0;
      while (loader.next(b)) {
        dc::augment_batch(flip, d.sample_shape, levels, dc::step_seed(1, step++), b.x.f32(), b.n);
        n += b.n;
      }
      const double s = now() - t0;
      std::printf(
          "{\"side\": \"deepcanvas\", \"epoch\": %d, \"images\": %lld, \"seconds\": %.3f, "
          "\"images_per_s\": %.1f, \"decodes\": %lld, \"cache_hits\": %lld, "
          "\"list_seconds\": %.3f, \"load_seconds\": %.3f, \"mode\": \"%s\"}\n",
          e, static_cast<long long>(n), s, double(n) / s,
          static_cast<long long>(d.images->decodes() - decodes),
          static_cast<long long>(d.images->cache_hits() - hits), list_s, load_s,
          d.images->streaming() ? "stream" : "memory");
      std::fflush(stdout);
    }
    std::printf(
        "{\"side\": \"deepcanvas\", \"vm_hwm_mb\": %.1f, \"bad_images\": %lld, "
        "\"skipped\": %zu}\n",
        double(vm_hwm_kb()) / 1024, static_cast<long long>(d.images->bad().count),
        list.skipped.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
