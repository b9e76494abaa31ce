"""The campaign runner: opens a campaign (config resolved and checked, id, folder, lock,
row), runs its search (engine/campaign/loop.py, the one loop that wires dataset, generator,
classifiers, objectives, strategy and store), and closes it (status, metrics, a
differential campaign's validity pass) whatever happened, with one-line errors.
"""

from __future__ import annotations

import contextlib
import errno
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import torch

from engine.campaign import realism
from engine.campaign.batching import batch_record
from engine.campaign.batching import choose as choose_batch
from engine.campaign.checkpoint import Checkpoints, Saved
from engine.campaign.config import CampaignConfig
from engine.campaign.evaluator import Evaluator
from engine.campaign.loop import Campaign, Progress
from engine.campaign.metrics import test_reference
from engine.campaign.resolve import Resolved, resolve
from engine.classifiers import inference
from engine.core import threads
from engine.core.errors import LatentfuzzError, cause
from engine.core.home import campaign_dir, db_path
from engine.core.ids import check_id_syntax, check_new_id, timestamped_id
from engine.core.images import ImageSink
from engine.core.malloc import keep_freed_memory
from store import CampaignWriter, Store, create_campaign, interrupts, recovery
from store.liveness import CampaignLock
from store.maintenance import require_sound
from store.writer import now


@dataclass
class CampaignResult:
    campaign_id: str
    status: str
    summary: dict[str, Any]
    evaluations: int = 0
    wall_seconds: float = 0.0
    store_seconds: float = 0.0
    model_seconds: float = 0.0
    batch_sizes: list[int] = field(default_factory=list)
    #: Benchmark runs only: time of the bare-forward twin of every batch (not in wall_seconds).
    raw_seconds: float = 0.0
    #: Time in the strategy's own work (see, tell, advance): NSGA-II's sorting, crowding
    #: and diversity update, the GA's breeding.
    strategy_seconds: float = 0.0
    #: The search's own evaluations (the metrics' count, the dashboard's "search
    #: evaluations"); `evaluations` also counts the seeds' checks before the search.
    search_evaluations: int = 0


def run_in_series(cfg: CampaignConfig, home: Path, **kwargs: Any) -> CampaignResult:
    """`run_campaign` for callers that run campaigns one after another (a grid's cells in
    this process, a study, the bench): a campaign the user interrupted stops the caller
    too, as a KeyboardInterrupt, instead of counting as one more result."""
    res = run_campaign(cfg, home, **kwargs)
    if res.status == "interrupted":
        raise KeyboardInterrupt
    return res


def new_campaign_id() -> str:
    # Not from the campaign RNG: ids must differ between identical runs.
    return timestamped_id()


def environment(r: Resolved) -> dict[str, Any]:

    return {
        "model_sha256": r.model_hashes,
        "python": sys.version.split()[0],
        "latentfuzz": version("latentfuzz"),
        **{pkg: version(pkg) for pkg in ("torch", "duckdb", "numpy", "pandas", "diffusers")},
        "platform": platform.platform(),
        "torch_threads": torch.get_num_threads(),
        **threads.record(),  # inter-op threads, OMP_WAIT_POLICY, cores: to compare runs by
        "device": device_name(r.config.device),
        "inference": inference.PATH,
    }


def device_name(device: str) -> str:
    """The campaign's device as recorded: 'cpu', or 'cuda:0 (NVIDIA H100 ...)'."""
    dev = torch.device(device)
    if dev.type != "cuda":
        return str(dev)
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    return f"cuda:{index} ({torch.cuda.get_device_name(index)})"


class StoppedAfterClose(KeyboardInterrupt):
    """Ctrl-C (or the stop) pressed while a campaign closed: raised once it is closed,
    with its result (store/interrupts.py)."""

    def __init__(self, result: CampaignResult) -> None:
        super().__init__(f"campaign {result.campaign_id} {result.status}")
        self.result = result


