"""Responses written while the client stays connected (SELECT's multipart answer, SSE feeds).

``ClientStream.__call__`` sends the status and headers, then runs ``_stream(send)`` while a task
watches for the client's disconnect and cancels it; a client that goes away mid-write ends it too.
Either way ``_finish()`` runs last, shielded from cancellation (close a cursor, release a feed).
"""
from __future__ import annotations

import anyio
from fastapi import Response
from starlette.types import Receive, Scope, Send


class ClientStream(Response):
    """A streaming response; subclasses write the body in ``_stream`` and clean up in ``_finish``."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        try:
            async with anyio.create_task_group() as tasks:

                async def watch_disconnect() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    tasks.cancel_scope.cancel()

                tasks.start_soon(watch_disconnect)
                await self._stream(send)
                tasks.cancel_scope.cancel()
        except OSError:  # the client went away while we were writing
            pass
        finally:
            with anyio.CancelScope(shield=True):
                await self._finish()

    async def _stream(self, send: Send) -> None:
        raise NotImplementedError

    async def _finish(self) -> None:
        """Runs when the response ends, however it ends."""
