"""``torchmsa score``: SP and TC of an alignment against a reference."""

from __future__ import annotations

__all__ = ["add_parser", "run"]


def add_parser(sub) -> None:
    p = sub.add_parser("score", help="score an alignment against a reference (SP and TC)")
    p.add_argument("test", help="alignment to score")
    p.add_argument("ref", help="reference alignment")
    p.add_argument(
        "--core", help="core-column mask: a file of one 0/1 line, one char per reference column"
    )
    p.set_defaults(func=run)


def run(args) -> int:
    from torchmsa.metrics import score_alignment

    s = score_alignment(args.test, args.ref, core=args.core)
    print(f"SP={s.sp:.4f}\tTC={s.tc:.4f}")
    return 0
