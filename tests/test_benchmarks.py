"""The benchmark harness and tools: tidy results files, run metadata, settings, the results
tables, alignment hashes, merging and the one-time conversion of the old result files."""

from __future__ import annotations

import csv
import math
from types import SimpleNamespace

import pytest

from benchmarks import harness
from benchmarks.e2e_gpu import _shard
from benchmarks.harness import (
    append_rows,
    parse_variant,
    read_rows,
    run_metadata,
    settings_from,
)
from benchmarks.stages import stage_times
from benchmarks.tools import alignment_hashes, merge_results, results_table, tidy_results
from torchmsa.config import AlignConfig, ExecutionPolicy
from torchmsa.errors import ArgumentError

META = {"run": "r1", "date": "2026-01-01T00:00:00Z", "device": "GPU", "commit": "abc1234"}


def test_append_rows_creates_appends_and_adds_columns_without_touching_old_rows(tmp_path):
    path = append_rows("bench", [{"case": "c1", "seconds": 1.5}], META, tmp_path)
    assert path == tmp_path / "bench.csv"
    append_rows("bench", [{"case": "c2", "seconds": math.nan, "sp": 0.25}], META, tmp_path)
    rows = read_rows(path)
    assert [r["case"] for r in rows] == ["c1", "c2"]
    assert rows[0]["sp"] == "" and rows[1]["sp"] == "0.25" and rows[1]["seconds"] == ""
    with open(path, newline="") as fh:
        header = next(csv.reader(fh))
    # identifying columns first, the run's metadata last
    assert header[:3] == ["run", "date", "case"] and header[-2:] == ["device", "commit"]
    assert rows[0]["run"] == "r1" and rows[1]["commit"] == "abc1234"


def test_run_metadata_records_versions_command_and_the_callers_ids(monkeypatch):
    monkeypatch.setenv("TORCHMSA_COMMIT", "feedbee")
    monkeypatch.setenv("TORCHMSA_RUN", "shared-run")
    script = str(harness.REPO / "benchmarks" / "accuracy.py")
    meta = run_metadata("cpu", argv=[script, "--dataset", "balibase3", "--config", "a b=1"])
    assert meta["commit"] == "feedbee" and meta["run"] == "shared-run"
    assert meta["command"] == "python -m benchmarks.accuracy --dataset balibase3 --config 'a b=1'"
    for key in ("device", "cpu", "torch", "triton", "numba", "numpy", "python", "date"):
        assert meta[key]
    monkeypatch.delenv("TORCHMSA_RUN")
    assert run_metadata("cpu")["run"] != run_metadata("cpu")["run"]


def test_settings_parse_config_and_policy_and_reject_unknown_names():
    config, policy, budget = settings_from(["consistency.weight=16"], ["run_rows=2**6"])
    assert config.consistency.weight == 16 and policy.run_rows == 64
    assert harness.settings_columns(config, policy, budget) == {
        "config": "consistency=ConsistencyConfig(weight=16)",
        "policy": "run_rows=64",
        "budget": "",
    }
    assert set(harness.align_kwargs(config, policy, budget)) == {"config", "policy"}
    assert harness.align_kwargs(AlignConfig(), ExecutionPolicy(), budget) == {}
    with pytest.raises(ArgumentError, match="weigth"):
        settings_from(["consistency.weigth=16"])
    with pytest.raises(ArgumentError, match="run_rowz"):
        settings_from((), ["run_rowz=1"])
    with pytest.raises(ArgumentError):
        settings_from(["consistency.weight=many"])


def test_command_line_settings_end_in_a_parser_error():
    import argparse

    ap = argparse.ArgumentParser()
    harness.add_settings_options(ap)
    args = ap.parse_args(["--config", "mode=accurate", "--policy", "threads=2"])
    config, policy, _ = harness.parsed_settings(ap, args)
    assert config.mode == "accurate" and policy.threads == 2
    with pytest.raises(SystemExit):
        harness.parsed_settings(ap, ap.parse_args(["--config", "nope=1"]))


