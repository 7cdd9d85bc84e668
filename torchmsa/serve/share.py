"""Work shared across jobs: each distinct sequence's 6-mer ids are counted once, each distinct
pair's 6-mer distance is computed once and kept in the store's distance cache (across jobs and
restarts), and a job's first guide tree is built from cached and new distances.

The distances are the pipeline's own (:func:`torchmsa.ops.kmer.kmer_distances`: the same
counts, the same float64 operations), so the tree is the one :func:`torchmsa.build_tree` gives
(``tests/test_share.py`` checks it bit for bit). Only k-mer trees qualify: the linkage methods
``upgma``, ``upgma_mafft``, ``nj`` and ``single`` of fast and default mode; LCS trees,
PartTree and accurate mode build their own.
"""

from __future__ import annotations

import numpy as np
import torch

from torchmsa.serve import cache

__all__ = ["KMER_K", "distance_kind", "shared_first_tree", "tree_method"]

KMER_K = 6
_KMER_TREES = ("upgma", "upgma_mafft", "nj", "single")


def distance_kind(alphabet: str) -> str:
    """The cache's name of the distance the first tree uses for ``alphabet``."""
    reduction = "acgt" if alphabet in ("dna", "rna") else "dayhoff6"
    return f"kmer{KMER_K}-{reduction}"


def tree_method(records, options: dict, alphabet: str) -> str | None:
    """The k-mer linkage of a job's first tree, or ``None`` when its first tree is not built
    from 6-mer distances (see the module docstring)."""
    from torchmsa.pipeline.modes import first_tree_method, resolve_mode
    from torchmsa.serve.jobs import check_options

    _, config = check_options(options)
    n = len({r.seq.upper() for r in records})  # the pipeline works on distinct sequences
    if n < 2:
        return None
    longest = max(len(r.seq) for r in records)
    mode = resolve_mode(config.mode, n, longest, config=config.auto)
    if mode == "accurate":
        return None
    method = first_tree_method(n, mode, config=config.tree)
    return method if method in _KMER_TREES else None


def _ids_of(records, alphabet: str) -> list[np.ndarray]:
    from torchmsa.alphabet import resolve_alphabet
    from torchmsa.ops.kmer import REDUCTIONS, kmer_ids, reduced_map
    from torchmsa.sequences import SequenceBatch

    alph = resolve_alphabet(alphabet, [])
    batch = SequenceBatch.from_input(list(records), alph)
    reduction = REDUCTIONS["acgt" if alph.is_nucleotide else "dayhoff6"]
    ids, n = kmer_ids(batch.codes, batch.lengths, reduced_map(reduction), KMER_K, "cpu")
    return [ids[i, : int(n[i])].numpy().copy() for i in range(len(batch))]


def _padded(lists: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(1, max((x.shape[0] for x in lists), default=1))
    ids = np.full((len(lists), width), np.iinfo(np.int32).max, np.int32)
    for i, x in enumerate(lists):
        ids[i, : x.shape[0]] = x
    n = np.array([x.shape[0] for x in lists], np.int32)
    return torch.from_numpy(ids), torch.from_numpy(n)


def _pair_distances(ids: list[np.ndarray], p: np.ndarray, q: np.ndarray) -> np.ndarray:
    from torchmsa.ops.kmer import pair_counts

    packed, n = _padded(ids)
    counts = pair_counts(packed, n, packed, n, torch.from_numpy(p), torch.from_numpy(q), "cpu")
    sa, sb = n.long()[torch.from_numpy(p)], n.long()[torch.from_numpy(q)]
    smaller = torch.minimum(sa, sb).to(torch.float64)
    frac = counts.to(torch.float64) / smaller.clamp(min=1)
    return torch.where(smaller > 0, 1.0 - frac, torch.ones_like(frac)).numpy()


def shared_first_tree(store, records, hashes: list[str], alphabet: str, method: str):
    """``(tree, stats)``: a job's first guide tree from the store's distance cache, computing
    and storing the missing pairs (and the k-mer ids of sequences not yet counted).

    The tree is over the job's distinct sequences (a repeated sequence once, at its first
    place, named by its first copy), as the pipeline builds it after collapsing copies
    (``torchmsa/pipeline/dedupe.py``).

    ``stats``: ``pairs`` (distinct pairs in the job), ``pairs_cached`` (found in the cache),
    ``sequences_counted`` (k-mer ids computed now), ``sequences_cached``.
    """
    from torchmsa.tree import tree_from_tensor

    kind = distance_kind(alphabet)
    uniq = list(dict.fromkeys(hashes))
    m = len(uniq)
    if m < 2:
        return None, {"pairs": 0, "pairs_cached": 0}
    with store.transaction() as conn:
        known = cache.get_distances(conn, kind, uniq)
    ia, ib = np.triu_indices(m, 1)
    keys = [(uniq[a], uniq[b]) if uniq[a] < uniq[b] else (uniq[b], uniq[a]) for a, b in zip(ia, ib)]
    missing = [t for t, k in enumerate(keys) if k not in known]
    stats = {"pairs": len(keys), "pairs_cached": len(keys) - len(missing)}
    with store.transaction(read=True) as conn:
        counted = cache.get_kmer_counts(conn, uniq)
    have: dict[str, np.ndarray] = {}
    todo = [i for i in range(m) if uniq[i] not in counted]
    stats.update(sequences_counted=len(todo), sequences_cached=m - len(todo))
    if todo:
        first = {h: records[j] for j, h in reversed(list(enumerate(hashes)))}
        fresh = _ids_of([first[uniq[i]] for i in todo], alphabet)
        have.update((uniq[i], x) for i, x in zip(todo, fresh))
        counted.update((uniq[i], int(x.shape[0])) for i, x in zip(todo, fresh))
        rows = {uniq[i]: (alphabet, len(first[uniq[i]].seq), x) for i, x in zip(todo, fresh)}
        with store.transaction() as conn:
            cache.put_sequences(conn, rows)
    if missing:
        need = sorted({int(ia[t]) for t in missing} | {int(ib[t]) for t in missing})
        with store.transaction() as conn:
            have.update(cache.get_sequences(conn, [uniq[i] for i in need if uniq[i] not in have]))
        local = {i: k for k, i in enumerate(need)}
        p = np.array([local[int(ia[t])] for t in missing], np.int64)
        q = np.array([local[int(ib[t])] for t in missing], np.int64)
        values = _pair_distances([have[uniq[i]] for i in need], p, q)
        new = {keys[t]: float(v) for t, v in zip(missing, values)}
        with store.transaction() as conn:
            cache.put_distances(conn, kind, new)
        known.update(new)
    # as the pipeline's matrix: a sequence is at 0 from itself (and its copies), at 1 when it
    # has no k-mer at all
    small = np.diag([0.0 if counted[h] > 0 else 1.0 for h in uniq])
    small[ia, ib] = [known[k] for k in keys]
    small[ib, ia] = small[ia, ib]
    first = {h: j for j, h in reversed(list(enumerate(hashes)))}
    names = [records[first[h]].name for h in uniq]
    return tree_from_tensor(torch.from_numpy(small), method, names), stats
