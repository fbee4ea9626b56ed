"""UDS storage: in_memory and fs (temp file + rename), config parsing."""
from __future__ import annotations

import pytest

from sbpy.server.uds_storage import FsStorage, InMemoryStorage, NotSavedError, storage_from_config


@pytest.fixture(params=["memory", "fs"])
def storage(request, tmp_path):
    return InMemoryStorage() if request.param == "memory" else FsStorage(tmp_path / "uds", tmp_path / "tmp")


def test_save_load_list(storage):
    with storage.save("topo", "model", "default") as w:
        w.write(b"abc")
    with storage.save("topo", "model", "v2") as w:
        w.write(b"xyz")
    assert storage.load("topo", "model", "default").read() == b"abc"
    assert storage.list("topo") == {"model": ["default", "v2"]}
    assert storage.exists("topo", "model", "v2")
    assert storage.list_topologies() == ["topo"]
    with pytest.raises(NotSavedError, match="state 'other' was not saved with tag 'default'"):
        storage.load("topo", "other", "default")


def test_abort_keeps_the_previous_version(storage):
    with storage.save("t", "s", "default") as w:
        w.write(b"old")
    with pytest.raises(RuntimeError):
        with storage.save("t", "s", "default") as w:
            w.write(b"torn")
            raise RuntimeError("crash while saving")
    assert storage.load("t", "s", "default").read() == b"old"


def test_fs_layout_and_no_temp_left(tmp_path):
    st = FsStorage(tmp_path / "uds", tmp_path / "tmp")
    w = st.save("twitter", "age_model", "default")
    w.write(b"1")
    assert not (tmp_path / "uds" / "twitter-age_model-default.state").exists()  # not visible before commit
    w.commit()
    assert (tmp_path / "uds" / "twitter-age_model-default.state").read_bytes() == b"1"
    assert list((tmp_path / "tmp").iterdir()) == []
    st.delete("twitter", "age_model", "default")
    assert st.list("twitter") == {}


def test_fs_rejects_path_tricks(tmp_path):
    st = FsStorage(tmp_path)
    with pytest.raises(Exception, match="invalid state name"):
        st.save("t", "../x", "default")


def test_storage_from_config(tmp_path):
    assert isinstance(storage_from_config({}), InMemoryStorage)
    assert isinstance(storage_from_config({"storage": {"uds": {"type": "in_memory"}}}), InMemoryStorage)
    st = storage_from_config({"storage": {"uds": {"type": "fs", "params": {"dir": "uds"}}}}, base_dir=tmp_path)
    assert isinstance(st, FsStorage) and st.dir == tmp_path / "uds" and st.temp_dir == tmp_path / "uds"
    with pytest.raises(ValueError, match="params.dir is required"):
        storage_from_config({"type": "fs", "params": {}})


def test_storage_from_server_config(tmp_path):
    from sbpy.server.config import Config

    cfg = Config.model_validate({"storage": {"uds": {"type": "fs", "params": {"dir": str(tmp_path / "u"),
                                                                             "temp_dir": str(tmp_path / "t")}}}})
    st = storage_from_config(cfg)
    assert isinstance(st, FsStorage) and st.temp_dir == tmp_path / "t"
