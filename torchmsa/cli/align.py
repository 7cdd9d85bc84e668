"""``torchmsa align``: a multiple sequence alignment of a file's sequences; with ``--add`` /
``--addfragments`` new sequences added to an existing alignment, with ``--merge`` or
``--profile1/--profile2`` two alignments merged (MAFFT's and Clustal Omega's flags)."""

from __future__ import annotations

import argparse
import sys
import threading
import time

from torchmsa.cli.common import add_distributed, add_limits, add_scoring, emit, limits
from torchmsa.cli.merge import (
    add_output,
    add_run_options,
    merge_files,
    policy_of,
    progress_of,
    summary,
    timed,
    write,
)
from torchmsa.errors import ArgumentError

__all__ = ["add_parser", "run", "DISTOUT_HELP"]

EPILOG = """adding and merging (MAFFT / Clustal Omega style):
  torchmsa align --add new.fasta existing.aln -o out.fasta       new sequences into an alignment
  torchmsa align --addfragments reads.fa existing.aln --keeplength
  torchmsa align --merge other.aln existing.aln -o merged.fasta   two alignments as profiles
  torchmsa align --profile1 a.aln --profile2 b.aln -o merged.fasta
everyday flags:
  torchmsa align seqs.fa --threads 4 --maxiterate 8 --reorder --treein guide.nwk
  torchmsa align seqs.fa --distout seqs.dist -v --progress
"""

DISTOUT_HELP = (
    "write the distance matrix the first guide tree was built from, then the percent "
    "identity of the result (identical / aligned residue pairs x 100), as two PHYLIP square "
    "matrices one after the other: a line with N, then per sequence its name and N values"
)

# options that only a fresh alignment uses, by the flags that turn add/merge on
_ALIGN_ONLY = ("mode", "tree", "treein", "reorder", "distout", "maxiterate", "config", "tree_out")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "align",
        help="align many sequences (multiple sequence alignment)",
        description="Align the sequences of a file; rows come out in input order. With --add "
        "or --addfragments the input is an existing alignment that the new sequences join "
        "(its columns kept); with --merge or --profile1/--profile2 two alignments are aligned "
        "to each other as profiles.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "input",
        nargs="?",
        help="sequence file (FASTA, .gz, A2M/A3M, Stockholm, Clustal), '-' for stdin; with "
        "--add/--addfragments/--merge the existing alignment",
    )
    add_output(p)
    p.add_argument(
        "--mode",
        default=None,
        choices=["auto", "fast", "default", "accurate"],
        help="fast: one progressive pass; default: two passes and light refinement "
        "(FFT-NS-2 style); accurate: local-alignment consistency and refinement (L-INS-i "
        "style); auto: accurate up to 200 sequences of up to 2,000 residues, else default "
        "up to 20,000 sequences, else fast (default: auto)",
    )
    p.add_argument(
        "--tree",
        default=None,
        choices=["auto", "upgma", "upgma_mafft", "nj", "single", "lcs", "parttree"],
        help="guide tree method (lcs: single linkage on LCS distances, FAMSA's tree; auto: "
        "lcs above 500 sequences in default mode; default: auto)",
    )
    p.add_argument(
        "--treein",
        metavar="FILE",
        help="use this rooted binary Newick tree as the guide tree (leaves named as the "
        "sequences): one progressive pass along it, then the mode's refinement",
    )
    p.add_argument(
        "--maxiterate",
        type=int,
        metavar="N",
        help="at most N refinement rounds (RefineConfig rounds_default and rounds_accurate; "
        "default: 2 in default mode, 4 in accurate mode)",
    )
    p.add_argument(
        "--reorder", action="store_true", help="output rows in guide-tree order, not input order"
    )
    p.add_argument("--distout", metavar="FILE", help=DISTOUT_HELP)
    p.add_argument(
        "--config",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="set a field of torchmsa.AlignConfig, e.g. consistency.weight=16 or "
        "scoring.offset=1.5 (repeatable; recorded in the alignment's metadata)",
    )
    p.add_argument(
        "--tree-out",
        metavar="FILE",
        help="write the guide tree (Newick) here; one sequence gives a one-leaf tree",
    )
    g = p.add_argument_group("adding and merging")
    g.add_argument(
        "--add",
        metavar="FILE",
        help="add FILE's sequences to the input alignment, keeping its columns (MAFFT --add)",
    )
    g.add_argument(
        "--addfragments",
        metavar="FILE",
        help="as --add, for fragments: their end gaps are free (MAFFT --addfragments)",
    )
    g.add_argument(
        "--keeplength",
        action="store_true",
        help="with --add/--addfragments: drop residues that fall between the existing "
        "columns, so the output keeps the input alignment's length (MAFFT --keeplength)",
    )
    g.add_argument(
        "--merge",
        metavar="FILE",
        help="align the alignment in FILE to the input alignment as profiles, each one's "
        "columns kept as blocks (input's rows first)",
    )
    g.add_argument(
        "--profile1", metavar="FILE", help="first alignment to merge (Clustal Omega style)"
    )
    g.add_argument("--profile2", metavar="FILE", help="second alignment to merge")
    add_run_options(p)
    add_distributed(p, "share one large alignment's guide tree and progressive pass")
    add_scoring(p, "BLOSUM62 / NUC.4.4")
    add_limits(p)
    p.set_defaults(func=run)


