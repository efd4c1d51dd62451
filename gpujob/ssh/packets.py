"""How an upload goes out: whole SSH packets while the peer's window allows them, instead of whatever
sliver of window OpenSSH has just granted (each packet costs Python framing, encryption and an
MSG_IGNORE, so many small ones are slow)."""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import Any

import asyncssh

HOLD_S = 0.02  # the longest an upload waits for the peer's window to fit a full packet


def send_full_packets(chan: Any) -> None:
    """Hold an upload until the peer's window allows a full packet. asyncssh sends whatever window the
    peer grants at once, and OpenSSH grants it as its command drains the pipe, a few KB at a time: an
    upload became ~22 KB packets where 32 KB fit, each with its own Python framing, encryption and
    (asyncssh adds one before each packet) an empty MSG_IGNORE. A peer re-opens its window long before
    it is down to an eighth; one that waits for the last byte still gets it, HOLD_S later."""
    flush = getattr(chan, "_flush_send_buf", None)
    initial = getattr(chan, "_send_window", None)
    if (
        flush is None
        or not isinstance(initial, int)
        or not isinstance(getattr(chan, "_send_pktsize", None), int)
    ):
        return  # not the asyncssh this was written against: keep its own behaviour
    least = min(chan._send_pktsize, initial // 8)
    loop = asyncio.get_running_loop()
    late: list[asyncio.TimerHandle] = []

    def flush_full() -> None:
        while late:
            late.pop().cancel()
        window, packet = chan._send_window, chan._send_pktsize
        if chan._send_buf_len <= window or least <= window < packet:
            flush()  # all of it fits, or the peer's window is that small: as asyncssh would
        elif window >= least:
            whole = window - window % packet
            chan._send_window = whole
            try:
                flush()
            finally:
                chan._send_window += window - whole
        elif window > 0:
            late.append(loop.call_later(HOLD_S, flush_held))  # the next window adjust usually comes first

    def flush_held() -> None:
        with suppress(asyncssh.Error, OSError):  # the channel's own error paths report a lost connection
            flush()

    chan._flush_send_buf = flush_full
