"""CUDA scenario, run as `compilescope run -- torchrun --nproc-per-node 2 ddp_uneven_batch.py`: two ranks of
DistributedDataParallel training a compiled MLP, both on the one GPU (gloo: NCCL wants a GPU per rank).

- DDP's buckets are 1 MB, smaller than each 1024x1024 weight, so Dynamo's DDPOptimizer splits the forward graph
  at bucket boundaries: one graph, several submodules compiled in it;
- 3 steps with batch 32 on both ranks, then a last batch of 32 on rank 0 and 20 on rank 1 (a dataset that does not
  divide evenly among the ranks): rank 1 recompiles, rank 0 does not. That is what a fleet report must find.
"""
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 1024), torch.nn.GELU(),
        torch.nn.Linear(1024, 1024), torch.nn.GELU(),
        torch.nn.Linear(1024, 256)).cuda()
    # The model is compiled inside DDP: Dynamo sees DDP's buckets and splits the graph at them (DDPOptimizer).
    step = DistributedDataParallel(torch.compile(model), bucket_cap_mb=1)
    opt = torch.optim.SGD(step.parameters(), lr=0.01)
    for batch in (32, 32, 32, 32 if rank == 0 else 20):
        x = torch.randn(batch, 256, device="cuda")
        loss = step(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
    torch.cuda.synchronize()
    print(f"rank {rank} loss {float(loss.detach()):.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
