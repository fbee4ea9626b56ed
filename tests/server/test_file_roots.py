"""File sources and sinks of a server touch only paths under its file roots, and sink rotation deletes
only the backups it made (issue 12)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sbpy.plugins.builtin.paths import PathNotAllowed, allowed_path, allowed_roots
from sbpy.plugins.builtin.sinks import FileSink
from sbpy.server.config import config_from_dict

# ---------------------------------------------------------------- allowed_path


def test_allowed_path_resolves_and_checks(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir(), outside.mkdir()
    (root / "link").symlink_to(outside)
    assert allowed_path("../anything", "source") == "../anything"  # no roots: unrestricted, as written
    with allowed_roots([root]):
        assert allowed_path(f"{root}/a/b.jsonl", "sink") == f"{root}/a/b.jsonl"
        for bad in (f"{outside}/x.jsonl", f"{root}/../outside/x.jsonl", f"{root}/link/x.jsonl",
                    f"{root}x/y.jsonl", "/etc/passwd"):
            with pytest.raises(PathNotAllowed, match="is outside the allowed file roots"):
                allowed_path(bad, "source")
        with pytest.raises(PathNotAllowed) as info:
            allowed_path(f"{root}/link/x.jsonl", "sink")
        assert str(info.value) == (
            f"the sink path '{root}/link/x.jsonl' (resolved: '{outside}/x.jsonl') is outside the allowed "
            f"file roots ('{root}'); add its folder to storage.file_roots in the server config to allow it")


def test_default_roots_are_the_config_folder_and_the_data_folder(tmp_path):
    cfg = config_from_dict({"spark": {"data_dir": "/srv/data"}}, tmp_path / "sensorbee.yaml")
    assert cfg.file_roots == [tmp_path, Path("/srv/data")]
    cfg = config_from_dict({"storage": {"file_roots": ["in", "/abs"]}}, tmp_path / "sensorbee.yaml")
    assert cfg.file_roots == [tmp_path / "in", Path("/abs")]
    assert config_from_dict({}).file_roots == [Path.cwd(), Path.cwd() / "data"]


# ---------------------------------------------------------------- through the REST API


@pytest.fixture
def layout(tmp_path):
    """``cfg/`` holds the config (a root, with ``data/``), ``outside/`` a secret and a victim file,
    ``cfg/link`` points at ``outside/``."""
    cfg, outside = tmp_path / "cfg", tmp_path / "outside"
    cfg.mkdir(), outside.mkdir()
    (cfg / "in.jsonl").write_text(json.dumps({"a": 1}) + "\n")
    (outside / "secret.jsonl").write_text(json.dumps({"password": "x"}) + "\n")
    (outside / "victim.txt").write_text("precious\n")
    (cfg / "link").symlink_to(outside)
    return cfg, outside


def _run(c, text: str):
    return c.post("/topologies/t/queries", json={"queries": text})


def _refused(r, what: str) -> str:
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["code"] == "E0007", err
    assert "is outside the allowed file roots" in err["meta"]["error"], err
    assert err["meta"]["error"].startswith(f"cannot create {what}"), err
    return err["meta"]["error"]


def test_server_refuses_paths_outside_its_roots(server_factory, layout):
    cfg, outside = layout
    server = server_factory({"spark": {"data_dir": "data"}}, source_path=cfg / "sensorbee.yaml")
    with server.client() as c:
        assert c.post("/topologies", json={"name": "t"}).status_code == 200
        message = _refused(_run(c, f'CREATE PAUSED SOURCE s TYPE file WITH path = "{outside}/secret.jsonl";'),
                           "source 's'")
        assert f"('{cfg}', '{cfg}/data')" in message
        _refused(_run(c, f'CREATE PAUSED SOURCE s TYPE file WITH path = "{cfg}/link/secret.jsonl";'), "source")
        _refused(_run(c, f'CREATE SINK k TYPE file WITH path = "{outside}/victim.txt", truncate = true;'), "sink")
        _refused(_run(c, f'CREATE SINK k TYPE file WITH path = "{cfg}/link/victim.txt", truncate = true;'), "sink")
        _refused(_run(c, f'CREATE SINK k TYPE file WITH path = "{outside}/new/dir/out.jsonl";'), "sink")
        assert (outside / "victim.txt").read_text() == "precious\n"
        assert not (outside / "new").exists()
        assert sorted(p.name for p in outside.iterdir()) == ["secret.jsonl", "victim.txt"]
        # inside the roots all is as before
        r = _run(c, f'CREATE PAUSED SOURCE s TYPE file WITH path = "{cfg}/in.jsonl";'
                    f'CREATE SINK k TYPE file WITH path = "{cfg}/data/out/o.jsonl";')
        assert r.status_code == 200, r.text
        assert (cfg / "data/out/o.jsonl").exists()


def test_configured_roots_replace_the_defaults(server_factory, layout):
    cfg, outside = layout
    server = server_factory({"storage": {"file_roots": [str(outside)]}}, source_path=cfg / "sensorbee.yaml")
    with server.client() as c:
        assert c.post("/topologies", json={"name": "t"}).status_code == 200
        r = _run(c, f'CREATE PAUSED SOURCE s TYPE file WITH path = "{outside}/secret.jsonl";')
        assert r.status_code == 200, r.text
        _refused(_run(c, f'CREATE PAUSED SOURCE u TYPE file WITH path = "{cfg}/in.jsonl";'), "source 'u'")


# ---------------------------------------------------------------- rotation


def test_rotation_deletes_only_its_own_backups(tmp_path):
    ten_days_ago = (tmp_path.stat().st_mtime - 10 * 86400,) * 2
    unrelated = ["report-2023.csv", "report-2024.csv", "report-final.csv", "report-.csv"]
    for name in unrelated:
        (tmp_path / name).write_text("not the sink's\n")
        os.utime(tmp_path / name, ten_days_ago)
    sink = FileSink({"path": str(tmp_path / "report.csv"), "max_size": 0.0001, "max_backups": 1,
                     "max_age": 1})
    for batch in range(6):  # ~110 bytes a batch: every write passes max_size and rotates
        sink.write([{"row": "x" * 100, "n": batch}], batch=("q", batch))
    sink.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    own = [n for n in names if n.startswith("report-") and n not in unrelated]
    assert len(own) == 1, names  # max_backups = 1 (same-millisecond rotations share a name)
    for name in unrelated:
        assert (tmp_path / name).read_text() == "not the sink's\n", name
    assert json.loads((tmp_path / "report.csv.sbpy-backups").read_text()) == own