def test_variants_name_their_object_and_build_on_a_base():
    v = parse_variant("small:policy.run_rows=1<<6,config.scoring.terminal=(1,3)")
    assert v.label == "small" and v.policy.run_rows == 64 and v.config.scoring.terminal == (1, 3)
    assert v.columns()["variant"] == "small" and "run_rows=64" in v.columns()["policy"]
    base = parse_variant("base:config.consistency.weight=16")
    on_top = parse_variant("x:policy.pool_rows=8", base)
    assert on_top.config.consistency.weight == 16 and on_top.policy.pool_rows == 8
    assert parse_variant("plain").kwargs() == {}
    with pytest.raises(ArgumentError, match="expected config"):
        parse_variant("bad:pipeline.CONSISTENCY_WEIGHT=8")


def test_case_selection_and_the_shard_parser():
    table = [
        {"case": "BB11001", "ref_set": "RV11", "nseq": "4", "max_len": "300"},
        {"case": "BBS11001", "ref_set": "RV11", "nseq": "40", "max_len": "300"},
        {"case": "BB20001", "ref_set": "RV20", "nseq": "10", "max_len": "900"},
    ]
    assert [c["case"] for c in harness.pick_cases(table, "BB")] == ["BB11001", "BB20001"]
    assert [c["case"] for c in harness.pick_cases(table, "small")] == ["BB11001"]
    assert len(harness.pick_cases(table, "all")) == 3
    assert [c["case"] for c in harness.select_cases(table, [], 2)] == ["BB11001", "BB20001"]
    assert _shard("0/1") == (0, 1) and _shard("2/3") == (2, 3)
    for bad in ("3/3", "-1/2", "1", "a/b", "0/0"):
        with pytest.raises(SystemExit, match="--shard"):
            _shard(bad)


def test_stage_times_sum_the_torchmsa_ranges():
    events = [
        SimpleNamespace(name="torchmsa.align", cpu_time_total=2e6, device_time_total=0.0),
        SimpleNamespace(name="torchmsa.progressive_level", cpu_time_total=1e5, device_time_total=5),
        SimpleNamespace(name="torchmsa.progressive_level", cpu_time_total=3e5, device_time_total=5),
        SimpleNamespace(name="aten::mm", cpu_time_total=9e6, device_time_total=0.0),
    ]
    got = stage_times(events)
    assert set(got) == {"torchmsa.align", "torchmsa.progressive_level"}
    level = got["torchmsa.progressive_level"]
    assert level["calls"] == 2 and level["seconds"] == pytest.approx(0.4)
    assert level["device_seconds"] == pytest.approx(1e-5)
    assert "device_seconds" not in got["torchmsa.align"]


# ---- results tables -----------------------------------------------------------------------


def _rows(run, date, tool, mode, cases, sp, commit="c1", **extra):
    return [
        {
            "run": run,
            "date": date,
            "scope": "case",
            "dataset": "balibase3",
            "case": case,
            "tool": tool,
            "mode": mode,
            "sp": sp,
            "tc": sp / 2,
            "seconds": 1.0,
            "threads": 16,
            "device": "GPU",
            "commit": commit,
            **extra,
        }
        for case in cases
    ]


