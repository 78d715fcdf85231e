#pragma once
// The augmentation settings of a training run (train_config.h); what they
// do is data.h's and augment_pixel.h's.

namespace dc {

// Training-time image augmentation, as torchvision's RandomCrop(size,
// padding), RandomHorizontalFlip, RandomAffine(degrees, translate) and a
// brightness factor, in that order, on normalised C×H×W batches; padding
// and the fill of rotated or shifted images are black (pixel value 0, then
// normalised). Each sample's draw is a stateless hash of (step seed,
// position in the batch), and the arithmetic lives in augment_pixel.h,
// which the CUDA gather compiles too, so the CPU trainer and the CUDA
// plugin augment a step's batch identically.
struct AugmentConfig {
  bool flip = false;      // mirror left-right with probability 1/2
  bool vflip = false;     // mirror top-bottom with probability 1/2
  int crop_padding = 0;   // pad every side by this many pixels, crop back at a random offset
  double rotate = 0;      // degrees: uniform in [-rotate, rotate], bilinear; [0, 180]
  double translate = 0;   // fraction of width/height: whole-pixel shift up to it; [0, 0.5]
  double brightness = 0;  // intensity factor uniform in [1 - b, 1 + b], capped at white; [0, 1]
  // Image folders only, from the whole decoded picture before it becomes a
  // sample (image_data.h's ImageTransform): torchvision's
  // RandomResizedCrop(scale (0.08, 1), ratio (3/4, 4/3)) and
  // ColorJitter(j, j, j) factors in [1 - j, 1 + j]; [0, 1].
  bool resized_crop = false;
  double color_jitter = 0;
  // The batch augmentation above (not resized_crop and color_jitter, which
  // act on pictures).
  bool enabled() const {
    return flip || vflip || crop_padding > 0 || rotate > 0 || translate > 0 || brightness > 0;
  }
};

}  // namespace dc
