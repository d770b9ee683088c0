# A GPT-2 stage, as Hugging Face transformers computes it in float32: learned positions, LayerNorm, fused q|k|v
# (c_attn), and a GELU (tanh approximation, "gelu_new") MLP.
#
# weights: per layer 16 tensors (Gpt2Stage.java lists them): ln_1 weight and bias; c_attn; attn.c_proj; ln_2 weight
# and bias; c_fc; mlp.c_proj. Each projection is 3 tensors, as __torch__.butterfly.linear.prepare made them from its
# [out, in] matrix, plus its bias.
# constants: 0-dim float32 tensors [attention scale, 1, 0.5, 0.044715, sqrt(2 / pi)]: an operation with a Python
# number converts it to a tensor on every call.


class Gpt2Stage(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool

  def prepare(self: __torch__.Gpt2Stage, weight: Tensor, dtype: int) -> List[Tensor]:
    return __torch__.butterfly.linear.prepare(weight, dtype)

  def embed(self: __torch__.Gpt2Stage, tokens: Tensor, positions: Tensor, ids: Tensor, at: Tensor) -> Tensor:
    return torch.add(torch.embedding(tokens, ids), torch.embedding(positions, at))

  def layers(self: __torch__.Gpt2Stage, x: Tensor, weights: List[Tensor], dims: List[int], eps: float,
             constants: List[Tensor], sequences: List[int], caches: List[Tensor]) -> Tensor:
    # dims: heads, head dim
    heads = dims[0]
    head_dim = dims[1]
    rows = x.size(0)
    hidden = x.size(1)
    scope = __torch__.butterfly.profile.enter("attention")
    masks = __torch__.butterfly.attention.causal_masks(sequences, 1)
    __torch__.butterfly.profile.exit(scope)
    for layer in range(len(weights) // 16):
      w = weights[16 * layer:16 * layer + 16]
      in_layer = __torch__.butterfly.profile.enter_layer(layer)
      scope = __torch__.butterfly.profile.enter("norm")
      h = torch.layer_norm(x, [hidden], w[0], w[1], eps)
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("projection q|k|v")
      qkv = torch.view(__torch__.butterfly.linear.linear(h, w[2], w[3], w[4]), [rows, 3 * heads, head_dim])
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("attention")
      q = torch.mul(torch.narrow(qkv, 1, 0, heads), constants[0])
      attn = __torch__.butterfly.attention.attend(q, torch.narrow(qkv, 1, heads, heads), torch.narrow(qkv, 1, 2 * heads, heads),
                                                  sequences, caches, layer, masks)
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("projection o")
      o = __torch__.butterfly.linear.linear(attn, w[5], w[6], w[7])
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("residual")
      x = torch.add(x, o)
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("norm")
      h = torch.layer_norm(x, [hidden], w[8], w[9], eps)
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("projection up")
      f = __torch__.butterfly.linear.linear(h, w[10], w[11], w[12])
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("activation")
      # 0.5 f (1 + tanh(sqrt(2/pi) (f + 0.044715 f^3))) with f^3 as f*f*f, as transformers' NewGELUActivation
      inner = torch.tanh(torch.mul(torch.add(torch.mul(torch.mul(torch.mul(f, f), f), constants[3]), f), constants[4]))
      act = torch.mul(torch.mul(f, constants[2]), torch.add(inner, constants[1]))
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("projection down")
      down = __torch__.butterfly.linear.linear(act, w[13], w[14], w[15])
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("residual")
      x = torch.add(x, down)
      __torch__.butterfly.profile.exit(scope)
      __torch__.butterfly.profile.exit(in_layer)
    return x

  def head(self: __torch__.Gpt2Stage, x: Tensor, rows: Tensor, norm: List[Tensor], w: List[Tensor], eps: float) -> Tensor:
    scope = __torch__.butterfly.profile.enter("norm")
    h = torch.layer_norm(torch.index_select(x, 0, rows), [x.size(1)], norm[0], norm[1], eps)
    __torch__.butterfly.profile.exit(scope)
    scope = __torch__.butterfly.profile.enter("projection head")
    logits = __torch__.butterfly.linear.linear(h, w[0], w[1], w[2])
    __torch__.butterfly.profile.exit(scope)
    return logits
