# Projections on weights as loaded ([out, in]), for devices and builds without MKL.


def prepare(w: Tensor, dtype: int) -> List[Tensor]:
  return [w, w]


def linear(x: Tensor, w: Tensor, shape: Tensor, bias: Tensor) -> Tensor:
  b: Optional[Tensor] = None
  if bias.numel() > 0:
    b = bias
  return torch.linear(x, w, b)
