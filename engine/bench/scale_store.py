"""Evidence at scale: a store of N individual rows, every named query and page timed.

    .venv/bin/python engine/bench/scale_store.py --rows 10000000 --home /tmp/scale

1. Runs a few real campaigns (VAE and GAN, `high`, 10 seeds, 250 generations, every
   individual recorded) into the home, once (kept if the home already holds them).
2. Replicates them until `individuals` holds --rows rows. Clones are inserted a batch at
   a time with their rows interleaved, ordered by generation then clone, as campaigns
   running side by side write them; not one campaign appended after another. Every 5th
   batch forms a study, so the study queries have something to find.
3. Times every named read of store/ (median of 3, each opening the file as
   the dashboard does: attached, then released), `failing_seeds` over 175 campaigns, and
   every page through Streamlit's AppTest (script time of the first run, caches cold, and
   of a second).
4. Prints the table as markdown (the README's).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))


def sources(home: Path) -> list[str]:
    """The real campaigns the store is built from (run once)."""
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.campaign.config import parse_config
    from engine.campaign.runner import run_campaign
    from store import Store
    from store import campaigns as sc

    store = Store(home / "latentfuzz.duckdb")
    have = sc.list_campaigns(store)
    real = have[~have["id"].str.startswith("x")]["id"].tolist()
    if real:
        return real
    out = []
    for gen in ("vae", "gan"):
        sp = {"generations": 250, "perturbation": "high"}
        cfg = parse_config(
            {"seeds": 10, "seed": 1, "generator": gen, "name": f"src-{gen}", "strategy_params": sp}
        )
        out.append(run_campaign(cfg, home, campaign_id=f"src-{gen}").campaign_id)
    return out


def replicate(home: Path, src: list[str], rows: int, batch: int = 25) -> int:
    """Clone the source campaigns, `batch` clones per insert, until individuals holds
    `rows` rows; returns the campaign count."""
    # Deferred (start-up time: loads duckdb, pandas).
    from store import Store, scale

    store = Store(home / "latentfuzz.duckdb")
    n = scale.row_count(store, "individuals")
    k = scale.clone_count(store)
    per = scale.individuals_per_campaign(store)
    b = k // batch
    while n < rows:
        # Every 5th batch: its first 5 clones form a study (Compare's default selection).
        study = f"scale-study-{b}" if b % 5 == 0 else None
        pairs = [
            (src[(k + i) % len(src)], f"x{k + i:06d}", study if i < 5 else None)
            for i in range(batch)
        ]
        scale.clone(store, pairs)
        k += batch
        b += 1
        n += sum(int(per[s]) for s, _, _ in pairs)
        print(f"\r{k} campaigns, {n:,} individual rows", end="", file=sys.stderr)
    print(file=sys.stderr)
    scale.checkpoint(store)
    return k + len(src)


def timed(fn, reps: int = 3) -> float:
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def time_queries(home: Path) -> list[tuple[str, float]]:
    # Deferred (start-up time: loads torch, scipy, duckdb).
    from engine.labelling.validity import failing_seeds
    from store import Store, maintenance
    from store import campaigns as sc
    from store import metrics as sm
    from store import studies as ss

    store = Store(home / "latentfuzz.duckdb")
    camps = sc.list_campaigns(store)
    cid = camps["id"].iloc[len(camps) // 2]
    ids5, ids175 = camps["id"].head(5).tolist(), camps["id"].head(175).tolist()
    study = ss.campaign_studies(store)["study"].iloc[0]
    calls = {
        "list_campaigns": lambda: sc.list_campaigns(store),
        "campaign": lambda: sc.campaign(store, cid),
        "summary": lambda: sc.summary(store, cid),
        "campaigns_by_id (5)": lambda: sc.campaigns_by_id(store, ids5),
        "seeds_of (175)": lambda: sc.seeds_of(store, ids175),
        "best_fitness_of (5)": lambda: sc.best_fitness_of(store, ids5),
        "seeds": lambda: sc.seeds(store, cid),
        "generations": lambda: sc.generations(store, cid),
        "generations (one seed)": lambda: sc.generations(store, cid, 0),
        "individuals (one seed)": lambda: sc.individuals(store, cid, 0),
        "progress": lambda: sc.progress(store, cid),
        "schema_info": lambda: maintenance.schema_info(store),
        "study_table": lambda: ss.study_table(store, study),
        "studies": lambda: ss.campaign_studies(store),
        "metrics": lambda: sm.metrics(store, cid),
        "escape_matrix": lambda: sc.escape_matrix(store, cid),
        "metrics_table (5)": lambda: sm.metrics_table(store, ids5),
        "strategy_table": lambda: ss.strategy_table(store, study),
        "failing_seeds (175 campaigns)": lambda: failing_seeds(store, ids175),
    }
    return [(name, timed(fn)) for name, fn in calls.items()]


def time_pages(home: Path) -> list[tuple[str, float, float]]:
    """(page, first run s, second run s): AppTest script time, caches cleared first."""
    # Deferred (start-up time: loads streamlit).
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    # Deferred (start-up time: loads duckdb, pandas, pyarrow).
    from store import Store
    from store import campaigns as sc

    os.environ["LATENTFUZZ_HOME"] = str(home)
    ids = sc.list_campaigns(Store(home / "latentfuzz.duckdb"))["id"].tolist()
    # Issue 12 names Compare with 5 campaigns (its default is the latest study, or 3).
    pages = [(p.name, p.name) for p in sorted((REPO / "pages").glob("*.py"))]
    pages.append(("compare.py (5 campaigns)", "compare.py"))
    out = []
    for name, page in pages:
        st.cache_resource.clear()
        st.cache_data.clear()
        at = AppTest.from_file(str(REPO / "dashboard" / "app.py"), default_timeout=600).run()
        at.switch_page(f"../pages/{page}")
        if page == "campaign.py":
            at.query_params["id"] = ids[0]
        if name == "compare.py (5 campaigns)":
            at.query_params["id"] = ids[:5]
        runs = []
        for _ in range(2):
            t = time.perf_counter()
            at.run()
            runs.append(time.perf_counter() - t)
        if at.exception:
            print(f"{page}: {at.exception[0].value}", file=sys.stderr)
        out.append((name, *runs))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000, help="individual rows to reach")
    ap.add_argument("--home", type=Path, required=True, help="folder of the scale store")
    ap.add_argument("--build-only", action="store_true", help="build the store, time nothing")
    a = ap.parse_args()
    a.home.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    src = sources(a.home)
    n = replicate(a.home, src, a.rows)
    built = time.perf_counter() - t0
    # Deferred (start-up time: loads duckdb, pandas).
    from store import Store, scale

    store = Store(a.home / "latentfuzz.duckdb")
    counts = {
        t: scale.row_count(store, t) for t in ("campaigns", "seeds", "generations", "individuals")
    }
    size = (a.home / "latentfuzz.duckdb").stat().st_size / 2**30
    if a.build_only:
        print(f"{counts} in {size:.2f} GiB, built in {built:.0f} s")
        return
    q = time_queries(a.home)
    p = time_pages(a.home)
    print(
        f"\nStore: {', '.join(f'{v:,} {k}' for k, v in counts.items())} ({n} campaigns, "
        f"{size:.2f} GiB); built in {built:.0f} s\n"
    )
    print("| named query | seconds (median of 3) |\n|---|---|")
    for name, s in q:
        print(f"| `{name}` | {s:.3f} |")
    print("\n| page | script time, first run (s) | second run (s) |\n|---|---|---|")
    for page, first, second in p:
        print(f"| {page} | {first:.2f} | {second:.2f} |")


if __name__ == "__main__":
    main()
