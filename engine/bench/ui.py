"""Time to act, as a user meets it in the browser (issue 36, point 7).

Measured in headless Chromium (Playwright driving Debian's `chromium`) against a
Streamlit server of the dashboard, beside a CPU-bound process that keeps one core busy:

- every page's first load (a new browser session opening its URL, until the page's script
  has finished and no rerun follows) and its rerun (the `r` key, until it has finished),
  with N campaigns in the store; the pages are timed on --repeat fresh servers (3), each
  figure the median of those loads, every load kept in the output;
- labelling: key press to the next image on screen, over 20 keys;
- launch: the New campaign page's Launch, for a 10-seed VAE campaign, to its first
  generation on the Campaign page (its convergence chart drawn).

    python -m engine.bench.ui [--campaigns 300] [--home DIR] [--out FILE] [--no-busy]
                              [--repeat 3] [--only PAGES] [--profile]

The home is built once (two real campaigns, cloned to N, and a study to label) and kept
when --home names one. Prints each figure beside its target and writes them all, with the
load average and the commit, to --out (default test-artifacts/ui-timing.json).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]

#: Keys pressed on the Label page, each timed to the next image.
LABEL_KEYS = 20
#: The issue's targets, in seconds.
TARGETS = {"first_load_s": 2.0, "rerun_s": 0.5, "label_p95_s": 0.3, "launch_s": 5.0}

# Every change of the app's script state, stamped with performance.now() (ms since the
# navigation began): a first load ends at the last "notRunning" that no rerun follows.
OBSERVER = """
window.__st = [];
new MutationObserver(() => {
  const a = document.querySelector('[data-testid=stApp]');
  const s = a && a.dataset.testScriptState;
  if (s && s !== window.__last) { window.__last = s; window.__st.push([s, performance.now()]); }
}).observe(document, {subtree: true, childList: true, attributes: true,
                      attributeFilter: ['data-test-script-state']});
"""
# Settled: idle, having run at least once since `since` (ms), and idle for `quiet` ms.
SETTLED = """([since, quiet]) => {
  const st = window.__st || [];
  const ran = st.some(([s, t]) => (s === 'running' || s === 'rerunRequested') && t >= since);
  const last = st[st.length - 1];
  return ran && last && last[0] === 'notRunning' && performance.now() - last[1] >= quiet;
}"""
# A seed's point in the convergence chart (Vega's SVG marks carry their fields as an
# aria-label): the chart's empty frame is drawn while the campaign starts.
FIRST_POINT = '.vega-embed svg [aria-label*="seed_idx:"]'
IDLE = "document.querySelector('[data-testid=stApp]')?.dataset.testScriptState === 'notRunning'"


def _store(home: Path) -> Any:
    # Deferred (start-up time: loads duckdb, pandas).
    from store import Store

    return Store(home / "latentfuzz.duckdb")


def build_home(home: Path, campaigns: int) -> dict[str, Any]:
    """Two real campaigns (VAE and GAN, 10 seeds), cloned until the store holds
    `campaigns`, and a k=1 study of the VAE's seed and result images; kept if built."""
    # Deferred (start-up time: loads torch, duckdb, pandas).
    from engine.campaign.config import parse_config
    from engine.campaign.runner import run_campaign
    from engine.labelling.validity import StudyConfig, create_study
    from store import campaigns as sc
    from store import judging, scale
    from store import labels as ls

    store = _store(home)
    have = sc.list_campaigns(store)
    src = sorted(have[have["id"].str.startswith("src-")]["id"])
    if not src:
        for gen in ("vae", "gan"):
            sp = {"generations": 60, "perturbation": "high"}
            raw = {"seeds": 10, "seed": 1, "generator": gen, "name": f"src-{gen}"}
            cfg = parse_config({**raw, "strategy_params": sp})
            src.append(run_campaign(cfg, home, campaign_id=f"src-{gen}").campaign_id)
    n = len(sc.list_campaigns(store))
    k = n - len(src)
    while n < campaigns:
        batch = min(25, campaigns - n)
        scale.clone(store, [(src[(k + i) % len(src)], f"x{k + i:06d}", None) for i in range(batch)])
        k, n = k + batch, n + batch
    # A study with answers left for a run's labellers (the label page's first load and its
    # keys): each run of a kept home answers 20 items of the study's 60.
    left = [
        sid
        for sid in ls.validity_studies(store)["id"]
        if (p := judging.progress(store, sid))["wanted"] - p["done"] >= LABEL_KEYS + 5
    ]
    if left:
        study = str(left[0])
    else:
        study = create_study(
            store, home, StudyConfig(campaigns=["src-vae"], gold_rate=0.8, seed_images=True, k=5)
        )
    scale.checkpoint(store)
    return {"sources": src, "study": study, "campaigns": n}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args: list[str], env: dict[str, str] | None = None, log: Path | None = None) -> Any:
    """A process in its own session, so that its whole group can be killed."""
    out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115 (the child keeps it)
    return subprocess.Popen(
        args, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )


def kill(proc: Any) -> None:
    """Its whole process group, and wait for it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def serve(home: Path, log: Path, runs: Path | None = None) -> tuple[Any, str]:
    """Streamlit on a free port; with `runs`, each script run is timed and counted into
    that file (engine/bench/ui_profile.py)."""
    port = free_port()
    env = {**os.environ, "LATENTFUZZ_HOME": str(home)}
    env.pop("LATENTFUZZ_WARM_LAUNCHER", None)  # as shipped: its warm launcher on (the suite's off)
    how = ["-m", "engine.bench.ui_profile", str(runs), "streamlit"] if runs else ["-m", "streamlit"]
    proc = start(
        [sys.executable, *how, "run", str(REPO / "dashboard" / "app.py")]
        + ["--server.port", str(port), "--server.headless", "true"]
        + ["--browser.gatherUsageStats", "false"],
        env,
        log,
    )
    return proc, listening(proc, port, log)


def listening(proc: Any, port: int, log: Path | None = None, timeout: float = 90) -> str:
    """The URL of the server `proc` once it listens on `port`; killed after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return f"http://127.0.0.1:{port}"
        time.sleep(0.2)
    kill(proc)
    raise RuntimeError(f"streamlit did not listen on {port} within {timeout:g} s; see {log}")


#: A page of nothing: what Streamlit itself costs a new browser on this machine, now.
EMPTY_PAGE = 'import streamlit as st\nst.title("Nothing")\nst.write("A page of one line.")\n'


def empty_page_load(browser: Any) -> float:
    """Seconds to a settled first load of a one-line Streamlit page, served the dashboard's
    way (its config) by a fresh server: the floor under every page's first load."""
    folder = Path(tempfile.mkdtemp(prefix="latentfuzz-empty-page-"))
    script = folder / "empty_page.py"
    script.write_text(EMPTY_PAGE)
    port = free_port()
    proc = start(
        [sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(port)]
        + ["--server.headless", "true", "--browser.gatherUsageStats", "false"]
    )
    try:
        url = listening(proc, port) + "/"
        first_load(browser, url, 0)  # its server's first page
        wait_idle(proc.pid)
        return first_load(browser, url, 0)["first_s"]
    finally:
        kill(proc)
        shutil.rmtree(folder, ignore_errors=True)


def tree_cpu(pid: int) -> float:
    """CPU seconds used so far by process `pid` and its descendants (0 for one gone)."""
    tick = os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for t in os.listdir(f"/proc/{p}/task"):
                todo += [int(c) for c in Path(f"/proc/{p}/task/{t}/children").read_text().split()]
        except (OSError, ValueError, IndexError):
            continue
    return total


def wait_idle(pid: int, window: float = 1.0, busy: float = 0.1, timeout: float = 90.0) -> float:
    """Until the server and its children (the warm launcher) have finished their start-up
    work: less than `busy` of a core used over `window` s. Its seconds waited: a page is
    not timed while the server still imports in the background, as no user's would be
    long after the server started."""
    start = time.monotonic()
    last = tree_cpu(pid)
    while time.monotonic() - start < timeout:
        time.sleep(window)
        now = tree_cpu(pid)
        if now - last < busy * window:
            break
        last = now
    return round(time.monotonic() - start, 1)


