#!/usr/bin/env bash
# Renders the app icon PNGs (committed) with ImageMagick's drawing
# primitives; Debian's ImageMagick has no SVG delegate, so deepcanvas.svg
# (the scalable icon) and this script draw the same picture.
set -euo pipefail
cd "$(dirname "$0")"
convert -size 256x256 xc:none \
  \( -size 240x240 -define gradient:angle=135 gradient:'#3b82f6-#7c3aed' \) \
  -gravity northwest -geometry +8+8 -composite \
  \( -size 256x256 xc:none -fill white -draw "roundrectangle 8,8 247,247 48,48" \) \
  -compose DstIn -composite -compose over \
  -stroke white -strokewidth 10 -fill none \
  -draw "bezier 70,80 110,80 110,128 150,128" -draw "bezier 70,176 110,176 110,128 150,128" \
  -draw "line 150,128 196,128" -stroke none -fill white \
  -draw "roundrectangle 40,60 92,100 10,10" -draw "roundrectangle 40,156 92,196 10,10" \
  -draw "roundrectangle 130,104 186,152 12,12" -draw "circle 204,128 218,128" \
  deepcanvas-256.png
for s in 16 32 48 64 128; do convert deepcanvas-256.png -resize ${s}x${s} deepcanvas-${s}.png; done
