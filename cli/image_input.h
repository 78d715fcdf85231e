#pragma once
#include <deepcanvas/tensor.h>

#include <string>
#include <vector>

namespace dc::cli {

// The image files to predict: files as given, and each directory replaced by
// the image files in it (by extension, sorted). Throws dc::IoError for a
// missing path or a directory without images.
std::vector<std::string> image_paths(const std::vector<std::string>& args);

// Reads an image file and turns it into the network's input [1, C, H, W]:
// grey or colour to match C, resized and centre-cropped to H×W as
// read_image_chw does (crop_fraction: DatasetSpec::inference_crop), scaled
// to [0,1] and normalised with the training set's mean/stddev, or per
// channel with channel_mean / channel_std when given (a project's
// dataset.preprocess, e.g. ImageNet's). Throws dc::IoError naming the file.
Tensor load_image_input(const std::string& path, const Shape& input, double crop_fraction,
                        float mean, float stddev, const std::vector<float>& channel_mean = {},
                        const std::vector<float>& channel_std = {});

}  // namespace dc::cli
