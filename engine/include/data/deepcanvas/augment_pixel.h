#pragma once
// The per-sample draw and per-pixel arithmetic of training-time image
// augmentation (data.h: AugmentConfig), compiled both into the CPU trainer
// (engine/data/augment.cpp) and into the CUDA gather kernel (cuda/data.cu),
// so that one source defines what a step's batch looks like on either
// device. Header-only and free of engine types, because nvcc compiles it.
//
// Equal results need equal float operations in equal order, so:
// - every product, sum and difference goes through mul/add/sub, which on
//   the device are the _rn intrinsics (nvcc would otherwise fuse a*b+c into
//   one FMA, rounding once instead of twice); on the host they are plain
//   operators in a file built with -ffp-contract=off (engine/CMakeLists.txt);
// - sine and cosine are the polynomial below rather than the C library's
//   and CUDA's sinf/cosf, which may differ in the last bit;
// - random numbers are integer hashes (splitmix64), turned into floats
//   exactly.
#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define DC_AUG_FN __host__ __device__ inline
#else
#define DC_AUG_FN inline
#endif

namespace dc::aug {

// Everything the per-pixel code needs, fixed for a run (augment_params()
// in data.h makes it from an AugmentConfig).
struct Params {
  int C = 1, H = 1, W = 1;     // sample shape
  int pad = 0;                 // crop padding (pixels on every side)
  bool flip = false;           // horizontal flip with probability 1/2
  bool vflip = false;          // vertical flip with probability 1/2
  float max_deg = 0;           // rotation uniform in [-max_deg, max_deg] degrees
  int max_tx = 0, max_ty = 0;  // translation, whole pixels uniform in [-max, max]
  float brightness = 0;        // intensity factor uniform in [1 - b, 1 + b]
  // What intensities 0 and 1 normalise to: black is the padding and the
  // fill outside the image; white caps brightened pixels (+inf: no cap).
  // A pixel of channel c reads channel c only, so with per-channel
  // normalisation the CPU (augment.cpp) passes each channel its own pair.
  float black = 0, white = INFINITY;
};

struct Draw {
  bool flip = false, vflip = false;
  int dy = 0, dx = 0;          // crop offset into the padded image, each in [0, 2 * pad]
  float cos_a = 1, sin_a = 0;  // rotation
  int tx = 0, ty = 0;          // translation in pixels
  float gain = 1;              // brightness factor
};

DC_AUG_FN float mul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
DC_AUG_FN float add(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
DC_AUG_FN float sub(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

DC_AUG_FN uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// 24 random bits as a float uniform in [-1, 1), exactly (no rounding).
DC_AUG_FN float signed_unit(uint64_t bits24) {
  return float(int32_t(bits24 & 0xFFFFFFull) - (1 << 23)) * (1.0f / 8388608.0f);
}

// sin and cos of deg degrees, |deg| <= 180: reduced to [-45, 45] degrees
// (exactly: deg minus a multiple of 90) and a quadrant, then Taylor
// polynomials in Horner form (error below 2e-9 on [-pi/4, pi/4]).
DC_AUG_FN void sincos_deg(float deg, float& s, float& c) {
  const int k = int(floorf(add(mul(deg, 0.0111111111f), 0.5f)));
  const float x = mul(sub(deg, float(90 * k)), 0.0174532925f);  // radians
  const float x2 = mul(x, x);
  float ps = add(-1.98412698e-4f, mul(x2, 2.75573192e-6f));
  ps = add(8.33333333e-3f, mul(x2, ps));
  ps = add(-0.166666667f, mul(x2, ps));
  const float sin_x = add(x, mul(mul(x, x2), ps));
  float pc = add(2.48015873e-5f, mul(x2, -2.75573192e-7f));
  pc = add(-1.38888889e-3f, mul(x2, pc));
  pc = add(4.16666667e-2f, mul(x2, pc));
  pc = add(-0.5f, mul(x2, pc));
  const float cos_x = add(1.0f, mul(x2, pc));
  switch (k & 3) {
    case 0:
      s = sin_x, c = cos_x;
      break;
    case 1:
      s = cos_x, c = -sin_x;
      break;
    case 2:
      s = -sin_x, c = -cos_x;
      break;
    default:
      s = -cos_x, c = sin_x;
      break;
  }
}

// Sample i's draw for the step's seed. The first hash word gives the flip
// and crop (as before rotation and the rest existed, so their draws did not
// change); three more words give rotation and translation, brightness, and
// the vertical flip, each drawn only when used.
DC_AUG_FN Draw draw(const Params& p, uint64_t seed, int64_t i) {
  const uint64_t base = (seed ^ 0xA0761D6478BD642Full) + 0x9E3779B97F4A7C15ull * (uint64_t(i) + 1);
  const uint64_t z = mix64(base);
  // Remainders in 32 bits (the operands fit, so the results are those of 64
  // bits), and unused words skipped: the kernel redraws for every pixel.
  const uint32_t span = uint32_t(2 * p.pad + 1);
  Draw d;
  d.flip = p.flip && (z >> 63) != 0;
  d.dy = int(uint32_t((z >> 32) & 0x7FFFFFFFull) % span);
  d.dx = int(uint32_t(z & 0xFFFFFFFFull) % span);
  if (p.max_deg > 0 || p.max_tx > 0 || p.max_ty > 0) {
    const uint64_t z2 = mix64(base ^ 0xD1B54A32D192ED03ull);
    if (p.max_deg > 0) sincos_deg(mul(signed_unit(z2 >> 40), p.max_deg), d.sin_a, d.cos_a);
    d.tx = int(uint32_t((z2 >> 20) & 0xFFFFFull) % uint32_t(2 * p.max_tx + 1)) - p.max_tx;
    d.ty = int(uint32_t(z2 & 0xFFFFFull) % uint32_t(2 * p.max_ty + 1)) - p.max_ty;
  }
  if (p.brightness > 0) {
    const uint64_t z3 = mix64(base ^ 0x8CB92BA72F3D8DD7ull);
    d.gain = add(1.0f, mul(signed_unit(z3 >> 40), p.brightness));
  }
  if (p.vflip) d.vflip = (mix64(base ^ 0x4F1BBCDCBFA53E0Bull) >> 63) != 0;
  return d;
}

// Pixel (y, x) of channel c of the cropped and flipped image (black
// outside it); at(offset) returns the normalised source value at
// (c * H + sy) * W + sx, always inside the sample.
template <class Fetch>
DC_AUG_FN float cropped(const Params& p, const Draw& d, int c, int y, int x, const Fetch& at) {
  if (y < 0 || y >= p.H || x < 0 || x >= p.W) return p.black;
  const int xc = d.flip ? p.W - 1 - x : x;   // flipped: column W-1-x of the crop
  const int yc = d.vflip ? p.H - 1 - y : y;  // and row H-1-y
  const int sy = yc + d.dy - p.pad, sx = xc + d.dx - p.pad;
  if (sy < 0 || sy >= p.H || sx < 0 || sx >= p.W) return p.black;
  return at((int64_t(c) * p.H + sy) * p.W + sx);
}

// Output pixel (y, x) of channel c: torchvision's RandomCrop(padding),
// RandomHorizontalFlip, RandomVerticalFlip, RandomAffine(degrees, translate) and a brightness
// factor, in that order. The affine part maps each output pixel back into
// the cropped image (rotation about the centre ((W-1)/2, (H-1)/2), positive
// angles counter-clockwise as seen, then the whole-pixel translation) and
// samples it bilinearly with zero (black) fill:
//   v = (1-ay) * ((1-ax) * v00 + ax * v01) + ay * ((1-ax) * v10 + ax * v11),
// each product and sum rounded in float. Without rotation it is a plain
// shift (no interpolation). Brightness scales the intensity:
//   v' = min((v - black) * gain + black, white),
// which is (p * gain - mean) / std for an intensity p in [0, 1].
template <class Fetch>
DC_AUG_FN float pixel(const Params& p, const Draw& d, int c, int y, int x, const Fetch& at) {
  float v;
  if (p.max_deg > 0) {
    const float cx = mul(0.5f, float(p.W - 1)), cy = mul(0.5f, float(p.H - 1));
    const float X = sub(float(x - d.tx), cx), Y = sub(float(y - d.ty), cy);
    const float u = add(sub(mul(d.cos_a, X), mul(d.sin_a, Y)), cx);
    const float w = add(add(mul(d.sin_a, X), mul(d.cos_a, Y)), cy);
    const float fu = floorf(u), fw = floorf(w);
    const int x0 = int(fu), y0 = int(fw);
    const float ax = sub(u, fu), ay = sub(w, fw);
    const float bx = sub(1.0f, ax), by = sub(1.0f, ay);
    const float top =
        add(mul(bx, cropped(p, d, c, y0, x0, at)), mul(ax, cropped(p, d, c, y0, x0 + 1, at)));
    const float bottom = add(mul(bx, cropped(p, d, c, y0 + 1, x0, at)),
                             mul(ax, cropped(p, d, c, y0 + 1, x0 + 1, at)));
    v = add(mul(by, top), mul(ay, bottom));
  } else {
    v = cropped(p, d, c, y - d.ty, x - d.tx, at);
  }
  if (p.brightness > 0) v = fminf(add(mul(sub(v, p.black), d.gain), p.black), p.white);
  return v;
}

}  // namespace dc::aug
