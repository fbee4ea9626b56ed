"""``sbpy shell`` on a real terminal (tmux) against a real ``sbpy run`` on a loopback port: ``help``,
an acknowledgement, an error, completion of names fetched from the server (a stream after FROM, a
sink created in the session after INTO), and Ctrl-C before a SELECT's first row: the query is
cancelled and the shell answers the next statement.

The SELECT makes the server start Spark (its first row would come after Spark's start-up): the test
presses Ctrl-C while the status line shows, so it never waits for Spark, but the server does start it.
"""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest
from server_process import Server, new_server

pytestmark = [pytest.mark.spark, pytest.mark.slow,
              pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")]


class Terminal:
    """One tmux session on a private server socket running ``command``."""

    def __init__(self, command: list[str], env: dict[str, str], status_file: Path):
        self.socket = f"sbpy-test-{uuid.uuid4().hex[:8]}"
        self.env = env
        self.status_file = status_file
        # sh reaps the command and writes its status: tmux 3.3a under load can leave the exited command a
        # zombie with its pane alive for more than 30 s, so the pane's state is no witness of the exit.
        # (``trap : INT``: Ctrl-C is for the command; a handler, unlike an ignored signal, is not inherited)
        script = f"trap : INT; {shlex.join(command)}; echo $? > {shlex.quote(str(status_file))}.tmp" \
                 f" && mv {shlex.quote(str(status_file))}.tmp {shlex.quote(str(status_file))}"
        self._tmux("new-session", "-d", "-s", "shell", "-x", "110", "-y", "45", shlex.join(["sh", "-c", script]))
        self._tmux("set-option", "-t", "shell", "remain-on-exit", "on")  # keep the pane to read the screen

    def _tmux(self, *args: str) -> str:
        proc = subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True,
                              env=self.env, timeout=30, check=False)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def type(self, text: str) -> None:
        """Type ``text`` literally (a ``;`` ending an argument would end tmux's command: sent as hex)."""
        body, semicolon = (text[:-1], True) if text.endswith(";") else (text, False)
        if body:
            self._tmux("send-keys", "-t", "shell", "-l", body)
        if semicolon:
            self._tmux("send-keys", "-t", "shell", "-H", "3b")

    def press(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "shell", *keys)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", "shell")

    def wait_for(self, predicate, what: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if predicate(screen):
                return screen
            assert time.monotonic() < deadline, f"timed out waiting for {what}; the screen:\n{screen}"
            time.sleep(0.1)

    def exit_status(self) -> str | None:
        """None while the command runs, then its exit status as ``sh`` reported it."""
        return self.status_file.read_text().strip() if self.status_file.exists() else None

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30, check=False)


def after(screen: str, marker: str) -> str:
    """The screen below the last line containing ``marker`` ("" while there is none)."""
    lines = screen.rstrip("\n").split("\n")
    found = [i for i, line in enumerate(lines) if marker in line]
    return "\n".join(lines[found[-1] + 1 :]) if found else ""


@pytest.fixture
def server(tmp_path):
    server = new_server(tmp_path)
    server.config.write_text(server.config.read_text() + "  warm_up: false\n")
    server.start()
    yield server
    if server.proc is not None:
        server.proc.send_signal(signal.SIGINT)
        try:
            server.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()


def test_shell_on_a_terminal(server: Server, tmp_path: Path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"w": "a"}\n')
    assert httpx.post(server.api + "/topologies", json={"name": "t"}, timeout=30).status_code == 200
    server.queries("t", f'CREATE PAUSED SOURCE src TYPE file WITH path = "{src}";'
                        "CREATE STREAM words AS SELECT RSTREAM * FROM src [RANGE 1 TUPLES];")
    env = {**os.environ, "HOME": str(tmp_path), "TERM": "xterm-256color"}
    term = Terminal([sys.executable, "-m", "sbpy.server.cli.main", "shell", "-t", "t", "--uri",
                     f"http://127.0.0.1:{server.port}/"], env, tmp_path / "shell.status")
    try:
        term.wait_for(lambda s: s.rstrip().endswith("t>"), "the prompt")

        term.type("help")
        term.press("Enter")
        term.wait_for(lambda s: "Shell commands:" in s and after(s, "Ctrl-C cancels the running").strip() == "t>",
                      "the help text")

        term.type("CREATE SINK snk TYPE stdout;")
        term.press("Enter")
        term.wait_for(lambda s: after(s, "t> CREATE SINK snk TYPE stdout;").strip().split("\n") == ["CREATE SINK snk", "t>"],
                      "the acknowledgement and the next prompt")
        term.type("CREATE SINK snk TYPE stdout;")
        term.press("Enter")
        term.wait_for(lambda s: after(s, "t> CREATE SINK snk TYPE stdout;").startswith("request failed: E0007")
                      and s.rstrip().endswith("t>"), "the error and the next prompt")

        term.type("INSERT INTO s")  # the sink created in this session, fetched from the server
        term.wait_for(lambda s: "snk" in after(s, "t> INSERT INTO s"), "the completion menu")
        term.press("Tab")
        term.wait_for(lambda s: "t> INSERT INTO snk" in s, "the completed sink name")
        term.press("C-u")

        term.type("SELECT RSTREAM * FROM wo")
        term.wait_for(lambda s: "words" in after(s, "FROM wo"), "the completion menu")
        term.press("Tab")
        term.wait_for(lambda s: "t> SELECT RSTREAM * FROM words" in s, "the completed stream name")
        term.type(" [RANGE 1 TUPLES];")
        term.press("Enter")
        term.wait_for(lambda s: "Ctrl-C cancels" in after(s, "FROM words [RANGE 1 TUPLES];"),
                      "the status line")
        term.press("C-c")
        screen = term.wait_for(lambda s: after(s, "FROM words [RANGE 1 TUPLES];").strip().startswith("cancelled"),
                               "the cancellation")
        assert "{" not in after(screen, "FROM words [RANGE 1 TUPLES];")  # no row came

        term.type("EVAL 1 + 1;")
        term.press("Enter")
        # Ctrl-D before the next prompt is up would reach a terminal still in cooked mode, where the
        # line discipline takes it as end-of-file for a read nobody makes: wait for the prompt.
        term.wait_for(lambda s: after(s, "t> EVAL 1 + 1;").strip().split("\n") == ["2", "t>"],
                      "the EVAL after Ctrl-C and the next prompt")
        assert term.exit_status() is None
        term.press("C-d")
        term.wait_for(lambda s: term.exit_status() is not None, "the shell to end at Ctrl-D", timeout=30)
        assert term.exit_status() == "0"
    finally:
        term.close()