def run(args) -> int:
    job = _job(args)
    if job != "align":
        return _add_or_merge(job, args)
    from torchmsa.cli import freeze_loaded
    from torchmsa.config import AlignConfig, with_overrides
    from torchmsa.pipeline import align

    freeze_loaded()  # torch and numba are loaded
    config = with_overrides(AlignConfig(), args.config) if args.config else None
    if args.maxiterate is not None:
        if args.maxiterate < 0:
            raise ArgumentError(f"--maxiterate {args.maxiterate}: give 0 or more rounds")
        n = args.maxiterate
        config = with_overrides(
            config or AlignConfig(), [f"refine.rounds_default={n}", f"refine.rounds_accurate={n}"]
        )
    from torchmsa import compile_plan
    from torchmsa.io import check_writable, output_format, read_sequences

    # read once (standard input too), and refuse names the output cannot hold before aligning;
    # the GPU's context starts meanwhile (seconds at a fresh process's first CUDA call), or,
    # where numba's cache is empty, after the compiling processes have been forked
    cold = compile_plan.cold()
    if not cold:
        _start_cuda(args.device, args.distributed)
    marks = {"read": time.time()}  # when each step began, for -v
    source = read_sequences(args.input, limits=limits(args))
    fmt = args.format or output_format(args.output)
    check_writable([r.name for r in source], [r.description for r in source], fmt)
    if cold:
        _compile_first(args, source, config)
        _start_cuda(args.device, args.distributed)
    tree = args.tree
    if args.treein:
        if args.tree is not None:
            raise ArgumentError("give --tree or --treein, not both")
        tree = _read_text(args.treein, "--treein")
    marks["align"] = time.time()
    aln = timed(
        args,
        lambda: align(
            source,
            config=config,
            policy=policy_of(args),
            device=args.device,
            mode=args.mode,
            matrix=args.matrix,
            gap_open=args.gap_open,
            gap_extend=args.gap_extend,
            tree=tree,
            seqtype=args.seqtype,
            progress=progress_of(args),
            reorder=args.reorder,
            distributed={"auto": "auto", "on": True, "off": False}[args.distributed],
        ),
    )
    marks["aligned"] = time.time()
    shares = _in_shares(aln, args)
    if shares:  # every rank holds the alignment and writes its share of the rows
        _write_shares(aln, args)
    if aln.metadata.get("rank", 0) != 0:
        _say_marks(args, marks)
        return 0  # under torchrun, rank 0 writes the rest
    if args.tree_out:
        emit(_newick(aln) + "\n", args.tree_out)
    if args.distout:
        emit(_distances(source, aln, config, args), args.distout)
    if not shares:
        write(aln, args)
    _say_marks(args, marks)
    from torchmsa.compile_later import compile_later

    # the parallel functions this command's one-thread twins stood in for, compiled for the
    # next command by a process of its own (decision 0067); this one does not wait for it
    compile_later()
    if args.verbose:
        m = aln.metadata
        if m["computed_on"] != m["device"]:
            print(f"torchmsa: computed on {m['computed_on']}", file=sys.stderr)
        if m["config"]:
            print(f"torchmsa: config {m['config']}", file=sys.stderr)
    return 0


def _in_shares(aln, args) -> bool:
    """Whether the ranks write the output together (:mod:`torchmsa.distributed.write`):
    several ranks hold this alignment alike and it goes to a FASTA file, uncompressed, that
    is a regular file or not there yet (a device such as ``/dev/null`` is written by rank 0,
    as one process writes it)."""
    from torchmsa.io import output_format
    from torchmsa.io.write import replaceable

    if aln.metadata.get("world_size", 1) < 2 or not aln.metadata.get("ranks_alike"):
        return False
    fmt = args.format or output_format(args.output)
    if fmt != "fasta" or args.output == "-" or args.output.endswith(".gz"):
        return False
    return replaceable(args.output)


def _write_shares(aln, args) -> None:
    """Every rank its share of the output's rows, in a session of the ranks that aligned."""
    from torchmsa.distributed.session import session
    from torchmsa.distributed.world import wanted
    from torchmsa.distributed.write import write_fasta

    with session(wanted(True), args.device) as ranks:
        write_fasta(aln, args.output, ranks)
    if aln.metadata.get("rank", 0) == 0:
        summary(aln, args)


def _say_marks(args, marks: dict) -> None:
    """With ``-v``: when each step began and the command ended, in seconds since the epoch,
    so that a caller can lay the steps of several processes (ranks) side by side."""
    if args.verbose:
        marks["end"] = time.time()
        text = " ".join(f"{k}={v:.3f}" for k, v in marks.items())
        print(f"torchmsa: steps began {text}", file=sys.stderr)


