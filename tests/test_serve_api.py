"""``torchmsa serve``'s HTTP API, the Python client and the client verbs, against a real
store and worker served by uvicorn on loopback (:func:`torchmsa.serve.server.start`)."""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx", reason="the service tests need httpx (pip install httpx)")
pytest.importorskip("fastapi", reason="the service needs fastapi and uvicorn")

import torchmsa  # noqa: E402
from torchmsa.client import Client, RequestError, ServerError  # noqa: E402
from torchmsa.errors import TorchMSAError  # noqa: E402
from torchmsa.serve.server import start  # noqa: E402
from torchmsa.serve.store import Store  # noqa: E402

DATA = Path(__file__).parent / "data"
SMALL = DATA / "small.fasta"
SOD = Path(__file__).parents[1] / "examples" / "superoxide_dismutase.fasta"
WRITE_FORMATS = ("fasta", "clustal", "stockholm", "phylip", "a3m")
FAMILY = (
    ">alpha first\nMKVLAAGIVALLLAAGCSSAKEE\n>beta\nMKVLSAGLVALLLSAGCSSAKDE\n"
    ">gamma\nMRVLAAGIVALLAGCSSAKEE\n>delta\nMKVLAAGIVGLLLAAGCSAKEEQ\n"
)


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """A server with one CPU worker."""
    store = Store.open(None, data_dir=tmp_path_factory.mktemp("store"))
    srv = start(store, device="cpu")
    yield srv
    srv.stop()
    store.close()


@pytest.fixture(scope="module")
def idle(tmp_path_factory):
    """A server without workers (jobs stay queued), with small limits and two tokens."""
    store = Store.open(None, data_dir=tmp_path_factory.mktemp("idle"))
    srv = start(store, workers=False, token=["tok-one", "tok-two"], max_bytes=4000, max_seqs=5)
    yield srv
    srv.stop()
    store.close()


def http(srv, user: str | None = "alice", token: str | None = None) -> httpx.Client:
    headers = {"X-TorchMSA-User": user} if user else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.Client(base_url=srv.url, headers=headers, timeout=60)


def post(client: httpx.Client, text: str, **params) -> httpx.Response:
    return client.post("/jobs", content=text.encode(), params=params)


def wait(client: httpx.Client, job_id: str, timeout: float = 120) -> dict:
    import time

    end = time.monotonic() + timeout
    while True:
        info = client.get(f"/jobs/{job_id}").json()
        if info["state"] in ("done", "failed") or time.monotonic() > end:
            assert info["state"] == "done", info
            return info
        time.sleep(0.05)


def one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


# --- endpoints -------------------------------------------------------------------------------


def test_health_openapi_docs_and_page_need_no_network(service):
    with http(service, user=None) as c:
        health = c.get("/health").json()
        assert health["status"] == "ok" and health["version"] == torchmsa.__version__
        assert health["auth"] == "none" and health["workers"][0]["alive"] is True
        spec = c.get("/openapi.json").json()
        for path in ("/jobs", "/jobs/{job_id}", "/jobs/{job_id}/result", "/jobs/{job_id}/view"):
            assert path in spec["paths"], path
        assert set(spec["paths"]["/jobs/{job_id}"]) == {"get", "delete"}
        docs = c.get("/docs")
        page = c.get("/")
    assert docs.status_code == 200 and "/jobs/{job_id}/result" in docs.text
    assert page.status_code == 200 and 'id="fasta"' in page.text and 'id="mode"' in page.text
    for text in (docs.text, page.text):
        assert "http://" not in text and "https://" not in text  # nothing loaded from elsewhere


