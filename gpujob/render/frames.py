"""Progress bars in a log: a program that redraws a line (tqdm, pip) writes each frame after a carriage
return, so one log line holds every frame. `gpujob logs` shows only the last frame of each line, what a
terminal would have left on screen, unless --raw."""

from __future__ import annotations


def last_frame(line: str) -> str:
    """What a terminal shows of one line: the text after its last carriage return (a CRLF ending is an
    ending, not a frame), saying how many frames it hides: an overwritten line is never passed off as
    the whole line (hostile output could hide text that way)."""
    frames = line.removesuffix("\r").split("\r")
    if len(frames) == 1:
        return frames[0]
    hidden = len(frames) - 1
    return f"{frames[-1]}  [{hidden} earlier frame{'s' if hidden > 1 else ''}; --raw shows all]"


class LastFrames:
    """Collapses frames in text arriving in pieces: a line is written once it is complete (a piece may
    end in the middle of one); `flush` gives what is left at the end."""

    def __init__(self) -> None:
        self._partial = ""

    def feed(self, text: str) -> str:
        head, newline, self._partial = (self._partial + text).rpartition("\n")
        if not newline:
            return ""
        return "\n".join(last_frame(line) for line in head.split("\n")) + "\n"

    def flush(self) -> str:
        rest, self._partial = self._partial, ""
        return last_frame(rest)
