"""torchmsa.data: MSADataset over a folder of MSA files, collate into padded [B, N, L]
tensors with masks, through a PyTorch DataLoader (in process and in spawned workers)."""

from __future__ import annotations

import functools
import gzip
import multiprocessing

import pytest
import torch
from torch.utils.data import DataLoader

from torchmsa.alignment import Alignment
from torchmsa.data import MSADataset, collate
from torchmsa.errors import ArgumentError, EmptyInputError

FILES = {
    "a.a3m": ">q\nMKVLA\n>h1\nMKaaVL-\n>h2\n-KVLAc\n",
    "b.sto": "# STOCKHOLM 1.0\nq  MK-VL\nh  MKAVL\n//\n",
    "c.fasta": ">q\nACDEFGH\n>x\nAC-EFG-\n>y\nA--EFGH\n>z\nACDEF--\n",
}


@pytest.fixture
def folder(tmp_path):
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "d.a3m.gz").write_bytes(gzip.compress(b">q\nMK\n>r\nMaK\n"))
    (tmp_path / "notes.txt.bak").write_text("not an MSA")
    (tmp_path / "sub").mkdir()
    return tmp_path


def af_item(aln: Alignment) -> dict:
    """A transform for the spawned workers (importable, so picklable)."""
    feats = aln.alphafold_features(max_clusters=2, max_extra=4, shuffle=False)
    return {"msa": feats["msa"], "msa_feat": feats["msa_feat"], "name": aln.metadata["name"]}


def test_dataset_items(folder):
    ds = MSADataset(folder)
    assert len(ds) == 4 and [p.name for p in ds.paths] == ["a.a3m", "b.sto", "c.fasta", "d.a3m.gz"]
    a = ds[0]
    assert a["name"] == "a" and a["msa"].shape == (3, 5) and a["msa"].dtype == torch.long
    assert a["deletion_matrix"].tolist()[1] == [0, 0, 2, 0, 0]
    b = ds[1]  # Stockholm: the query's 4 residue columns, the insertion as a deletion
    assert b["msa"].shape == (2, 4) and b["deletion_matrix"].tolist() == [[0] * 4, [0, 0, 1, 0]]
    assert ds[3]["name"] == "d" and ds[3]["deletion_matrix"].tolist() == [[0, 0], [0, 1]]
    cut = MSADataset([folder / "c.fasta"], max_seqs=2)
    assert cut[0]["msa"].shape == (2, 7)
    assert MSADataset(folder / "a.a3m")[0]["msa"].shape == (3, 5)
    on_cpu = MSADataset(folder, device="cpu", transform=lambda aln: aln)
    assert on_cpu[0].codes.device.type == "cpu" and on_cpu[0].metadata["name"] == "a"


def test_dataset_checks(tmp_path):
    with pytest.raises(EmptyInputError, match="no MSA files"):
        MSADataset(tmp_path)
    with pytest.raises(EmptyInputError, match="neither"):
        MSADataset(tmp_path / "missing")
    (tmp_path / "x.a3m").write_text(">q\nM\n")
    with pytest.raises(ArgumentError, match="max_seqs"):
        MSADataset(tmp_path, max_seqs=0)


def test_collate_pads_and_masks(folder):
    ds = MSADataset(folder)
    batch = collate([ds[0], ds[2]], pad_values={"msa": 28})
    assert batch["msa"].shape == (2, 4, 7) and batch["name"] == ["a", "c"]
    assert batch["msa"][0, 3].tolist() == [28] * 7 and batch["msa"][0, 0, 5:].tolist() == [28] * 2
    assert torch.equal(batch["msa"][1], ds[2]["msa"])
    assert batch["deletion_matrix"][0, :3, :5].tolist() == ds[0]["deletion_matrix"].tolist()
    assert batch["deletion_matrix"][0, 3].sum() == 0
    assert batch["row_mask"].tolist() == [[True] * 3 + [False], [True] * 4]
    assert batch["col_mask"].tolist() == [[True] * 5 + [False] * 2, [True] * 7]
    mask = batch["msa_mask"]
    assert mask.shape == (2, 4, 7) and int(mask[0].sum()) == 15 and bool(mask[1].all())
    with pytest.raises(ArgumentError, match="rank or dtype"):
        collate([{"x": torch.zeros(2)}, {"x": torch.zeros(2, 2)}])


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader(folder, workers):
    extra = {}
    if workers:
        extra = {"multiprocessing_context": multiprocessing.get_context("spawn")}
    ds = MSADataset(folder, transform=af_item)
    loader = DataLoader(
        ds, batch_size=3, num_workers=workers, collate_fn=functools.partial(collate), **extra
    )
    batches = list(loader)
    assert [b["name"] for b in batches] == [["a", "b", "c"], ["d"]]
    first = batches[0]
    assert first["msa"].shape == (3, 2, 7) and first["msa_feat"].shape == (3, 2, 7, 49)
    assert torch.equal(first["msa_feat"][2], af_item(ds.read(2))["msa_feat"])
    assert first["msa_mask"].shape == (3, 2, 7) and not bool(first["msa_mask"][0, :, 5:].any())
