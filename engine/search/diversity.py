"""DiffGAN's diversity objective: how far an image is from the triggering inputs found so far.

Each search (seed) keeps the features of its distinct triggering inputs. Every few
generations they are embedded in 2-D (PCA or UMAP) and clustered with HDBSCAN; each
cluster is represented by its member nearest the cluster's mean, and each point HDBSCAN
calls noise represents itself (an isolated find is a region of its own). An image's
diversity is its minimum cosine distance to its search's representatives: high for an
image unlike anything found, 0 for a copy of a representative; 1 before anything is found.

Features are the image's pixels, flattened: the objective rewards images that look
different, whichever classifier labels them.

Below the objective, DiffGAN's outcome metrics of a set of triggering inputs (stored per
campaign by engine/campaign/triggering.py):

- geometric diversity: the log-determinant of the Gram matrix of L2-normalised features
  of ``subset`` inputs drawn at random, averaged over ``draws`` draws (DiffGAN: 1,000
  inputs, 30 draws, VGG16 features). VGG16 is not here (no torchvision, no weights), so
  the features are a named layer of the dataset's default classifier (``GEO_FEATURES``).
  The subset is capped by the inputs there are and by the features' dimension (a Gram
  matrix of more vectors than dimensions is singular); sizes and draws are stored beside
  the figure, which compares only at equal size;
- Shannon diversity: the Shannon index -sum p ln p (nats) of the triggering inputs'
  classes, p the share of inputs of each class (the generator's intended label).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from engine.classifiers import inference
from engine.search.archive import DIGEST, digest

#: HDBSCAN's smallest cluster; a search with fewer finds keeps every find as its own.
MIN_CLUSTER = 5
EMBEDDINGS = ("pca", "umap")
#: The geometric diversity's features: the input of the default classifier's first linear
#: layer (its convolutional features, flattened: the closest to DiffGAN's VGG16 features),
#: the input of its last (penultimate), or the pixels.
GEO_FEATURES = ("conv", "penultimate", "pixels")
#: DiffGAN's geometric diversity: 1,000 inputs per draw, 30 draws.
GEO_SUBSET, GEO_DRAWS = 1000, 30


def image_features(images: torch.Tensor) -> torch.Tensor:
    """uint8 images (..., C, H, W) -> L2-normalised pixel features (..., C*H*W)."""
    f = images.flatten(-3).float()
    return torch.nn.functional.normalize(f, dim=-1)


def embed(features: np.ndarray, how: str, seed: int) -> np.ndarray:
    """(A, F) -> (A, 2), A >= 3. PCA: the top two eigenvectors (Lanczos, from a fixed start
    vector: deterministic) of the smaller of the Gram and the covariance matrix; a full SVD
    of 500 x 784 cost 1.6 s a call on the loaded 2-core machine. The axes' signs are
    arbitrary, which clustering ignores. UMAP: umap-learn, seeded."""
    if how == "pca":
        # Deferred (start-up time: loads scipy).
        from scipy.sparse.linalg import eigsh

        x = (features - features.mean(0, keepdims=True)).astype(np.float64)
        small = len(x) <= x.shape[1]
        m = x @ x.T if small else x.T @ x
        w, v = eigsh(m, k=2, v0=np.ones(len(m)))
        return v * np.sqrt(np.clip(w, 0, None)) if small else x @ v
    if how != "umap":
        raise ValueError(f"embedding {how!r} unknown; expected one of {EMBEDDINGS}")
    try:
        # Deferred (umap: an optional extra).
        import umap
    except ImportError:  # pragma: no cover - the extra is part of the dev install
        raise RuntimeError(
            "embedding 'umap' needs umap-learn: pip install 'latentfuzz[umap]', or use "
            "embedding 'pca'"
        ) from None
    n = len(features)
    # Seeded, UMAP runs on one thread (n_jobs=1 said explicitly, or it warns).
    reducer = umap.UMAP(n_components=2, n_neighbors=min(15, n - 1), random_state=seed, n_jobs=1)
    return reducer.fit_transform(features)


def representatives(features: np.ndarray, how: str, seed: int) -> np.ndarray:
    """Indices into features (A, F) of the representatives of its clusters."""
    a = len(features)
    if a < 2 * MIN_CLUSTER:
        return np.arange(a)
    # Deferred (start-up time: loads sklearn).
    from sklearn.cluster import HDBSCAN

    z = embed(features, how, seed)
    labels = HDBSCAN(min_cluster_size=MIN_CLUSTER, copy=True).fit_predict(z)
    reps = list(np.flatnonzero(labels < 0))
    for c in np.unique(labels[labels >= 0]):
        members = np.flatnonzero(labels == c)
        centre = z[members].mean(0)
        reps.append(members[np.argmin(((z[members] - centre) ** 2).sum(1))])
    return np.sort(np.asarray(reps, dtype=np.int64))


class DiversityArchive:
    """The triggering inputs' features of S searches as one tensor with an owner column."""

    def __init__(self, searches: int, embedding: str, seed: int) -> None:
        self.features = torch.zeros(0, 0)
        self.owner = torch.zeros(0, dtype=torch.long)
        self.reps = torch.zeros(0, dtype=torch.long)  # rows of features
        self.searches, self.embedding, self.seed = searches, embedding, seed
        self._keys: set[tuple[int, bytes]] = set()  # (search, digest of the features)

    def __len__(self) -> int:
        return len(self.owner)

    def add(self, features: torch.Tensor, owner: torch.Tensor) -> None:
        """New triggering inputs' features (N, F) of searches owner (N,); repeats are skipped."""
        keep = []
        for i, (f, o) in enumerate(zip(features.numpy(), owner.tolist(), strict=True)):
            key = (o, digest(f))
            if key not in self._keys:
                self._keys.add(key)
                keep.append(i)
        if not keep:
            return
        idx = torch.tensor(keep)
        self.features = (
            features[idx] if not len(self) else torch.cat([self.features, features[idx]])
        )
        self.owner = torch.cat([self.owner, owner[idx]])

    def unrepresented(self) -> bool:
        """Some search has finds but no representative yet (its first finds)."""
        s = self.searches
        found = torch.bincount(self.owner, minlength=s) > 0
        shown = torch.bincount(self.owner[self.reps], minlength=s) > 0
        return bool((found & ~shown).any())

    def recluster(self) -> None:
        """Recompute each search's representatives (a loop over searches, not individuals)."""
        reps = []
        for s in range(self.searches):
            rows = torch.nonzero(self.owner == s).flatten()
            if len(rows):
                local = representatives(self.features[rows].numpy(), self.embedding, self.seed + s)
                reps.append(rows[torch.from_numpy(local)])
        self.reps = torch.cat(reps) if reps else torch.zeros(0, dtype=torch.long)

    def diversity(self, features: torch.Tensor) -> torch.Tensor:
        """Minimum cosine distance (S, N) of features (S, N, F) to their search's
        representatives; 1 where a search has none yet."""
        s, n, _ = features.shape
        out = torch.ones(s, n)
        if not len(self.reps):
            return out
        r_feat, r_owner = self.features[self.reps], self.owner[self.reps]
        sim = torch.einsum("snf,rf->snr", features, r_feat)  # features are unit vectors
        mine = r_owner[None, :] == torch.arange(s)[:, None]  # (S, R)
        sim = sim.masked_fill(~mine[:, None, :], float("-inf"))
        best = sim.amax(2)
        return torch.where(torch.isfinite(best), 1.0 - best, out)

    def state_dict(self) -> dict[str, Any]:
        """Tensors and numbers only (a checkpoint is read with weights_only=True): the
        keys' digests as rows of bytes."""
        keys = sorted(self._keys)
        return {
            "features": self.features,
            "owner": self.owner,
            "reps": self.reps,
            "searches": self.searches,
            "embedding": self.embedding,
            "seed": self.seed,
            "key_owner": torch.tensor([o for o, _ in keys], dtype=torch.long),
            "key_digest": torch.tensor(
                np.frombuffer(b"".join(k for _, k in keys), dtype=np.uint8)
                .reshape(len(keys), -1)
                .copy()
                if keys
                else np.zeros((0, DIGEST), dtype=np.uint8)
            ),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> DiversityArchive:
        a = cls(int(state["searches"]), str(state["embedding"]), int(state["seed"]))
        a.features, a.owner, a.reps = state["features"], state["owner"], state["reps"]
        digests = state["key_digest"].numpy()
        a._keys = {
            (int(o), bytes(d)) for o, d in zip(state["key_owner"].tolist(), digests, strict=True)
        }
        return a

    def keep(self, mask: torch.Tensor) -> None:
        """Keep the searches where mask (S,) is True; renumber owners."""
        new_index = torch.cumsum(mask.long(), 0) - 1
        rows = mask[self.owner]
        remap = torch.full((len(self.owner),), -1, dtype=torch.long)
        remap[rows] = torch.arange(int(rows.sum()))
        self.reps = remap[self.reps][remap[self.reps] >= 0]
        self.features, self.owner = self.features[rows], new_index[self.owner[rows]]
        self.searches = int(mask.sum())
        self._keys = {(int(new_index[o]), k) for o, k in self._keys if mask[o]}


@dataclass(frozen=True)
class GeometricSpec:
    """How the geometric diversity is measured: features, inputs per draw, draws."""

    features: str = "conv"
    subset: int = GEO_SUBSET
    draws: int = GEO_DRAWS

    def __post_init__(self) -> None:
        if self.features not in GEO_FEATURES:
            raise ValueError(f"features {self.features!r} unknown; expected one of {GEO_FEATURES}")
        if self.subset < 1 or self.draws < 1:
            raise ValueError(
                f"subset and draws must be at least 1, not {self.subset}, {self.draws}"
            )


def linear_input(classifier: Any, x: torch.Tensor, first: bool) -> torch.Tensor:
    """Features (N, F) of images (N, C, H, W) in [0, 1]: the input of the classifier's first
    (or last) linear layer; the logits where the model is opaque (TorchScript)."""
    module = getattr(classifier, "module", None)
    linears = (
        [] if module is None else [m for m in module.modules() if isinstance(m, torch.nn.Linear)]
    )
    if not linears or isinstance(module, torch.jit.ScriptModule):
        return classifier.logits(x)
    seen: list[torch.Tensor] = []
    layer = linears[0] if first else linears[-1]
    handle = layer.register_forward_hook(lambda _m, inp, _out: seen.append(inp[0]))
    try:
        with torch.no_grad(), inference.eager_only():  # hooks do not fire in a graph
            for i in range(0, len(x), 512):
                classifier.logits(x[i : i + 512])
    finally:
        handle.remove()
    return torch.cat(seen).flatten(1) if seen else torch.zeros(0, 1)


def extractor(classifier: Any, features: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """images (N, C, H, W) in [0, 1] -> features (N, F), as GEO_FEATURES names them."""
    if features == "pixels":
        return lambda x: x.flatten(1)
    if features not in GEO_FEATURES:
        raise ValueError(f"features {features!r} unknown; expected one of {GEO_FEATURES}")
    first = features == "conv"
    return lambda x: linear_input(classifier, x, first)


def log_det_gram(features: torch.Tensor) -> float | None:
    """log det of the Gram matrix of L2-normalised features (N, F); None for N = 0,
    -inf where it is singular (N > F always is)."""
    if len(features) == 0:
        return None
    f = torch.nn.functional.normalize(features.double(), dim=1)
    return log_det(f @ f.T)


def log_det(gram: torch.Tensor) -> float:
    """log det of a Gram matrix (K, K); -inf where it is singular."""
    # Cholesky first: a Gram matrix is symmetric positive semi-definite, and it costs half
    # of slogdet's LU (60 of them at 1,000 x 1,000 per campaign at DiffGAN's settings).
    low, info = torch.linalg.cholesky_ex(gram)
    if int(info) == 0:
        return float(2 * torch.log(torch.diagonal(low)).sum())
    sign, logdet = torch.linalg.slogdet(gram)
    return float(logdet) if sign > 0 else float("-inf")


def geometric_diversity(
    n: int,
    features_at: Callable[[np.ndarray], torch.Tensor],
    spec: GeometricSpec,
    seed: int,
) -> dict[str, Any]:
    """DiffGAN's geometric diversity of n inputs: the mean (and SD) of log_det_gram over
    spec.draws random subsets of spec.subset inputs, capped by n and by the features'
    dimension; one draw when the subset is every input (the others would repeat it).

    features_at(indices) -> the features (N, F) of those inputs; only the inputs some
    draw picks are asked for. Returns geometric_diversity (the mean),
    geometric_diversity_sd, geometric_subset and geometric_draws (as done),
    geometric_features and geometric_dim."""
    out: dict[str, Any] = {
        "geometric_diversity": None,
        "geometric_diversity_sd": None,
        "geometric_subset": 0,
        "geometric_draws": 0,
        "geometric_features": spec.features,
        "geometric_dim": None,
    }
    if n == 0:
        return out
    rng = np.random.default_rng(seed)
    with torch.inference_mode():
        dim = int(features_at(np.zeros(1, dtype=np.int64)).shape[1])
        k = min(spec.subset, n, dim)
        draws = spec.draws if k < n else 1
        picks = [np.sort(rng.choice(n, size=k, replace=False)) for _ in range(draws)]
        union = np.unique(np.concatenate(picks))
        f = torch.nn.functional.normalize(features_at(union).double(), dim=1)
        rows = [torch.from_numpy(np.searchsorted(union, p)) for p in picks]
        # The product dominates (30 x 1,000^2 x 3,136 multiply-adds at DiffGAN's
        # settings): one Gram matrix of every picked input, when that is smaller, and
        # each draw's taken from it.
        if len(union) ** 2 < draws * k**2:
            gram = f @ f.T
            logdets = [log_det(gram[r][:, r]) for r in rows]
        else:
            logdets = [log_det(f[r] @ f[r].T) for r in rows]
    values = np.asarray(logdets, dtype=np.float64)
    out.update(
        geometric_diversity=float(values.mean()),
        geometric_diversity_sd=float(values.std(ddof=1)) if draws > 1 else None,
        geometric_subset=k,
        geometric_draws=draws,
        geometric_dim=dim,
    )
    return out


def shannon_diversity(classes: np.ndarray) -> float | None:
    """DiffGAN's Shannon diversity of inputs of classes (N,): -sum_c p_c ln p_c, p_c the
    share of inputs of class c, in nats; None for no inputs."""
    if len(classes) == 0:
        return None
    _, counts = np.unique(np.asarray(classes), return_counts=True)
    p = counts / counts.sum()
    # Never -0.0: a single class is exactly 0.
    return float(max(0.0, -(p * np.log(p)).sum()))
