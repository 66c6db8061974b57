"""A custom op that writes into its argument while declaring no write (mutates_args=())."""
import torch


# (declared functional: torch may drop a call whose result is unused)
@torch.library.custom_op("projlib::scale", mutates_args=())
def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    x.mul_(factor)
    return x.clone()


@scale.register_fake
def _(x, factor):
    return torch.empty_like(x)
