#!/usr/bin/env bash
# Builds the Debian package from the current build tree, unpacks it into a
# temporary root with dpkg-deb (no root rights, nothing installed on the
# machine), and runs the unpacked programs from there: the CLI's version and
# a short training run on the bundled sample project, and the app offscreen
# until its window is shown. Finally lintian must report no errors.
#   package_test.sh BUILD_DIR [HAS_APP: 1 when the build has the desktop app]
set -euo pipefail
BUILD=$(cd "$1" && pwd)
HAS_APP=${2:-0}
TMP=$(mktemp -d /tmp/dc_package_test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

cpack -G DEB --config "$BUILD/CPackConfig.cmake" -B "$TMP/pkg" >"$TMP/cpack.log" 2>&1 ||
  { cat "$TMP/cpack.log"; fail "cpack could not build the package"; }
DEB=$(ls "$TMP"/pkg/deepcanvas_*.deb 2>/dev/null | head -1)
[ -n "$DEB" ] || { ls -R "$TMP/pkg"; fail "no deepcanvas_*.deb produced"; }
echo "package: $(basename "$DEB")"
dpkg-deb --info "$DEB" | grep -E "Package|Version|Depends" || true

ROOT="$TMP/root"
dpkg-deb -x "$DEB" "$ROOT"
for f in usr/bin/deepcanvas-cli usr/share/applications/deepcanvas.desktop \
         usr/share/mime/packages/deepcanvas.xml usr/share/icons/hicolor/48x48/apps/deepcanvas.png \
         usr/share/man/man1/deepcanvas-cli.1.gz usr/share/doc/deepcanvas/copyright \
         usr/share/deepcanvas/resources/templates/two_conv_cnn.dcproj \
         usr/share/deepcanvas/sample_data/sample_project.dcproj; do
  [ -e "$ROOT/$f" ] || fail "$f is missing from the package"
done

# Run from a directory outside the source and build trees, so nothing can be
# found relative to them by accident.
cd "$TMP"
CLI="$ROOT/usr/bin/deepcanvas-cli"
"$CLI" --version | tee "$TMP/version.txt"
grep -q "deepcanvas-cli" "$TMP/version.txt" || fail "--version printed no name"
grep -q "CUDA:" "$TMP/version.txt" || fail "--version printed no build options"

"$CLI" train "$ROOT/usr/share/deepcanvas/sample_data/sample_project.dcproj" --epochs 1 \
  --steps-per-epoch 20 --quiet --json --checkpoint "$TMP/model.safetensors" | tee "$TMP/train.txt"
grep -q '"test_accuracy"' "$TMP/train.txt" || fail "train printed no result"
[ -s "$TMP/model.safetensors" ] || fail "train wrote no checkpoint"

if [ -x "$ROOT/usr/bin/deepcanvas" ]; then
  QT_QPA_PLATFORM=offscreen timeout 120 "$ROOT/usr/bin/deepcanvas" \
    "$ROOT/usr/share/deepcanvas/sample_data/sample_project.dcproj" --screenshot "$TMP/window.png" ||
    fail "the app did not start from the package"
  [ -s "$TMP/window.png" ] || fail "the app showed no window"
  "$ROOT/usr/bin/deepcanvas" --version | grep -q "CUDA:" || fail "app --version printed no options"
  # No display: a message and a clean exit, not Qt's abort.
  set +e
  env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$ROOT/usr/bin/deepcanvas" \
    "$ROOT/usr/share/deepcanvas/sample_data/sample_project.dcproj" >"$TMP/nodisplay.txt" 2>&1
  rc=$?
  set -e
  cat "$TMP/nodisplay.txt"
  [ "$rc" = 1 ] || fail "without a display the app exited with $rc (expected 1)"
  grep -q "no display" "$TMP/nodisplay.txt" || fail "without a display the app said nothing useful"
  # An unwritable data folder (below a regular file, so even root cannot
  # create it): the window still opens, and autosave says it is off.
  XDG_DATA_HOME=/etc/hostname/data QT_QPA_PLATFORM=offscreen timeout 120 \
    "$ROOT/usr/bin/deepcanvas" "$ROOT/usr/share/deepcanvas/sample_data/sample_project.dcproj" \
    --screenshot "$TMP/window2.png" >"$TMP/rodata.txt" 2>&1 ||
    { cat "$TMP/rodata.txt"; fail "the app did not start with an unwritable data folder"; }
  grep -q "Autosave is off" "$TMP/rodata.txt" ||
    { cat "$TMP/rodata.txt"; fail "no message about the unwritable data folder"; }
elif [ "$HAS_APP" = 1 ]; then
  fail "the build has the desktop app but the package does not"
else
  echo "note: this build has no desktop app (DEEPCANVAS_GUI=OFF); only the CLI was checked"
fi

if command -v lintian >/dev/null; then
  lintian --tag-display-limit 0 "$DEB" >"$TMP/lintian.txt" 2>&1 || true
  cat "$TMP/lintian.txt"
  if grep -q "^E:" "$TMP/lintian.txt"; then fail "lintian reports errors"; fi
else
  fail "lintian is not installed (installer/install-deps.sh installs it)"
fi
echo "PASS"
