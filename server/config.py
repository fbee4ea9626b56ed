"""Load and validate the server configuration (``sensorbee.yaml``) into pydantic models.

The sections follow SensorBee's ``sensorbee run`` configuration (logging, network, storage,
topologies) plus sbpy's own ``spark``, ``plugins`` (modules) and ``plugin_dirs`` (plugin folders). Unknown keys are rejected with a message
naming the key and its section. Relative paths are resolved against the folder of the config file.

Example::

    from sbpy.server.config import load_config
    config = load_config("sensorbee.yaml")
    config.network.host, config.network.port   # ("127.0.0.1", 15601)
"""
from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

ENV_VAR = "SENSORBEE_CONFIG"
DEFAULT_LISTEN_ON = "127.0.0.1:15601"
DEFAULT_MAX_REQUEST_BYTES = 16 * 1024 * 1024
DEFAULT_PLUGIN_DIR = "plugins"
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})

_SYMBOL = re.compile(r"^[a-zA-Z][a-zA-Z0-9_]*$")
_MAX_SYMBOL_LENGTH = 127
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "fatal": logging.CRITICAL,
}


class ConfigError(ValueError):
    """The configuration file cannot be read or is invalid; the message is shown to the user."""


# ---------------------------------------------------------------- names


def is_reserved_word(name: str) -> bool:
    """True if ``name`` is a BQL reserved word (case-insensitive), which cannot name a topology or node."""
    from sbpy.bql.analyzer.names import is_reserved

    return is_reserved(name)


def name_error(name: Any) -> str | None:
    """Why ``name`` cannot name a topology, or None if it can (SensorBee's ``ValidateSymbol``)."""
    if not isinstance(name, str):
        return "value must be a string"
    if not _SYMBOL.match(name) or len(name) > _MAX_SYMBOL_LENGTH:
        return "inavlid format"  # sic: SensorBee's text
    if is_reserved_word(name):
        return "inavlid format"
    return None


# ---------------------------------------------------------------- sections


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LoggingConfig(_Section):
    """``logging``: where log lines go and which are written."""

    target: str = "stderr"
    min_log_level: Literal["debug", "info", "warn", "warning", "error", "fatal"] = "info"
    log_dropped_tuples: bool = False
    log_destinationless_tuples: bool = False
    summarize_dropped_tuples: bool = False

    @property
    def level(self) -> int:
        """The ``logging`` module level of ``min_log_level``."""
        return _LEVELS[self.min_log_level]


class NetworkConfig(_Section):
    """``network``: ``listen_on`` is ``host:port``; ``:port`` listens on all interfaces."""

    listen_on: str = DEFAULT_LISTEN_ON
    auth_token: str | None = None
    allowed_hosts: list[str] = Field(default_factory=list)
    allowed_origins: list[str] = Field(default_factory=list)
    max_request_bytes: int = Field(default=DEFAULT_MAX_REQUEST_BYTES, gt=0)
    public_metrics: bool = False  # GET /metrics answers without the auth_token (sbpy.server.metrics)

    @field_validator("listen_on")
    @classmethod
    def _check_listen_on(cls, value: str) -> str:
        host, sep, port = value.rpartition(":")
        if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
            raise ValueError(f"listen_on must look like 'host:port' or ':port', got '{value}'")
        return value

    @field_validator("allowed_hosts", "allowed_origins")
    @classmethod
    def _check_names(cls, value: list[str]) -> list[str]:
        for item in value:
            if not item.strip():
                raise ValueError("entries must not be empty")
        return value

    @property
    def host(self) -> str:
        host = self.listen_on.rpartition(":")[0].strip("[]")
        return host or "0.0.0.0"

    @property
    def loopback_only(self) -> bool:
        """True if the server listens on a loopback address only (then nothing else can reach it)."""
        return self.host.lower() in LOOPBACK_HOSTS or self.host.startswith("127.")

    @property
    def port(self) -> int:
        return int(self.listen_on.rpartition(":")[2])


class UDSParams(_Section):
    dir: Path | None = None
    temp_dir: Path | None = None


class UDSStorageConfig(_Section):
    """``storage.uds``: ``in_memory`` (default) or ``fs`` (``params.dir`` required)."""

    type: Literal["in_memory", "fs"] = "in_memory"
    params: UDSParams = Field(default_factory=UDSParams)

    @model_validator(mode="after")
    def _check_fs(self) -> UDSStorageConfig:
        if self.type == "fs" and self.params.dir is None:
            raise ValueError("params.dir is required for the 'fs' storage")
        return self


class StorageConfig(_Section):
    """``storage``: UDS storage and ``file_roots``, the folders file sources and sinks may use
    (None: the config file's folder and the data folder)."""

    uds: UDSStorageConfig = Field(default_factory=UDSStorageConfig)
    file_roots: list[Path] | None = None


