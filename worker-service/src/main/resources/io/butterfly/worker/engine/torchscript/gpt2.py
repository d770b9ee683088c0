# A GPT-2 stage, as Hugging Face transformers computes it in float32: learned positions, LayerNorm, fused q|k|v
# (c_attn), and a GELU (tanh approximation, "gelu_new") MLP.
#
# weights: per layer 16 tensors (Gpt2Stage.java lists them): ln_1 weight and bias; c_attn; attn.c_proj; ln_2 weight
# and bias; c_fc; mlp.c_proj. Each projection is 3 tensors, as __torch__.butterfly.linear.prepare made them from its
# [out, in] matrix, plus its bias.


class Gpt2Stage(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool

  def prepare(self: __torch__.Gpt2Stage, weight: Tensor, dtype: int) -> List[Tensor]:
    return __torch__.butterfly.linear.prepare(weight, dtype)

  def embed(self: __torch__.Gpt2Stage, tokens: Tensor, positions: Tensor, ids: Tensor, at: Tensor) -> Tensor:
    return torch.add(torch.embedding(tokens, ids), torch.embedding(positions, at))

  def layers(self: __torch__.Gpt2Stage, x: Tensor, weights: List[Tensor], dims: List[int], eps: float, scale: float,
             sequences: List[int], caches: List[Tensor]) -> Tensor:
    # dims: heads, head dim
    heads = dims[0]
    head_dim = dims[1]
    rows = x.size(0)
    hidden = x.size(1)
    masks = __torch__.butterfly.attention.causal_masks(sequences, 1)
    for layer in range(len(weights) // 16):
      w = weights[16 * layer:16 * layer + 16]
      h = torch.layer_norm(x, [hidden], w[0], w[1], eps)
      qkv = torch.view(__torch__.butterfly.linear.linear(h, w[2], w[3], w[4]), [rows, 3 * heads, head_dim])
      q = torch.mul(qkv[:, :heads], scale)
      attn = __torch__.butterfly.attention.attend(q, qkv[:, heads:2 * heads], qkv[:, 2 * heads:], sequences, caches,
                                                  layer, masks)
      x = torch.add(x, __torch__.butterfly.linear.linear(attn, w[5], w[6], w[7]))
      h = torch.layer_norm(x, [hidden], w[8], w[9], eps)
      f = __torch__.butterfly.linear.linear(h, w[10], w[11], w[12])
      # 0.5 f (1 + tanh(sqrt(2/pi) (f + 0.044715 f^3))) with f^3 as f*f*f, as transformers' NewGELUActivation
      inner = torch.tanh(torch.mul(torch.add(torch.mul(torch.mul(torch.mul(f, f), f), 0.044715), f), 0.7978845608028654))
      act = torch.mul(torch.mul(f, 0.5), torch.add(inner, 1.0))
      x = torch.add(x, __torch__.butterfly.linear.linear(act, w[13], w[14], w[15]))
    return x

  def head(self: __torch__.Gpt2Stage, x: Tensor, rows: Tensor, norm: List[Tensor], w: List[Tensor], eps: float) -> Tensor:
    h = torch.layer_norm(torch.index_select(x, 0, rows), [x.size(1)], norm[0], norm[1], eps)
    return __torch__.butterfly.linear.linear(h, w[0], w[1], w[2])
