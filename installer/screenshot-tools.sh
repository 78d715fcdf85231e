#!/usr/bin/env bash
# What the docs' screenshots are taken with, installed from Debian on
# purpose (never by the build or the tests): Xvfb and openbox, so the app's
# windows have a window manager's title bar at 1280x720 and 1920x1080;
# ImageMagick's `import -window root` to grab that screen; and Chromium, run
# headless to photograph TensorBoard's page (docs/images/tensorboard.png: a
# 2-epoch `deepcanvas-cli train sample_data/sample_project.dcproj` run):
#
#   .venv-verify/bin/tensorboard --logdir ~/.local/share/DeepCanvas/runs --port 6006 &
#   chromium --headless --no-sandbox --disable-gpu --window-size=1280,800 \
#     --virtual-time-budget=20000 --screenshot=docs/images/tensorboard.png \
#     'http://localhost:6006/#scalars&tagFilter=step%2F(loss%7Caccuracy%7Clr%7Csamples)&_smoothingWeight=0'
#
# (The Scalars tab: the Time Series tab draws its cards only once they
# scroll into view, which a headless page with a tag filter never does.)
#
# TensorBoard itself comes from PyPI: installer/verify-venv.sh. Idempotent;
# run as root (or with sudo).
set -euo pipefail
need=()
for pair in chromium:chromium Xvfb:xvfb openbox:openbox import:imagemagick; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || need+=("${pair#*:}")
done
if [ ${#need[@]} -eq 0 ]; then
  echo "screenshot-tools: chromium, Xvfb, openbox and ImageMagick are installed"
  exit 0
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
chromium --version