def run_campaign(
    cfg: CampaignConfig,
    home: Path,
    progress: Callable[[Progress], None] | None = None,
    models_root: Path | None = None,
    campaign_id: str | None = None,
    evaluator: type[Evaluator] | None = None,
    study: str | None = None,
) -> CampaignResult:
    """Run one campaign to completion (or Ctrl-C) and return its summary.

    The config is resolved and validated before the store is touched.
    """
    if campaign_id is not None:
        check_id_syntax(campaign_id)  # before anything is loaded or written
    keep_freed_memory()  # before the batch sweep, which must see the campaign's allocator
    r = resolve(cfg, models_root)
    interrupts.checkpoint()  # a Ctrl-C deferred while the models loaded (store/interrupts.py)
    cfg = r.config  # with what resolve derives (an escape campaign's seed count)
    store = Store(db_path(home))
    store.require_writable()
    require_sound(store)  # a damaged store is not written to, not even its recovery rows
    recovery.ingest(store)  # rows an earlier campaign saved when its user stopped it waiting
    cid = campaign_id or new_campaign_id()
    check_new_id(cid, store, home)
    # The measured batch size goes into the stored config, so `resume` replays the search
    # with the very batches it ran with (results can differ in the last bit between sizes).
    batch = choose_batch(r, home, cfg.batch_memory_mb)
    interrupts.checkpoint(final=True)  # the last before the row: after it, the search's own
    r.config = cfg = cfg.model_copy(update={"batch_size": batch.batch_size})
    campaign_dir(home, cid).mkdir(parents=True, exist_ok=False)
    # Held for the campaign's life, taken before its row exists: a reader that finds the
    # row `running` and the lock free knows the process is gone (store/liveness.py).
    lock = CampaignLock(home, cid).acquire()
    t0 = time.perf_counter()
    try:
        create_campaign(
            store,
            {
                "id": cid,
                "name": cfg.name or cid,
                "status": "running",
                "created_at": now(),
                "dataset": cfg.dataset,
                "generator": r.generator_name,
                "classifier": r.classifier_name,
                "classifier_b": r.classifier_b_name,
                "strategy": cfg.strategy,
                "preset": r.strategy.preset,
                "n_seeds": cfg.seeds,
                "target_class": cfg.target_class,
                "random_seed": cfg.seed,
                "config": {
                    **cfg.model_dump(),
                    "fitness": r.fitness.name,
                    "archive": r.archive,
                    "criterion": r.criterion.name,
                    "strategy_params": r.strategy.params.model_dump(),
                    "evaluation_budget": r.strategy.evaluation_budget(),
                    "budget_rule": r.strategy.budget_rule(),
                    "generator_params": r.generator.options(),
                },
                "environment": {**environment(r), "batch": batch_record(batch)},
                "dir": f"campaigns/{cid}",
                "pid": os.getpid(),
                "study": study,
            },
        )
    except BaseException:
        lock.release()
        raise
    return execute(r, store, home, cid, lock, t0, progress, evaluator)


