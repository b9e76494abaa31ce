#!/usr/bin/env bash
# The bundled-model validity study behind docs/guides/validators.md ("Verdicts on real
# images"): small campaigns on the bundled MNIST generators, one study over their failing
# images, and the verdicts read back from docs/data/bundled-study-verdicts.csv.
#
#   LATENTFUZZ_HOME=/tmp/calib [GENAI_TIGS=genai_tigs] bash docs/walkthrough/calibration_study.sh
#
# Every campaign has a fixed --seed and runs on the CPU with one thread, so the same
# command gives the same images. The answers were given by eye through the labelling flow
# (engine/labelling/validity.py) and exported with `labels export STUDY --wide`; this
# script imports that export, so the study comes back with its answers. With
# GENAI_TIGS=<a clone of deeptestai/genai_tigs> it also imports the ICST MNIST study's
# human verdicts with their images.
set -euo pipefail
: "${LATENTFUZZ_HOME:?set LATENTFUZZ_HOME to the home to build}"
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python}
lf() { "$PY" -m engine.cli.main "$@"; }
ids=()
run() {
  local out
  out=$(lf run -q --threads 1 --device cpu "$@")
  echo "$out"
  ids+=("$(sed -n 's/^campaign \([^ ]*\) finished.*/\1/p' <<<"$out")")
}

run --name calib-vae-ga-high --generator vae --strategy ga --perturbation high --seeds 30 --seed 1
run --name calib-gan-ga-high --generator gan --strategy ga --perturbation high --seeds 30 --seed 1
run --name calib-dm-ga-high --generator dm --strategy ga --perturbation high --seeds 30 --seed 1
run --name calib-vae-sinvad --generator vae --strategy sinvad --seeds 30 --seed 2
run --name calib-gan-ga-high-2 --generator gan --strategy ga --perturbation high --seeds 30 --seed 2
run --name calib-vae-interpolate --generator vae --strategy interpolate --seeds 30 --seed 4

echo "campaigns: ${ids[*]}"

# How the study was made (its answers were then given on the Label page's calls, k = 1):
#   latentfuzz labels create --campaign ID ... --k 1 --gold-rate 0.1 --seed 0 \
#       --name "bundled MNIST campaigns, labelled by an AI session"
# Here it comes back with its answers: the export's image paths name the campaign ids of
# the original run, mapped to this run's in the order above, and its gold images (MNIST
# test images, named by index) are written again.
"$PY" - docs/data/bundled-study-verdicts.csv "$LATENTFUZZ_HOME" "${ids[@]}" <<'PYEOF'
import sys
from pathlib import Path

import pandas as pd

from engine.core.images import to_pil, to_uint8
from engine.datasets import get_dataset

src, home, new = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
# The campaigns of the labelled study, in the order the runs above make them.
ORIGINAL = [
    "20261127-085723-c6ba",  # calib-vae-ga-high
    "20261127-085753-060a",  # calib-gan-ga-high
    "20261127-085938-08e2",  # calib-dm-ga-high
    "20261127-091741-13fd",  # calib-vae-sinvad
    "20261127-092605-4dfb",  # calib-gan-ga-high-2
    "20261127-092900-3f76",  # calib-vae-interpolate
]
df = pd.read_csv(src, dtype=str, keep_default_na=False)
ids = dict(zip(ORIGINAL, new, strict=True))
df["campaign_id"] = df["campaign_id"].map(lambda c: ids.get(c, c))
for old, now in ids.items():
    df["image"] = df["image"].str.replace(f"campaigns/{old}/", f"campaigns/{now}/", regex=False)
test = get_dataset("mnist").load("test")
for rel, ext in zip(df["image"], df["external_id"], strict=True):
    if ext.startswith("test:"):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        to_pil(to_uint8(test.images[int(ext[5:])][None]).numpy()[0]).save(home / rel)
df.to_csv(home / "bundled-study-verdicts.csv", index=False)
PYEOF
lf labels import "$LATENTFUZZ_HOME/bundled-study-verdicts.csv" --dataset mnist

# The ICST MNIST human study with its images (a clone of deeptestai/genai_tigs).
if [ -n "${GENAI_TIGS:-}" ]; then
  lf labels import "$GENAI_TIGS/evaluation_results/MTurk_study_results/human_study_MNIST.csv" \
    --dataset mnist --images "$GENAI_TIGS/generated_images/mnist"
fi
