"""AppTest of the Validity studies page's Calibration tab (dashboard/calibration.py): the
Score button scores the study, then the table, the headline and the ROC curves show."""

from __future__ import annotations

import json
from datetime import datetime

import numpy as np

from engine.labelling.agreement import INVALID
from engine.labelling.validity import StudyConfig, create_study
from engine.validators import VALIDATORS
from store import Store, judging
from store import calibration as store_cal
from store import labels as ls
from tests.pages.charts import specs


def test_the_calibration_tab_scores_the_study_and_shows_the_table(page, study):
    home, cid, _ = study
    store = Store(home / "latentfuzz.duckdb")
    sid = create_study(store, home, StudyConfig(campaigns=[cid], gold_rate=0.2, k=2, seed=9))
    items = ls.items(store, sid).set_index("item_id")
    failing = items.index[items["kind"].ne("gold")].to_numpy()
    bad = set(np.random.default_rng(1).permutation(failing)[: len(failing) // 2].tolist())
    for who in ("sim-a", "sim-b"):  # two simulated labellers who agree on every image
        judging.join(store, sid, who)
        while (i := judging.next_item(store, sid, who)) is not None:
            value = INVALID if i in bad else int(items.loc[i, "expected"])
            judging.answer(store, sid, i, who, value, datetime.now())
    at = page(None)
    at.switch_page("../pages/studies.py")
    at.query_params["study"] = sid
    at.query_params["tab"] = "Calibration"
    at.run()
    assert not at.exception
    assert any(i.value.startswith("No validity filter has scored this study") for i in at.info)
    at.button(key="cal_score").click().run()
    assert not at.exception, at.exception
    # The bundled default generator has no discriminator: skipped, with the reason.
    assert any(
        w.value.startswith("discriminator skipped: validity filter 'discriminator' needs a GAN")
        for w in at.warning
    )
    # Every filter but the discriminator (five are registered by now).
    others = sorted(n for n in VALIDATORS.names() if n != "discriminator")
    assert store_cal.scored_validators(store, sid) == others
    table = next(d.value for d in at.dataframe if "ROC AUC" in d.value.columns)
    # classifier-confidence also scores label preservation: a row of its own.
    assert set(table["verdict"]) == {"validity", "preservation"}
    table = table[table["verdict"] == "validity"]
    assert sorted(table["validator"]) == others
    assert table["images"].tolist() == [str(len(failing))] * len(others)
    assert all(x.endswith(f" of {len(failing)}") for x in table["decides at 95% precision"])
    heads = [m.value for m in at.markdown if "agrees with people at kappa" in m.value]
    assert any(h.startswith("**ssim-nearest agrees with people at kappa ") for h in heads)
    # The ROC curves: one line per validator, coloured by it, over the chance diagonal.
    roc = [c for c in specs(at) if "false positive rate" in json.dumps(c)]
    assert len(roc) == 1
    lines = [la for la in roc[0]["layer"] if la.get("encoding", {}).get("color")]
    assert lines[0]["encoding"]["color"]["field"] == "validator"
    assert len(roc[0]["layer"]) == 2  # (the points: roc_points, tested in the engine)