@pytest.mark.parametrize("mode", ["fast", "accurate"])
def test_results_are_bit_identical_to_align_in_every_format(service, mode):
    with http(service) as c:
        r = post(c, SOD.read_text(), mode=mode)
        assert r.status_code == 201, r.text
        job = r.json()
        assert r.headers["location"] == f"/jobs/{job['id']}"
        assert job["state"] in ("queued", "running", "done") and job["n_seqs"] == 9
        assert len(job["id"]) >= 16 and "owner" not in job
        info = wait(c, job["id"])
        expected = torchmsa.align(str(SOD), mode=mode, device="cpu")
        for fmt in WRITE_FORMATS:
            got = c.get(f"/jobs/{job['id']}/result", params={"format": fmt})
            assert got.status_code == 200 and got.text == expected.format(fmt), fmt
        tree = c.get(f"/jobs/{job['id']}/result", params={"format": "newick"}).text
        assert tree.strip() == expected.tree.newick().strip()
        down = c.get(f"/jobs/{job['id']}/result", params={"format": "clustal", "download": 1})
        assert down.headers["content-disposition"] == f'attachment; filename="{job["id"]}.aln"'
    assert info["progress"] == pytest.approx(1.0)
    for key in ("timings", "shared", "placement", "started", "finished", "options"):
        assert key in info
    assert info["placement"] and info["finished"] >= info["started"] >= info["created"]
    assert info["options"]["mode"] == mode


def test_multipart_upload_form_text_and_gzip_body(service):
    expected = torchmsa.align(io.StringIO(FAMILY), mode="fast", device="cpu").format("fasta")
    with http(service) as c:
        up = c.post("/jobs", files={"file": ("fam.fasta", FAMILY.encode())}, data={"mode": "fast"})
        form = c.post("/jobs", data={"fasta": FAMILY, "mode": "fast"})
        packed = c.post(
            "/jobs", content=gzip.compress(FAMILY.encode()), params={"mode": "fast"},
            headers={"Content-Type": "application/gzip"},
        )  # fmt: skip
        for r in (up, form, packed):
            assert r.status_code == 201, r.text
            wait(c, r.json()["id"])
            assert c.get(f"/jobs/{r.json()['id']}/result").text == expected


def test_options_reach_the_alignment(service):
    params = [("mode", "fast"), ("matrix", "PAM250"), ("gap_open", "9"), ("tree", "nj"),
              ("config", "scoring.offset=1.5"), ("config", "tree.lcs_min_n=1000")]  # fmt: skip
    with http(service) as c:
        r = c.post("/jobs", content=FAMILY.encode(), params=params)
        assert r.status_code == 201, r.text
        assert r.json()["options"]["config"] == ["scoring.offset=1.5", "tree.lcs_min_n=1000"]
        wait(c, r.json()["id"])
        got = c.get(f"/jobs/{r.json()['id']}/result").text
    config = torchmsa.config.with_overrides(
        torchmsa.AlignConfig(), ["scoring.offset=1.5", "tree.lcs_min_n=1000"]
    )
    expected = torchmsa.align(
        io.StringIO(FAMILY), config=config, mode="fast", matrix="PAM250", gap_open=9, tree="nj",
        device="cpu",
    )  # fmt: skip
    assert got == expected.format("fasta")


def test_view_is_the_view_page_of_the_result(service):
    with http(service) as c:
        job = post(c, SMALL.read_text(), mode="fast").json()
        wait(c, job["id"])
        page = c.get(f"/jobs/{job['id']}/view")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    blob = page.text.split('id="msa-data">', 1)[1].split("</script>", 1)[0]
    data = json.loads(blob)
    aln = torchmsa.align(str(SMALL), mode="fast", device="cpu")
    assert sorted(data["names"]) == sorted(aln.names) and data["width"] == aln.width
    assert data["tree"] is not None


def test_a_user_sees_only_their_jobs(service):
    with http(service, "alice") as alice, http(service, "bob") as bob, http(service, None) as anon:
        mine = [post(alice, FAMILY, mode="fast").json()["id"] for _ in range(2)]
        theirs = post(bob, FAMILY, mode="fast").json()["id"]
        listed = {j["id"] for j in alice.get("/jobs", params={"limit": 1000}).json()["jobs"]}
        assert set(mine) <= listed and theirs not in listed
        assert {j["id"] for j in bob.get("/jobs").json()["jobs"]} == {theirs}
        wait(alice, mine[0])
        for other in (bob, anon):
            for path in ("", "/result", "/view"):
                r = other.get(f"/jobs/{mine[0]}{path}")
                assert r.status_code == 404 and "no job" in r.json()["error"], path
            assert other.delete(f"/jobs/{mine[0]}").status_code == 404
        assert alice.get(f"/jobs/{mine[0]}/result").status_code == 200


