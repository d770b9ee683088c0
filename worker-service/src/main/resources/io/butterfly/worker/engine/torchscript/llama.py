# A Llama-family stage (Llama, Qwen2, Mistral), as Hugging Face transformers computes it in float32: RMSNorm,
# rotary embeddings (rotate_half convention), grouped-query attention and a SiLU-gated MLP.
#
# weights: per layer 14 tensors (LlamaStage.java lists them): input norm; q|k|v fused; o; post-attention norm;
# gate|up fused; down. Each projection is 3 tensors, as __torch__.butterfly.linear.prepare made them plus its bias
# (empty when none).
# constants: 0-dim float32 tensors [attention scale, 1, norm epsilon, hidden size]: an operation with a Python number
# converts it to a tensor on every call.


def rms_norm(x: Tensor, weight: Tensor, constants: List[Tensor]) -> Tensor:
  # weight * (x * rsqrt(mean(x^2) + eps)), the mean as torch computes it (a sum, then a division by the count)
  variance = torch.div(torch.sum(torch.mul(x, x), [-1], True), constants[3])
  return torch.mul(weight, torch.mul(x, torch.rsqrt(torch.add(variance, constants[2]))))


class LlamaStage(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool

  def prepare(self: __torch__.LlamaStage, weight: Tensor, dtype: int) -> List[Tensor]:
    return __torch__.butterfly.linear.prepare(weight, dtype)

  def embed(self: __torch__.LlamaStage, table: Tensor, ids: Tensor) -> Tensor:
    return torch.embedding(table, ids)

  def layers(self: __torch__.LlamaStage, x: Tensor, weights: List[Tensor], dims: List[int], constants: List[Tensor],
             cos: Tensor, signed_sin: Tensor, sequences: List[int], caches: List[Tensor]) -> Tensor:
    # dims: heads, kv heads, head dim, intermediate size. cos, signed_sin [rows, 1, head_dim]: the rotation of each
    # row's position, the sine negated on its first half so that rotate_half is a swap of halves.
    heads = dims[0]
    kv_heads = dims[1]
    head_dim = dims[2]
    inter = dims[3]
    rows = x.size(0)
    scope = __torch__.butterfly.profile.enter("attention")
    masks = __torch__.butterfly.attention.causal_masks(sequences, heads // kv_heads)
    __torch__.butterfly.profile.exit(scope)
    for layer in range(len(weights) // 14):
      w = weights[14 * layer:14 * layer + 14]
      in_layer = __torch__.butterfly.profile.enter_layer(layer)
      scope = __torch__.butterfly.profile.enter("norm")
      h = __torch__.rms_norm(x, w[0], constants)
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("projection q|k|v")
      qkv = torch.view(__torch__.butterfly.linear.linear(h, w[1], w[2], w[3]), [rows, heads + 2 * kv_heads, head_dim])
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("rotary")
      # q and k rotated together: x * cos + swap_halves(x) * signed_sin
      qk = torch.narrow(qkv, 1, 0, heads + kv_heads)
      swapped = torch.view(torch.flip(torch.view(qk, [rows, heads + kv_heads, 2, head_dim // 2]), [2]),
                           [rows, heads + kv_heads, head_dim])
      qk = torch.add(torch.mul(qk, cos), torch.mul(swapped, signed_sin))
      q = torch.mul(torch.narrow(qk, 1, 0, heads), constants[0])
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("attention")
      attn = __torch__.butterfly.attention.attend(q, torch.narrow(qk, 1, heads, kv_heads),
                                                  torch.narrow(qkv, 1, heads + kv_heads, kv_heads), sequences, caches,
                                                  layer, masks)
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("projection o")
      o = __torch__.butterfly.linear.linear(attn, w[4], w[5], w[6])
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("residual")
      x = torch.add(x, o)
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("norm")
      h = __torch__.rms_norm(x, w[7], constants)
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("projection gate|up")
      gate_up = __torch__.butterfly.linear.linear(h, w[8], w[9], w[10])
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("activation")
      # silu(gate) * up, silu as gate / (1 + exp(-gate)): torch's silu and sigmoid kernels round the elements past a
      # thread's last full vector by another formula, so a row's bits would depend on where the threads cut the batch
      gate = torch.narrow(gate_up, 1, 0, inter)
      act = torch.mul(torch.div(gate, torch.add(torch.exp(torch.neg(gate)), constants[1])), torch.narrow(gate_up, 1, inter, inter))
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("projection down")
      down = __torch__.butterfly.linear.linear(act, w[11], w[12], w[13])
      __torch__.butterfly.profile.exit(scope)
      scope = __torch__.butterfly.profile.enter("residual")
      x = torch.add(x, down)
      __torch__.butterfly.profile.exit(scope)
      __torch__.butterfly.profile.exit(in_layer)
    return x

  def head(self: __torch__.LlamaStage, x: Tensor, rows: Tensor, norm: Tensor, w: List[Tensor],
           constants: List[Tensor]) -> Tensor:
    # Final norm and LM head over the given rows of x.
    scope = __torch__.butterfly.profile.enter("norm")
    h = __torch__.rms_norm(torch.index_select(x, 0, rows), norm, constants)
    __torch__.butterfly.profile.exit(scope)
    scope = __torch__.butterfly.profile.enter("projection head")
    logits = __torch__.butterfly.linear.linear(h, w[0], w[1], w[2])
    __torch__.butterfly.profile.exit(scope)
    return logits
