"""Alphabets: letters, codes, detection, validation errors."""

import pickle

import numpy as np
import pytest

from torchmsa.alphabet import (
    DNA,
    PROTEIN,
    RNA,
    detect_seqtype,
    detect_texts,
    encode,
    encode_batch,
    encode_texts,
    get_alphabet,
    resolve_alphabet,
)
from torchmsa.errors import AlphabetError, ArgumentError, InvalidCharacterError, TorchMSAError

STANDARD_AA = "ACDEFGHIKLMNPQRSTVWY"
IUPAC_NUC = "ACGTURYSWKMBDHVN"
DAYHOFF = ["AGPST", "C", "DENQ", "FWY", "HKR", "ILMV"]


def oracle_codes(seq: str, letters: str) -> list[int]:
    """Plain-Python encoding: index of the upper-case letter, gaps dropped."""
    return [letters.index(ch.upper()) for ch in seq if ch not in "-."]


@pytest.mark.parametrize("alphabet", [PROTEIN, DNA, RNA], ids=lambda a: a.name)
def test_every_letter_in_both_cases(alphabet):
    text = alphabet.letters + alphabet.letters.lower()
    codes, residues = encode(text, alphabet)
    assert codes.dtype == np.uint8
    assert codes.tolist() == oracle_codes(text, alphabet.letters)
    assert residues == text
    assert alphabet.gap_code == alphabet.size == len(alphabet.letters)


def test_protein_accepts_standard_and_special_letters():
    assert set(STANDARD_AA) <= set(PROTEIN.letters)
    for ch in "UOBZJX*":
        codes, _ = encode(f"MK{ch}{ch.lower()}V", PROTEIN, "p")
        assert codes.tolist() == oracle_codes(f"MK{ch}{ch.lower()}V", PROTEIN.letters)


@pytest.mark.parametrize("alphabet", [DNA, RNA], ids=lambda a: a.name)
def test_nucleotides_accept_n_and_iupac_codes(alphabet):
    assert set(alphabet.letters) == set(IUPAC_NUC)
    seq = "acgtNnRYSWKMBDHVu"
    assert encode(seq, alphabet)[0].tolist() == oracle_codes(seq, alphabet.letters)


def test_gaps_are_removed_and_case_is_kept():
    codes, residues = encode("-Ac.gT--", DNA)
    assert residues == "AcgT"
    assert codes.tolist() == oracle_codes("AcgT", DNA.letters)
    codes, residues = encode("", PROTEIN)
    assert codes.tolist() == [] and residues == ""
    codes, residues = encode("--..", PROTEIN)
    assert codes.tolist() == [] and residues == ""


@pytest.mark.parametrize(
    "seq, alphabet, position, char",
    [
        ("MKV1L", PROTEIN, 4, "1"),
        ("MK VL", PROTEIN, 3, " "),
        ("MK-~L", PROTEIN, 4, "~"),  # the position counts the gap as given
        ("MKé", PROTEIN, 3, "é"),
        ("M1é", PROTEIN, 2, "1"),  # first invalid character, ASCII or not
        ("ACGTX", DNA, 5, "X"),
        ("ACGTj", DNA, 5, "j"),
        ("AC*G", RNA, 3, "*"),
        ("ACG\n", DNA, 4, "\n"),
    ],
)
def test_invalid_character_names_sequence_position_and_character(seq, alphabet, position, char):
    with pytest.raises(InvalidCharacterError) as info:
        encode(seq, alphabet, name="my_seq", index=4)
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, TorchMSAError)
    assert (err.name, err.index, err.position, err.character, err.alphabet) == (
        "my_seq",
        4,
        position,
        char,
        alphabet.name,
    )
    msg = str(err)
    assert "\n" not in msg
    assert "'my_seq'" in msg and "#5" in msg and f"position {position}" in msg
    assert repr(char) in msg
    assert ("'N'" if alphabet.is_nucleotide else "'X'") in msg and "seqtype" in msg


