#include <deepcanvas/errors.h>
#include <deepcanvas/image_data.h>
#include <deepcanvas/layer.h>
#include <deepcanvas/project.h>
#include <deepcanvas/sequence_data.h>

namespace dc {

namespace {

// The Input's per-sample shape, which pictures are decoded and cropped to.
Shape image_input(const Project& p) {
  register_builtin_layers();
  try {
    p.graph.validate();
    const auto shapes = p.graph.infer_shapes();
    return *shapes.at(p.graph.inputs().front()).shape;
  } catch (const Error& e) {
    throw GraphError(std::string("the network must be valid to read images at its Input's size: ") +
                     e.what());
  }
}

}  // namespace

ImageLoadOptions image_load_options(const DatasetSpec& s) {
  ImageLoadOptions o;
  o.mode = s.loading == "memory"   ? ImageLoadOptions::Mode::Memory
           : s.loading == "stream" ? ImageLoadOptions::Mode::Stream
                                   : ImageLoadOptions::Mode::Auto;
  o.memory_budget = s.memory_budget_mb * (int64_t(1) << 20);
  o.cache_dir = s.cache;
  o.bad_images_are_errors = s.bad_images_are_errors;
  return o;
}

TrainTest load_image_spec(const Project& p, const DatasetSpec& s, const std::string& path,
                          ImageDataReport* report) {
  ImageListOptions lo;
  lo.test_fraction = s.test_fraction;
  lo.split_seed = uint64_t(s.split_seed);
  lo.bad_images_are_errors = s.bad_images_are_errors;
  const ImageList list =
      s.kind == "image_csv" ? list_image_csv(path, lo) : list_image_folder(path, lo);
  ImageTransform t;
  t.input = image_input(p);
  t.crop_fraction = s.crop_fraction;
  t.random_resized_crop = p.training.augment.resized_crop;
  t.color_jitter = p.training.augment.color_jitter;
  TrainTest tt = load_image_dataset(list, t, image_load_options(s), report);
  if (!s.preprocess.mean.empty())
    for (Dataset* d : {&tt.train, &tt.test}) {
      d->channel_mean = s.preprocess.mean;
      d->channel_std = s.preprocess.std;
    }
  return tt;
}

ProjectData load_project_dataset(const Project& p, const std::string& override_path) {
  ProjectData d;
  d.dir = resolve_dataset_dir(p, override_path);
  if (override_path.empty()) d.note = dataset_location_note(p);
  DatasetSpec s = p.dataset;
  // --data with a photo folder: read it as one whatever the project names.
  if (!override_path.empty() && !s.is_images() && looks_like_image_folder(d.dir))
    s.kind = "image_folder";
  if (s.is_images()) {
    d.data = load_image_spec(p, s, d.dir, &d.images);
    return d;
  }
  if (s.kind == "text")
    d.data = load_text_dataset(d.dir, {s.window, s.stride, s.test_fraction});
  else if (s.kind == "csv_sequence")
    d.data = load_csv_sequences(d.dir, {s.window, s.target, s.test_fraction});
  else  // Fashion-MNIST's folders (the package's, the bundled subset) get its class names
    d.data = d.dir.find("fashion") != std::string::npos ? load_fashion_mnist(d.dir)
                                                        : load_idx_folder(d.dir);
  if (s.preprocess.active()) {
    preprocess_images(d.data.train, s.preprocess);
    preprocess_images(d.data.test, s.preprocess);
  }
  return d;
}

}  // namespace dc
