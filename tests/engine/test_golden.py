"""Golden outcomes: small reference campaigns, one per strategy x generator that matters,
give exactly the per-seed outcomes pinned in tests/golden/outcomes.json (failed, the
iteration of the failure, the predicted class, evaluations, best fitness to 6 significant digits).

A change to the search's draws fails here, loudly. Regenerate only on purpose, with a
note in docs/changelog.md (`make golden` prints the line it needs).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.classifiers import inference
from tests.golden import cases as cases_module
from tests.golden import regenerate as golden
from tests.golden.cases import cases, outcome

REPO = Path(__file__).resolve().parents[2]
PINNED = golden.load()
CASES = cases()


def test_every_case_is_pinned_with_its_settings():
    stale = [n for n in CASES if n not in PINNED or PINNED[n]["settings"] != CASES[n]]
    gone = sorted(set(PINNED) - set(CASES))
    assert not stale and not gone, (
        f"golden cases not pinned or pinned with other settings: {stale}; pinned but no "
        f"longer cases: {gone}; {golden.HOW}"
    )


def test_the_changelog_notes_the_pinned_outcomes():
    data = json.loads(golden.FILE.read_text(encoding="utf-8"))
    assert data["fingerprint"] == golden.fingerprint(data["cases"]), (
        f"{golden.FILE.name} was edited by hand; {golden.HOW}"
    )
    line = golden.changelog_line(data["cases"])
    assert line in (REPO / golden.CHANGELOG).read_text(encoding="utf-8"), (
        f"{golden.CHANGELOG} has no note for the pinned outcomes: add an entry containing "
        f"'{line}' that says which change moved the draws and which figures it affects"
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_outcomes_match_the_pinned_ones(name: str, tmp_path: Path):
    if name not in PINNED:
        pytest.fail(f"golden case {name!r} is not pinned; {golden.HOW}")
    seeds = outcome(CASES[name], tmp_path)
    changed = golden.differences(name, PINNED[name], CASES[name], seeds)
    made_on, here = golden.pinned_cpu(), golden.cpu()
    cpu = "" if made_on == here else f" (pinned with {made_on} kernels, run with {here})"
    assert not changed, (
        f"the search's draws changed{cpu}: "
        + "; ".join(changed[:6])
        + (f" (and {len(changed) - 6} more)" if len(changed) > 6 else "")
        + f"; {golden.HOW}"
    )


def test_a_change_to_the_draws_is_named_seed_by_seed(tmp_path: Path):
    # Another random seed stands for a change to the draws: the comparison must see it.
    name = "ga-strong-vae"
    moved = outcome({**CASES[name], "seed": 2}, tmp_path)
    changed = golden.differences(name, PINNED[name], CASES[name], moved)
    assert changed and all(line.startswith(f"{name} seed ") for line in changed)
    assert golden.differences(name, PINNED[name], {**CASES[name], "seed": 2}, moved) == [
        f"{name}: its settings changed"
    ]


def test_a_change_in_the_last_bits_of_the_logits_is_caught(tmp_path: Path):
    # The classifier run eagerly instead of as its frozen graph: the change (c042932) that
    # moved the documented figures while every test passed.
    name = "ga-strong-vae"
    with inference.eager_only():
        moved = outcome(CASES[name], tmp_path)
    assert golden.differences(name, PINNED[name], CASES[name], moved)


def test_a_strategy_without_a_case_gets_one(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(
        cases_module, "CASES", {k: v for k, v in cases_module.CASES.items() if "random" not in k}
    )
    auto = cases_module.cases()["random-vae-auto"]
    assert auto["strategy"] == "random" and auto["strategy_params"] == {"generations": 20}


def test_check_compares_without_writing(capsys):
    before = golden.FILE.read_bytes()
    assert golden.main(["--check", "--only", "ga-strong-vae"]) == 0
    assert capsys.readouterr().out.startswith("golden outcomes unchanged")
    assert golden.FILE.read_bytes() == before
