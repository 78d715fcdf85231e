#pragma once
// Image folders as datasets: one subfolder per class (png/jpg/bmp, any size,
// grey or colour), read with OpenCV and resized to the network's input. A
// folder with train/ and test/ subfolders keeps that split; otherwise a
// seeded, per-class fraction becomes the test set. Qt-free, so it could move
// into the engine once the engine may depend on OpenCV.
#include <deepcanvas/data.h>

#include <string>
#include <vector>

namespace dc::gui {

struct ImageFolderReport {
  std::vector<std::string> classes;
  std::vector<int64_t> counts;                // training images per class
  std::vector<std::string> skipped;           // not images (by extension)
  std::vector<std::string> unreadable;        // image extension, but OpenCV cannot decode it
  std::vector<std::string> channel_mismatch;  // grey vs colour differs from the input
};

bool image_folders_supported();  // false in a build without OpenCV

// input is the network's per-sample input (C×H×W, C = 1 or 3). Fills report
// and throws dc::DataError when the folder cannot be a dataset: no class
// folders, unreadable images, channel mismatches (each naming files).
TrainTest load_image_folder(const std::string& dir, const Shape& input, double test_fraction,
                            uint64_t seed, ImageFolderReport* report);

// Reads one image file as the network would see it: grey or colour to match
// C, resized to H×W (area interpolation), u8 in C×H×W order. Throws
// dc::IoError naming the file when it cannot be decoded.
std::vector<uint8_t> read_image_chw(const std::string& path, const Shape& input);

// One frame from camera `index` (OpenCV videoio), converted like
// read_image_chw. Throws dc::IoError when there is no camera or no videoio.
std::vector<uint8_t> capture_camera_chw(int index, const Shape& input);

}  // namespace dc::gui
