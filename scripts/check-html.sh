#!/usr/bin/env bash
# Renders a `report --html` and a `sweep --html` page in a real browser (headless Chromium)
# and checks the screenshots: a before/after Hilbert clustering of a bundled table, and a
# sweep of two layouts over four target sizes, drawn as the pages a user opens. Needs
# Debian's chromium package (apt-get install chromium); it is not part of the README test
# command because CI machines do not have a browser.
#
#   scripts/check-html.sh [OUT_DIR]     (default: a temporary directory; the PNGs are kept there)
set -euo pipefail
cd "$(dirname "$0")/.."
# Targets of a few KiB, below the 1 MiB floor of target sizes (docs/commands.md, "--target-size").
export DELTA_LAYOUT_MIN_TARGET_SIZE=1
browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$browser" ]]; then
    echo "check-html: no chromium on PATH (apt-get install chromium)" >&2
    exit 2
fi
out=${1:-$(mktemp -d)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cargo build --quiet --bin delta-layout
dl=target/debug/delta-layout
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r testdata/http-requests-delta-rs "$work/t"
cp -r testdata/http-requests-delta-rs "$work/s"
"$dl" optimize "$work/t" --hilbert EdgeStartTimestamp,EdgeResponseBytes --target-size 16KiB --quiet --no-report
"$dl" report "$work/t" --compare 1 --columns EdgeStartTimestamp,EdgeResponseBytes --html "$out/report.html" > /dev/null
"$dl" sweep "$work/s" --target-sizes 1KiB,2KiB,4KiB,8KiB --layout compact \
    --layout hilbert:EdgeStartTimestamp,EdgeResponseBytes --quiet --html "$out/sweep.html" > /dev/null

# Flags as this machine needs them: no sandbox as root, no GPU, no network chatter.
shoot() {
    "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$work/profile" --window-size=1100,1600 --hide-scrollbars \
        --screenshot="$2" "file://$1" 2> "$work/chromium.log" || {
        cat "$work/chromium.log" >&2
        exit 1
    }
}
shoot "$out/report.html" "$out/report.png"
shoot "$out/sweep.html" "$out/sweep.png"
python3 - "$out/report.png" "$out/sweep.png" <<'PY'
import struct, sys, zlib
def decode(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    color_type = data[25]
    # Concatenate IDAT chunks, inflate, undo the per-row filters.
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(idat)
    channels = {2: 3, 6: 4, 0: 1, 4: 2}[color_type]
    stride = width * channels
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(height):
        f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
        for x in range(stride):
            a = line[x - channels] if x >= channels else 0
            b = prev[x]; c = prev[x - channels] if x >= channels else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + b) & 255
            elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line)); prev = line
    def count(rgb):
        return sum(1 for r in rows for x in range(0, stride, channels) if tuple(r[x:x + 3]) == rgb)
    return width, height, count
report, sweep = sys.argv[1], sys.argv[2]
width, height, count = decode(report)
red, green, blue = count((0xd9, 0x53, 0x4f)), count((0x5c, 0xb8, 0x5c)), count((0x4a, 0x7f, 0xb5))
print(f"check-html: {report}: {width}x{height}, {red} pixels of file-range bars, "
      f"{green} of skipping bars, {blue} of histogram bars")
assert width == 1100 and height == 1600, "unexpected size"
assert red > 500, "the file-range bars did not render"
assert green > 100, "the skipping bars did not render"
assert blue > 100, "the histogram bars did not render"
width, height, count = decode(sweep)
first, second = count((0x4a, 0x7f, 0xb5)), count((0xd9, 0x53, 0x4f))
print(f"check-html: {sweep}: {width}x{height}, {first} pixels of the first layout's lines, "
      f"{second} of the second's")
assert first > 100, "the first layout's lines did not render"
assert second > 100, "the second layout's lines did not render"
PY
echo "check-html: ok ($out/report.png, $out/sweep.png)"