def test_delete_forgets_the_job(service):
    with http(service) as c:
        job_id = post(c, FAMILY, mode="fast").json()["id"]
        wait(c, job_id)
        r = c.delete(f"/jobs/{job_id}")
        assert r.status_code == 200 and r.json() == {"id": job_id, "state": "deleted"}
        assert c.get(f"/jobs/{job_id}").status_code == 404
        assert c.get(f"/jobs/{job_id}/result").status_code == 404
        assert c.delete(f"/jobs/{job_id}").status_code == 404
        assert job_id not in {j["id"] for j in c.get("/jobs").json()["jobs"]}


# --- errors ----------------------------------------------------------------------------------


def test_bad_input_gets_the_command_lines_message_as_422(service):
    bad = ">a\nMKV1LA\n>b\nMKVLA\n"
    with pytest.raises(TorchMSAError) as exc:
        torchmsa.align(io.StringIO(bad), device="cpu")
    with http(service) as c:
        r = post(c, bad)
        assert r.status_code == 422 and r.json() == {"error": one_line(exc.value)}
        cases = {
            "": "empty",
            "\xff\xfe>a": "UTF-8",
        }
        for body, words in cases.items():
            r = c.post("/jobs", content=body.encode("latin-1"))
            assert r.status_code == 422 and words in r.json()["error"], (body, r.json())
        r = post(c, FAMILY, colour="red")
        assert r.status_code == 422 and "unknown option 'colour'" in r.json()["error"]
        r = post(c, FAMILY, gap_open="lots")
        assert r.status_code == 422 and "`gap_open`" in r.json()["error"]
        r = post(c, FAMILY, mode="quick")
        assert (
            r.status_code == 422 and "mode" in r.json()["error"] and "'quick'" in r.json()["error"]
        )
        r = c.get("/jobs", params={"limit": "many"})
        assert r.status_code == 422 and "limit" in r.json()["error"]
        r = c.get("/jobs/no-such-job")
        assert r.status_code == 404 and "'no-such-job'" in r.json()["error"]
        job_id = post(c, FAMILY, mode="fast").json()["id"]
        wait(c, job_id)
        r = c.get(f"/jobs/{job_id}/result", params={"format": "nexus"})
        assert r.status_code == 422 and "'nexus'" in r.json()["error"]


def test_result_before_done_is_409(idle):
    with http(idle, token="tok-one") as c:
        job_id = post(c, FAMILY).json()["id"]
        assert c.get(f"/jobs/{job_id}").json()["state"] == "queued"
        r = c.get(f"/jobs/{job_id}/result")
        assert r.status_code == 409 and "is queued" in r.json()["error"]


def test_size_and_count_limits_are_413(idle):
    many = "".join(f">s{i}\nMKVLAAGIV\n" for i in range(6))
    with http(idle, token="tok-one") as c:
        r = post(c, many)
        assert r.status_code == 413 and "limit of 5" in r.json()["error"]
        r = post(c, ">a\n" + "A" * 5000 + "\n")
        assert r.status_code == 413 and "limit of 4,000 bytes" in r.json()["error"]
        r = c.post("/jobs", files={"file": ("big.fa", (">a\n" + "M" * 5000).encode())})
        assert r.status_code == 413
        bomb = gzip.compress((">a\n" + "M" * 100_000).encode())
        assert len(bomb) < 4000
        r = c.post("/jobs", content=bomb)
        assert r.status_code == 413 and "unpacks" in r.json()["error"]
        assert post(c, many[: many.index(">s5")]).status_code == 201  # 5 is allowed


def test_bearer_tokens_authenticate_and_separate_users(idle):
    with http(idle, None) as anon, http(idle, None, "tok-one") as one:
        with http(idle, None, "tok-two") as two, http(idle, None, "tok-three") as wrong:
            for c in (anon, wrong):
                r = c.get("/jobs")
                assert r.status_code == 401 and "bearer token" in r.json()["error"]
                assert r.headers["www-authenticate"] == "Bearer"
                assert post(c, FAMILY).status_code == 401
            assert anon.get("/health").json()["auth"] == "bearer"
            job_id = post(one, FAMILY).json()["id"]
            assert one.get(f"/jobs/{job_id}").status_code == 200
            assert two.get(f"/jobs/{job_id}").status_code == 404
            assert job_id not in {j["id"] for j in two.get("/jobs").json()["jobs"]}
            # a user header does not get around the token
            spoof = httpx.Client(base_url=idle.url, headers={"X-TorchMSA-User": "x"})
            with spoof:
                assert spoof.get(f"/jobs/{job_id}").status_code == 401