def test_invalid_character_error_pickles():
    err = InvalidCharacterError("s", 0, 3, "!", "protein")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is InvalidCharacterError
    assert (back.name, back.position, back.character, str(back)) == ("s", 3, "!", str(err))


def test_encode_refuses_non_strings():
    with pytest.raises(ArgumentError, match="not a string"):
        encode(None, PROTEIN, "x")


def test_detection_names_an_item_that_is_not_a_string():
    with pytest.raises(ArgumentError, match=r"'seqs\[1\]' \(#2\) is a int, not a string"):
        detect_seqtype(["ACGT", 3])


@pytest.mark.parametrize(
    "seqs, expected",
    [
        (["ACGTACGTNN", "acgt"], DNA),
        (["ACGUACGU", "acgu"], RNA),
        (["ACGUT"], DNA),  # U and T together: DNA
        (["MKVLAAGIVG", "ACGT"], PROTEIN),
        (["ACGTRYKMACGTACGTACGT"], PROTEIN),  # only 80% A C G T U N
        (["ACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTR"], DNA),  # 98%
        (["AC-GT..A"], DNA),
        ([""], PROTEIN),
        (["---"], PROTEIN),
        ([], PROTEIN),
        (["ACGTACGTACGTACGTACGX"], DNA),  # X in DNA: detected as DNA, encode then points at it
        (["ACGTé"], PROTEIN),
        (["ACGT" * 20000, "acgt", "E"], PROTEIN),  # the protein letter past the first 64K
        (["ACGU" * 20000, "-", "acgu"], RNA),
    ],
)
def test_detect_seqtype(seqs, expected):
    letters = [c.upper() for c in "".join(seqs) if c not in "-."]
    core = sum(c in "ACGTUN" for c in letters)
    nuc_ok = letters and set(letters) <= set(IUPAC_NUC) | {"X"} and core >= 0.9 * len(letters)
    oracle = (RNA if "U" in letters and "T" not in letters else DNA) if nuc_ok else PROTEIN
    assert detect_seqtype(seqs) is oracle is expected


def test_get_alphabet_names_and_aliases():
    for name, alphabet in [("protein", PROTEIN), ("DNA", DNA), (" rna ", RNA), ("aa", PROTEIN)]:
        assert get_alphabet(name) is alphabet
    assert get_alphabet("nucleotide") is DNA
    assert get_alphabet(PROTEIN) is PROTEIN
    for bad in ["prot3in", "auto", "", None, 3]:
        with pytest.raises(AlphabetError, match="seqtype") as info:
            get_alphabet(bad)
        assert isinstance(info.value, ValueError)


def test_resolve_alphabet_auto_in_any_case():
    assert resolve_alphabet("auto", ["ACGT"]) is DNA
    assert resolve_alphabet("AUTO", ["MKV"]) is PROTEIN
    assert resolve_alphabet("protein", ["ACGT"]) is PROTEIN
    assert resolve_alphabet(RNA, ["MKV"]) is RNA


def test_reduced_groups_follow_dayhoff():
    for code, ch in enumerate(PROTEIN.letters):
        group = next((g for g, members in enumerate(DAYHOFF) if ch in members), 255)
        assert PROTEIN.reduced[code] == group, ch
    assert PROTEIN.reduced_size == len(DAYHOFF)
    for alphabet in (DNA, RNA):
        for code, ch in enumerate(alphabet.letters):
            assert alphabet.reduced[code] == {"A": 0, "C": 1, "G": 2, "T": 3, "U": 3}.get(ch, 255)


def test_alphabets_pickle_to_the_same_object_and_lookup_is_read_only():
    for alphabet in (PROTEIN, DNA, RNA):
        assert pickle.loads(pickle.dumps(alphabet)) is alphabet
        with pytest.raises(ValueError):
            alphabet.lookup[0] = 1
    assert DNA != RNA and hash(DNA) != hash(PROTEIN)