def server_runs(runs: Path | None, since: int) -> dict[str, Any] | None:
    """The script runs logged after line `since`: how many, their seconds, the store
    queries and connections, the st.rerun calls (None without a log)."""
    if runs is None or not runs.exists():
        return None
    lines = [json.loads(x) for x in runs.read_text().splitlines()[since:]]
    total = {"runs": len(lines), "fragments": sum(x["fragment"] for x in lines)}
    total["script_s"] = round(sum(x["script_s"] for x in lines), 3)
    for k in ("queries", "connections", "reruns"):
        total[k] = sum(x.get(k, 0) for x in lines)
    return total


def logged(runs: Path | None) -> int:
    return len(runs.read_text().splitlines()) if runs and runs.exists() else 0


def first_load(browser: Any, url: str, reruns: int = 3, runs: Path | None = None) -> dict[str, Any]:
    """A new session opening `url`: seconds from navigation to the settled page, then the
    median of `reruns` reruns (key r), each from the key to the settled page. With `runs`,
    what the server did for each (`server_runs`)."""
    mark = logged(runs)
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.add_init_script(OBSERVER)
    page = ctx.new_page()
    page.goto(url)
    page.wait_for_function(SETTLED, arg=[0, 700], timeout=120_000, polling=20)
    first = page.evaluate("window.__st.filter(([s]) => s === 'notRunning').pop()[1]") / 1000
    # The same page in a second tab of that browser: a new Streamlit session again, with
    # the app's scripts in the browser's cache, as for anyone past their first visit.
    tab = ctx.new_page()
    tab.goto(url)
    tab.wait_for_function(SETTLED, arg=[0, 700], timeout=120_000, polling=20)
    cached = tab.evaluate("window.__st.filter(([s]) => s === 'notRunning').pop()[1]") / 1000
    tab.close()
    paint = page.evaluate(
        "(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || null"
    )
    elements = page.evaluate("document.getElementsByTagName('*').length")
    server = {"first": server_runs(runs, mark)}  # both tabs' first loads
    mark = logged(runs)
    times = []
    for _ in range(reruns):
        page.evaluate("document.activeElement && document.activeElement.blur()")
        t0 = page.evaluate("performance.now()")
        page.keyboard.press("r")
        page.wait_for_function(SETTLED, arg=[t0, 400], timeout=60_000, polling=20)
        end = page.evaluate("window.__st.filter(([s]) => s === 'notRunning').pop()[1]")
        times.append((end - t0) / 1000)
    errors = page.locator("[data-testid=stException]").count()
    ctx.close()
    server["reruns"] = server_runs(runs, mark)
    rerun = round(statistics.median(times), 3) if times else None
    out = {
        "first_s": round(first, 3),
        "first_cached_s": round(cached, 3),
        "rerun_s": rerun,
        "reruns_s": [round(t, 3) for t in times],
        "exceptions": errors,
        "first_paint_s": round(paint / 1000, 3) if paint else None,
        "elements": elements,
    }
    return {**out, "server": server} if runs else out


def label_latency(browser: Any, url: str, keys: int = LABEL_KEYS) -> dict[str, Any]:
    """Key press to the next image on screen (loaded, the counter moved on)."""
    shown = (
        "([old, n]) => { const img = document.querySelector('[data-testid=stImage] img');"
        " const m = document.querySelector('[data-testid=stMetricValue]');"
        " return img && img.src !== old && img.complete && img.naturalWidth > 0"
        " && m && m.innerText.trim() === String(n); }"
    )
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.goto(url)
    page.get_by_text("Which class is this?").wait_for(timeout=120_000)
    page.wait_for_function(
        "document.querySelectorAll('[data-testid=stButton]').length >= 14 && " + IDLE,
        timeout=60_000,
    )
    times = []
    for step in range(1, keys + 1):
        old = page.locator("[data-testid=stImage] img").get_attribute("src")
        t0 = time.perf_counter()
        page.keyboard.press("3")
        page.wait_for_function(shown, arg=[old, step], timeout=30_000, polling=5)
        times.append(time.perf_counter() - t0)
        page.wait_for_function(IDLE, timeout=60_000)
    page.context.close()
    ms = sorted(1000 * t for t in times)
    return {
        "keys": len(ms),
        "median_ms": round(statistics.median(ms)),
        "p95_ms": round(ms[int(0.95 * (len(ms) - 1) + 0.5)]),
        "max_ms": round(ms[-1]),
        "over_1s": sum(t > 1000 for t in ms),
    }


