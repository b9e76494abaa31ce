"""The README walk-through's toy image folder: 240 drawings of circles, squares and
triangles (40 to 63 px, half PNG, half JPEG), plus a text file and a broken JPEG that
`latentfuzz data check` rejects. Usage: python make_shapes.py [DIR] (default ./shapes)."""

import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

root = Path(sys.argv[1] if len(sys.argv) > 1 else "shapes")
rng = np.random.default_rng(0)
for cls in ("circle", "square", "triangle"):
    (root / cls).mkdir(parents=True, exist_ok=True)
    for i in range(80):
        s = int(rng.integers(40, 64))
        bg = tuple(int(v) for v in rng.integers(0, 90, 3))
        fg = tuple(int(v) for v in rng.integers(150, 256, 3))
        im = Image.new("RGB", (s, s), bg)
        d = ImageDraw.Draw(im)
        r = rng.uniform(0.25, 0.42) * s
        cx, cy = rng.uniform(0.4, 0.6, 2) * s
        if cls == "circle":
            d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=fg)
        elif cls == "square":
            d.rectangle([cx - r, cy - r, cx + r, cy + r], fill=fg)
        else:
            d.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=fg)
        im.save(root / cls / f"{i:03d}.{'jpg' if i % 2 else 'png'}")
(root / "notes.txt").write_text("not an image")
(root / "circle" / "broken.jpg").write_bytes(b"\xff\xd8garbage")
print(f"wrote {root}")