@pytest.mark.parametrize("alphabet", [PROTEIN, DNA], ids=lambda a: a.name)
def test_encode_batch_matches_encode_one_by_one(alphabet):
    rng = np.random.default_rng(7)
    pool = alphabet.letters + alphabet.letters.lower() + "-."
    for _ in range(30):
        n = int(rng.integers(1, 6))
        seqs = ["".join(rng.choice(list(pool), int(rng.integers(0, 12)))) for _ in range(n)]
        if rng.random() < 0.5:  # plant an invalid character somewhere
            k = int(rng.integers(n))
            at = int(rng.integers(len(seqs[k]) + 1))
            seqs[k] = seqs[k][:at] + str(rng.choice(["1", "é", " ", "~"])) + seqs[k][at:]
        names = [f"n{i}" for i in range(n)]
        try:
            one = [encode(s, alphabet, names[i], i) for i, s in enumerate(seqs)]
        except InvalidCharacterError as err:
            with pytest.raises(InvalidCharacterError) as info:
                encode_batch(seqs, alphabet, names)
            got = info.value
            assert (got.name, got.index, got.position, got.character) == (
                err.name,
                err.index,
                err.position,
                err.character,
            )
            continue
        codes, lengths, residues = encode_batch(seqs, alphabet, names)
        assert residues == [r for _, r in one]
        assert lengths.tolist() == [len(c) for c, _ in one]
        assert codes.shape == (n, max(len(c) for c, _ in one))
        for row, (c, _) in zip(codes.tolist(), one):
            assert row == c.tolist() + [alphabet.gap_code] * (codes.shape[1] - len(c))


def _detect_oracle(seqs):
    """Detection's rule, letter by letter in plain Python."""
    letters = [ch for s in seqs for ch in s.upper() if ch not in "-."]
    letters = [ch if ch.isascii() else "?" for ch in letters]
    if not letters or any(ch not in "ACGTURYSWKMBDHVNX" for ch in letters):
        return "protein"
    if sum(ch in "ACGTUN" for ch in letters) < 0.9 * len(letters):
        return "protein"
    return "rna" if "U" in letters and "T" not in letters else "dna"


def test_detect_seqtype_matches_a_letter_by_letter_oracle():
    """The class counts (bytes.translate) against the rule spelled out: random sequences over
    nucleotide codes, gaps, X, protein letters, odd characters and lower case."""
    rng = np.random.default_rng(3)
    pool = list("ACGTUNRYSWKMBDHVXacgtunx-.*EFLP1 ?é")
    for _ in range(3000):
        letters = rng.choice(pool, int(rng.integers(1, 6)))
        weights = rng.random(len(letters))
        seqs = [
            "".join(rng.choice(letters, int(rng.integers(0, 30)), p=weights / weights.sum()))
            for _ in range(int(rng.integers(0, 4)))
        ]
        assert detect_seqtype(seqs).name == _detect_oracle(seqs), seqs


def _encode_batch_oracle(seqs, alphabet, names):
    """encode_batch's contract character by character in plain Python: ``(rows, lengths,
    residues)``, or ``(error type, message)`` for the first bad sequence."""
    for i, seq in enumerate(seqs):
        name = names[i] if names else f"seq{i + 1}"
        if not isinstance(seq, str):
            return ArgumentError, f"sequence {name!r} (#{i + 1}) is a {type(seq).__name__}, not"
    for i, seq in enumerate(seqs):
        name = names[i] if names else f"seq{i + 1}"
        for pos, ch in enumerate(seq):
            if ch not in alphabet.letters + alphabet.letters.lower() + "-.":
                err = InvalidCharacterError(name, i, pos + 1, ch, alphabet.name)
                return InvalidCharacterError, str(err)
    residues = ["".join(ch for ch in seq if ch not in "-.") for seq in seqs]
    rows = [oracle_codes(seq, alphabet.letters) for seq in seqs]
    return rows, [len(r) for r in residues], residues


