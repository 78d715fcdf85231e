#pragma once
// Image augmentation for the dataset panel: random flips, crop with padding
// (a shift of up to `pad` pixels), rotation and brightness, applied to u8
// C×H×W samples. The engine's loader has no augmentation stage yet, so
// training uses augmented copies made once before a run (`copies` per
// sample, next to the originals); the panel's live preview uses the same
// function, so what is shown is what is trained on. Qt-free.
#include <deepcanvas/data.h>
#include <deepcanvas/rng.h>

#include <cstdint>

namespace dc::gui {

struct AugmentOptions {
  bool hflip = false, vflip = false;
  int pad = 0;            // crop with padding: random shift in [-pad, pad]
  double rotate_deg = 0;  // uniform in [-rotate_deg, rotate_deg]
  double brightness = 0;  // factor uniform in [1 - b, 1 + b]
  int copies = 0;         // augmented copies per training sample; 0 = off
  bool any() const { return hflip || vflip || pad > 0 || rotate_deg > 0 || brightness > 0; }
  bool enabled() const { return copies > 0 && any(); }
};

// One augmented version of sample `src` (C×H×W u8, shape {C,H,W}) into dst.
void augment_sample(const uint8_t* src, uint8_t* dst, const Shape& s, const AugmentOptions& o,
                    Rng& rng);

// The dataset plus o.copies augmented copies of every sample (u8 image
// datasets only; anything else is returned unchanged).
Dataset augmented_dataset(const Dataset& d, const AugmentOptions& o, uint64_t seed);

}  // namespace dc::gui