# --- the client ------------------------------------------------------------------------------


def test_client_round_trip_gives_align_s_alignment(service):
    expected = torchmsa.align(str(SOD), mode="fast", device="cpu")
    with Client(service.url, user="carol") as client:
        assert client.health()["status"] == "ok"
        job_id = client.submit(str(SOD), mode="fast")
        assert client.wait(job_id, timeout=120)["state"] == "done"
        assert client.result(job_id, "clustal") == expected.format("clustal")
        aln = client.result(job_id, "alignment")
        assert isinstance(aln, torchmsa.Alignment)
        assert aln.names == expected.names and aln.rows == expected.rows
        assert aln.descriptions == expected.descriptions
        assert aln.codes.dtype == expected.codes.dtype and bool((aln.codes == expected.codes).all())
        assert aln.tree.newick() == expected.tree.newick()
        assert [j["id"] for j in client.jobs()] == [job_id]
        other = client.submit({"x": "MKVLAAGIV", "y": "MKVLSAGIV"}, mode="fast", seqtype="protein")
        client.wait(other, timeout=60)
        assert client.result(other).startswith(">x\n")
        assert client.delete(job_id) is True and client.delete(job_id) is False
        with pytest.raises(RequestError) as err:
            client.status(job_id)
        assert err.value.status == 404 and isinstance(err.value, ValueError)
        with pytest.raises(RequestError, match="invalid character"):
            client.submit(">a\nMK1\n")


def test_client_reports_an_unreachable_server():
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ServerError, match="cannot reach the torchmsa server") as err:
        Client(f"http://127.0.0.1:{port}").status("x")
    assert err.value.status == 0


# --- the verbs -------------------------------------------------------------------------------


def cli(argv: list[str]) -> int:
    """Run a client verb as ``torchmsa`` would (its parser; one error line, status 2)."""
    import sys

    from torchmsa.cli import fetch, serve, status, submit
    from torchmsa.cli.common import Parser

    parser = Parser(prog="torchmsa")
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    for verb in (serve, submit, status, fetch):
        verb.add_parser(sub)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code
    try:
        return args.func(args)
    except (TorchMSAError, ValueError) as exc:
        print(f"torchmsa: error: {one_line(exc)}", file=sys.stderr)
        return 2


def test_verbs_are_registered():
    from torchmsa.cli import VERBS

    assert {"serve", "submit", "status", "fetch"} <= set(VERBS)


def test_submit_status_fetch_verbs(service, tmp_path, capsys):
    server = ["--server", service.url, "--user", "dave"]
    assert cli(["submit", str(SOD), "--mode", "fast", "--wait", *server]) == 0
    job_id = capsys.readouterr().out.strip()
    assert cli(["status", job_id, *server]) == 0
    line = capsys.readouterr().out
    assert line.startswith(f"{job_id}  done") and "9 seqs" in line
    assert cli(["status", "--json", job_id, *server]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "done"
    out = tmp_path / "sod.aln"
    assert cli(["fetch", job_id, "-o", str(out), *server]) == 0
    expected = torchmsa.align(str(SOD), mode="fast", device="cpu")
    assert out.read_text() == expected.format("clustal")  # format from the name
    assert cli(["fetch", job_id, "--format", "newick", *server]) == 0
    assert capsys.readouterr().out.strip() == expected.tree.newick().strip()
    assert cli(["status", *server]) == 0
    assert job_id in capsys.readouterr().out
    aln = tmp_path / "direct.sto"
    code = cli(["submit", str(SOD), "--mode", "fast", "-o", str(aln), "--format", "stockholm",
                *server])  # fmt: skip
    assert code == 0 and aln.read_text() == expected.format("stockholm")
    capsys.readouterr()
    assert cli(["fetch", "nope", *server]) == 2
    err = capsys.readouterr().err
    assert err.startswith("torchmsa: error: no job 'nope'") and err.count("\n") == 1


def test_serve_verb_checks_its_arguments(capsys):
    assert cli(["serve", "--port", "70000"]) == 2
    assert "--port" in capsys.readouterr().err
    assert cli(["serve", "--cpu-workers", "0"]) == 2
    assert "--cpu-workers" in capsys.readouterr().err