def test_results_table_takes_each_tools_latest_run_over_whole_sets(tmp_path):
    full = ["BB11001", "BB11002", "BBS11001"]
    bb = ["BB11001", "BB11002"]
    rows = _rows("old", "2026-01-01", "torchmsa-gpu", "default", full, 0.5)
    # shards of one run: one run id, two dates
    rows += _rows("new", "2026-01-02", "torchmsa-gpu", "default", full[:2], 0.8, "c2")
    rows += _rows("new", "2026-01-03", "torchmsa-gpu", "default", full[2:], 0.8, "c2")
    rows += _rows("part", "2026-01-05", "torchmsa-gpu", "default", full[:1], 0.1)  # partial
    rows += _rows("dirty", "2026-01-06", "torchmsa-gpu", "default", full, 0.1, "c3-dirty")
    rows += _rows("cfg", "2026-01-06", "torchmsa-gpu", "default", full, 0.1, config="x=1")
    rows += _rows("peer", "2026-01-04", "famsa", "", full, 0.6)
    rows += _rows("acc", "2026-01-04", "torchmsa-gpu", "accurate", bb, 0.9)
    rows += _rows("acc", "2026-01-04", "mafft-linsi", "", bb, 0.7)
    rows[-1]["error"] = "timed out"
    rows.append({"run": "new", "scope": "summary", "tool": "torchmsa-gpu", "wall_s": 9.0})
    append_rows("e2e_gpu", rows, {}, tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n<!-- results:begin -->\nold\n<!-- results:end -->\n\nrest\n")
    out = tmp_path / "RESULTS.md"
    argv = ["--results", str(tmp_path), "--out", str(out), "--readme", str(readme)]
    assert results_table.main(argv) == 0
    text = out.read_text()
    assert "## BAliBASE 3, 3 cases (`e2e_gpu`)" in text
    assert "## BAliBASE 3, 2 BB cases (`e2e_gpu`)" in text
    assert (
        "| torchmsa-gpu | default | 3 | 0 | 80.00 | 40.00 | 3.0 | 16 | GPU | c2 | 2026-01-03 |"
        in (text)
    )
    assert "| famsa | - | 3 | 0 | 60.00 |" in text
    assert "| mafft-linsi | - | 2 | 1 | 70.00 |" in text
    assert "c3-dirty" not in text and "10.00" not in text
    block = readme.read_text()
    assert block.startswith("# x\n\n<!-- results:begin -->\n| reference set (mode) |")
    assert block.endswith("<!-- results:end -->\n\nrest\n") and "old" not in block
    assert "| BAliBASE 3, 3 cases (`default`) | 80.0 / 40.0, 3.0 s |  | 60.0 / 30.0, 3.0 s |" in (
        block
    )
    assert "70.0 / 35.0, 1.0 s, 1 of 2 failed (L-INS-i)" in block
    assert results_table.main([*argv, "--check"]) == 0
    readme.write_text("no markers\n")
    results_table.main(argv)
    assert readme.read_text() == "no markers\n"


# ---- alignment hashes and merging ---------------------------------------------------------


def test_hash_files_old_and_tidy_compare_by_case(tmp_path):
    old = tmp_path / "old.csv"
    old.write_text("case,sha1,device\nT1,aaa,cpu\nT2,bbb,cpu\n")
    assert alignment_hashes.read_hashes(old, "toy", "default") == {"T1": "aaa", "T2": "bbb"}
    rows = [
        {"dataset": "toy", "mode": "default", "case": "T1", "sha1": "old"},
        {"dataset": "toy", "mode": "accurate", "case": "T1", "sha1": "acc"},
        {"dataset": "toy", "mode": "default", "case": "T1", "sha1": "aaa"},
        {"dataset": "other", "mode": "default", "case": "T2", "sha1": "zzz"},
    ]
    tidy = append_rows("alignment_hashes", rows, META, tmp_path)
    assert alignment_hashes.read_hashes(tidy, "toy", "default") == {"T1": "aaa"}
    new = [{"case": "T1", "sha1": "aaa"}, {"case": "T2", "sha1": "ccc"}]
    assert alignment_hashes.compare(new, {"T1": "aaa", "T2": "bbb"}, "f") == ["T2"]
    with pytest.raises(SystemExit, match="lacks 1 cases"):
        alignment_hashes.compare(new, {"T1": "aaa"}, "f")


def test_alignment_hashes_end_to_end_on_a_toy_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHMSA_COMMIT", "test")
    data = tmp_path / "toy"
    data.mkdir()
    (data / "cases.tsv").write_text("case\tnseq\tmax_len\nT1\t3\t12\nT2\t2\t9\n")
    (data / "T1.in.fasta").write_text(">a\nMKVLAAGHWT\n>b\nMKVLGHWTEQ\n>c\nMKALAAGHW\n")
    (data / "T2.in.fasta").write_text(">x\nACDEFGHIK\n>y\nACDFGHIK\n")
    args = ["--dataset", "toy", "--data", str(tmp_path), "--out", str(tmp_path / "a")]
    assert alignment_hashes.main(args) == 0
    first = read_rows(tmp_path / "a" / "alignment_hashes.csv")
    assert [r["case"] for r in first] == ["T1", "T2"] and len(first[0]["sha1"]) == 40
    assert first[0]["sha1"] != first[1]["sha1"] and first[0]["mode"] == "default"
    against = ["--against", str(tmp_path / "a" / "alignment_hashes.csv")]
    assert alignment_hashes.main([*args[:4], "--out", str(tmp_path / "b"), *against]) == 0
    old = tmp_path / "old.csv"
    old.write_text(f"case,sha1\nT1,{first[0]['sha1']}\nT2,{'0' * 40}\n")
    assert alignment_hashes.main([*args[:4], "--out", str(tmp_path / "b"), "--against", str(old)])
    with pytest.raises(SystemExit, match="no toy case"):
        alignment_hashes.main([*args, "--cases", "Z9"])
    with pytest.raises(SystemExit):
        alignment_hashes.main([*args, "--config", "consistency.nope=1"])


def test_merge_appends_new_rows_once(tmp_path):
    device = tmp_path / "device"
    append_rows("e2e_gpu", [{"case": "c1", "sp": 0.5}], META, tmp_path / "results")
    append_rows("e2e_gpu", [{"case": "c1", "sp": 0.5}, {"case": "c2", "tc": 0.1}], META, device)
    into = tmp_path / "results"
    assert merge_results.merge(device / "e2e_gpu.csv", into) == (1, 1)
    assert merge_results.merge(device / "e2e_gpu.csv", into) == (0, 2)
    rows = read_rows(into / "e2e_gpu.csv")
    assert [(r["case"], r["sp"], r["tc"]) for r in rows] == [("c1", "0.5", ""), ("c2", "", "0.1")]
    assert merge_results.main([str(device / "e2e_gpu.csv"), "--into", str(into)]) == 0
    with pytest.raises(SystemExit, match="no such file"):
        merge_results.merge(tmp_path / "absent.csv", into)


# ---- conversion of the old per-run files --------------------------------------------------


def _old_run(folder, stem, command, cases, summary, extra_md=""):
    meta = "- device: H100\n- commit: 1234567\n- date: 2026-01-01T00:00:00Z\n"
    (folder / f"{stem}.md").write_text(f"# {stem}\n\n{meta}- command: `{command}`\n{extra_md}\n")
    for suffix, rows in (("-cases", cases), ("", summary)):
        if rows:
            with open(folder / f"{stem}{suffix}.csv", "w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)


def test_tidy_results_converts_runs_keeps_merged_rows_once_and_moves_experiments(tmp_path):
    old = tmp_path / "results"
    old.mkdir()
    case = {"dataset": "balibase3", "case": "BB1", "tool": "torchmsa-gpu", "sp": "0.5"}
    cmd = "python -m benchmarks.e2e_gpu --mode accurate --set pipeline.CONSISTENCY_WEIGHT=16"
    _old_run(old, "e2e_gpu-accurate-bb-s0of2", cmd, [case], [{"tool": "torchmsa-gpu"}])
    _old_run(
        old,
        "e2e_gpu-accurate-bb",
        "python -m benchmarks.merge_results x",
        [{**case, "merged_shards": "2"}],
        [{"tool": "torchmsa-gpu", "wall_s": "3"}],
        "- merged_shards: 2\n",
    )
    _old_run(old, "refine_rounds-60", "python -m benchmarks.refine_rounds", [], [{"setting": "4"}])
    (old / "probes-small.md").write_text("# p\n\n## one\n\n| case | s |\n|---|---|\n| BB1 | 2 |\n")
    (old / "gpu_tests-x.log").write_text("log")
    tables = tidy_results.convert(old)
    assert set(tables) == {"e2e_gpu", "experiments/refine_rounds", "experiments/probes"}
    e2e = tables["e2e_gpu"]
    cases = [r for r in e2e if r["scope"] == "case"]
    assert len(cases) == 1 and cases[0]["source"] == "e2e_gpu-accurate-bb-s0of2-cases.csv"
    row = cases[0]
    assert row["run"] == "e2e_gpu-accurate-bb" and row["dataset"] == "balibase3"
    assert row["mode"] == "accurate" and row["commit"] == "1234567" and row["device"] == "H100"
    assert row["config"] == "pipeline.CONSISTENCY_WEIGHT=16" and row["command"] == cmd
    assert {r["scope"] for r in e2e} == {"case", "summary"} and len(e2e) == 3
    assert tables["experiments/probes"][0]["table"] == "one"
    assert tidy_results.main(["--results", str(old), "--replace"]) == 0
    left = sorted(p.relative_to(old).as_posix() for p in old.rglob("*") if p.is_file())
    assert left == ["e2e_gpu.csv", "experiments/probes.csv", "experiments/refine_rounds.csv"]


# ---- cold start ---------------------------------------------------------------------------


def _tiny_cases(folder):
    import gzip

    folder.mkdir()
    seqs = {"a": "MKVLAAGHWTEQ", "b": "MKVLGHWTEQ", "c": "MKALAAGHWEQ", "d": "MKVLAAGWTEQ"}
    (folder / "T1.in.fasta").write_text("".join(f">{k}\n{v}\n" for k, v in seqs.items()))
    ref = {"a": "MKVLAAGHWTEQ", "b": "MKVL--GHWTEQ", "c": "MKALAAGHW-EQ", "d": "MKVLAAG-WTEQ"}
    (folder / "T1.ref.fasta").write_text("".join(f">{k}\n{v}\n" for k, v in ref.items()))
    with gzip.open(folder / "T2.in.fasta.gz", "wt") as fh:
        fh.write(">x\nACDEFGHIKLMN\n>y\nACDFGHIKLMN\n>z\nACDEFGHKLMN\n")


def test_cold_start_times_fresh_processes_and_one_driver_on_tiny_cases(tmp_path):
    from benchmarks import cold_start

    _tiny_cases(tmp_path / "toy")
    regimes = "process-warm,in-process-warm,served,peers"
    argv = ["--cases", str(tmp_path / "toy"), "--regimes", regimes]
    argv += ["--mode", "default", "--device", "cpu", "--threads", "1", "--keep-caches"]
    argv += ["--bytecode", "as-is"]  # "cached" compiles torch first: minutes on two cores
    assert cold_start.main([*argv, "--out", str(tmp_path / "out")]) == 0
    rows = read_rows(tmp_path / "out" / "cold_start.csv")
    cases = [r for r in rows if r["scope"] == "case" and r["tool"] == "torchmsa"]
    assert [(r["regime"], r["case"], r["n_seqs"]) for r in cases] == [
        ("process-warm", "T1", "4"),
        ("process-warm", "T2", "3"),
        ("in-process-warm", "T1", "4"),
        ("in-process-warm", "T2", "3"),
        ("served-start", "", ""),
        ("served", "T1", "4"),
        ("served", "T2", "3"),
        ("served-loop", "T1", "4"),
        ("served-loop", "T2", "3"),
    ]
    assert all(r["ok"] == "True" and float(r["wall_s"]) > 0 for r in cases), cases
    # the server ran them, the loop's back-to-back commands too
    assert not any(r["note"] for r in cases if r["regime"].startswith("served"))
    assert all(r["caches"] == "kept" and r["mode"] == "default" for r in cases)
    assert all(r["bytecode"] == "as-is" for r in rows)
    # T1 has a reference
    assert [bool(r["sp"]) for r in cases] == [True, False] * 2 + [False] + [True, False] * 2
    assert float(cases[2]["import_s"]) > 0 and float(cases[2]["first_pass_s"]) > 0
    peer = [r for r in rows if r["tool"] == "mafft-linsi" and r["scope"] == "case"]
    assert peer and (all(r["ok"] == "True" for r in peer) or "not installed" in peer[0]["note"])
    sums = {(r["regime"], r["tool"]): r for r in rows if r["scope"] == "summary"}
    assert set(sums) == {
        ("process-warm", "torchmsa"),
        ("in-process-warm", "torchmsa"),
        ("served-start", "torchmsa"),
        ("served", "torchmsa"),
        ("served-loop", "torchmsa"),
        ("peers", "mafft-linsi"),
    }
    warm = sums[("process-warm", "torchmsa")]
    assert warm["cases"] == "2" and warm["failures"] == "0" and float(warm["max_over_median"]) >= 1
    assert float(warm["wall_s"]) == pytest.approx(sum(float(r["wall_s"]) for r in cases[:2]))
    assert "vs_mafft-linsi" in warm and rows[0]["command"].startswith("python")


def test_cold_start_caches_start_empty_and_summaries_compare_with_the_peer(tmp_path, monkeypatch):
    from pathlib import Path

    from benchmarks import cold_start

    env = cold_start.fresh_caches(tmp_path / "caches")
    assert set(env) == {"TORCHMSA_CACHE_DIR", "TRITON_CACHE_DIR", "NUMBA_CACHE_DIR"}
    (Path(env["NUMBA_CACHE_DIR"]) / "stale.nbi").write_text("x")
    assert cold_start.fresh_caches(tmp_path / "caches") == env
    assert all(Path(v).is_dir() and not any(Path(v).rglob("*.*")) for v in env.values())

    def row(regime, tool, case, wall, ok=True):
        mode = "default" if tool == "torchmsa" else ""
        return {
            **{"scope": "case", "regime": regime, "tool": tool, "mode": mode, "case": case},
            **{"wall_s": wall, "ok": ok, "sp": 0.5, "tc": math.nan, "note": ""},
            **{"backend": "cpu", "threads": 1},
        }

    rows = [row("process-warm", "torchmsa", c, w) for c, w in (("A", 1.0), ("B", 2.0), ("C", 6))]
    rows += [row("peers", "mafft-linsi", "A", 3.0), row("peers", "mafft-linsi", "B", 9.0)]
    rows.append(row("peers", "mafft-linsi", "C", math.nan, ok=False))
    ours, theirs = cold_start.summarize(rows, ["mafft-linsi"])
    assert ours["wall_s"] == 9.0 and ours["median_s"] == 2.0 and ours["max_over_median"] == 3.0
    assert ours["vs_mafft-linsi"] == pytest.approx(12.0 / 3.0)  # cases both aligned: A and B
    assert theirs["failures"] == 1 and theirs["sp"] == 0.5 and "vs_mafft-linsi" not in theirs

    failed = (1.0, "exit status 2: torchmsa: error: invalid choice: 'warmup' (choose from)", "")
    monkeypatch.setattr(cold_start, "run_process", lambda *a: failed)
    args = SimpleNamespace(device="cpu", work=tmp_path, timeout=None, backend="cpu", threads=1)
    got = cold_start.warmup_row("default", {}, args)
    assert got["ok"] is False and got["note"] == "this torchmsa has no warmup command"


def test_tree_swap_scores_one_pass_under_each_tree(tmp_path, monkeypatch):
    import gzip

    from benchmarks import tree_swap

    folder = tmp_path / "data" / "toy"
    folder.mkdir(parents=True)
    seqs = {"a": "MKVLAAGHWTEQ", "b": "MKVLGHWTEQ", "c": "MKALAAGHWEQ", "d": "MKVLAAGWTEQ"}
    with gzip.open(folder / "T1.in.fasta.gz", "wt") as fh:
        fh.write("".join(f">{k}\n{v}\n" for k, v in seqs.items()))
    ref = {"a": "MKVLAAGHWTEQ", "b": "MKVL--GHWTEQ", "c": "MKALAAGHW-EQ", "d": "MKVLAAG-WTEQ"}
    (folder / "T1.ref.fasta").write_text("".join(f">{k}\n{v}\n" for k, v in ref.items()))
    # FAMSA's tree stands in as a caterpillar, so the two passes differ where they can
    monkeypatch.setattr(tree_swap, "famsa_tree", lambda records, threads: "(((a,b),c),d);")
    argv = ["toy/T1", "--data", str(tmp_path / "data"), "--out", str(tmp_path / "out")]
    assert tree_swap.main(argv) == 0
    rows = read_rows(tmp_path / "out" / "tree_swap.csv")
    assert [(r["case"], r["tree"], r["n_seqs"]) for r in rows] == [
        ("T1", "torchmsa-lcs", "4"),
        ("T1", "famsa", "4"),
    ]
    assert all(0 <= float(r["sp"]) <= 1 and 0 <= float(r["tc"]) <= 1 for r in rows)
    assert all(r["command"].startswith("python") for r in rows)


def test_shared_job_runs_one_process_alone_and_ranks_under_torchrun_and_reads_their_steps():
    from pathlib import Path

    from benchmarks.shared_job import _steps, command, stage_rows

    alone = command(1, Path("in.fa"), Path("out.fa"), "cuda", verbose=True)
    assert alone[1:5] == ["-m", "torchmsa", "align", "in.fa"] and alone[-1] == "-v"
    two = command(2, Path("in.fa"), Path("out.fa"), "cuda")
    assert two[1:3] == ["-m", "torch.distributed.run"] and "--nproc-per-node" in two
    assert two[two.index("--nproc-per-node") + 1] == "2" and "-v" not in two
    line = "torchmsa: steps began read=1000.500 align=1003.000 end=1010.250"
    assert _steps(line, 1000.0) == "read=0.50 align=3.00 end=10.25"
    err = "torchmsa: stage align   9.5 s\ntorchmsa: stage encode 1.25 s\nother\n" * 2
    assert stage_rows(err) == [
        {"process": p, "stage": s, "seconds": x}
        for p in (0, 1)
        for s, x in (("align", 9.5), ("encode", 1.25))
    ]