def _compile_first(args, source, config) -> None:
    """numba's cache is empty: the functions of the mode this input runs in compile on every
    core first, or on ``--threads`` processes (:mod:`torchmsa.compile_plan`)."""
    from torchmsa.compile_plan import compile_cold
    from torchmsa.config import AlignConfig
    from torchmsa.pipeline.modes import resolve_mode

    longest = max((len(r.seq) for r in source), default=0)
    auto = (config or AlignConfig()).auto
    mode = resolve_mode(args.mode or "auto", len(source), longest, config=auto)
    report = compile_cold(mode, workers=args.threads)
    if report is not None and args.verbose:
        print(f"torchmsa: {report.summary()}", file=sys.stderr)


def _start_cuda(device: str, distributed: str = "off") -> None:
    """A thread that starts CUDA on ``device`` when it may be a GPU (``auto`` or ``cuda...``),
    while the main thread reads the input; under torchrun (``distributed`` not ``off``) on the
    rank's own GPU. It reports nothing: a device that cannot be used fails in the main thread
    with its proper error."""
    if not str(device).lower().startswith(("auto", "cuda")):
        return

    def start() -> None:
        try:
            import torch

            from torchmsa.distributed.world import rank_device, wanted
            from torchmsa.ops.backend import resolve_device

            world = wanted({"auto": "auto", "on": True, "off": False}[distributed])
            dev = resolve_device(device) if world is None else rank_device(device, world)
            if dev.type == "cuda":
                torch.zeros(1, device=dev)
        except Exception:  # the main thread meets it again and says what is wrong
            pass

    # not a daemon: an exit (a bad input, say) waits for it rather than cutting CUDA's setup
    threading.Thread(target=start, name="torchmsa-cuda-start").start()


def _job(args) -> str:
    """``"align"``, ``"add"`` or ``"merge"``, after checking that the flags fit together."""
    adds = [x for x in (args.add, args.addfragments) if x]
    merges = bool(args.merge) or bool(args.profile1 or args.profile2)
    if len(adds) > 1 or (adds and merges) or (args.merge and (args.profile1 or args.profile2)):
        raise ArgumentError("give one of --add, --addfragments, --merge and --profile1/--profile2")
    if bool(args.profile1) != bool(args.profile2):
        raise ArgumentError("--profile1 and --profile2 go together: give both alignments")
    if args.keeplength and not adds:
        raise ArgumentError("--keeplength goes with --add or --addfragments")
    job = "add" if adds else "merge" if merges else "align"
    if args.profile1:
        if args.input is not None:
            raise ArgumentError(
                f"with --profile1/--profile2 give no input file (got {args.input!r})"
            )
    elif args.input is None:
        raise ArgumentError("give the input file (the existing alignment with --add/--merge)")
    if job != "align":
        given = [f"--{k.replace('_', '-')}" for k in _ALIGN_ONLY if getattr(args, k)]
        if given:
            raise ArgumentError(f"{', '.join(given)} cannot be used with --{job}")
    return job


def _add_or_merge(job: str, args) -> int:
    if job == "merge":
        paths = [args.profile1, args.profile2] if args.profile1 else [args.input, args.merge]
        write(merge_files(paths, args), args)
        return 0
    from torchmsa.addmerge import add

    aln = timed(
        args,
        lambda: add(
            args.input,
            args.add or args.addfragments,
            keep_length=args.keeplength,
            fragments=bool(args.addfragments),
            device=args.device,
            policy=policy_of(args),
            matrix=args.matrix,
            gap_open=args.gap_open,
            gap_extend=args.gap_extend,
            seqtype=args.seqtype,
            progress=progress_of(args),
        ),
    )
    write(aln, args)
    return 0


def _newick(aln) -> str:
    """The guide tree's Newick; a single sequence's is a one-leaf tree."""
    if aln.tree is not None:
        return aln.tree.newick()
    from torchmsa.tree import Tree

    return Tree(aln.names[:1], [], [0.0]).newick()


def _read_text(path: str, flag: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise ArgumentError(f"{flag}: cannot read {path!r}: {exc.strerror or exc}") from None


def _distances(source, aln, config, args) -> str:
    """``--distout``'s text: the first tree's distances, then the result's percent identity,
    both in input order."""
    import torch

    from torchmsa.pipeline.trees import alignment_distances, guide_distances

    names, dist = guide_distances(
        source,
        config=config,
        policy=policy_of(args),
        device=args.device,
        seqtype=args.seqtype,
    )
    index = {n: i for i, n in enumerate(aln.names)}
    codes = aln.codes
    if args.reorder:  # back to input order
        codes = codes[torch.tensor([index[n] for n in names], device=codes.device)]
    ident = 100.0 * (1.0 - alignment_distances(codes, aln.alphabet.gap_code))
    return _phylip(names, dist, "{:.6f}") + "\n" + _phylip(names, ident, "{:.2f}")


def _phylip(names: list[str], matrix, fmt: str) -> str:
    rows = matrix.cpu().tolist()
    width = max(len(n) for n in names)
    lines = [str(len(names))]
    for name, row in zip(names, rows):
        lines.append(f"{name:<{width}}  " + " ".join(fmt.format(x) for x in row))
    return "\n".join(lines) + "\n"
