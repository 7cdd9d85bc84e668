"""One-off probes behind figures in decision records that no results CSV holds: each prints
JSON lines and writes no file. Run on a GPU machine from the checkout (``python -m
benchmarks.probes.NAME``)."""