@pytest.mark.parametrize("alphabet", [PROTEIN, DNA], ids=lambda a: a.name)
def test_encode_batch_matches_a_plain_python_oracle(alphabet):
    """Random batches: ragged, equal, empty and all-gap texts, both cases, invalid characters
    (ASCII or not, some past the gaps), non-strings; the same arrays, or the same error."""
    rng = np.random.default_rng(11)
    pool = list(alphabet.letters + alphabet.letters.lower() + "--..")
    bad = ["1", " ", "~", "é", "ſ", "\n", "?", "X" if alphabet.is_nucleotide else "#"]
    for _ in range(400):
        n = int(rng.integers(0, 7))
        width = int(rng.integers(0, 15))
        ragged = rng.random() < 0.6
        seqs = [
            "".join(rng.choice(pool, int(rng.integers(0, width + 1)) if ragged else width))
            for _ in range(n)
        ]
        for _ in range(int(rng.integers(0, 3)) if n else 0):
            k, ch = int(rng.integers(n)), str(rng.choice(bad))
            at = int(rng.integers(len(seqs[k]) + 1))
            seqs[k] = seqs[k][:at] + ch + seqs[k][at:]
        if n and rng.random() < 0.1:
            seqs[int(rng.integers(n))] = [None, 3, b"ACG", list("ACG")][int(rng.integers(4))]
        names = [f"n{i}" for i in range(n)] if rng.random() < 0.5 else None
        expected = _encode_batch_oracle(seqs, alphabet, names)
        if isinstance(expected[0], type):
            with pytest.raises(expected[0]) as info:
                encode_batch(seqs, alphabet, names)
            assert type(info.value) is expected[0] and str(info.value).startswith(expected[1])
            continue
        rows, lengths, residues = expected
        codes, got_lengths, got_residues = encode_batch(seqs, alphabet, names)
        assert got_residues == residues
        assert got_lengths.dtype == np.int32 and got_lengths.tolist() == lengths
        assert codes.dtype == np.uint8 and codes.flags.writeable
        assert codes.shape == (n, max(lengths, default=0))
        gap = [alphabet.gap_code]
        assert codes.tolist() == [r + gap * (codes.shape[1] - len(r)) for r in rows]


@pytest.mark.parametrize("alphabet", [PROTEIN, DNA], ids=lambda a: a.name)
def test_encode_texts_gives_the_residue_texts_as_padded_ascii(alphabet):
    """``raw`` holds residue text ``i`` from byte ``i * width``, case kept, padded with ``-``;
    the other fields are encode_batch's, with or without the caller's joined text."""
    rng = np.random.default_rng(12)
    pool = list(alphabet.letters + alphabet.letters.lower() + "-.")
    for _ in range(200):
        n = int(rng.integers(0, 6))
        seqs = ["".join(rng.choice(pool, int(rng.integers(0, 12)))) for _ in range(n)]
        want = encode_batch(seqs, alphabet)
        for text in (None, "".join(seqs)):
            got = encode_texts(seqs, alphabet, text=text)
            assert got.codes.tolist() == want[0].tolist()
            assert got.lengths.tolist() == want[1].tolist() and got.residues == want[2]
            assert got.width == max(map(len, want[2]), default=0)
            padded = "".join(r.ljust(got.width, "-") for r in want[2])
            assert got.raw == padded.encode("ascii")


def test_detect_texts_is_detect_seqtype_of_the_joined_texts():
    rng = np.random.default_rng(13)
    pool = list("ACGTUNRYSWKMBDHVXacgtunx-.*EFLP1 ?é")
    for _ in range(1000):
        letters = rng.choice(pool, int(rng.integers(1, 6)))
        texts = ["".join(rng.choice(letters, int(rng.integers(0, 40)))) for _ in range(2)]
        assert detect_texts(*texts) is detect_seqtype(texts)
    assert detect_texts("ACGT" * 20000 + "E", "ACGT") is PROTEIN
    assert detect_texts("ACGT" * 20000, "acgE") is PROTEIN
    assert detect_texts("ACGU" * 20000, "acgu") is RNA
