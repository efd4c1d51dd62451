"""`gpujob logs` shows a redrawn line (a progress bar's frames after carriage returns) as its last frame,
saying how many it hides; text that arrives in pieces is collapsed per whole line."""

from __future__ import annotations

from gpujob.render.frames import LastFrames, last_frame


def test_the_last_frame_of_a_line_and_how_many_it_hides() -> None:
    assert last_frame("plain") == "plain"
    assert last_frame("crlf ending\r") == "crlf ending"
    assert (
        last_frame(" 10%|#\r 50%|#####\r100%|##########")
        == "100%|##########  [2 earlier frames; --raw shows all]"
    )
    assert last_frame("secret\rinnocent") == "innocent  [1 earlier frame; --raw shows all]"


def test_pieces_are_collapsed_per_whole_line() -> None:
    f = LastFrames()
    out = f.feed("epoch 1\n 10%\r 5")
    out += f.feed("0%\r100%\nepoch 2\r\n")
    out += f.feed("tail\r 3")
    out += f.flush()
    assert (
        out
        == "epoch 1\n100%  [2 earlier frames; --raw shows all]\nepoch 2\n 3  [1 earlier frame; --raw shows all]"
    )
