#include <deepcanvas/project.h>
#include <deepcanvas/sequence_data.h>

namespace dc {

ProjectData load_project_dataset(const Project& p, const std::string& override_path) {
  ProjectData d;
  d.dir = resolve_dataset_dir(p, override_path);
  if (override_path.empty()) d.note = dataset_location_note(p);
  const DatasetSpec& s = p.dataset;
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
