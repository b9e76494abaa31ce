"""SSIM to the most similar of R reference images, exact and fast.

The SSIM is engine/core/similarity.py's (11 x 11 Gaussian, sigma 1.5, valid region, data range 1).
The Gaussian blur is separable, so on a valid region it is two band matrices: blur(X) =
Gv X Gh^T, a pair of small matmuls instead of a convolution. Each reference image's mean
and variance maps are computed once; only the cross term blur(a * b) is per pair.

Comparing every query with every reference (1,000 x 4,000 x a 28 x 28 blur) is still too
slow, so the candidates are pre-selected: the ``candidates`` references nearest in L2
(one matmul for all queries), then exact SSIM on those. The highest SSIM is almost always
among the nearest in L2, though not provably; `latentfuzz bench ssim --recall N`
(engine/bench/nsga2.py) measures how often it is, against the brute-force answer.
"""

from __future__ import annotations

import torch

from engine.core.similarity import K1, K2, WIN, gaussian_1d


def band(n: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(n - WIN + 1, n): row i holds the 1-d Gaussian window at columns i .. i + WIN - 1."""
    g = gaussian_1d()
    m = torch.zeros(n - WIN + 1, n, dtype=torch.float64)
    for i in range(n - WIN + 1):  # n - 10 rows, once per image size
        m[i, i : i + WIN] = g
    return m.to(dtype)


class NearestSSIM:
    """Reference images (R, C, H, W) in [0, 1]; ``best`` scores queries against them."""

    def __init__(self, refs: torch.Tensor, candidates: int = 32, chunk: int = 256) -> None:
        self.refs = refs.double()
        _, c, h, w = refs.shape
        if h < WIN or w < WIN:
            raise ValueError(f"SSIM needs images of at least {WIN} x {WIN}, got {h} x {w}")
        self.gv, self.gh = band(h, torch.float64), band(w, torch.float64)
        self.candidates = min(candidates, len(refs))
        self.chunk = chunk
        self.flat = self.refs.flatten(1)
        self.sq = (self.flat**2).sum(1)
        self.mu = self.blur(self.refs)
        self.var = self.blur(self.refs**2) - self.mu**2

    def blur(self, x: torch.Tensor) -> torch.Tensor:
        """(..., H, W) -> (..., H - 10, W - 10): the valid-region Gaussian blur."""
        return self.gv @ x @ self.gh.T

    def ssim(self, q: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """SSIM (N, M) of queries q (N, C, H, W) with references idx (N, M)."""
        q = q.double()
        mu_q = self.blur(q)[:, None]
        var_q = self.blur(q**2)[:, None] - mu_q**2
        mu_r, var_r = self.mu[idx], self.var[idx]  # (N, M, C, h, w)
        cov = self.blur(q[:, None] * self.refs[idx]) - mu_q * mu_r
        c1, c2 = K1**2, K2**2
        s = ((2 * mu_q * mu_r + c1) * (2 * cov + c2)) / (
            (mu_q**2 + mu_r**2 + c1) * (var_q + var_r + c2)
        )
        return s.mean(dim=(2, 3, 4))

    def best(
        self, queries: torch.Tensor, candidates: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Highest SSIM (N,) of each query (N, C, H, W) in [0, 1], and the reference index
        (N,) that gives it, among its ``candidates`` nearest references in L2."""
        k = self.candidates if candidates is None else min(candidates, len(self.refs))
        scores, where = [], []
        for i in range(0, len(queries), self.chunk):
            q = queries[i : i + self.chunk].double()
            f = q.flatten(1)
            d2 = (f**2).sum(1)[:, None] - 2 * f @ self.flat.T + self.sq[None]
            idx = d2.topk(k, dim=1, largest=False).indices
            s = self.ssim(q, idx)
            top, pos = s.max(1)
            scores.append(top)
            where.append(idx.gather(1, pos[:, None]).squeeze(1))
        if not scores:
            return torch.zeros(0, dtype=torch.float64), torch.zeros(0, dtype=torch.long)
        return torch.cat(scores), torch.cat(where)
