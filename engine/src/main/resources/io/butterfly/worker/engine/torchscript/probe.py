# The roofline probe's products through a stage's projections (RooflineProbe): the kernels a worker computes with.


class Probe(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool

  def prepare(self: __torch__.Probe, weight: Tensor, dtype: int) -> List[Tensor]:
    return __torch__.butterfly.linear.prepare(weight, dtype)

  def products(self: __torch__.Probe, x: Tensor, weights: List[Tensor]) -> List[Tensor]:
    # x times every [out, in] matrix of weights (3 tensors each, as prepare made them plus an empty bias)
    out = annotate(List[Tensor], [])
    for i in range(len(weights) // 3):
      out.append(__torch__.butterfly.linear.linear(x, weights[3 * i], weights[3 * i + 1], weights[3 * i + 2]))
    return out
