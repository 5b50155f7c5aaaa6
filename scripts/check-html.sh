#!/usr/bin/env bash
# Renders a `report --html` page in a real browser (headless Chromium) and checks the
# screenshot: a before/after Hilbert clustering of a bundled table, drawn as the page a user
# opens. Needs Debian's chromium package (apt-get install chromium); it is not part of the
# README test command because CI machines do not have a browser.
#
#   scripts/check-html.sh [OUT_DIR]     (default: a temporary directory; the PNG is kept there)
set -euo pipefail
cd "$(dirname "$0")/.."
browser=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$browser" ]]; then
    echo "check-html: no chromium on PATH (apt-get install chromium)" >&2
    exit 2
fi
out=${1:-$(mktemp -d)}
mkdir -p "$out"
cargo build --quiet --bin delta-layout
dl=target/debug/delta-layout
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r testdata/http-requests-delta-rs "$work/t"
"$dl" optimize "$work/t" --hilbert EdgeStartTimestamp,EdgeResponseBytes --target-size 16KiB --quiet --no-report
"$dl" report "$work/t" --compare 1 --columns EdgeStartTimestamp,EdgeResponseBytes --html "$out/report.html" > /dev/null

# Flags as this machine needs them: no sandbox as root, no GPU, no network chatter.
"$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$work/profile" --window-size=1000,1400 --hide-scrollbars \
    --screenshot="$out/report.png" "file://$out/report.html" 2> "$work/chromium.log" || {
    cat "$work/chromium.log" >&2
    exit 1
}
python3 - "$out/report.png" <<'PY'
import struct, sys, zlib
path = sys.argv[1]
data = open(path, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
width, height = struct.unpack(">II", data[16:24])
bit_depth, color_type = data[24], data[25]
# Decode the image: concatenate IDAT chunks, inflate, undo the per-row filters.
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
red, green = count((0xd9, 0x53, 0x4f)), count((0x5c, 0xb8, 0x5c))
print(f"check-html: {path}: {width}x{height}, {red} pixels of file-range bars, {green} of skipping bars")
assert width == 1000 and height == 1400, "unexpected size"
assert red > 500, "the file-range bars did not render"
assert green > 100, "the skipping bars did not render"
PY
echo "check-html: ok ($out/report.png)"
