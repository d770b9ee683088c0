# Projections on float32 weights packed once for MKL's GEMM (cblas_sgemm_pack), so that no call repacks the
# weight matrix (an unpacked sgemm copies all of it on every call: two thirds of a batched step's BLAS time).
# The packing does not depend on the row count: any number of rows computes with it, and from 4 rows on
# with the same bits as an unpacked product.


def prepare(w: Tensor, dtype: int) -> List[Tensor]:
  # The packed matrix, and an [out, in] stand-in without memory of its own for the kernel's shape checks.
  return [ops.mkl._mkl_reorder_linear_weight(w, 1), torch.expand(torch.zeros([1, 1], dtype=6), [w.size(0), w.size(1)])]


def linear(x: Tensor, w: Tensor, shape: Tensor, bias: Tensor) -> Tensor:
  b: Optional[Tensor] = None
  if bias.numel() > 0:
    b = bias
  return ops.mkl._mkl_linear(x, w, shape, b, x.size(0))
