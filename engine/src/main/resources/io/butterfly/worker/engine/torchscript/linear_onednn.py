# Projections on float32 weights reordered once into oneDNN's blocked layout, computed by oneDNN's JIT-generated
# kernels (what libtorch's own compiler uses for frozen linear layers on CPU). On this project's AMD CPUs they stream
# a one-row product's weights at the memory's bandwidth and run a 16-row product 2.5 times as fast as MKL's packed
# GEMM (docs/benchmarks.md, "Projection kernels").
#
# oneDNN picks its kernel by the number of rows: measured with libtorch 2.7.1, every product of 1 to 80 rows rounds a
# row alike (whatever the other rows, with 1 or 2 threads), from about 96 rows on another kernel rounds otherwise. So
# rows go through in blocks of at most 64 and a row's bits never depend on what it is batched with (a long prefill
# pays 5-10% for the blocks).


def prepare(w: Tensor, dtype: int) -> List[Tensor]:
  # The reordered matrix, and an [out, in] stand-in without memory of its own (the same list shape as the others).
  return [ops.mkldnn._reorder_linear_weight(w, None), torch.expand(torch.zeros([1, 1], dtype=6), [w.size(0), w.size(1)])]


def product(x: Tensor, w: Tensor, bias: Optional[Tensor]) -> Tensor:
  return ops.mkldnn._linear_pointwise(x, w, bias, "none", annotate(List[Optional[number]], []), "")


def linear(x: Tensor, w: Tensor, shape: Tensor, bias: Tensor) -> Tensor:
  b: Optional[Tensor] = None
  if bias.numel() > 0:
    b = bias
  rows = x.size(0)
  if rows <= 64:
    return __torch__.butterfly.linear.product(x, w, b)
  blocks = annotate(List[Tensor], [])
  for start in range(0, rows, 64):
    blocks.append(__torch__.butterfly.linear.product(torch.narrow(x, 0, start, min(64, rows - start)), w, b))
  return torch.cat(blocks)
