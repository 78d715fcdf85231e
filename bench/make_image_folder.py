#!/usr/bin/python3
"""A seeded photo-like image folder for the input-pipeline benchmarks (issue 31).

OUT/<class>/<n>.jpg: COUNT JPEGs (quality 90) of 256-500 px per side in 10
classes, each a smooth colour gradient with noise and a class-specific shape
(disc, square, triangle, ring, bars...) at a random place, size and colour,
drawn from a generator seeded with (--seed, image number), so a small CNN can learn the classes and the JPEGs cost what photos of that
size cost to decode. The same --seed gives the same bytes.

    /usr/bin/python3 bench/make_image_folder.py OUT --count 20000 --seed 1 --jobs 2

The first N images of a larger folder are the images of a folder of N.
"""
import argparse
import multiprocessing
import os

import numpy as np
from PIL import Image, ImageDraw

SHAPES = ["disc", "square", "triangle", "ring", "hbars", "vbars", "cross", "diamond", "dots", "frame"]


def draw_shape(d, kind, cx, cy, r, colour, rng):
    box = [cx - r, cy - r, cx + r, cy + r]
    if kind == "disc":
        d.ellipse(box, fill=colour)
    elif kind == "square":
        d.rectangle(box, fill=colour)
    elif kind == "triangle":
        d.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=colour)
    elif kind == "ring":
        d.ellipse(box, outline=colour, width=max(3, r // 4))
    elif kind == "hbars":
        for k in range(-2, 3):
            d.rectangle([cx - r, cy + k * r // 2.5 - r // 10, cx + r, cy + k * r // 2.5 + r // 10], fill=colour)
    elif kind == "vbars":
        for k in range(-2, 3):
            d.rectangle([cx + k * r // 2.5 - r // 10, cy - r, cx + k * r // 2.5 + r // 10, cy + r], fill=colour)
    elif kind == "cross":
        d.rectangle([cx - r, cy - r // 5, cx + r, cy + r // 5], fill=colour)
        d.rectangle([cx - r // 5, cy - r, cx + r // 5, cy + r], fill=colour)
    elif kind == "diamond":
        d.polygon([(cx, cy - r), (cx + r, cy), (cx, cy + r), (cx - r, cy)], fill=colour)
    elif kind == "dots":
        for _ in range(7):
            x, y = cx + rng.integers(-r, r + 1), cy + rng.integers(-r, r + 1)
            d.ellipse([x - r // 6, y - r // 6, x + r // 6, y + r // 6], fill=colour)
    else:
        d.rectangle(box, outline=colour, width=max(3, r // 5))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    a = ap.parse_args()
    for k in SHAPES:
        os.makedirs(os.path.join(a.out, k), exist_ok=True)
    jobs = [(a.out, a.seed, n) for n in range(a.count)]
    with multiprocessing.Pool(a.jobs) as pool:
        pool.starmap(make_one, jobs, chunksize=64)


def make_one(out, seed, n):
    rng = np.random.default_rng([seed, n])
    cls = SHAPES[n % len(SHAPES)]
    w, h = (int(v) for v in rng.integers(256, 501, size=2))
    c0, c1 = rng.integers(0, 256, size=3), rng.integers(0, 256, size=3)
    t = np.linspace(0.0, 1.0, w, dtype=np.float32)[None, :, None]
    img = (c0 * (1 - t) + c1 * t).repeat(h, axis=0)
    img += rng.normal(0, 12, size=(h, w, 3)).astype(np.float32)
    im = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8), "RGB")
    r = int(rng.integers(min(w, h) // 8, min(w, h) // 3))
    cx, cy = int(rng.integers(r, w - r)), int(rng.integers(r, h - r))
    draw_shape(ImageDraw.Draw(im), cls, cx, cy, r, tuple(int(v) for v in rng.integers(0, 256, size=3)), rng)
    im.save(os.path.join(out, cls, f"{n:06d}.jpg"), quality=90)

if __name__ == "__main__":
    main()
