"""wording's helpers on the texts they are given (the cases real logs bring: a path in a loader's message)."""

from __future__ import annotations

from compilescope.wording import cut_at_word, ordinal


def test_a_long_word_after_a_short_first_one_is_cut_inside_not_dropped():
    # A native library's loader error: a short phrase, then one path longer than the limit. Cut at the last space,
    # it said only "Could not load …": the path, what the message is about, was dropped whole.
    path = "/home/user/.cache/torch/inductor/" + "c" * 200 + "/kernel.so: undefined symbol _Z3foov"
    text = f"Could not load {path}"
    cut = cut_at_word(text, 160)
    assert len(cut) <= 160 and cut.endswith("…")
    assert cut.startswith("Could not load /home/user/.cache/torch/inductor/cccc") and len(cut) >= 150
    # (where the last space is near the limit, the cut is still at a word)
    words = "the quick brown fox jumps over the lazy dog " * 6
    assert cut_at_word(words, 160) == words[:words.rfind(" ", 0, 159)].rstrip() + " …"


def test_ordinals_past_the_tenth_take_their_own_suffix():
    # The attempts' and arguments' ordinals (one helper for both): past "tenth" they said "21th" ("{n}th").
    assert [ordinal(n) for n in (1, 2, 3, 10)] == ["first", "second", "third", "tenth"]
    assert [ordinal(n) for n in (11, 12, 13, 21, 22, 23, 24, 101, 111, 112, 113, 121)] == [
        "11th", "12th", "13th", "21st", "22nd", "23rd", "24th", "101st", "111th", "112th", "113th", "121st"]