class TopologyConfig(_Section):
    """One entry of ``topologies``: an optional BQL file run at startup."""

    bql_file: Path | None = None


class SparkConfig(_Section):
    """``spark``: master URL, extra Spark settings, the data folder (checkpoints, state), and whether
    ``sbpy run`` starts Spark in the background at startup (else on the first query)."""

    master: str = "local[*]"
    conf: dict[str, str | int | float | bool] = Field(default_factory=dict)
    data_dir: Path | None = None
    warm_up: bool = True


class Config(_Section):
    """The whole server configuration. ``base_dir`` is the config file's folder (or the cwd)."""

    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    storage: StorageConfig = Field(default_factory=StorageConfig)
    topologies: dict[str, TopologyConfig | None] = Field(default_factory=dict)
    spark: SparkConfig = Field(default_factory=SparkConfig)
    plugins: list[str] = Field(default_factory=list)
    plugin_dirs: list[Path] | None = None  # None: ``plugins/`` beside the config file, if it exists
    _source_path: Path | None = PrivateAttr(default=None)

    @field_validator("topologies", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value

    @field_validator("topologies")
    @classmethod
    def _check_names(cls, value: dict[str, TopologyConfig | None]) -> dict[str, TopologyConfig | None]:
        seen: set[str] = set()
        for name in value:
            if name_error(name) is not None:
                raise ValueError(f"'{name}' is not a valid topology name")
            if name.lower() in seen:
                raise ValueError(f"topology '{name}' is listed twice")
            seen.add(name.lower())
        return value

    @property
    def source_path(self) -> Path | None:
        """The config file this came from (None for the defaults)."""
        return self._source_path

    @property
    def base_dir(self) -> Path:
        return self._source_path.parent if self._source_path is not None else Path.cwd()

    @property
    def data_dir(self) -> Path:
        """``spark.data_dir`` resolved; default: ``data`` beside the config file."""
        return self.resolve(self.spark.data_dir or Path("data"))

    @property
    def file_roots(self) -> list[Path]:
        """The folders file sources and sinks of the server may touch: ``storage.file_roots``
        resolved, else the config file's folder (the cwd without one) and the data folder."""
        if self.storage.file_roots is not None:
            return [self.resolve(p) for p in self.storage.file_roots]
        return [self.base_dir, self.data_dir]

    @property
    def plugin_folders(self) -> list[Path]:
        """The folders whose modules are loaded as plugins (``sbpy.plugins.loader.load_folders``):
        ``plugin_dirs`` resolved, else ``plugins/`` beside the config file when there is one."""
        if self.plugin_dirs is not None:
            return [self.resolve(p) for p in self.plugin_dirs]
        default = self.base_dir / DEFAULT_PLUGIN_DIR
        return [default] if self._source_path is not None and default.is_dir() else []

    def resolve(self, path: Path | str) -> Path:
        """``path`` made absolute against the config file's folder."""
        path = Path(path).expanduser()
        return path if path.is_absolute() else (self.base_dir / path).resolve()

    def bql_file(self, topology: str) -> Path | None:
        """The resolved ``bql_file`` of a configured topology, if any."""
        entry = self.topologies.get(topology)
        return self.resolve(entry.bql_file) if entry and entry.bql_file else None


# ---------------------------------------------------------------- loading


def _describe(err: dict[str, Any]) -> str:
    loc = [str(p) for p in err["loc"]]
    if err["type"] == "extra_forbidden":
        section = ".".join(loc[:-1]) or "the top level"
        return f"unknown key '{loc[-1]}' in section '{section}'" if loc[:-1] else (
            f"unknown key '{loc[-1]}' at the top level")
    where = ".".join(p for p in loc if p not in ("TopologyConfig",)) or "config"
    msg = err["msg"].removeprefix("Value error, ")
    return f"{where}: {msg}"


def config_from_dict(data: Any, source_path: Path | None = None) -> Config:
    """Validate a parsed YAML document; raises ``ConfigError`` naming the offending keys."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("the configuration must be a YAML mapping")
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        lines = [_describe(e) for e in exc.errors()]
        raise ConfigError("invalid configuration: " + "; ".join(lines)) from None
    config._source_path = source_path
    return config


def load_config(path: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None) -> Config:
    """Read the config from ``path``, else ``$SENSORBEE_CONFIG``, else use the defaults."""
    env = os.environ if env is None else env
    if path is None or str(path) == "":
        path = env.get(ENV_VAR) or None
    if path is None:
        return Config()
    file = Path(path).expanduser().resolve()
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the config file '{path}': {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"the config file '{path}' is not valid YAML: {exc}") from None
    return config_from_dict(data, file)

