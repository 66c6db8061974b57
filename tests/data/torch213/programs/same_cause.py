"""One cause, several frames: two modules' `forward`s recompile for the same size change.

Made for the "Fix first" grouping (issue 14): the old summary listed
"forward recompiled 1 time / changed: tensor size" twice, word for word.
Backend eager (Dynamo only) keeps the log small.
"""

import torch


class Scale(torch.nn.Module):
    def forward(self, x):
        return x * 2


class Shift(torch.nn.Module):
    def forward(self, x):
        return x + 1


def main():
    scale = torch.compile(Scale(), backend="eager")
    shift = torch.compile(Shift(), backend="eager")
    for n in (4, 8):  # the batch size changes once: both forwards recompile, for the same reason
        x = torch.ones(n, 3)
        torch.testing.assert_close(shift(scale(x)), x * 2 + 1)


if __name__ == "__main__":
    main()
