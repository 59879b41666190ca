"""`datasets download` against a loopback HTTP server (127.0.0.1, port 0)."""

import hashlib
import http.server
import io
import re
import threading
import zipfile
from pathlib import Path

import pytest

from critique.cli import main
from critique.datasets import download
from critique.datasets.download import GITHUB, Remote
from critique.datasets.splits import DatasetError

RAW = Path(__file__).resolve().parents[2] / "shared" / "data-raw"


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802
        # taken before anything is sent: a handler thread that resets it after its client has
        # finished could otherwise wipe the cut the next test has set
        cut, self.server.cut = self.server.cut, None
        body = self.server.files.get(self.path)
        self.server.requests.append((self.path, self.headers.get("Range")))
        if body is None:
            self.send_error(404)
            return
        start, wanted = 0, self.headers.get("Range")
        if wanted and self.server.ranges:
            start = int(re.match(r"bytes=(\d+)-", wanted)[1])
            if start >= len(body):
                self.send_response(416)
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        end = cut if cut else len(body)
        self.wfile.write(body[start:end])  # a cut connection sends less than announced

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def running():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def server(running):
    running.files, running.requests, running.ranges, running.cut = {}, [], True, None
    return running


BODY = bytes(range(256)) * 400
DIGEST = hashlib.sha256(BODY).hexdigest()


def test_fetch_checks_sha256(server, tmp_path):
    server.files["/f.bin"] = BODY
    dest = download.fetch(f"{server.base}/f.bin", tmp_path / "f.bin", DIGEST, len(BODY))
    assert dest.read_bytes() == BODY and not (tmp_path / "f.bin.part").exists()
    server.requests.clear()
    download.fetch(f"{server.base}/f.bin", dest, DIGEST)  # present and verified: no request
    assert server.requests == []


def test_fetch_resumes_with_a_range_request(server, tmp_path):
    server.files["/f.bin"] = BODY
    (tmp_path / "f.bin.part").write_bytes(BODY[:1000])
    download.fetch(f"{server.base}/f.bin", tmp_path / "f.bin", DIGEST)
    assert server.requests == [("/f.bin", "bytes=1000-")]
    assert (tmp_path / "f.bin").read_bytes() == BODY


def test_interrupted_download_resumes_on_the_next_run(server, tmp_path):
    server.files["/f.bin"], server.cut = BODY, 5000
    with pytest.raises(DatasetError, match=r"/f.bin: download interrupted after 5000 bytes.*run the command again"):
        download.fetch(f"{server.base}/f.bin", tmp_path / "f.bin", DIGEST)
    assert (tmp_path / "f.bin.part").stat().st_size == 5000 and not (tmp_path / "f.bin").exists()
    download.fetch(f"{server.base}/f.bin", tmp_path / "f.bin", DIGEST)
    assert server.requests[-1] == ("/f.bin", "bytes=5000-")
    assert (tmp_path / "f.bin").read_bytes() == BODY


def test_fetch_restarts_when_the_server_ignores_the_range(server, tmp_path):
    server.files["/f.bin"], server.ranges = BODY, False
    (tmp_path / "f.bin.part").write_bytes(b"garbage")
    download.fetch(f"{server.base}/f.bin", tmp_path / "f.bin", DIGEST)
    assert (tmp_path / "f.bin").read_bytes() == BODY


def test_complete_part_file_is_accepted_after_416(server, tmp_path):
    server.files["/f.bin"] = BODY
    (tmp_path / "f.bin.part").write_bytes(BODY)
    download.fetch(f"{server.base}/f.bin", tmp_path / "f.bin", DIGEST)
    assert (tmp_path / "f.bin").read_bytes() == BODY