def launch_to_first_generation(browser: Any, server: str, home: Path) -> dict[str, Any]:
    """New campaign, 10 seeds on the default VAE, Launch: seconds from the click to the
    first generation's points in the Campaign page's convergence chart. Stopped after."""
    # Deferred (start-up time: loads duckdb).
    from store import liveness

    page = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
    page.goto(f"{server}/new_campaign")
    page.wait_for_selector("h1", timeout=120_000)
    page.wait_for_function(IDLE, timeout=120_000)
    field = page.get_by_role("spinbutton", name="Seeds", exact=True)
    field.fill("10")
    field.press("Enter")
    page.wait_for_function(IDLE, timeout=60_000)
    t0 = time.perf_counter()
    page.get_by_role("button", name="Launch").click()
    page.wait_for_url("**/campaign?id=*", timeout=120_000)
    cid = page.url.split("id=")[1].split("&")[0]
    try:
        page.wait_for_selector(FIRST_POINT, state="attached", timeout=180_000)
        seconds = time.perf_counter() - t0
    finally:
        liveness.stop(home, cid)
        deadline = time.monotonic() + 60
        while liveness.alive(home, cid) and time.monotonic() < deadline:
            time.sleep(0.5)
        if liveness.alive(home, cid):
            liveness.stop(home, cid, signal.SIGKILL)
        page.context.close()
    return {"launch_s": round(seconds, 3), "campaign": cid}


def page_urls(url: str, study: str, stamp: int) -> dict[str, str]:
    """The pages timed, by name, at the server `url`."""
    ids = "&".join(f"id=x{i:06d}" for i in range(5))
    return {
        "campaigns": f"{url}/",
        "new_campaign": f"{url}/new_campaign",
        "campaign": f"{url}/campaign?id=src-vae",
        "compare (5 campaigns)": f"{url}/compare?{ids}",
        "studies": f"{url}/studies",
        "models": f"{url}/models",
        "label": f"{url}/label?study={study}&labeller=pages-{stamp}",
    }


