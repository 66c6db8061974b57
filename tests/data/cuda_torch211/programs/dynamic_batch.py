"""CUDA scenario, run as `compilescope run -- python dynamic_batch.py`: an MLP's compiled step fed batches of 32,
48, 64 and 80 rows, then three integer scale factors. The batch change recompiles once, with dimension 0 dynamic
after (automatic dynamic), and the later batches reuse that compile; the factor does the same for an int.
"""
import torch


def main():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 10)).cuda()

    @torch.compile
    def step(x, factor):
        return (model(x) * factor).softmax(-1)

    for batch in (32, 48, 64, 80):
        print("batch", batch, float(step(torch.randn(batch, 64, device="cuda"), 2).sum()))
    for factor in (3, 4, 5):
        print("factor", factor, float(step(torch.randn(80, 64, device="cuda"), factor).sum()))
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