def test_checksum_mismatch_removes_the_download(server, tmp_path):
    server.files["/f.bin"] = BODY[:-1] + b"X"
    with pytest.raises(DatasetError, match=r"/f.bin: sha256 [0-9a-f]{64}, expected " + DIGEST):
        download.fetch(f"{server.base}/f.bin", tmp_path / "f.bin", DIGEST)
    assert list(tmp_path.iterdir()) == []


def test_http_errors_are_dataset_errors(server, tmp_path):
    with pytest.raises(DatasetError, match=r"/missing: HTTP 404"):
        download.fetch(f"{server.base}/missing", tmp_path / "x", DIGEST)


def _zip(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        for name, data in members.items():
            zipped.writestr(name, data)
    return buffer.getvalue()


def _sources(server, good=True):
    table = b"User_ID\tGame_ID\n1\t2\n"
    archive = _zip({"steam/game_play.dat": table, "steam/extra.txt": b"not taken"})
    server.files["/owner/repo/abc/data/plain.json"] = b'{"a": 1}\n'
    server.files["/owner/repo/abc/Processed%20Datasets/steam.zip"] = archive
    digest = hashlib.sha256(table if good else b"other").hexdigest()
    return [Remote(f"{GITHUB}/owner/repo/abc/data/plain.json", "plain.json", hashlib.sha256(b'{"a": 1}\n').hexdigest()),
            Remote(f"{GITHUB}/owner/repo/abc/Processed%20Datasets/steam.zip", size=len(archive),
                   members=(("steam/game_play.dat", "caserec/game_play.dat", digest),))]


def test_cli_download_through_a_mirror(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(download.SOURCES, "steam", _sources(server))
    assert main(["datasets", "download", "steam", "--to", str(tmp_path), "--mirror", server.base]) == 0
    folder = tmp_path / "steam"
    assert (folder / "plain.json").read_bytes() == b'{"a": 1}\n'
    assert (folder / "caserec" / "game_play.dat").read_bytes() == b"User_ID\tGame_ID\n1\t2\n"
    assert not (folder / ".downloads").exists() and not (folder / "extra.txt").exists()
    assert f"--raw {folder}" in capsys.readouterr().out
    server.requests.clear()
    assert main(["datasets", "download", "steam", "--to", str(tmp_path), "--mirror", server.base]) == 0
    assert server.requests == []  # everything present and verified


def test_zip_member_with_a_wrong_checksum_is_not_kept(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(download.SOURCES, "steam", _sources(server, good=False))
    assert main(["datasets", "download", "steam", "--to", str(tmp_path), "--mirror", server.base]) == 2
    assert "member steam/game_play.dat: sha256" in capsys.readouterr().err
    assert not (tmp_path / "steam" / "caserec" / "game_play.dat").exists()
    assert list((tmp_path / "steam" / "caserec").iterdir()) == []
    assert not (tmp_path / "steam" / ".downloads").exists()


def test_unknown_dataset(capsys):
    assert main(["datasets", "download", "nosuch", "--to", "/tmp/x"]) == 2
    assert "unknown dataset 'nosuch'" in capsys.readouterr().err


def test_sources_are_pinned_upstream_urls():
    for name, remotes in download.SOURCES.items():
        for remote in remotes:
            assert re.match(rf"{GITHUB}/[\w.-]+/[\w.-]+/[0-9a-f]{{40}}/", remote.url), remote.url
            digests = [remote.sha256] if not remote.members else [m[2] for m in remote.members]
            assert all(re.fullmatch(r"[0-9a-f]{64}", d) for d in digests)
            assert remote.sha256 or remote.size


@pytest.mark.skipif(not RAW.is_dir(), reason="../shared/data-raw is absent")
def test_pinned_checksums_match_the_raw_copies():
    for name, remotes in download.SOURCES.items():
        for remote in remotes:
            pinned = [(remote.path, remote.sha256)] if not remote.members else [(m[1], m[2]) for m in remote.members]
            for path, digest in pinned:
                assert hashlib.sha256((RAW / name / path).read_bytes()).hexdigest() == digest, path
