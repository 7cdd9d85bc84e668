"""Plain-Python oracles of the MSA features, written from their definitions (strings and
loops, no torch), for tests/test_features.py, test_msa_read.py and test_templates.py."""

from __future__ import annotations

import math

GAPS = "-."
AF_ORDER = "ARNDCQEGHILKMFPSTWYV"
# AlphaFold's HHBLITS_AA_TO_ID, re-expressed in AlphaFold's own residue order
AF_ALIASES = {"B": "D", "Z": "E", "U": "C", "O": "X", "J": "X", "X": "X", "*": "X"}


def parse_a3m(rows: list[str]) -> tuple[list[str], list[list[int]]]:
    """AlphaFold's ``parsers.parse_a3m`` after the header split: lowercase letters removed;
    each other character closes a run of lowercase letters, whose length it records."""
    seqs, deletions = [], []
    for row in rows:
        vec, count = [], 0
        for ch in row:
            if ch.islower():
                count += 1
            else:
                vec.append(count)
                count = 0
        deletions.append(vec)
        seqs.append("".join(ch for ch in row if not ch.islower()))
    return seqs, deletions


def identity(a: str, b: str, definition: str = "aligned") -> float:
    """Identity of two aligned rows (the definitions in torchmsa/features/identity.py)."""
    a, b = a.upper(), b.upper()
    same = sum(1 for x, y in zip(a, b) if x == y and x not in GAPS)
    if definition == "hamming":
        same = sum(1 for x, y in zip(a, b) if x == y or (x in GAPS and y in GAPS))
        den = len(a)
    elif definition == "width":
        den = len(a)
    elif definition == "shorter":
        den = min(sum(c not in GAPS for c in a), sum(c not in GAPS for c in b))
    else:
        den = sum(1 for x, y in zip(a, b) if x not in GAPS and y not in GAPS)
    return same / den if den else 0.0


def weights(rows: list[str], theta: float, definition: str = "aligned") -> list[float]:
    """``1 / |{j : id(i, j) >= theta}|``, the row itself always counted."""
    out = []
    for i, a in enumerate(rows):
        count = 1 + sum(
            1 for j, b in enumerate(rows) if j != i and identity(a, b, definition) >= theta
        )
        out.append(1.0 / count)
    return out


def coverage(row: str, query: str) -> float:
    q = [c not in GAPS for c in query]
    both = sum(1 for c, m in zip(row, q) if m and c not in GAPS)
    return both / max(sum(q), 1)


def hhfilter(
    rows, max_identity=None, min_coverage=None, min_query_identity=None, max_seqs=None,
    query=0, definition="aligned",
) -> list[int]:  # fmt: skip
    """hhfilter's order: coverage and query identity, then greedy redundancy (query first,
    then input order), then the first ``max_seqs``."""
    q = rows[query]
    order = [query] + [i for i in range(len(rows)) if i != query]
    cand = []
    for i in order:
        if i != query:
            if min_coverage is not None and coverage(rows[i], q) < min_coverage:
                continue
            if (
                min_query_identity is not None
                and identity(rows[i], q, definition) < min_query_identity
            ):
                continue
        cand.append(i)
    kept = []
    for i in cand:
        if max_identity is None or all(
            identity(rows[i], rows[k], definition) <= max_identity for k in kept
        ):
            kept.append(i)
    if max_seqs is not None:
        kept = kept[:max_seqs]
    return sorted(kept)


def greedy_select(rows: list[str], n: int, criterion: str = "mean") -> list[int]:
    """ESM's ``greedy_select`` (mean Hamming distance to the chosen rows, argmax, first on
    ties), or the max-min variant; from row 0; sorted indices."""
    if len(rows) <= n:
        return list(range(len(rows)))

    def dist(a, b):
        return sum(1 for x, y in zip(a, b) if x != y)

    chosen = [0]
    while len(chosen) < n:
        best, best_score = None, None
        for i in range(len(rows)):
            if i in chosen:
                continue
            ds = [dist(rows[i], rows[k]) for k in chosen]
            score = sum(ds) if criterion == "mean" else min(ds)
            if best_score is None or score > best_score:
                best, best_score = i, score
        chosen.append(best)
    return sorted(chosen)


def af_id(ch: str) -> int:
    ch = ch.upper()
    if ch in GAPS:
        return 21
    ch = AF_ALIASES.get(ch, ch)
    return 20 if ch == "X" else AF_ORDER.index(ch)


def af_features(rows: list[str], deletions: list[list[int]], centres: list[int], extras):
    """AlphaFold's clustering and msa_feat for the given centre and extra rows (indices)."""
    ids = [[af_id(c) for c in r] for r in rows]
    width = len(rows[0])
    assign = []
    for e in extras:
        agree = [
            sum(1 for j in range(width) if ids[e][j] == ids[c][j] and ids[e][j] <= 20)
            for c in centres
        ]
        assign.append(agree.index(max(agree)))
    profile, del_mean, feat = [], [], []
    for k, c in enumerate(centres):
        members = [c] + [e for e, a in zip(extras, assign) if a == k]
        count = 1e-6 + len(members)
        prof = [[0.0] * 23 for _ in range(width)]
        dm = [0.0] * width
        for m in members:
            for j in range(width):
                prof[j][ids[m][j]] += 1.0
                dm[j] += deletions[m][j]
        prof = [[v / count for v in col] for col in prof]
        dm = [v / count for v in dm]
        profile.append(prof)
        del_mean.append(dm)
        row_feat = []
        for j in range(width):
            hot = [1.0 if ids[c][j] == t else 0.0 for t in range(23)]
            d = deletions[c][j]
            row_feat.append(
                hot
                + [min(d, 1.0), math.atan(d / 3) * 2 / math.pi]
                + prof[j]
                + [math.atan(dm[j] / 3) * 2 / math.pi]
            )
        feat.append(row_feat)
    return assign, profile, del_mean, feat


def pssm(rows, letters, background, weights=None, pseudocount=1.0):
    """Log-odds scores in bits: (f + beta b) / (n + beta) against b."""
    weights = [1.0] * len(rows) if weights is None else weights
    out = []
    for j in range(len(rows[0])):
        f = [sum(w for r, w in zip(rows, weights) if r[j].upper() == s) for s in letters]
        n = sum(f)
        col = []
        for fs, b in zip(f, background):
            if n + pseudocount <= 0:
                col.append(0.0)
                continue
            p = (fs + pseudocount * b) / (n + pseudocount)
            col.append(math.log2(p / b) if p > 0 else -math.inf)
        out.append(col)
    return out


def template_mapping(row_q: str, row_t: str, len_q: int, len_t: int):
    """Mapping and identity from a gapped pair, as AlphaFold's template realignment does."""
    mapping, same, i, j = {}, 0, 0, 0
    for a, b in zip(row_q, row_t):
        if a != "-" and b != "-":
            mapping[i] = j
            same += a.upper() == b.upper()
        i += a != "-"
        j += b != "-"
    shorter = min(len_q, len_t)
    return mapping, (same / shorter if shorter else 0.0)


def stockholm_deletions(rows: list[str]) -> list[list[int]]:
    """AlphaFold's ``parse_stockholm`` deletion counts: residues of each row in the columns
    where the query (row 0) has a gap, counted before the query's next residue."""
    query = rows[0]
    out = []
    for row in rows:
        vec, count = [], 0
        for s, q in zip(row, query):
            if s != "-" or q != "-":
                if q == "-":
                    count += 1
                else:
                    vec.append(count)
                    count = 0
        out.append(vec)
    return out