def execute(
    r: Resolved,
    store: Store,
    home: Path,
    cid: str,
    lock: CampaignLock,
    t0: float,
    progress: Callable[[Progress], None] | None = None,
    evaluator: type[Evaluator] | None = None,
    wrap: Callable[[CampaignWriter], Any] | None = None,
    evaluations_before: int = 0,
    kept: dict[str, Any] | None = None,
    saved: Saved | None = None,
    fallback: Callable[[str], None] | None = None,
    checkpointing: bool = True,
) -> CampaignResult:
    """Search and close the campaign `cid`, whose row exists and whose lock this process
    holds; releases the lock. `wrap` puts a filter between the search and the writer (a
    resumed campaign's replay, engine/campaign/resume.py); `evaluations_before`: the count a
    resumed campaign had, which its replay evaluates again; `kept`: closing fields of the
    campaign row that a finished close writes as they were (a finished campaign replayed
    for its metrics keeps its own time and end)."""
    cfg = r.config
    keep_freed_memory()  # a resumed campaign comes here directly
    rng = torch.Generator().manual_seed(cfg.seed)
    writer = CampaignWriter(store, cid, cfg.flush_seconds)
    writer.seconds = time.perf_counter() - t0  # the campaign row is store time too
    sink = ImageSink(home)
    evaluate = (evaluator or Evaluator)(r)
    for clf in (r.classifier, r.classifier_b):
        if clf is not None:
            clf.prepare()  # a graph is built here, not in the first generation's clock
    status, error, failure = "finished", None, None
    campaign: Campaign | None = None  # a Ctrl-C can land before it exists
    checkpoints: Checkpoints | None = None
    # Entered when the search ends (below), left once the campaign is closed.
    closing = contextlib.ExitStack()
    with closing:
        try:
            # A Ctrl-C deferred since the row was written stops the search here: the
            # campaign ends `interrupted`, as for one in the search.
            interrupts.start_search()
            campaign = Campaign(r, cid, rng, wrap(writer) if wrap else writer, sink, evaluate, t0)
            if checkpointing:
                checkpoints = Checkpoints(home, cid, r, writer, saved, fallback)
                campaign.checkpoints = checkpoints
            # Inference mode: no autograd bookkeeping on the many small tensor ops of a generation.
            with torch.inference_mode():
                campaign.run(progress)
        except KeyboardInterrupt:
            status = "interrupted"
        except Exception as e:
            status, error, failure = "failed", describe(e), e
        finally:
            interrupts.end_start_up()  # a search that failed before it started
            # The search is over: from here to the result a Ctrl-C is held back, so the
            # campaign closes with the status its search reached (store/interrupts.py).
            hold = closing.enter_context(interrupts.held(writer.notify, cid))
            # Whatever ends the close, the lock goes with it (a forced stop included).
            closing.callback(lock.release)
            raw = evaluate.raw_seconds
            # A resume stopped mid-replay has evaluated again only part of what the campaign
            # had: its count fell (54,078 to 49,308 in a walkthrough).
            evals = max(int(sum(evaluate.batch_sizes)), evaluations_before)
            try:
                sink.close()  # every image on disk before the campaign is closed
            except Exception as e:
                if failure is None:
                    status, error, failure = "failed", describe(e), e
            wall = time.perf_counter() - t0 - raw
            # The store's time within `wall`: the final write lands after it, so it is in
            # neither (the row and the result give the same pair).
            store_seconds = writer.seconds
            row = None
            if status == "finished" and failure is None and checkpoints is not None:
                checkpoints.stop()  # its close commits every row: nothing left to resume
            if status == "finished" and failure is None:
                # Before the closing write, which commits it with the status: a campaign
                # is never `finished` without its metrics, which `resume` could not mend.
                try:
                    row = close_metrics(r, campaign, home)
                except Exception as e:
                    if interrupts.forced() is not None:
                        # A second Ctrl-C inside the reference pass: the campaign stays
                        # `running` (crashed, resumable), as for one anywhere in the close.
                        raise KeyboardInterrupt from e
                    status, error, failure = "failed", describe(e), e
            try:
                writer.finish(
                    status,
                    {
                        "wall_seconds": wall,
                        "evaluations": evals,
                        "store_seconds": store_seconds,
                        # Only over a close like the one it had: a replay that failed
                        # says so with its own figures.
                        **(kept if kept and status == "finished" else {}),
                    },
                    error,
                    row,
                )
            except Exception as e:
                # A full disk can refuse the closing write too: the rows written so far stay,
                # and readers mark the campaign crashed once this process has gone.
                failure = failure or e
            else:
                if status == "finished" and checkpoints is not None:
                    checkpoints.remove()
            if status != "finished" or failure is not None:
                lock.release()
        if failure is not None:
            raise user_error(failure, cid) from failure
        if status == "finished" and row["evaluations"]:
            # Still holding the lock: the campaign cannot be deleted while its validity
            # scores and realism are written (a differential campaign's take seconds).
            try:
                if r.archive or r.validators:
                    # Deferred (start-up time: loads pandas).
                    from engine.campaign import triggering as differential

                    differential.close(r, store, home, cid, row["evaluations"])
                else:
                    with torch.inference_mode():
                        realism.measure(store, home, cid, r)
            except Exception as e:
                if interrupts.forced() is not None:
                    # A second Ctrl-C inside a query: DuckDB raised its own error for it.
                    raise KeyboardInterrupt from e
                raise
            finally:
                lock.release()
        elif status == "finished":
            lock.release()
        # Here, not at the top: pandas costs 0.4 s of start-up and is needed only once the
        # search is over.
        from store import campaigns as sc

        result = CampaignResult(
            cid,
            status,
            sc.summary(store, cid),
            evals,
            wall,
            store_seconds,
            evaluate.seconds - raw,
            evaluate.batch_sizes,
            raw,
            campaign.strategy_seconds if campaign else 0.0,
            # No tracker yet: stopped before its seeds were drawn (search_loop.draw_seeds).
            getattr(getattr(campaign, "metrics", None), "evaluations", 0),
        )
    if hold.noted:
        # Held back while the campaign closed: a loop of campaigns in this process stops
        # now, as it did for an interrupt in the search; the CLI prints the result.
        raise StoppedAfterClose(result)
    return result


def close_metrics(r: Resolved, campaign: Campaign, home: Path | None = None) -> dict[str, Any]:
    """A finished campaign's metrics row: its tracker's figures beside the classifier's on
    the dataset's test images (kept in the home's cache: the same for every campaign of the
    pair)."""
    cfg = r.config
    with torch.inference_mode():
        # An eager replay (engine/campaign/resume.py) is not served a graph's figures.
        key = (cfg.dataset, r.model_hashes[r.classifier_name], inference.eager_forced())
        cache = None if home is None else Path(home) / "cache" / "test_reference"
        gaps, confusion = test_reference(r.dataset, r.classifier, cfg.batch_size, key, cache)
    return campaign.metrics.row(gaps, confusion)


def _disk_full(e: BaseException) -> bool:
    return (isinstance(e, OSError) and e.errno == errno.ENOSPC) or (
        "no space left on device" in str(e).lower()
    )


def describe(e: BaseException) -> str:
    """The campaign row's error: one line."""
    if _disk_full(e):
        where = getattr(e, "filename", None)
        return "no space left on device" + (f" (writing {where})" if where else "")
    return cause(e, limit=len(str(e)))  # the whole first line: the row keeps it all


def user_error(e: BaseException, cid: str) -> BaseException:
    """What the caller sees: the model's or the disk's one-line message, else the error."""
    if _disk_full(e):
        return LatentfuzzError(
            f"campaign {cid} failed: {describe(e)}; it keeps what it wrote. Free some space, "
            f"then `latentfuzz resume {cid}` continues it"
        )
    return e
