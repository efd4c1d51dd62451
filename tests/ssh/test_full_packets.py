"""The upload's packet shaping (packets.send_full_packets) on a channel that flushes like asyncssh's:
whole packets while the peer's window is wide, and no data held for good when a window stays small."""

from __future__ import annotations

import asyncio

from gpujob.ssh.packets import HOLD_S, send_full_packets


class FakeChannel:
    """asyncssh's _flush_send_buf loop: send min(window, packet size) while data and window last."""

    def __init__(self, window: int, packet: int) -> None:
        self._send_window, self._send_pktsize = window, packet
        self._send_buf: list[bytearray] = []
        self._send_buf_len = 0
        self.sent: list[int] = []

    def _flush_send_buf(self) -> None:
        while self._send_buf and self._send_window:
            size = min(self._send_window, self._send_pktsize)
            buf = self._send_buf[0]
            data = buf[:size]
            del buf[:size]
            if not buf:
                del self._send_buf[0]
            self._send_buf_len -= len(data)
            self._send_window -= len(data)
            self.sent.append(len(data))

    def write(self, n: int) -> None:
        self._send_buf.append(bytearray(n))
        self._send_buf_len += n
        self._flush_send_buf()

    def adjust(self, n: int) -> None:
        self._send_window += n
        self._flush_send_buf()


def test_window_opened_in_small_steps_still_carries_full_packets() -> None:
    async def go() -> FakeChannel:
        chan = FakeChannel(window=2 << 20, packet=32768)
        send_full_packets(chan)
        chan.write(8 << 20)
        for _ in range(800):  # OpenSSH re-opens the window as its command drains the pipe: ~10 KB steps
            chan.adjust(10_240)
        return chan

    chan = asyncio.run(go())
    assert sum(chan.sent) == (2 << 20) + 800 * 10_240 - chan._send_window
    assert set(chan.sent) == {32768}  # unshaped, most would be 10 KB packets


def test_a_window_that_stays_small_gets_its_bytes_after_the_hold() -> None:
    async def go() -> tuple[FakeChannel, list[int]]:
        chan = FakeChannel(window=64 * 1024, packet=32768)
        send_full_packets(chan)
        chan.write(100_000)  # two full packets fit; 34 KB wait for more window
        chan.adjust(3_000)  # the peer grants only a little and then waits for it
        before = list(chan.sent)
        await asyncio.sleep(HOLD_S * 5)
        return chan, before

    chan, before = asyncio.run(go())
    assert before == [32768, 32768]
    assert chan.sent == [32768, 32768, 3_000] and chan._send_window == 0