def pooled(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """One page's first loads over fresh servers: the median, with every sample kept (a
    single load on this shared machine varied by 0.5 s from one run to the next)."""
    firsts = [r["first_s"] for r in samples]
    cached = [r["first_cached_s"] for r in samples]
    reruns = [t for r in samples for t in r["reruns_s"]]
    return {
        **samples[0],
        "first_s": round(statistics.median(firsts), 3),
        "first_all_s": firsts,
        "first_cached_s": round(statistics.median(cached), 3),
        "first_cached_all_s": cached,
        "rerun_s": round(statistics.median(reruns), 3) if reruns else None,
        "reruns_s": reruns,
        "exceptions": sum(r["exceptions"] for r in samples),
    }


def measure(
    home: Path,
    campaigns: int,
    busy: bool,
    log: Path,
    profile: bool = False,
    only: set[str] | None = None,
    repeat: int = 3,
) -> dict[str, Any]:
    """Every figure of the module docstring, in a dict (see `report`). `profile`: with
    what the server did for each (script runs, seconds, queries, reruns); `only`: those
    pages (and "label", "launch") alone; `repeat`: the pages timed on that many fresh
    servers, each figure their median (labelling and the launch: on the last one)."""
    # Deferred (start-up time: loads playwright).
    from playwright.sync_api import sync_playwright

    built = build_home(home, campaigns)
    hog = start([sys.executable, "-c", "while True: pass"]) if busy else None
    out: dict[str, Any] = {"campaigns": built["campaigns"], "busy_core": busy, "repeat": repeat}
    stamp = int(time.time())  # a labeller of its own per run: a kept home's study lasts
    samples: dict[str, list[dict[str, Any]]] = {}
    try:
        runs = home / "script-runs.jsonl" if profile else None
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            for rep in range(repeat):
                if runs is not None:
                    runs.unlink(missing_ok=True)
                # A fresh server each time: every page's first load is its first run there.
                server, url = serve(home, log, runs)
                try:
                    pages = page_urls(url, built["study"], stamp + rep)
                    # The server's first page pays for its imports (torch, the models).
                    first = first_load(browser, pages["campaigns"], 0)["first_s"]
                    out.setdefault("server_first_page_s", []).append(first)
                    out.setdefault("server_warm_up_s", []).append(wait_idle(server.pid))
                    for name, u in pages.items():
                        if only is None or name.split(" ")[0] in only:
                            print(f"page {name} ({rep + 1} of {repeat})…", file=sys.stderr)
                            samples.setdefault(name, []).append(first_load(browser, u, runs=runs))
                    out.setdefault("empty_page_s", []).append(empty_page_load(browser))
                    if rep < repeat - 1:
                        continue
                    lab = f"{url}/label?study={built['study']}&labeller=keys-{stamp}"
                    if only is None or "label" in only:
                        out["label"] = label_latency(browser, lab)
                    if only is None or "launch" in only:
                        out["launch"] = launch_to_first_generation(browser, url, home)
                finally:
                    kill(server)
            browser.close()
    finally:
        if hog is not None:
            kill(hog)
    out["pages"] = {name: pooled(s) for name, s in samples.items()}
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    out["targets"] = TARGETS
    return out


def _seconds(values: Any, digits: int = 2) -> str:
    """ "1.52, 1.61 and 1.70 s" (one figure, or a list of them)."""
    vals = values if isinstance(values, list) else [values]
    said = [f"{v:.{digits}f}" for v in vals]
    head = ", ".join(said[:-1])
    return f"{head} and {said[-1]} s" if head else f"{said[-1]} s"


def report(fig: dict[str, Any]) -> list[str]:
    """One line per figure, with its target."""
    t = TARGETS
    lines = [
        f"{fig['campaigns']} campaigns, one core kept busy: {fig['busy_core']}; "
        f"load average {fig['load_average']}",
        f"server's first page (imports): {_seconds(fig['server_first_page_s'])}; its "
        f"warm-up done {_seconds(fig.get('server_warm_up_s', []), 1)} later",
    ]
    if empty := fig.get("empty_page_s"):
        lines.append(
            f"a one-line Streamlit page (the floor): first load {statistics.median(empty):.2f} "
            f"s, median of {_seconds(empty)}"
        )
    for name, r in fig["pages"].items():
        ok = r["first_s"] < t["first_load_s"] and r["rerun_s"] < t["rerun_s"]
        lines.append(
            f"{name}: first load {r['first_s']:.2f} s (< {t['first_load_s']:g}; median of "
            f"{_seconds(r.get('first_all_s', [r['first_s']]))}; "
            f"{r['first_cached_s']:.2f} s with the app's scripts cached), rerun "
            f"{r['rerun_s']:.2f} s (< {t['rerun_s']:g}) {'ok' if ok else 'OVER'}"
        )
        if "server" in r:
            lines.append(f"  server: {json.dumps(r['server'])}")
    if lab := fig.get("label"):
        lines.append(
            f"label: key to next image median {lab['median_ms']} ms, p95 {lab['p95_ms']} ms "
            f"(< {1000 * t['label_p95_s']:.0f}), {lab['over_1s']} of {lab['keys']} over 1 s"
        )
    if "launch" in fig:
        lines.append(
            f"launch to first generation: {fig['launch']['launch_s']:.2f} s (< {t['launch_s']:g})"
        )
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m engine.bench.ui", description=__doc__)
    ap.add_argument("--campaigns", type=int, default=300)
    ap.add_argument("--home", type=Path, default=None, help="a home to build once and reuse")
    ap.add_argument("--out", type=Path, default=REPO / "test-artifacts" / "ui-timing.json")
    ap.add_argument("--no-busy", action="store_true", help="no CPU-bound process beside it")
    ap.add_argument(
        "--profile", action="store_true", help="count and time the server's script runs"
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="fresh servers the pages are timed on (each figure: their median)",
    )
    ap.add_argument(
        "--only", default=None, help="comma-separated pages (campaigns, campaign, …, label, launch)"
    )
    a = ap.parse_args(argv)
    own = a.home is None
    home = Path(tempfile.mkdtemp(prefix="latentfuzz-ui-")) if own else a.home
    home.mkdir(parents=True, exist_ok=True)
    try:
        only = set(a.only.split(",")) if a.only else None
        fig = measure(
            home, a.campaigns, not a.no_busy, home / "streamlit.log", a.profile, only, a.repeat
        )
    finally:
        if own:
            shutil.rmtree(home, ignore_errors=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    fig["commit"] = commit
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(fig, indent=2) + "\n")
    print("\n".join(report(fig)))


if __name__ == "__main__":
    main()
