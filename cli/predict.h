#pragma once
#include <deepcanvas/tensor.h>

#include <string>

namespace dc::cli {

bool opencv_enabled();
// Reads an image file and turns it into the network's input [1, C, H, W]:
// grey or colour to match C, resized to H×W, scaled to [0,1] and normalised
// with the training set's mean/stddev. Throws dc::IoError naming the file.
Tensor load_image_input(const std::string& path, const Shape& input, float mean, float stddev);

}  // namespace dc::cli
