#pragma once
// Image augmentation for the dataset panel: random flips, crop with padding
// (a shift of up to `pad` pixels), rotation and brightness, applied to u8
// C×H×W samples; the panel's live preview uses augment_sample.
//
// Where the engine augments training batches itself (TrainConfig::augment,
// drawn afresh every step): horizontal flips and crop with padding, and in
// newer engines rotation and brightness (same ranges and meaning: angle
// uniform in ±rotate_deg, intensity factor in [1 - b, 1 + b] capped at
// white), those go to the engine and only the rest (vertical flip, and
// whatever the engine lacks) is trained from augmented copies made once
// before a run (`copies` per sample, next to the originals). An engine
// without it gets copies for everything. Detected at compile time, so this
// builds against either. Qt-free.
#include <deepcanvas/data.h>
#include <deepcanvas/rng.h>
#include <deepcanvas/trainer.h>

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

template <typename C>
constexpr bool engine_augments_v = requires(C c) {
  c.augment.flip;
  c.augment.crop_padding;
};
inline constexpr bool kEngineAugments = engine_augments_v<TrainConfig>;
template <typename C>
constexpr bool engine_rotates_v = requires(C c) {
  c.augment.rotate;
  c.augment.brightness;
};
inline constexpr bool kEngineRotates = engine_rotates_v<TrainConfig>;

// What augmented copies must do: everything the engine does not.
inline AugmentOptions copy_part(AugmentOptions o) {
  if (kEngineAugments) {
    o.hflip = false;
    o.pad = 0;
  }
  if (kEngineRotates) {
    o.rotate_deg = 0;
    o.brightness = 0;
  }
  return o;
}

// The engine's share of o into a training configuration (no-op without
// it); the engine's settings the panel has no control for (translation)
// are left as they are.
template <typename C>
void engine_augment_to(C& c, const AugmentOptions& o) {
  if constexpr (engine_augments_v<C>) {
    c.augment.flip = o.hflip;
    c.augment.crop_padding = o.pad;
  }
  if constexpr (engine_rotates_v<C>) {
    c.augment.rotate = o.rotate_deg;
    c.augment.brightness = o.brightness;
  }
}

// The engine's settings of a configuration (e.g. from a project file) as options.
template <typename C>
AugmentOptions engine_augment_of(const C& c) {
  AugmentOptions o;
  if constexpr (engine_augments_v<C>) {
    o.hflip = c.augment.flip;
    o.pad = c.augment.crop_padding;
  }
  if constexpr (engine_rotates_v<C>) {
    o.rotate_deg = c.augment.rotate;
    o.brightness = c.augment.brightness;
  }
  return o;
}

// o with the engine's share replaced by from's (the copies' share stays).
inline AugmentOptions with_engine_part(AugmentOptions o, const AugmentOptions& from) {
  if (kEngineAugments) {
    o.hflip = from.hflip;
    o.pad = from.pad;
  }
  if (kEngineRotates) {
    o.rotate_deg = from.rotate_deg;
    o.brightness = from.brightness;
  }
  return o;
}

// One augmented version of sample `src` (C×H×W u8, shape {C,H,W}) into dst.
void augment_sample(const uint8_t* src, uint8_t* dst, const Shape& s, const AugmentOptions& o,
                    Rng& rng);

// The dataset plus o.copies augmented copies of every sample (u8 image
// datasets only; anything else is returned unchanged).
Dataset augmented_dataset(const Dataset& d, const AugmentOptions& o, uint64_t seed);

}  // namespace dc::gui
