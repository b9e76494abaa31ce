"""`make golden`: run every golden case (tests/golden/cases.py) and write their per-seed
outcomes to tests/golden/outcomes.json, which tests/engine/test_golden.py compares with.

    python -m tests.golden.regenerate                # every case; rewrites the file
    python -m tests.golden.regenerate --only A,B      # those cases; the others kept
    python -m tests.golden.regenerate --check        # compare only; exit 1 on a change

Regenerate only when a change to the search's draws is intended, and note it in
docs/changelog.md: the file's fingerprint, which this command prints, must appear there
(tests/engine/test_golden.py checks it). ``$LATENTFUZZ_THREADS`` sets the torch threads
(default 1); `--check` under another count shows that outcomes do not depend on it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from engine.core import threads

# Before torch loads (tests.golden.cases imports it): libgomp reads the policy once, and
# spinning threads crawl on a shared machine (engine/core/threads.py).
threads.set_wait_policy()

import torch  # noqa: E402

from tests.golden.cases import DIGITS, cases, outcome  # noqa: E402

FILE = Path(__file__).with_name("outcomes.json")
CHANGELOG = "docs/changelog.md"
HOW = (
    "if the change to the search's draws is intended, regenerate with `make golden` "
    "(python -m tests.golden.regenerate) and add a note to docs/changelog.md naming the "
    "change and the fingerprint it prints"
)


def fingerprint(pinned: dict[str, Any]) -> str:
    """12 hex digits of the pinned cases' SHA-256, written the same way whatever the order."""
    text = json.dumps(pinned, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def changelog_line(pinned: dict[str, Any]) -> str:
    """The words docs/changelog.md must contain for the pinned outcomes."""
    return f"golden outcomes `{fingerprint(pinned)}`"


def cpu() -> str:
    """The instruction set torch's kernels use here. The classifiers' frozen graphs
    (engine/classifiers/inference.py) compute in the last bits by it, and the draws follow:
    with oneDNN capped at AVX2 on this AVX-512 machine, 27 of 129 pinned ones moved."""
    return torch.backends.cpu.get_cpu_capability()


def pinned_cpu(path: Path = FILE) -> str | None:
    """The instruction set the pinned outcomes were made with."""
    return json.loads(path.read_text(encoding="utf-8")).get("cpu") if path.exists() else None


def load(path: Path = FILE) -> dict[str, Any]:
    """The pinned cases: name -> {"settings": ..., "seeds": [...]}, empty when none."""
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))["cases"]


def dump(pinned: dict[str, Any]) -> str:
    """The file's text: one line per seed, so a changed draw shows as a changed line."""
    out = [
        "{",
        f'  "regenerate": {json.dumps("make golden (python -m tests.golden.regenerate)")},',
        f'  "digits": {DIGITS},',
        f'  "fingerprint": "{fingerprint(pinned)}",',
        f'  "cpu": "{cpu()}",',
        '  "cases": {',
    ]
    names = sorted(pinned)
    for i, name in enumerate(names):
        case = pinned[name]
        out += [
            f"    {json.dumps(name)}: {{",
            f'      "settings": {json.dumps(case["settings"], sort_keys=True)},',
            '      "seeds": [',
        ]
        rows = [json.dumps(r) for r in case["seeds"]]
        out += [f"        {r}{',' if j < len(rows) - 1 else ''}" for j, r in enumerate(rows)]
        out += ["      ]", f"    }}{',' if i < len(names) - 1 else ''}"]
    return "\n".join([*out, "  }", "}", ""])


def run_case(settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The case's per-seed outcomes, from a campaign in a home that is then removed."""
    with tempfile.TemporaryDirectory(prefix="golden-") as home:
        return outcome(settings, Path(home))


def differences(
    name: str, pinned: dict[str, Any] | None, settings: dict[str, Any], seeds: list[dict]
) -> list[str]:
    """Lines naming what differs between a pinned case and a fresh run (none: equal)."""
    if pinned is None:
        return [f"{name}: not pinned"]
    if pinned["settings"] != settings:
        return [f"{name}: its settings changed"]
    if len(pinned["seeds"]) != len(seeds):
        return [f"{name}: {len(pinned['seeds'])} seeds pinned, {len(seeds)} now"]
    lines = []
    for old, new in zip(pinned["seeds"], seeds, strict=True):
        changed = [f"{k} {old.get(k)} -> {new.get(k)}" for k in new if old.get(k) != new.get(k)]
        if changed:
            lines.append(f"{name} seed {new['seed']}: {', '.join(changed)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.golden.regenerate", description=__doc__)
    ap.add_argument("--only", action="append", default=[], help="case names, comma-separated")
    ap.add_argument("--check", action="store_true", help="compare with the file, write nothing")
    args = ap.parse_args(argv)
    # One thread unless asked: the suite's setting (tests/conftest.py).
    threads.apply(threads.choose().threads if os.environ.get(threads.THREADS_ENV) else 1)
    todo = cases()
    args.only = [n.strip() for v in args.only for n in v.split(",") if n.strip()]
    unknown = [n for n in args.only if n not in todo]
    if unknown:
        print(f"error: unknown case {unknown}; expected one of {sorted(todo)}", file=sys.stderr)
        return 2
    names = args.only or sorted(todo)
    old = load()
    new = {} if not args.only else {n: c for n, c in old.items() if n in todo}
    changes: list[str] = []
    for name in names:
        settings = todo[name]
        seeds = run_case(settings)
        changes += differences(name, old.get(name), settings, seeds)
        new[name] = {"settings": settings, "seeds": seeds}
        print(f"{name}: {len(seeds)} seeds", file=sys.stderr)
    if not args.only:
        changes += [f"{n}: no longer a case" for n in sorted(set(old) - set(todo))]
    if args.check:
        print("\n".join(changes) if changes else "golden outcomes unchanged")
        return 1 if changes else 0
    FILE.write_text(dump(new), encoding="utf-8")
    print("\n".join(changes) if changes else "golden outcomes unchanged")
    print(f"wrote {FILE}; {CHANGELOG} must say: {changelog_line(new)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
