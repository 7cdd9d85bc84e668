"""One-off probes behind figures in decision records that no results CSV holds: each prints
JSON lines and writes no file. Run on a GPU machine from the checkout (``python -m
benchmarks.probes.NAME``)."""


def cprofiled(call, rows: int, sync=None) -> None:
    """``call()`` under cProfile (``sync()`` before the profile stops: a GPU's queue), then
    its ``rows`` costliest functions printed by their own and by their cumulative time."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    call()
    if sync is not None:
        sync()
    prof.disable()
    for key in ("tottime", "cumtime"):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats(key).print_stats(rows)
        print(out.getvalue())
